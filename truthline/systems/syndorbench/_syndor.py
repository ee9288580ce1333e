"""SynDORBench end to end: renders -> camera variants -> features -> discernibility -> gold
-> benchmark -> the paper's tables.

1. **Variants.** A day render (morning/noon/evening) gives one benchmark item, the ``day``
   image. A midnight render gives two: ``night`` (the camera's raw output: sensor noise, sRGB,
   8 bit; ``_isp.camera_raw``) and ``night-vision`` (``_isp.night_vision``). Linear EXRs are
   used when the worker wrote them; a PNG-only or Workbench render (previews: Workbench
   ignores lamps) is decoded to linear and, for midnight, scaled to the mean linear level of
   a Cycles midnight frame (``night_mean``, 7e-4 as measured; recorded as ``night_from``).
2. **Features** (``_features``) of the raw and the NV image of each render, inside vs around
   the visible mask. Post-processing fans out over Ray (local, or a cluster address).
3. **Discernibility** (``_discern``): a Cochran-sized, grid-stratified sample of the night and
   night-vision items goes to people (a generated Label Studio project); the best of RF /
   XGBoost / their ensemble labels the rest (``model-propagated``).
4. **Gold**: ``present`` = person in the frame AND discernible; ``action`` / ``action_text``
   from the pose. Every value keeps its provenance (``render-gt``, ``human``,
   ``model-propagated``) in a gold snapshot of the ``dori-visibility`` project, so
   ``truthline benchmark run`` scores any model spec on it (``yolo:`` included).
5. **Tables**: ``_syndor_tables`` (the paper's tables, report and dashboard sections).

**Questions** (:func:`question_pairs`). The paper asks one question per sample (§3.3): presence
(its prompt verbatim, a bare ``1``/``0``) on every item and the open action (A.2's prompt, a
bare name) on every item whose scene holds a person; ``truthline benchmark run --variant
presence`` / ``--variant action`` ask them (``benchmark.questions`` of the project). On the
``paper`` grid of ``envs/dori_person``: 3 distances x 8 azimuths x 4 elevations x 3 scenes x
(8 actions + absent) x 4 lightings = 10,368 renders -> 7,776 day items + 2,592 night + 2,592
night-vision = 12,960 items; presence 7,776 + 2,592 + 2,592 = 12,960 pairs, action 6,912 +
2,304 + 2,304 = 11,520 (8 of 9 poses hold a person): 24,480 pairs (the closed ``action_closed``
adds 11,520: 36,000). The paper's 54,864 = 2^4 x 3^3 x 127 cannot come from its stated factors
(3, 8, 4, 4, 3, 8 levels, two night variants, two questions): no product of them holds the
prime 127, so its set is a factor-wise stratified sample (§3.1) of a size it does not give;
at two questions per image it holds 27,432 images. The gap is in frames, not in questions:
on the paper's single-human frames (no ``absent`` pose) the full grid gives 11,520 items x 2 =
23,040 pairs, and the nearest full factorial is a second texture per cell (46,080; an
``outfit`` axis of the grid, which truthline does not render by default).

SIMULATED stand-ins (annotators, the ``simulated-dori`` viewer model) live in ``_sim``;
this module imports it only to write the known truth SIMULATED models read (``sim_truth``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from truthline.errors import TruthlineError
from truthline.scenes import _isp
from truthline.systems.syndorbench import _discern, _features

__all__ = [
    "CONDITIONS",
    "FEATURE_COLUMNS",
    "PAPER_QUESTIONS",
    "action_words",
    "as_float",
    "condition_items",
    "fan_out",
    "fit_and_propagate",
    "import_benchmark",
    "items_dir",
    "label_sample",
    "load_items",
    "make_items",
    "question_pairs",
    "renders_from_store",
    "save_items",
    "write_gold",
]

CONDITIONS = ("day", "night", "night-vision")
NIGHT = frozenset({"midnight", "night"})
LABELLED = ("night", "night-vision")
"""Conditions whose presence gold needs a discernibility label (the paper's subsets)."""
FEATURE_COLUMNS = [
    *(f"raw_{k}" for k in _features.ALL_FEATURES),
    *(f"nv_{k}" for k in _features.ALL_FEATURES),
    "is_nv",
]
GT_PROVENANCE = "render-gt"
NIGHT_CAMERA = {"exposure": 4.0, "sensor_gain": 1.0}
"""The night camera: a longer shutter and analogue gain than by day (both before the ADC)."""
PROJECT = "dori-visibility"

RENDER_COLUMNS = (
    "render",  # frame id (job key)
    "scene",
    "pose",
    "lighting",
    "distance_m",
    "dori",
    "azimuth",
    "elevation",
    "present",  # a person is in the scene
    "rgb",  # path of the 8-bit render
)
"""Columns :func:`make_items` needs; optional: ``linear`` (EXR path), ``mask`` (mask PNG
path), ``ppm``, ``visible_px``, ``seed``."""


# -- fan-out ---------------------------------------------------------------------------------
def fan_out(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    *,
    workers: int = 1,
    ray_address: str | None = None,
    use_ray: bool | None = None,
) -> list[Any]:
    """``[fn(*t) for t in tasks]`` in order; over Ray when ``workers > 1``, a cluster address
    is given or ``use_ray`` (at most ``workers`` tasks at once on a local Ray: each asks for
    its share of the CPUs). Ray is imported only then; one process otherwise."""
    if use_ray is None:
        use_ray = workers > 1 or bool(ray_address)
    if not use_ray:
        return [fn(*t) for t in tasks]
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is in the scenes extra
        raise TruthlineError(f"fan-out over Ray needs the 'scenes' extra: {exc}") from None
    started = False
    if not ray.is_initialized():
        kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if ray_address:
            kw["address"] = ray_address
        else:
            kw["num_cpus"] = max(1, workers)
        ray.init(**kw)
        started = True
    try:
        total = float(ray.cluster_resources().get("CPU", 1.0))
        cpus = 1.0 if ray_address else max(total / max(1, workers), 0.01)
        remote = ray.remote(num_cpus=cpus)(_with_threads)
        threads = max(1, int(cpus))
        return list(ray.get([remote.remote(fn, threads, *t) for t in tasks]))
    finally:
        if started:
            ray.shutdown()


def _with_threads(fn: Callable[..., Any], threads: int, *args: Any) -> Any:
    """Run ``fn`` with OpenCV limited to the task's CPU share (NLM would otherwise spawn a
    thread per core in every Ray worker and oversubscribe the machine)."""
    import cv2

    cv2.setNumThreads(threads)
    return fn(*args)


# -- 1-2: variants and features --------------------------------------------------------------
def _read_linear(row: Mapping[str, Any], night_mean: float) -> tuple[np.ndarray, str]:
    lin = row.get("linear")
    # Workbench ignores the scene's lamps: its "midnight" is as bright as noon, so a
    # Workbench frame (previews, CI) is darkened like a PNG-only one
    workbench = str(row.get("engine") or "") == "BLENDER_WORKBENCH"
    if isinstance(lin, str) and lin and not workbench:
        # numpy's own EXR decoder: the host's OpenCV wheel may lack OpenEXR (5.x does)
        try:
            return _isp.read_exr(lin), "exr"
        except (OSError, ValueError, KeyError) as exc:
            raise TruthlineError(
                f"render {row['render']}: cannot read the linear EXR {lin} ({exc}); "
                "re-render it with `truthline scenes render dori --out STORE` (midnight frames "
                "keep their EXR; a rerun redoes frames whose images are missing)"
            ) from None
    rgb = _read_rgb(row["rgb"], row["render"])
    linear = _isp.srgb_decode(rgb.astype(np.float32) / 255.0)
    if str(row["lighting"]) in NIGHT:
        m = float(linear.mean())
        return linear * np.float32(night_mean / m if m > 0 else 0.0), "png-scaled"
    return linear, "png"


def _read_rgb(path: str, render: str) -> np.ndarray:
    from PIL import Image

    p = Path(path)
    if not p.is_file():
        raise TruthlineError(f"render {render}: image {p} is missing; re-render it")
    with Image.open(p) as im:
        return np.asarray(im.convert("RGB"))


def _read_mask(row: Mapping[str, Any], shape: tuple[int, int]) -> np.ndarray:
    m = row.get("mask")
    if isinstance(m, str) and m and Path(m).is_file():
        mask = _features.mask_from_image(_read_rgb(m, row["render"]))
        if mask.shape != shape:
            raise TruthlineError(
                f"render {row['render']}: mask {m} is {mask.shape}, the image {shape}"
            )
        return mask
    return np.zeros(shape, dtype=bool)


def _save_png(img: np.ndarray, path: Path) -> str:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path, optimize=False)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _seed_of(row: Mapping[str, Any], seed: int) -> int:
    h = hashlib.sha256(f"{seed}\x1f{row['render']}".encode()).digest()
    return int.from_bytes(h[:8], "big")


def process_render(
    row: dict[str, Any], out_dir: str, seed: int, nv: dict[str, Any], night_mean: float
) -> list[dict[str, Any]]:
    """The benchmark items of one render (pure: safe to run on a Ray worker)."""
    out = Path(out_dir)
    linear, source = _read_linear(row, night_mean)
    mask = _read_mask(row, linear.shape[:2])
    rng = np.random.default_rng(_seed_of(row, seed))
    base = {k: row.get(k) for k in row if k not in ("rgb", "linear", "mask")}
    base.update(visible_px_mask=int(mask.sum()), night_from=source, image_h=mask.shape[0])
    if str(row["lighting"]) not in NIGHT:
        day = (
            _isp.to_u8(_isp.srgb_encode(linear))
            if source == "exr"
            else _read_rgb(row["rgb"], row["render"])
        )
        feats = _features.discernibility_features(day, mask)
        key = f"{row['render']}-day"
        sha = _save_png(day, out / "items" / f"{key}.png")
        return [
            {
                **base,
                "key": key,
                "condition": "day",
                "image": str(out / "items" / f"{key}.png"),
                "image_sha256": sha,
                "isp": {"pipeline": "none" if source != "exr" else "srgb"},
                **{f"raw_{k}": v for k, v in feats.items()},
                **{f"nv_{k}": v for k, v in feats.items()},
                "is_nv": 0,
            }
        ]
    cam = {**NIGHT_CAMERA, **{k: v for k, v in nv.items() if k in NIGHT_CAMERA}}
    raw, raw_p = _isp.camera_raw(linear, rng, exposure=cam["exposure"], gain=cam["sensor_gain"])
    nv_img, nv_p = _isp.night_vision(linear, rng, **{**nv, **cam})
    ff = _features.frame_features({"raw": raw, "nv": nv_img}, mask)
    items = []
    for cond, img, params in (("night", raw, raw_p), ("night-vision", nv_img, nv_p)):
        key = f"{row['render']}-{cond}"
        path = out / "items" / f"{key}.png"
        sha = _save_png(img, path)
        items.append(
            {
                **base,
                "key": key,
                "condition": cond,
                "image": str(path),
                "image_sha256": sha,
                "isp": params,
                **ff,
                "is_nv": int(cond == "night-vision"),
            }
        )
    return items


def make_items(
    renders: pd.DataFrame,
    out_dir: str | Path,
    *,
    seed: int = 0,
    nv: Mapping[str, Any] | None = None,
    night_mean: float = 7e-4,
    workers: int = 1,
    ray_address: str | None = None,
    use_ray: bool | None = None,
) -> pd.DataFrame:
    """Benchmark items (one row per render x condition) with images written under
    ``out_dir/items/`` and the discernibility features of each (fanned out as
    :func:`fan_out` says)."""
    missing = [c for c in RENDER_COLUMNS if c not in renders.columns]
    if missing:
        raise TruthlineError(f"renders table: missing column(s) {', '.join(missing)}")
    tasks = [
        (r, str(out_dir), seed, dict(nv or {}), night_mean) for r in renders.to_dict("records")
    ]
    rows = fan_out(process_render, tasks, workers=workers, ray_address=ray_address, use_ray=use_ray)
    return pd.DataFrame([it for group in rows for it in group])


def renders_from_store(
    root: str | Path, env: str = "dori", job_ids: Iterable[str] | None = None
) -> pd.DataFrame:
    """The renders table :func:`make_items` reads, from a frame store written by
    ``truthline scenes render dori`` (records + content-addressed images): every ``env``
    record, or only ``job_ids`` (one grid's frames when the store holds several)."""
    from truthline.scenes._store import FrameStore

    store = FrameStore(root)
    wanted = None if job_ids is None else set(job_ids)
    rows = []
    for rec in store.records():
        if rec.env != env or (wanted is not None and rec.job_id not in wanted):
            continue
        p, gt = rec.params, rec.gt

        def path(v: str, rec: Any = rec) -> str | None:
            return str(store.variant_path(rec, v)) if v in rec.images else None

        rows.append(
            {
                "render": rec.job_id,
                "scene": p.get("scene", ""),
                "pose": p.get("pose", ""),
                "lighting": p.get("lighting", ""),
                "distance_m": p.get("distance_m"),
                "dori": gt.get("dori_class", ""),
                "azimuth": p.get("azimuth_deg"),
                "elevation": p.get("elevation_deg"),
                "present": bool(gt.get("present")),
                "ppm": gt.get("ppm_formula"),
                "visible_px": gt.get("visible_px"),
                "engine": rec.render.get("engine", ""),
                "rgb": path("rgb"),
                "linear": path("linear"),
                "mask": path("mask"),
            }
        )
    if not rows:
        raise TruthlineError(
            f"{root}: no {env!r} frame records; render some with `truthline scenes render {env}`"
        )
    return pd.DataFrame(rows).sort_values("render").reset_index(drop=True)


# -- 3: discernibility -----------------------------------------------------------------------
def _cell(df: pd.DataFrame) -> list[str]:
    return [
        f"{c}|{d}|{lt}"
        for c, d, lt in zip(df["condition"], df["distance_m"], df["lighting"], strict=True)
    ]


def label_sample(
    items: pd.DataFrame,
    *,
    confidence: float = 0.95,
    margin: float = 0.05,
    n: int | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """The Cochran-sized sample (finite population = the night and night-vision items),
    stratified by grid cell (condition x distance x lighting)."""
    pool = items[items["condition"].isin(LABELLED)].reset_index(drop=True)
    if not len(pool):
        return pool
    size = (
        n if n is not None else _discern.cochran_n(len(pool), confidence=confidence, margin=margin)
    )
    pick = _discern.stratified_sample(_cell(pool), size, seed=seed)
    out = pool.iloc[pick].reset_index(drop=True)
    out.attrs["cochran"] = {
        "population": len(pool),
        "n": size,
        "confidence": confidence,
        "margin": margin,
    }
    return out


def fit_and_propagate(
    items: pd.DataFrame, human: pd.DataFrame | None, *, seed: int = 0, **fit_kw: Any
) -> tuple[pd.DataFrame, _discern.DiscernModel | None]:
    """Fit the discernibility model on the human-labelled items and label every night and
    night-vision item; day items are discernible when any of the person is visible. With no
    night items (a daylight grid) there is nothing to propagate: the model is None."""
    day = items[~items["condition"].isin(LABELLED)].copy()
    day["discernible"] = day["visible_px_mask"].to_numpy() > 0
    day["discernible_source"] = GT_PROVENANCE
    day["discernible_model"] = None
    day["discernible_model_cv_accuracy"] = np.nan
    night = items[items["condition"].isin(LABELLED)]
    model: _discern.DiscernModel | None = None
    parts = [day]
    if len(night):
        lab = human.dropna(subset=["discernible"]) if human is not None else None
        train = (
            items.merge(lab[["key", "discernible"]], on="key", how="inner")
            if lab is not None
            else items.iloc[:0]
        )
        if not len(train):
            raise TruthlineError(
                "no human discernibility labels for any benchmark item yet; label the sample "
                "(truthline annotate push/pull on the labelling project) first"
            )
        model = _discern.fit_discernibility(
            train,
            train["discernible"].astype(bool).to_numpy(),
            features=FEATURE_COLUMNS,
            seed=seed,
            **fit_kw,
        )
        parts.append(_discern.propagate(night, model, lab))
    out = pd.concat(parts, ignore_index=True)
    # a person hidden from view (or absent) is never discernible, whoever said otherwise
    out.loc[out["visible_px_mask"] == 0, "discernible"] = False
    return out.sort_values("key").reset_index(drop=True), model


# -- 4: items and gold --------------------------------------------------------
def action_words() -> dict[str, str]:
    """The reference answer text of each pose for the open action question."""
    try:
        from truthline.scenes._humanoid import ACTION_WORDS

        return dict(ACTION_WORDS)
    except ImportError:  # pragma: no cover - the humanoid module ships with the scenes core
        return {}


def _truth(row: Mapping[str, Any]) -> dict[str, Any]:
    present = bool(row["present"]) and bool(row["discernible"])
    out: dict[str, Any] = {"present": present}
    if bool(row["present"]):
        out["action"] = str(row["pose"])
        out["action_text"] = action_words().get(
            str(row["pose"]), str(row["pose"]).replace("_", " ")
        )
    return out


META_COLUMNS = (
    "dori", "lighting", "azimuth", "elevation", "scene", "render", "distance_m", "condition",
    "pose", "ppm", "visible_px_mask", "discernible_source", "night_from",
)  # fmt: skip


def import_benchmark(
    ws: Any, items: pd.DataFrame, out_dir: str | Path, *, project: str = PROJECT
) -> Any:
    """Register the ``dori-visibility`` project in ``ws`` (from the template when missing)
    and import every item image with its strata and known truth (``sim_truth``: only
    SIMULATED models read it). Idempotent."""
    from truthline.media import import_items

    proj = (
        ws.init_project(PROJECT, name=project)
        if project not in ws.project_names()
        else ws.registered(project)
    )
    from truthline.systems.syndorbench._sim import simulated_visibility  # SIMULATED models' truth

    vis = simulated_visibility(items)
    rows = []
    for (_, r), v in zip(items.iterrows(), vis, strict=True):
        meta = {c: r.get(c) for c in META_COLUMNS if c in r}
        truth = _truth(r)
        truth["_view"] = {"visibility": round(float(v), 4), "ppm": as_float(r.get("ppm"))}
        rows.append(
            {
                "key": r["key"],
                **{k: "" if v is None else v for k, v in meta.items()},
                "sim_truth": json.dumps(truth),
            }
        )
    out = Path(out_dir)
    csv_path = out / "items.csv"
    pd.DataFrame(rows).to_csv(csv_path, index=False)
    import_items(ws.store, proj, out / "items", metadata=csv_path, progress=False)
    return proj


def as_float(v: Any) -> float | None:
    """``v`` as a float, None for missing, NaN or non-numeric values (CSV metadata)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def write_gold(
    store: Any, project: str, items: pd.DataFrame, model: _discern.DiscernModel | None = None
) -> str:
    """A gold snapshot of ``project`` from the items: ``present`` with provenance
    ``render-gt`` (day, or nobody in view) / ``human`` / ``model-propagated``; ``action``
    and ``action_text`` (``render-gt``) where a person is in the scene. Returns its hash
    (idempotent: the same values give the same snapshot)."""
    from truthline.audit._gold import write_known_truth

    ids = store.item_ids_by_key(project)
    values = []
    for r in items.to_dict("records"):
        if r["key"] not in ids:
            raise TruthlineError(f"gold: {r['key']} is not an item of {project}; import it first")
        t = _truth(r)
        prov = str(r.get("discernible_source") or GT_PROVENANCE)
        if not bool(r["present"]) or int(r.get("visible_px_mask") or 0) == 0:
            prov = GT_PROVENANCE
        values.append((ids[r["key"]], "present", t["present"], prov))
        if "action" in t:
            values.append((ids[r["key"]], "action", t["action"], GT_PROVENANCE))
            values.append((ids[r["key"]], "action_text", t["action_text"], GT_PROVENANCE))
    policy = {
        # the writer as gold policies have named it since the first snapshot (the module moved
        # to truthline.systems later): part of the snapshot hash, so it stays as it was
        "source": "truthline.scenes._syndor",
        "presence": "in frame AND discernible",
        "discernibility_model": model.summary() if model else None,
    }
    return write_known_truth(store, project, values, policy)


# -- 4b: the paper's questions --------------------------------------------------------------
PAPER_QUESTIONS = ("presence", "action")
"""The paper's two questions, prompt variants of ``dori-visibility`` (``benchmark.questions``):
presence with its §3.3 prompt and a bare ``1``/``0`` (grammar ``digit``), the action with its
A.2 open prompt and a bare name (grammar ``label``). Its ``action_closed`` (a bare label of
the declared actions) is truthline's closed form, beyond the paper."""


def condition_items(renders: pd.DataFrame) -> pd.DataFrame:
    """The items a renders table becomes, without images (as :func:`process_render` makes
    them): a day render gives its ``day`` item, a midnight render ``night`` and
    ``night-vision``. Counts a grid before anything is rendered."""
    rows = []
    for r in renders.to_dict("records"):
        conds = LABELLED if str(r["lighting"]) in NIGHT else ("day",)
        rows += [{**r, "condition": c} for c in conds]
    return pd.DataFrame(rows)


def question_pairs(
    items: pd.DataFrame, project: Any, questions: Sequence[str] = PAPER_QUESTIONS
) -> pd.DataFrame:
    """One row per question-answer pair (the module docstring counts the paper grid's): each
    item is asked each question whose fields have gold on it (:func:`write_gold`: presence
    on every item, the action where a person is in the scene). Columns: ``key`` (or
    ``render``), ``condition``, ``question``, ``fields``, ``grammar``."""
    from truthline.fields import request_grammar

    asked: dict[str, list[str]] = {}
    for q in questions:
        fields = project.question_fields(q)
        if not fields:
            raise TruthlineError(f"{project.name}: {q!r} is not a declared question")
        asked[q] = fields
    grammar = {
        q: request_grammar({f: project.field_types[f] for f in fs}) for q, fs in asked.items()
    }
    rows = []
    for r in items.to_dict("records"):
        gold = _truth({**r, "discernible": r.get("discernible", False)})
        for q, fields in asked.items():
            if all(f in gold for f in fields):
                rows.append(
                    {
                        "key": r.get("key", r.get("render")),
                        "condition": r["condition"],
                        "question": q,
                        "fields": ",".join(fields),
                        "grammar": grammar[q],
                    }
                )
    return pd.DataFrame(rows, columns=["key", "condition", "question", "fields", "grammar"])


# -- persistence between CLI steps ------------------------------------------------------------
def items_dir(ws: Any) -> Path:
    """Where a workspace keeps the SynDORBench item images and tables."""
    return Path(ws.root) / "scenes" / "dori-items"


def save_items(items: pd.DataFrame, path: Path) -> Path:
    """The items table as Parquet (the ISP parameters as JSON text)."""
    df = items.copy()
    if "isp" in df:
        df["isp"] = [json.dumps(v, sort_keys=True, default=str) for v in df["isp"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(path, index=False)
    return path


def load_items(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise TruthlineError(
            f"{path}: no SynDORBench items yet; run `truthline syndor prepare --store DIR` first"
        )
    df = pd.read_parquet(path)
    if "isp" in df:
        df["isp"] = [json.loads(v) for v in df["isp"]]
    return df
