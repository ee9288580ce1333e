"""RealityBench pipeline glue: frames -> rating project -> scorer validation -> benchmark items.

1. ``render_frames`` samples each environment (bad-factor strata) and renders through the
   scene library; ``frame_table`` turns records into one row per frame: the delivered image
   (render + post effects), the scorer's verdict with every term, its gray flag, the
   documentation answers. ``proxy_frames`` builds the same rows from the planar proxy render
   (no Blender), for sampler design and tests.
2. ``write_rating_project`` generates a truthline project ("Would this view be accepted as
   proof of the work step?", the environment's requirement in the instructions) and imports
   the frames as its items; push it with ``truthline annotate push --project NAME --arm blind
   --split 0 --overlap 6``, pull with ``annotate pull``. ``simulate_ratings`` fills it with
   SIMULATED raters instead (demos and tests only; source ``simulated``).
3. ``validate_scorer``: the paper's protocol. A declared split (a unit is a tuning unit when
   the first hex digits of sha256(key) fall below ``tune_frac``: no data decide it), per
   environment thresholds tuned on the tuning units against the rater majority, and on the
   rest: agreement with the majority with a CI, ties (no majority) and gray-zone frames
   (a term near its threshold) excluded and counted, the confusion, each rater against the
   majority of the others, Krippendorff's alpha with skips, raw pairwise agreement.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from truthline.errors import TruthlineError
from truthline.fields import EntityList, MultiChoice
from truthline.scenes._accept import Thresholds, is_gray, rescore
from truthline.systems.realitybench._sanity import withdrawal_reason

ENVIRONMENTS = (
    "rail_attachment",
    "wire_adequacy",
    "tape_gap",
    "slope_gauge",
    "equipment_label",
    "horizon_peak",
    "breaker_directory",
    "vehicle_face",
    "damage_view",
    "plate",
    "ro_board",
)
"""The paper's eleven environments (§3, Table 1): seven of rooftop solar installation, four of
vehicle repair, in the paper's order."""
SOLAR = ENVIRONMENTS[:7]
RATING_PROJECT = "pow-acceptability"
SIM_RATERS = tuple(f"sim-rater-{i}@simulated.invalid" for i in range(1, 7))
TUNED_TERMS = ("sharpness", "contrast", "feature_px")

TECHNICIANS = {e: "solar installer" for e in SOLAR} | {
    e: "auto-body repair technician" for e in ENVIRONMENTS[7:]
}
"""Who took the photo (App. C: the prompt names the technician)."""

REQUIREMENTS = {
    "rail_attachment": "Photograph one roof attachment after it is installed: the L-foot, the "
    "flashing under the shingles and the lag bolt through them into the rafter must all be "
    "visible, with no part missing: attachment in frame, unobstructed, close, not too oblique, "
    "sharp.",
    "wire_adequacy": "Photograph the module wiring along the rail: the wire must be clipped "
    "at every clip point and held off the roof surface, no span sagging onto the shingles: the "
    "run in frame, unobstructed, close enough to see the clips and the wire's clearance, sharp.",
    "tape_gap": "The tape measure's reading where it crosses the far edge of the module gap "
    "must be legible to 1/8 inch, with the tape running square across the gap (within 5 "
    "degrees): crossing in frame, unobstructed, taken close (about 1 m or nearer), not too "
    "oblique, sharp.",
    "slope_gauge": "The slope gauge must rest on a module of the array and its reading must "
    "be legible to 0.2 degrees: the display or dial in frame, unobstructed, close, not too "
    "oblique, sharp.",
    "equipment_label": "The equipment nameplate's model and serial number must be readable: "
    "label in frame, unobstructed, characters large and sharp enough, not too oblique.",
    "horizon_peak": "The set of horizon photos taken from the array must together cover the "
    "horizon from east through south to west (sectors E, SE, S, SW, W, 45 degrees each). Each "
    "photo is one member of the set and must do its part: taken from the array, camera level "
    "(no visible roll, not pitched far up or down), the horizon line and the skyline of its "
    "whole sector in frame, unobstructed by a hand or the roof edge, sharp.",
    "breaker_directory": "The load center's breaker directory must be readable: every row "
    "(circuit name and amperage) in frame, unobstructed, characters large and sharp enough, "
    "not too oblique.",
    "vehicle_face": "The whole car must be in frame and unobstructed, large in the frame, "
    "from a normal standing distance, sharp enough to tell which sides are visible and its "
    "body style (sedan, hatchback, SUV or pickup).",
    "damage_view": "The damaged area must be documented from about arm's length: in frame, "
    "unobstructed, not too oblique, sharp enough to judge the damage type and severity.",
    "plate": "The licence plate's characters and state must be readable: plate in frame, "
    "unobstructed, characters large and sharp enough, not viewed too obliquely.",
    "ro_board": "The repair-order board must be photographed with the car it identifies: the "
    "RO number and the VIN readable (board in frame and unobstructed, characters large and "
    "sharp enough, not viewed too obliquely) and the car visible beside the board.",
}


def _envs(names: Sequence[str] = ENVIRONMENTS) -> dict[str, Any]:
    from truthline.scenes import get_environment

    return {n: get_environment(n) for n in names}


# -- 1: frames ---------------------------------------------------------------------------------
POSITIVE = "positive"
"""``params["stratum"]`` of a positive-stratum frame (App. D: environments whose acceptable
random poses are rare get extra clean frames so misses can be estimated; false-accept rates
use random frames only). Random frames carry no stratum key."""


def _env_stream(env_name: str) -> int:
    """A seed stream per environment from its name (not its place in a list: adding an
    environment never changes another's frames)."""
    return int(hashlib.sha256(env_name.encode()).hexdigest()[:8], 16)


def sample_params(
    env_name: str, n: int, seed: int = 0, *, positive: int = 0
) -> list[dict[str, Any]]:
    """``n`` stratified samples of one environment (the bad-factor budget per frame), then
    ``positive`` clean positive-stratum samples from a stream of their own (so asking for
    them leaves the random frames as they were)."""
    from truthline.scenes import get_environment

    env = get_environment(env_name)
    rng = np.random.default_rng([seed, _env_stream(env_name)])
    out = [env.sample(rng) for _ in range(n)]
    pos = np.random.default_rng([seed, _env_stream(env_name), 1])
    for _ in range(positive):
        p = env.sample(pos, {"bad": []})
        p["stratum"] = POSITIVE
        out.append(p)
    return out


def render_frames(
    n_per_env: int,
    out: Path | str,
    settings: Any,
    *,
    envs: Sequence[str] = ENVIRONMENTS,
    seed: int = 0,
    client: Any = None,
    res: Sequence[int] | None = None,
    positive: int = 0,
) -> list[Any]:
    """Render ``n_per_env`` sampled frames of every environment into the frame store, plus
    ``positive`` positive-stratum frames each."""
    from truthline.scenes._render import render

    records = []
    for name in envs:
        params = sample_params(name, n_per_env, seed, positive=positive)
        if res is not None:
            for p in params:
                p["camera"]["res"] = [int(res[0]), int(res[1])]
        rep = render(name, params, out, settings, client=client)
        if rep.failed:
            job, err = rep.failed[0]
            raise TruthlineError(
                f"{name}: {len(rep.failed)} frame(s) failed to render, e.g. {job}: {err}"
            )
        records.extend(rep.records)
    return records


def environment_table(
    envs: Sequence[str] = ENVIRONMENTS, *, n: int = 400, seed: int = 0
) -> list[dict[str, Any]]:
    """Tables 1 and 2 of the paper from the environments themselves: technician,
    requirement, documentation fields, the scorer's terms split into scene-derived and
    image-derived primitives with their thresholds, and the acceptable fraction of ``n``
    random poses (planar proxy render)."""
    from truthline.systems.realitybench.envs._common import estimate_rates

    out = []
    for name, env in _envs(envs).items():
        p = env.sample(np.random.default_rng([seed, _env_stream(name)]), {"bad": []})
        gt = env.host_gt(p)
        acc = env.proxy_score(p, seed)
        terms = {k: t for k, t in acc.terms.items()}
        rates = estimate_rates(env, n=n, seed=seed)
        out.append(
            {
                "environment": name,
                "technician": TECHNICIANS.get(name, ""),
                "requirement": REQUIREMENTS.get(name, ""),
                "fields": [
                    q["field"] for q in env.questions(gt, acc) if q["field"] != "acceptable"
                ],
                "scene_terms": [k for k, t in terms.items() if t.get("kind") == "scene"],
                "image_terms": [k for k, t in terms.items() if t.get("kind") == "image"],
                "thresholds": {k: [t.get("op"), t.get("threshold")] for k, t in terms.items()},
                "acceptable_random": rates["acceptable"],
                "acceptable_clean": rates["clean_acceptable"],
            }
        )
    return out


def scene_id(env: str, params: Mapping[str, Any]) -> str:
    """The scene a frame shows, independent of how it was rendered: two renderings of the
    same params share it (rank transfer between renderings pairs frames by scene)."""
    from truthline.scenes._types import canonical_json

    p = json.loads(canonical_json(params))
    p.get("camera", {}).pop("res", None)  # the same view at another resolution
    return f"{env}-" + hashlib.sha256(canonical_json([env, p]).encode()).hexdigest()[:12]


def _row(
    env_name: str,
    key: str,
    scene: str,
    acc: Any,
    gt: Mapping[str, Any],
    questions: list[dict[str, Any]],
    image: str | None,
    withdrawn: str = "",
    stratum: str = "random",
    context: str = "",
) -> dict[str, Any]:
    terms = dict(acc.terms) if hasattr(acc, "terms") else dict(acc["terms"])
    ok = acc.acceptable if hasattr(acc, "acceptable") else acc["acceptable"]
    return {
        "key": key,
        "environment": env_name,
        "scene": scene,
        "sample_stratum": stratum,
        "image": image,
        "acceptable": bool(ok),
        "gray": is_gray({"terms": terms}),
        "terms": json.dumps(terms, sort_keys=True),
        "failed": ",".join(k for k, t in terms.items() if not t["ok"]),
        "bad_factors": ",".join(gt.get("bad_factors", [])),
        "answers": json.dumps(
            {q["field"]: q["answer"] for q in questions}, sort_keys=True, default=str
        ),
        # the environment's own wording of each documentation question (the prompt asks it)
        "questions": json.dumps(
            {q["field"]: q["question"] for q in questions if q["field"] != "acceptable"}
        ),
        "withdrawn": withdrawn,
        "prompt_context": context,
    }


def _context(env: Any, gt: Mapping[str, Any]) -> str:
    """What the prompt adds to the requirement for this frame (``env.prompt_context``: a
    set-level requirement names the frame's place in its set)."""
    own = getattr(env, "prompt_context", None)
    return str(own(gt)) if callable(own) else ""


def frame_table(store: Any, records: Iterable[Any], out_dir: Path | str) -> pd.DataFrame:
    """One row per rendered frame; the delivered image (render + post effects, what raters
    and models see) is written as ``out_dir/<env>/<job_id>.png``."""
    from PIL import Image

    from truthline.scenes import get_environment

    out = Path(out_dir)
    rows = []
    for rec in records:
        env = get_environment(rec.env)
        with Image.open(store.variant_path(rec, "rgb")) as im:
            rgb = np.asarray(im.convert("RGB"))
        img = env.post(rec.gt, rgb) if hasattr(env, "post") else rgb.astype(np.float32) / 255
        path = out / rec.env / f"{rec.job_id}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            Image.fromarray(np.clip(np.rint(np.asarray(img) * 255), 0, 255).astype(np.uint8)).save(
                path
            )
        acc = env.score(rec.gt, rgb)
        mask = None
        if "mask" in rec.images:
            with Image.open(store.variant_path(rec, "mask")) as im:
                mask = np.asarray(im.convert("L")) > 127
        rows.append(
            _row(
                rec.env,
                f"{rec.env}/{rec.job_id}",
                scene_id(rec.env, rec.params),
                acc,
                rec.gt,
                env.questions(rec.gt, acc),
                str(path),
                withdrawal_reason(env, rec.gt, img, mask, rgb),
                str(rec.params.get("stratum", "random")),
                _context(env, rec.gt),
            )
        )
    return pd.DataFrame(rows)


def proxy_frames(
    n_per_env: int, *, envs: Sequence[str] = ENVIRONMENTS, seed: int = 0, positive: int = 0
) -> pd.DataFrame:
    """The frame table from the planar proxy render (no Blender, no image files)."""
    all_envs = _envs(envs)
    rows = []
    for name in envs:
        env = all_envs[name]
        for i, p in enumerate(sample_params(name, n_per_env, seed, positive=positive)):
            gt = env.host_gt(p)
            acc = env.proxy_score(p, seed + i)
            qs = env.questions(gt, acc)
            stratum = str(p.get("stratum", "random"))
            rows.append(
                _row(
                    name,
                    f"{name}/{i:05d}",
                    f"{name}-{i}",
                    acc,
                    gt,
                    qs,
                    None,
                    "",
                    stratum,
                    _context(env, gt),
                )
            )
    return pd.DataFrame(rows)


# -- 2: the rating project ------------------------------------------------------------------------
def rating_project_toml(name: str, envs: Sequence[str]) -> str:
    req = " ".join(f"[{e}] {REQUIREMENTS[e]}" for e in envs if e in REQUIREMENTS)
    return f"""# Generated by truthline.systems.realitybench._pow: human acceptability ratings of rendered proof-of-work
# frames (RealityBench section 4). Push blind with overlap (every rater sees every frame).
name = "{name}"
title = "Would this photo be accepted as proof of the work step?"
media = "image"
strata = ["environment"]
cluster = "scene"

[fields.acceptable]
type = "boolean"
description = {json.dumps("Accept the photo only if it documents the requirement of its environment. " + req)}
"""


def write_rating_project(
    ws: Any, frames: pd.DataFrame, name: str = RATING_PROJECT, *, progress: bool = False
) -> Any:
    """Create (or update) the rating project in workspace ``ws`` and import the frames'
    delivered images as its items (copied under ``media/<name>/``; idempotent)."""
    from truthline.media import import_items

    if frames["image"].isna().any():
        raise TruthlineError(
            "rating project: some frames have no image (proxy frames cannot be rated)"
        )
    folder = ws.projects_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    envs = sorted(frames["environment"].unique())
    (folder / "project.toml").write_text(rating_project_toml(name, envs), encoding="utf-8")
    project = ws.registered(name)
    media = ws.media_dir / name
    rows = []
    for r in frames.to_dict("records"):
        src = Path(r["image"])
        if not src.is_file():
            raise TruthlineError(f"rating project: image {src} of frame {r['key']} is missing")
        dest = media / f"{r['key']}{src.suffix}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            shutil.copyfile(src, dest)
        rows.append({"key": r["key"], "environment": r["environment"], "scene": r["scene"]})
    csv_path = folder / "frames.csv"
    pd.DataFrame(rows, columns=["key", "environment", "scene"]).to_csv(csv_path, index=False)
    import_items(ws.store, project, media, metadata=csv_path, progress=progress)
    return project


@dataclass(frozen=True)
class SimRaters:
    """SIMULATED raters: each judges a frame by the scorer's own terms with thresholds of
    their own (the planted ``truth`` scaled by a per-rater factor), lapses (a flipped
    verdict) and skips. Named simulations everywhere; never a real run's ratings."""

    truth: Mapping[str, float] = field(
        default_factory=lambda: {"sharpness": 1.4, "contrast": 0.85, "feature_px": 1.25}
    )
    spread: float = 0.15
    lapse: float = 0.06
    skip: float = 0.05
    raters: tuple[str, ...] = SIM_RATERS


def simulated_verdicts(
    frames: pd.DataFrame, sim: SimRaters = SimRaters(), seed: int = 0
) -> pd.DataFrame:
    """Units x raters table (True / False / None = skipped) from :class:`SimRaters`."""
    from truthline.scenes import get_environment

    rng = np.random.default_rng(seed)
    factors = {
        r: {t: float(np.exp(rng.normal(0, sim.spread))) for t in sim.truth} for r in sim.raters
    }
    out = {}
    for r in frames.to_dict("records"):
        env = get_environment(r["environment"])
        base: Thresholds = getattr(env, "thresholds", Thresholds())
        terms = json.loads(r["terms"])
        row = {}
        for who in sim.raters:
            over = {}
            for t, k in sim.truth.items():
                attr = _attr(t)
                cur = getattr(base, attr)
                if cur is not None:
                    over[attr] = cur * k * factors[who][t]
            v = rescore(terms, base.with_(**over)).acceptable
            if rng.random() < sim.lapse:
                v = not v
            row[who] = None if rng.random() < sim.skip else bool(v)
        out[r["key"]] = row
    return pd.DataFrame.from_dict(out, orient="index")[list(sim.raters)]


def simulate_ratings(
    store: Any, project: str, frames: pd.DataFrame, sim: SimRaters = SimRaters(), *, seed: int = 0
) -> int:
    """SIMULATED raters' verdicts stored as blind tier-1 annotations (source ``simulated``,
    users ``sim-rater-N@simulated.invalid``); a skip stores nothing. Idempotent."""
    from sqlalchemy import select

    from truthline.store import now, tables

    ids = store.item_ids_by_key(project)
    table = simulated_verdicts(frames, sim, seed)
    rows = []
    for key, verdicts in table.iterrows():
        if key not in ids:
            raise TruthlineError(f"simulated ratings: {key} is not an item of {project}")
        for who, v in verdicts.items():
            if v is None or (isinstance(v, float) and np.isnan(v)):
                continue
            rows.append(
                {
                    "project": project,
                    "item_id": ids[key],
                    "field_path": "acceptable",
                    "annotator": who,
                    "arm": "blind",
                    "tier": 1,
                    "value": bool(v),
                    "source": "simulated",
                    "simulated": True,
                    "source_id": f"sim:{project}:{key}:{who}",
                    "stored_at": now(),
                }
            )
    a = tables.annotations
    with store.begin() as conn:
        have = {
            r.source_id for r in conn.execute(select(a.c.source_id).where(a.c.project == project))
        }
        new = [r for r in rows if r["source_id"] not in have]
        if new:
            conn.execute(a.insert(), new)
    return len(new)


def ratings_table(store: Any, project: Any) -> pd.DataFrame:
    """Units (item keys) x raters of the ``acceptable`` field, pulled into the store from
    Label Studio (or simulated); a skip is missing."""
    from truthline.stats import ratings_from_store

    r, _ = ratings_from_store(store, project, "acceptable")
    keys = _item_keys(store, project.name)
    vals = [[None if c < 0 else bool(r.values[c]) for c in row] for row in r.codes]
    return pd.DataFrame(vals, index=[keys.get(u, str(u)) for u in r.units], columns=list(r.raters))


def _item_keys(store: Any, project: str) -> dict[Any, str]:
    return {v: k for k, v in store.item_ids_by_key(project).items()}


# -- 3: validation -------------------------------------------------------------------------------
def _attr(term: str) -> str:
    return {
        "sharpness": "min_sharpness",
        "contrast": "min_contrast",
        "feature_px": "min_feature_px",
        "distance": "max_distance_m",
        "view_angle": "max_view_angle_deg",
        "occlusion": "max_occluded",
        "in_frame": "min_in_frame",
        "size": "min_size_frac",
    }[term]


def declared_split(keys: Iterable[str], tune_frac: float = 0.6) -> dict[str, bool]:
    """key -> True for tuning units: sha256(key) read as a fraction below ``tune_frac``."""
    return {
        k: int(hashlib.sha256(str(k).encode()).hexdigest()[:8], 16) / 16**8 < tune_frac
        for k in keys
    }


def majority_of(ratings: pd.DataFrame) -> pd.Series:
    """Per unit: the majority verdict, or None on a tie / no rating."""

    def one(row: pd.Series) -> Any:
        v = [bool(x) for x in row if x is not None and not (isinstance(x, float) and np.isnan(x))]
        yes = sum(v)
        return None if not v or 2 * yes == len(v) else yes * 2 > len(v)

    return ratings.apply(one, axis=1)


def tune_thresholds(
    frames: pd.DataFrame,
    majority: Mapping[str, Any],
    base: Thresholds,
    terms: Sequence[str] = TUNED_TERMS,
    rounds: int = 2,
) -> tuple[Thresholds, float]:
    """Coordinate ascent over ``terms``: each threshold set to the candidate (5th..95th
    percentile of the values, plus the current one) that maximises agreement with the
    majority on ``frames``; ties keep the value nearest the current threshold."""
    rows = [
        (json.loads(t), majority[k])
        for k, t in zip(frames["key"], frames["terms"], strict=True)
        if majority.get(k) is not None
    ]
    if not rows:
        return base, float("nan")

    def agreement(th: Thresholds) -> float:
        return float(np.mean([rescore(t, th).acceptable == m for t, m in rows]))

    th = base
    best = agreement(th)
    for _ in range(rounds):
        for term in terms:
            attr = _attr(term)
            cur = getattr(th, attr)
            if cur is None:
                continue
            vals = [t[term]["value"] for t, _ in rows if term in t and t[term]["value"] is not None]
            if not vals:
                continue
            cands = sorted(
                {float(cur), *np.percentile(vals, np.arange(5, 100, 5)).round(6).tolist()}
            )
            scored = [(agreement(th.with_(**{attr: c})), -abs(c - cur), c) for c in cands]
            a, _, c = max(scored)
            if a > best:
                th, best = th.with_(**{attr: c}), a
    return th, best


@dataclass
class ScorerValidation:
    """The paper's Table 13 figures for one set of ratings (see the module docstring)."""

    tuned: dict[str, dict[str, Any]]
    report: Any  # stats.ScorerReport on the held-out units
    wilson: Any  # the held-out agreement as a Wilson interval
    by_environment: dict[str, dict[str, Any]]
    loo: list[Any]
    alpha: float
    pairwise: float
    counts: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {
            "tuned_thresholds": self.tuned,
            "held_out": self.report.as_dict(),
            "held_out_wilson": self.wilson.as_dict(),
            "by_environment": self.by_environment,
            "rater_vs_others": [r.as_dict() for r in self.loo],
            "krippendorff_alpha": self.alpha,
            "pairwise_agreement": self.pairwise,
            "counts": self.counts,
        }


def validate_scorer(
    frames: pd.DataFrame,
    ratings: pd.DataFrame,
    *,
    tune_frac: float = 0.6,
    seed: int = 0,
    resamples: int = 2000,
) -> ScorerValidation:
    """Tune per-environment thresholds on the declared tuning split, then score the
    held-out frames against the rater majority (ties and gray frames excluded, counted)."""
    from truthline.scenes import get_environment
    from truthline.stats import (
        krippendorff_alpha,
        leave_one_out,
        pairwise_agreement,
        proportion_ci,
        scorer_vs_majority,
    )

    frames = frames.set_index("key", drop=False)
    common = [k for k in ratings.index if k in frames.index]
    if not common:
        raise TruthlineError(
            "scorer validation: no rated frame is in the frame table (keys differ)"
        )
    ratings = ratings.loc[common]
    frames = frames.loc[common]
    split = declared_split(common, tune_frac)
    maj = majority_of(ratings)
    tuned: dict[str, dict[str, Any]] = {}
    th_by_env: dict[str, Thresholds] = {}
    for env_name, grp in frames.groupby("environment"):
        base = getattr(get_environment(str(env_name)), "thresholds", Thresholds())
        tune_rows = grp[[split[k] for k in grp["key"]]]
        th, agree = tune_thresholds(tune_rows, maj.to_dict(), base)
        th_by_env[str(env_name)] = th
        tuned[str(env_name)] = {
            "thresholds": {t: getattr(th, _attr(t)) for t in TUNED_TERMS},
            "default": {t: getattr(base, _attr(t)) for t in TUNED_TERMS},
            "tune_frames": len(tune_rows),
            "tune_agreement": agree,
        }
    verdict, gray = [], []
    for k in common:
        acc = rescore(json.loads(frames.at[k, "terms"]), th_by_env[frames.at[k, "environment"]])
        verdict.append(acc.acceptable)
        gray.append(is_gray(acc))
    held = [not split[k] for k in common]
    hr = ratings[held]
    hv = [v for v, h in zip(verdict, held, strict=True) if h]
    hg = [g for g, h in zip(gray, held, strict=True) if h]
    clusters = frames.loc[hr.index, "scene"].tolist()
    report = scorer_vs_majority(
        hr.astype(object),
        hv,
        tune_frac=0.0,
        seed=seed,
        gray=hg,
        positive=True,
        resamples=resamples,
        clusters=clusters,
    )
    agree_n = sum(report.confusion.get(c, {}).get(c, 0) for c in report.confusion)
    wilson = proportion_ci(agree_n, report.held_out) if report.held_out else proportion_ci(0, 0)
    by_env: dict[str, dict[str, Any]] = {}
    env_list = frames.loc[hr.index, "environment"].tolist()
    m_held = maj.loc[hr.index].tolist()
    for e in sorted(set(env_list)):
        use = [i for i, x in enumerate(env_list) if x == e and m_held[i] is not None and not hg[i]]
        n = len(use)
        a = sum(hv[i] == m_held[i] for i in use)
        by_env[e] = {
            "held_out": n,
            "agreement": proportion_ci(a, n).as_dict() if n else None,
            "gray_excluded": sum(1 for i, x in enumerate(env_list) if x == e and hg[i]),
            "ties_excluded": sum(
                1 for i, x in enumerate(env_list) if x == e and m_held[i] is None and not hg[i]
            ),
            "scorer_accepts": sum(hv[i] for i in use),
            "majority_accepts": sum(bool(m_held[i]) for i in use),
        }
    numeric = ratings.map(
        lambda x: np.nan if x is None or (isinstance(x, float) and np.isnan(x)) else float(bool(x))
    )
    alpha = float(krippendorff_alpha(numeric.to_numpy(), "nominal"))
    pair = pairwise_agreement(numeric.to_numpy())
    pair_v = float(pair if not isinstance(pair, Mapping) else pair.get("value", np.nan))
    loo = leave_one_out(ratings.astype(object), min_others=2, resamples=resamples, seed=seed)
    counts = {
        "frames": len(common),
        "tuning": sum(split.values()),
        "held_out_total": sum(held),
        "held_out_scored": report.held_out,
        "ties_excluded": report.ties_excluded,
        "gray_excluded": report.gray_excluded,
        "unrated_or_unscored": report.no_majority_or_score,
    }
    return ScorerValidation(tuned, report, wilson, by_env, loo, alpha, pair_v, counts)


def apply_thresholds(frames: pd.DataFrame, tuned: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The frame table re-decided with tuned thresholds (``{env: {term: threshold}}``, as
    ``validate_scorer`` reports them): verdict, gray flag, failed terms and the terms."""
    from truthline.scenes import get_environment

    out = frames.copy()
    for i, r in out.iterrows():
        over = tuned.get(r["environment"])
        if not over:
            continue
        base = getattr(get_environment(r["environment"]), "thresholds", Thresholds())
        th = base.with_(
            **{
                _attr(t): v
                for t, v in over.items()
                if v is not None and getattr(base, _attr(t)) is not None
            }
        )
        acc = rescore(json.loads(r["terms"]), th)
        out.at[i, "acceptable"] = acc.acceptable
        out.at[i, "gray"] = is_gray(acc)
        out.at[i, "terms"] = json.dumps(dict(acc.terms), sort_keys=True)
        out.at[i, "failed"] = ",".join(acc.failed)
    return out


# -- 4: benchmark items and gold ------------------------------------------------------------------
BENCH_PROJECT = "proof-of-work"
GT_PROVENANCE = "scene-gt"
SCORER_PROVENANCE = "scorer"
META_COLUMNS = (
    "environment",
    "variant",
    "scene",
    "sample_stratum",
    "rendering",
    "bad_factors",
    "failed",
    "gray",
)
PROMPT_COLUMNS = ("technician", "requirement", "answer_keys", "questions")
"""Item metadata the per-environment prompt reads (App. C; ``prompts/user.md``)."""


def _truthy(v: Any) -> bool:
    """A flag from a frame table or its CSV ("True", "1", True; blank and NaN are false)."""
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return bool(v) and not (isinstance(v, float) and np.isnan(v))


def prompt_meta(frame: Mapping[str, Any], project: Any) -> dict[str, str]:
    """What the prompt of one frame says: its environment's technician and requirement, and
    only that environment's answer keys (declared by the project) with their questions."""
    env = str(frame.get("environment", ""))
    answers = json.loads(frame["answers"]) if frame.get("answers") else {}
    keys = [f for f in answers if f != "acceptable" and f in project.field_types]
    asked = json.loads(frame["questions"]) if isinstance(frame.get("questions"), str) else {}
    context = str(frame.get("prompt_context") or "")
    return {
        "technician": TECHNICIANS.get(env, ""),
        "requirement": " ".join(x for x in (REQUIREMENTS.get(env, ""), context) if x),
        "answer_keys": json.dumps(keys),
        "questions": json.dumps({k: asked[k] for k in keys if k in asked}),
    }


def truth_of(frame: Mapping[str, Any], project: Any) -> dict[str, Any]:
    """The gold of one frame in the benchmark project's field names: the scorer's verdict
    for ``acceptable`` and every documentation answer (normalised by its field type)."""
    out: dict[str, Any] = {"acceptable": bool(frame["acceptable"])}
    for f, v in json.loads(frame["answers"]).items():
        if f == "acceptable" or f not in project.field_types:  # the verdict is the frame's
            continue
        ft = project.field(f)
        if isinstance(v, list) and v and not isinstance(ft, (MultiChoice, EntityList)):
            v = v[0]  # an "any of these names" answer: the first is the canonical one
        out[f] = ft.normalize(v)
    return out


def import_benchmark(
    ws: Any, frames: pd.DataFrame, *, project: str = BENCH_PROJECT, rendering: str = ""
) -> Any:
    """Register the proof-of-work project in ``ws`` (from the template when missing) and
    import every frame's delivered image with its environment, scene, rendering and the
    known truth (``sim_truth``: only SIMULATED models read it). Idempotent."""
    from truthline.media import import_items

    proj = (
        ws.init_project(BENCH_PROJECT, name=project)
        if project not in ws.project_names()
        else ws.registered(project)
    )
    media = ws.media_dir / project
    rows = []
    for r in frames.to_dict("records"):
        src = Path(str(r["image"]))
        if not src.is_file():
            raise TruthlineError(f"benchmark items: image {src} of frame {r['key']} is missing")
        dest = media / f"{r['key']}{src.suffix}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists():
            shutil.copyfile(src, dest)
        meta = {c: r.get(c, "") for c in META_COLUMNS}
        meta["rendering"] = r.get("rendering") or rendering
        meta["variant"] = r.get("variant") or meta["rendering"] or "render"
        meta["source"] = r.get("source") or "render"
        meta.update(prompt_meta(r, proj))
        rows.append(
            {"key": r["key"], **meta, "sim_truth": json.dumps(truth_of(r, proj), default=str)}
        )
    csv_path = ws.projects_dir / project / "frames.csv"
    pd.DataFrame(rows).to_csv(csv_path, index=False)
    import_items(ws.store, proj, media, metadata=csv_path, progress=False)
    withdraw_failed(ws.store, proj.name, frames)
    return proj


def withdraw_failed(store: Any, project: str, frames: pd.DataFrame) -> int:
    """Withdraw every frame whose row names a reason (render sanity, App. D) from the
    benchmark, with that reason; returns how many were newly withdrawn."""
    from truthline.audit import withdraw

    if "withdrawn" not in frames:
        return 0
    n = 0
    reasons = frames["withdrawn"].fillna("").astype(str)
    for reason, keys in frames.groupby(reasons)["key"]:
        if reason.strip():
            n += withdraw(store, project, keys.astype(str), reason, decided_by="render-sanity")
    return n


def write_gold(store: Any, project: Any, frames: pd.DataFrame) -> str:
    """A gold snapshot: ``acceptable`` from the scorer (provenance ``scorer``; none for
    gray-zone frames), the documentation fields from the scene (``scene-gt``), and the
    real photos' answers already in the latest snapshot (``photo-gt``). Returns its hash
    (idempotent)."""
    from truthline.audit._gold import write_known_truth

    ids = store.item_ids_by_key(project.name)
    values = []
    for r in frames.to_dict("records"):
        if r["key"] not in ids:
            raise TruthlineError(
                f"gold: {r['key']} is not an item of {project.name}; import it first"
            )
        for f, v in truth_of(r, project).items():
            if f == "acceptable" and _truthy(r.get("gray")):
                continue  # gray zone: no verdict, left out of the acceptability set (§4)
            values.append(
                (ids[r["key"]], f, v, SCORER_PROVENANCE if f == "acceptable" else GT_PROVENANCE)
            )
    policy = {
        # the writer as gold policies have named it since the first snapshot (the module moved
        # to truthline.systems later): part of the snapshot hash, so it stays as it was
        "source": "truthline.scenes._pow",
        "acceptable": "acceptability scorer verdict",
        "documentation": "scene ground truth",
    }
    gray = int(sum(_truthy(g) for g in frames.get("gray", pd.Series(dtype=bool))))
    if gray:  # only then: snapshots of frame sets without gray frames keep their hash
        policy["gray"] = f"{gray} gray-zone frame(s) have no acceptability verdict (section 4)"
    from truthline.systems.realitybench._photos import PHOTO_PROVENANCE, latest_gold_rows

    framed = {ids[r["key"]] for r in frames.to_dict("records")}
    photos = [
        row
        for row in latest_gold_rows(store, project.name)
        if row[3] == PHOTO_PROVENANCE and row[0] not in framed
    ]
    if photos:  # real photos imported with `pow photos import` keep their gold
        values += photos
        policy["photos"] = "real-photo answers of the latest snapshot (photo-gt)"
    return write_known_truth(store, project.name, values, policy)
