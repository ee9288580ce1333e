"""SteelBench's appendix analyses from a run's scored decisions, and the report sections
that show them (seeds/001: Fig. 10 and Table 25 zones and domains, Fig. 12 worker count,
Table 22 CRG by action group, Table 23 safety error directions, Table 18 DRS threshold
sensitivity, App. E.5 camera confound, App. D human reference; METRICS.md §9 "SteelBench
(appendix)").

Accuracy here is the primary field's (``[benchmark] action_field``) per-decision
correctness, the leaderboard's unit, with the project's cluster bootstrap (``Scored``'s
design). Zones and domains are item metadata columns (``camera`` and ``site`` in the
steel-safety template and its SIMULATED scenario); visibility is the project's declared
condition column with its first ordered condition as the clear reference. Safety counts
and DRS come from ``_metrics`` (never recomputed here). The human reference scores the
blind arm's tier-1 annotations like a model (``score_answer``) on decisions whose gold is
expert-reviewed, so the human is never scored against gold derived from their own label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import Scored
from truthline.benchmark._types import EntryKey
from truthline.stats import CI, design_ci
from truthline.stats import fmt_ci as stats_fmt_ci
from truthline.systems.steelbench._metrics import _safety, crg, drs, perception_pairs

if TYPE_CHECKING:
    from truthline.benchmark import ReportContext
    from truthline.report import Section

ZONE_COLUMN = "camera"
"""Item metadata column naming a clip's zone (a camera's view of one plant area)."""
DOMAIN_COLUMN = "site"
"""Item metadata column grouping zones into industrial domains (Table 25)."""
MIN_ZONE_CLIPS = 10
"""Zones with fewer clips are left out of Fig. 10 and named (the paper: >= 10 clips)."""
MIN_BIN_DECISIONS = 10
"""Worker-count bins with fewer decisions are dropped from the slope and named."""
LAYER2_MAX_WORKERS = 5
"""Layer 2 (per-person fields) covers clips with 1..5 workers (App. A)."""
EXPERT = "expert"
"""Gold provenance of expert-reviewed decisions: the human reference's gold."""
STEEL_METRICS = frozenset({"crg", "dwa", "drs", "safety_recall", "false_alarm_share"})


# -- shared helpers ------------------------------------------------------------------------
def pct(ci: CI | None, sign: bool = False, unit: str = "%") -> str:
    """A share as the paper prints it: ``42.6 % [40.1, 45.0]`` (no design)."""
    if ci is None:
        return "—"
    return stats_fmt_ci(ci, digits=1, scale=100.0, unit=unit, sign=sign, design=False)


def meta_value(d: pd.DataFrame, column: str) -> pd.Series:
    """One item metadata column per decision (lists joined with '+', missing as '')."""

    def one(m: Any) -> str:
        v = (m or {}).get(column)
        if isinstance(v, list | tuple):
            return "+".join(str(x) for x in v)
        return "" if v is None else str(v)

    if "meta" not in d:
        return pd.Series([""] * len(d), index=d.index, dtype=object)
    return d["meta"].map(one)


def entry_label(row: Mapping[str, Any]) -> str:
    """An entry as the loop keys it: the model alone for a plain entry."""
    return EntryKey.of(row).id


def entries(decisions: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Entry label -> its decisions (a run's frame holds every model side by side)."""
    if not len(decisions):
        return {}
    cols = [c for c in ("model", "variant", "condition", "control") if c in decisions]
    out: dict[str, pd.DataFrame] = {}
    for key, g in decisions.groupby(cols, sort=False, dropna=False):
        vals = key if isinstance(key, tuple) else (key,)
        row = {c: (None if pd.isna(v) else v) for c, v in zip(cols, vals, strict=True)}
        out[entry_label(row)] = g.reset_index(drop=True)
    return out


def scored(project: Any, d: pd.DataFrame, rs: M.Resampling) -> Scored:
    """The loop's view of one entry (its design: clusters, strata as declared)."""
    return Scored(project, d.reset_index(drop=True), pd.DataFrame(), rs)


def _accuracy(s: Scored, rows: pd.DataFrame) -> CI | None:
    return M.accuracy(rows["correct"].astype(float), **s.boot_args(rows)) if len(rows) else None


# -- Fig. 10 / Table 25: zones and domains --------------------------------------------------
@dataclass(frozen=True)
class GroupAccuracy:
    """One model's accuracy on one zone (or domain)."""

    model: str
    group: str
    domain: str
    clips: int
    decisions: int
    accuracy: CI | None


@dataclass(frozen=True)
class ZoneAgreement:
    """Spearman rho of two models' zone accuracies, per pair and averaged (paper: 0.495)."""

    zones: tuple[str, ...]
    pairs: tuple[tuple[str, str, float], ...]
    mean_rho: float | None


@dataclass(frozen=True)
class ZoneTables:
    zones: list[GroupAccuracy]
    domains: list[GroupAccuracy]
    dropped_zones: dict[str, int]
    """Zones under the clip minimum -> their clips (left out of the zone table)."""
    spread: dict[str, float]
    """Model -> max - min zone accuracy (share)."""
    agreement: ZoneAgreement
    min_clips: int = MIN_ZONE_CLIPS


def group_accuracy(
    project: Any,
    decisions: pd.DataFrame,
    rs: M.Resampling,
    column: str,
    domain_column: str | None = None,
) -> list[GroupAccuracy]:
    """Per model and value of an item metadata column: primary-field accuracy."""
    out: list[GroupAccuracy] = []
    for label, d in entries(decisions).items():
        s = scored(project, d, rs)
        rows = s.primary_rows()
        groups = meta_value(rows, column)
        doms = meta_value(rows, domain_column) if domain_column else groups
        for g in sorted(set(groups)):
            sub = rows[groups == g]
            out.append(
                GroupAccuracy(
                    model=label,
                    group=g,
                    domain=str(doms[groups == g].iloc[0]),
                    clips=int(sub["item_id"].nunique()),
                    decisions=len(sub),
                    accuracy=_accuracy(s, sub),
                )
            )
    return out


def zone_agreement(rows: Sequence[GroupAccuracy]) -> ZoneAgreement:
    """Spearman rho between each pair of models' zone accuracies over the zones every model
    has (at least 3, else no pairs), averaged over pairs (descriptive: per-zone noise
    attenuates it, and no interval is attached)."""
    from scipy.stats import spearmanr

    acc: dict[str, dict[str, float]] = {}
    for r in rows:
        if r.accuracy is not None:
            acc.setdefault(r.model, {})[r.group] = r.accuracy.point
    models = list(acc)
    common = sorted(set.intersection(*(set(v) for v in acc.values()))) if acc else []
    pairs: list[tuple[str, str, float]] = []
    if len(common) >= 3:
        for a, b in combinations(models, 2):
            rho = spearmanr([acc[a][z] for z in common], [acc[b][z] for z in common]).statistic
            if np.isfinite(rho):
                pairs.append((a, b, float(rho)))
    mean = float(np.mean([p[2] for p in pairs])) if pairs else None
    return ZoneAgreement(tuple(common), tuple(pairs), mean)


def zone_tables(
    project: Any,
    decisions: pd.DataFrame,
    rs: M.Resampling,
    *,
    zone: str = ZONE_COLUMN,
    domain: str = DOMAIN_COLUMN,
    min_clips: int = MIN_ZONE_CLIPS,
) -> ZoneTables:
    """Fig. 10 (zones with >= ``min_clips`` clips, their spread and rank agreement across
    models) and Table 25 (the same accuracy per domain, all zones of a domain pooled)."""
    all_zones = group_accuracy(project, decisions, rs, zone, domain)
    clips = {r.group: r.clips for r in all_zones}
    dropped = {z: n for z, n in sorted(clips.items()) if n < min_clips}
    zones = [r for r in all_zones if r.group not in dropped]
    spread: dict[str, float] = {}
    for m in dict.fromkeys(r.model for r in zones):
        pts = [r.accuracy.point for r in zones if r.model == m and r.accuracy is not None]
        if pts:
            spread[m] = float(max(pts) - min(pts))
    domains = group_accuracy(project, decisions, rs, domain)
    return ZoneTables(zones, domains, dropped, spread, zone_agreement(zones), min_clips)


# -- Fig. 12: worker count ---------------------------------------------------------------
@dataclass(frozen=True)
class WorkerBin:
    workers: int
    clips: int
    decisions: int
    accuracy: CI | None


@dataclass(frozen=True)
class WorkerTrend:
    """Per-worker accuracy by the clip's gold worker count k = 1..5 and the least-squares
    slope over the kept bins (share per worker; bins weighted equally), cluster CI."""

    model: str
    bins: tuple[WorkerBin, ...]
    dropped: tuple[int, ...]
    slope: CI | None
    step_1_2: float | None
    min_decisions: int = MIN_BIN_DECISIONS


def workers_per_item(rows: pd.DataFrame) -> pd.Series:
    """Item -> its gold worker count: the distinct entities its decisions score."""
    ent = rows[rows["entity"].notna()]
    return ent.groupby("item_id")["entity"].nunique()


def slope_of(ks: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Least-squares slope of bin accuracies on k along the last axis (NaN bins make NaN)."""
    x = ks - ks.mean()
    return (acc - acc.mean(axis=-1, keepdims=True)) @ x / float(x @ x)


def worker_trend(
    s: Scored, model: str, *, min_decisions: int = MIN_BIN_DECISIONS
) -> WorkerTrend | None:
    """One model's Fig. 12 row (Layer-2 clips only: 1..5 gold workers)."""
    rows = s.primary_rows()
    rows = rows[rows["entity"].notna()] if "entity" in rows else rows.iloc[0:0]
    if not len(rows):
        return None
    k = rows["item_id"].map(workers_per_item(rows)).astype(int)
    rows, k = rows[k.between(1, LAYER2_MAX_WORKERS)], k[k.between(1, LAYER2_MAX_WORKERS)]
    bins: list[WorkerBin] = []
    dropped: list[int] = []
    for kk in sorted(set(k)):
        sub = rows[k == kk]
        bins.append(WorkerBin(int(kk), int(sub["item_id"].nunique()), len(sub), _accuracy(s, sub)))
        if len(sub) < min_decisions:
            dropped.append(int(kk))
    kept = [b.workers for b in bins if b.workers not in dropped]
    step = _step(bins)
    if len(kept) < 2:
        return WorkerTrend(model, tuple(bins), tuple(dropped), None, step, min_decisions)
    keep = k.isin(kept).to_numpy()
    rows, kv = rows[keep], k[keep].to_numpy()
    c = rows["correct"].astype(float).to_numpy()
    onehot = (kv[:, None] == np.asarray(kept)[None, :]).astype(float)
    ks = np.asarray(kept, dtype=float)

    def stat(W: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return slope_of(ks, (W @ (onehot * c[:, None])) / (W @ onehot))

    point = float(slope_of(ks, (onehot * c[:, None]).sum(0) / onehot.sum(0)))
    args = s.boot_args(rows)
    ci = design_ci(
        point,
        stat,
        len(rows),
        clusters=args.get("clusters"),
        strata=args.get("strata"),
        resamples=s.rs.resamples,
        seed=s.rs.seed,
        level=s.rs.level,
    )
    return WorkerTrend(model, tuple(bins), tuple(dropped), ci, step, min_decisions)


def _step(bins: Sequence[WorkerBin]) -> float | None:
    by = {b.workers: b.accuracy for b in bins}
    a, b = by.get(1), by.get(2)
    return None if a is None or b is None else float(b.point - a.point)


def worker_trends(
    project: Any, decisions: pd.DataFrame, rs: M.Resampling, **kw: Any
) -> list[WorkerTrend]:
    out = []
    for label, d in entries(decisions).items():
        t = worker_trend(scored(project, d, rs), label, **kw)
        if t is not None:
            out.append(t)
    return out


# -- Table 23 and Table 18: safety directions, DRS sensitivity ------------------------------
@dataclass(frozen=True)
class SafetyDirection:
    """One model's safety errors by direction (Table 23), from ``_metrics``' safety."""

    model: str
    violations: int
    caught: int
    missed: int
    false_alarms: int
    false_alarm_share: CI | None
    safety_recall: CI | None
    regime: str


def safety_directions(
    project: Any, decisions: pd.DataFrame, rs: M.Resampling
) -> list[SafetyDirection]:
    out = []
    for label, d in entries(decisions).items():
        r = _safety(scored(project, d, rs))
        if r is None:
            continue
        c = r["counts"]
        out.append(
            SafetyDirection(
                label,
                c["violations"],
                c["caught"],
                c["missed"],
                c["false_alarms"],
                r["false_alarm_share"],
                r["safety_recall"],
                r["regime"],
            )
        )
    return out


def _point(v: Any) -> float:
    """A headline value from plain metric output (``{"value": {"point": ...}}`` or a number)."""
    v = v.get("value") if isinstance(v, Mapping) else v
    if isinstance(v, CI):
        return v.point
    if isinstance(v, Mapping):
        v = v.get("point")
    try:
        return float("nan") if v is None else float(v)
    except (TypeError, ValueError):
        return float("nan")


def drs_sensitivity(
    metrics_by_model: Mapping[str, Mapping[str, Any]], checks: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """Model -> ``drs`` output (checks at, relaxed and tightened by 10 %): the stored DRS
    result where the run has one, else ``drs`` on the model's headline values."""
    out: dict[str, dict[str, Any]] = {}
    for model, m in metrics_by_model.items():
        stored = m.get("drs")
        if isinstance(stored, Mapping) and stored.get("checks"):
            out[model] = dict(stored)
        elif checks:
            out[model] = drs({k: _point(v) for k, v in m.items()}, checks)
    return out


# -- Table 22: CRG by action group ----------------------------------------------------------
MIN_GROUP_PERCEIVED = 5
"""Table 22 cells with fewer perception-correct decisions show "—" beside their n (the
paper prints every cell and warns about small n in Groups C/D; a ratio on a handful of
decisions says nothing)."""


@dataclass(frozen=True)
class GroupCRG:
    """One model's CRG among the decisions whose gold action is in one taxonomy group."""

    model: str
    group: str
    """Taxonomy group code (``A``..``F``), or ``all`` for every group pooled."""
    name: str
    perceived: int
    """Perception-correct decisions (the CRG denominator, the paper's n)."""
    crg: CI | None
    """None when ``perceived`` is under the minimum."""
    min_perceived: int = MIN_GROUP_PERCEIVED


def action_groups(project: Any) -> tuple[Callable[[Any], str | None], dict[str, str]]:
    """(code -> group, group -> name) of the action field's taxonomy (empty without one)."""
    action = project.benchmark.action_field
    ft = project.field(action) if action else None
    tax_name = getattr(getattr(ft, "spec", None), "taxonomy", None)
    tax = project.taxonomies.get(tax_name) if tax_name else None
    if ft is None or tax is None:
        return (lambda _code: None), {}
    return ft.group_of, dict(tax.groups)


def crg_by_group(
    project: Any,
    decisions: pd.DataFrame,
    rs: M.Resampling,
    *,
    min_perceived: int = MIN_GROUP_PERCEIVED,
) -> list[GroupCRG]:
    """Table 22: per model and gold action group, ``crg`` on ``perception_pairs``' rows of
    that group (the metric's own rows and cluster design, restricted), and every group
    pooled (the headline CRG)."""
    group_of, names = action_groups(project)
    if not names:
        return []
    out: list[GroupCRG] = []
    for label, d in entries(decisions).items():
        s = scored(project, d, rs)
        j = perception_pairs(s)
        if j is None or not len(j):
            continue
        groups = j["gold"].map(lambda c: group_of(c) if isinstance(c, str) else None)
        seen = [g for g in dict.fromkeys(groups) if g is not None and g not in names]
        cells = [(g, names.get(g, g), (groups == g).to_numpy()) for g in [*names, *seen]]
        cells.append(("all", "all groups", np.ones(len(j), dtype=bool)))
        for g, name, mask in cells:
            sub = j[mask]
            n = int(sub["correct_a"].astype(bool).sum())
            ci = None
            if n >= max(min_perceived, 1):
                ci = crg(sub["correct_a"], sub["correct_s"], **s.boot_args(sub))
            out.append(GroupCRG(label, g, name, n, ci, min_perceived))
    return out


def _crg_cell(r: GroupCRG) -> str:
    if r.crg is None:
        return f"— (n={r.perceived})"
    return f"{stats_fmt_ci(r.crg, digits=2, design=False)} (n={r.perceived})"


def _crg_group_rows(rows: Sequence[GroupCRG]) -> list[dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        row = out.setdefault(r.model, {"model": r.model})
        col = "all" if r.group == "all" else f"{r.group} {r.name}".strip()
        row[col] = _crg_cell(r)
        if r.group == "all":
            row["n"] = r.perceived
    return list(out.values())


def crg_group_sections(t: Mapping[str, Any]) -> list[Section]:
    """The Table 22 section (only when the action field has a taxonomy and rows)."""
    from truthline.report import Section

    rows: Sequence[GroupCRG] = t.get("crg_groups") or []
    if not rows:
        return []
    table = named(_crg_group_rows(rows), t)
    return [
        Section.of(
            "SteelBench: CRG by action group (Table 22)",
            "Conditional reasoning gap per gold action group of the action taxonomy: among "
            "the decisions whose action is perceived correctly, the share with a wrong "
            "safety judgment (lower is better); n: the perception-correct decisions. Cells "
            f"under {rows[0].min_perceived} show — with their n; 'all' pools every group "
            "(the headline CRG). Cluster bootstrap CIs as the project declares.",
            table,
            n=[r.get("n") for r in table],
            metrics=["crg"],
        )
    ]


# -- App. E.5: camera confound ------------------------------------------------------------
@dataclass(frozen=True)
class CameraConfound:
    """Cramér's V of the clip table camera x visibility (uncorrected chi-square)."""

    cramers_v: float | None
    clips: int
    cameras: int
    conditions: int


@dataclass(frozen=True)
class VisibilityEffect:
    """Accuracy under one condition minus under clear: inside each camera having both,
    averaged with weights n_v n_clear / (n_v + n_clear) (n: decisions), and unstratified."""

    model: str
    condition: str
    within_camera: CI | None
    unstratified: CI | None
    cameras_used: int
    cameras_lacking: int
    n: int
    """Decisions under the condition or clear."""


def cramers_v(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """sqrt(chi2 / (N (min(r, c) - 1))) of the contingency table of ``a`` x ``b``."""
    from scipy.stats import chi2_contingency

    table = pd.crosstab(pd.Series(list(a)), pd.Series(list(b))).to_numpy()
    r, c = table.shape
    if min(r, c) < 2:
        return None
    chi2 = chi2_contingency(table, correction=False)[0]
    return float(np.sqrt(chi2 / (table.sum() * (min(r, c) - 1))))


def camera_confound(decisions: pd.DataFrame, camera: str, visibility: str) -> CameraConfound:
    clips = decisions.drop_duplicates("item_id")
    cam, vis = meta_value(clips, camera), meta_value(clips, visibility)
    return CameraConfound(cramers_v(cam, vis), len(clips), cam.nunique(), vis.nunique())


Cell = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Per resampling unit: right and all decisions under the condition, then under clear."""


def _effect_stat(cells: list[Cell]) -> Callable[[np.ndarray], np.ndarray]:
    """Weighted mean over cameras of acc(v) - acc(clear); weights from resampled counts."""

    def stat(W: np.ndarray) -> np.ndarray:
        num = np.zeros(W.shape[0])
        den = np.zeros(W.shape[0])
        with np.errstate(invalid="ignore", divide="ignore"):
            for rv, nv_, rc, nc_ in cells:
                nv, nc = W @ nv_, W @ nc_
                diff = (W @ rv) / nv - (W @ rc) / nc
                w = nv * nc / (nv + nc)
                ok = (nv > 0) & (nc > 0)
                num += np.where(ok, w * diff, 0.0)
                den += np.where(ok, w, 0.0)
            return num / den

    return stat


def _effect_ci(
    c: np.ndarray,
    masks: list[tuple[np.ndarray, np.ndarray]],
    clusters: list[Any] | None,
    rs: M.Resampling,
) -> CI | None:
    """The weighted effect over (condition, clear) decision masks with its CI (bounded to
    [-1, 1]); decisions summed per cluster first, so each resample costs clusters, not
    decisions (the same statistic and design)."""
    if not masks:
        return None
    labels = clusters if clusters is not None else list(range(len(c)))
    _, codes = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    g = int(codes.max()) + 1

    def per(x: np.ndarray) -> np.ndarray:
        return np.bincount(codes, weights=x, minlength=g)

    cells = [(per(mv * c), per(mv), per(mc * c), per(mc)) for mv, mc in masks]
    stat = _effect_stat(cells)
    pt = float(stat(np.ones((1, g)))[0])
    units = list(range(g)) if clusters is not None else None
    return design_ci(pt, stat, g, clusters=units, resamples=rs.resamples, seed=rs.seed,
                     level=rs.level, bounds=(-1.0, 1.0))  # fmt: skip


def visibility_effects(
    project: Any,
    decisions: pd.DataFrame,
    rs: M.Resampling,
    *,
    camera: str = ZONE_COLUMN,
    visibility: str,
    clear: str,
) -> list[VisibilityEffect]:
    """Per model and non-clear condition: the within-camera effect beside the unstratified
    one, both with a cluster bootstrap CI (clusters as the project declares)."""
    out: list[VisibilityEffect] = []
    for label, d in entries(decisions).items():
        s = scored(project, d, rs)
        rows = s.primary_rows().reset_index(drop=True)
        if not len(rows):
            continue
        cam, vis = meta_value(rows, camera).to_numpy(), meta_value(rows, visibility).to_numpy()
        c = rows["correct"].astype(float).to_numpy()
        clusters = s.boot_args(rows).get("clusters")
        is_clear = (vis == clear).astype(float)
        for v in sorted(set(vis) - {clear}):
            is_v = (vis == v).astype(float)
            both = [k for k in sorted(set(cam)) if {v, clear} <= set(vis[cam == k])]
            cells = [(is_v * (cam == k), is_clear * (cam == k)) for k in both]
            flat = [(is_v, is_clear)] if is_clear.any() else []
            out.append(
                VisibilityEffect(
                    label,
                    v,
                    _effect_ci(c, cells, clusters, rs),
                    _effect_ci(c, flat, clusters, rs),
                    len(both),
                    len(set(cam[vis == v])) - len(both),
                    int(is_v.sum() + is_clear.sum()),
                )
            )
    return out


# -- App. D: human reference ---------------------------------------------------------------
@dataclass(frozen=True)
class HumanReference:
    """The blind arm's humans scored like a model on expert-gold decisions."""

    who: str
    clips: int
    decisions: int
    accuracy: CI | None


@dataclass(frozen=True)
class HumanGap:
    """Human (blind arm, pooled) minus a model on the same decisions, paired cluster CI."""

    model: str
    clips: int
    decisions: int
    model_accuracy: CI | None
    gap: CI | None
    best: bool


def blind_annotations(store: Any, project: str, item_ids: Iterable[int]) -> pd.DataFrame:
    """Long table (item_id, annotator, field_path, value) of blind-arm tier-1 annotations
    of ``item_ids``; deleted and skipped ones left out."""
    from sqlalchemy import select

    from truthline.store import tables

    a = tables.annotations
    ids = sorted({int(i) for i in item_ids})
    with store.begin() as conn:
        rows = conn.execute(
            select(a.c.item_id, a.c.annotator, a.c.field_path, a.c.value).where(
                a.c.project == project,
                a.c.arm == "blind",
                a.c.tier == 1,
                a.c.deleted_at.is_(None),
                a.c.skipped.is_(False),
                a.c.item_id.in_(ids),
            )
        ).all()
    return pd.DataFrame(
        [tuple(r) for r in rows], columns=["item_id", "annotator", "field_path", "value"]
    )


def _normalized(project: Any, name: str, value: Any) -> Any:
    ft = project.field_types.get(name)
    if ft is None or value is None:
        return value
    try:
        return ft.normalize(value)
    except (TypeError, ValueError, AttributeError):
        return value


def score_humans(project: Any, gold_rows: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    """Each blind annotation scored against the run's gold like a model's answer, kept on
    the primary field's expert-gold decisions (columns item_id, parent, path, annotator,
    correct)."""
    from truthline.benchmark._scoring import score_answer

    cols = ["item_id", "parent", "path", "annotator", "correct"]
    if not len(annotations) or not len(gold_rows):
        return pd.DataFrame(columns=cols)
    primary = project.benchmark.action_field
    targets = list(project.benchmark.target_fields or [])
    g = gold_rows.drop_duplicates(["item_id", "path"])
    out: list[dict[str, Any]] = []
    for (item, who), a in annotations.groupby(["item_id", "annotator"], sort=True):
        gi = g[g["item_id"] == item]
        if not len(gi):
            continue
        gold = dict(zip(gi["path"], gi["gold"], strict=True))
        prov = dict(zip(gi["path"], gi["provenance"], strict=True))
        values = {
            f: _normalized(project, f, v) for f, v in zip(a["field_path"], a["value"], strict=True)
        }
        parent = gi["parent"].iloc[0] if "parent" in gi else None
        for dec in score_answer(project, gold, prov, values, targets)["decisions"]:
            if dec["provenance"] == EXPERT and (not primary or dec["field"] == primary):
                out.append(
                    {
                        "item_id": item,
                        "parent": parent,
                        "path": dec["path"],
                        "annotator": str(who),
                        "correct": bool(dec["correct"]),
                    }
                )
    return pd.DataFrame(out, columns=cols)


def _clusters(d: pd.DataFrame) -> list[Any] | None:
    if "parent" in d and d["parent"].notna().any():
        return d["parent"].fillna(d["item_id"].astype(str)).astype(str).tolist()
    return None


def human_reference(
    humans: pd.DataFrame, rs: M.Resampling
) -> tuple[list[HumanReference], pd.DataFrame]:
    """Each annotator's accuracy, and the pooled human (per decision the mean correctness of
    the annotators who labelled it); also the pooled per-decision table for the gap."""
    if not len(humans):
        return [], pd.DataFrame(columns=["item_id", "parent", "path", "correct"])
    out = []
    for who, g in humans.groupby("annotator", sort=True):
        acc = M.accuracy(
            g["correct"].astype(float), units=g["item_id"].tolist(), clusters=_clusters(g), rs=rs
        )
        out.append(HumanReference(str(who), int(g["item_id"].nunique()), len(g), acc))
    pooled = (
        humans.assign(correct=humans["correct"].astype(float))
        .groupby(["item_id", "path"], as_index=False)
        .agg(parent=("parent", "first"), correct=("correct", "mean"))
    )
    acc = M.accuracy(
        pooled["correct"], units=pooled["item_id"].tolist(), clusters=_clusters(pooled), rs=rs
    )
    out.append(
        HumanReference("blind arm (pooled)", int(pooled["item_id"].nunique()), len(pooled), acc)
    )
    return out, pooled


def human_gaps(pooled: pd.DataFrame, decisions: pd.DataFrame, rs: M.Resampling) -> list[HumanGap]:
    """Pooled human minus each model on the decisions both have (paired, cluster CI); the
    best model by accuracy on those decisions is marked (the paper's headline gap)."""
    rows: list[tuple[str, pd.DataFrame, CI, CI]] = []
    if not len(pooled):
        return []
    for label, d in entries(decisions).items():
        j = pooled.merge(
            d[["item_id", "path", "correct"]].drop_duplicates(["item_id", "path"]),
            on=["item_id", "path"],
            suffixes=("_h", "_m"),
        )
        if not len(j):
            continue
        args = {"units": j["item_id"].tolist(), "clusters": _clusters(j), "rs": rs}
        m_acc = M.accuracy(j["correct_m"].astype(float), **args)
        diff = M.paired_difference(
            j["correct_h"].astype(float), j["correct_m"].astype(float), **args
        )
        rows.append((label, j, m_acc, diff["difference"]))
    if not rows:
        return []
    best = max(rows, key=lambda r: r[2].point)[0]
    return [
        HumanGap(m, int(j["item_id"].nunique()), len(j), a, g, m == best) for m, j, a, g in rows
    ]


# -- report -----------------------------------------------------------------------------------
def is_steel(project: Any) -> Callable[[pd.DataFrame], bool]:
    """Whether a run's decisions are SteelBench-like: they score the action field and the
    project lists a SteelBench metric."""
    action = project.benchmark.action_field
    listed = bool(STEEL_METRICS & set(project.benchmark.metrics or []))

    def keep(d: pd.DataFrame) -> bool:
        return listed and bool(action) and bool(len(d)) and action in set(d["field"])

    return keep


def _zone_rows(rows: Sequence[GroupAccuracy], what: str) -> list[dict[str, Any]]:
    return [
        {
            what: r.group,
            **({"domain": r.domain} if what == "zone" else {}),
            "model": r.model,
            "clips": r.clips,
            "accuracy": pct(r.accuracy),
            "n": r.decisions,
        }
        for r in sorted(rows, key=lambda r: (r.group, r.model))
    ]


def _trend_rows(trends: Sequence[WorkerTrend]) -> list[dict[str, Any]]:
    out = []
    for t in trends:
        row: dict[str, Any] = {"model": t.model}
        for b in t.bins:
            mark = " (dropped)" if b.workers in t.dropped else ""
            row[f"k={b.workers}"] = f"{pct(b.accuracy)} (n={b.decisions}){mark}"
        row["slope (pp/worker)"] = pct(t.slope, sign=True, unit=" pp") if t.slope else "—"
        row["1→2 step (pp)"] = f"{100 * t.step_1_2:+.1f}" if t.step_1_2 is not None else "—"
        row["n"] = sum(b.decisions for b in t.bins)
        out.append(row)
    return out


def _safety_rows(rows: Sequence[SafetyDirection]) -> list[dict[str, Any]]:
    return [
        {
            "model": r.model,
            "false alarms": r.false_alarms,
            "missed violations": r.missed,
            "caught": r.caught,
            "false-alarm share": pct(r.false_alarm_share),
            "safety recall": pct(r.safety_recall),
            "regime": r.regime,
            "n": r.violations,
        }
        for r in rows
    ]


def _drs_rows(sens: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for model, r in sens.items():
        for c in r.get("checks", []):
            out.append(
                {
                    "model": model,
                    "check": c["check"],
                    "value": "—" if c["value"] is None else f"{_point(c['value']):.3f}",
                    "threshold": f"{c['op']} {c['threshold']:.3f}",
                    "pass": "yes" if c["pass"] else "no",
                    "relaxed -10%": f"{c['relaxed_threshold']:.3f}: "
                    + ("yes" if c["pass_relaxed"] else "no"),
                    "tightened +10%": f"{c['strict_threshold']:.3f}: "
                    + ("yes" if c["pass_strict"] else "no"),
                }
            )
        out.append(
            {
                "model": model,
                "check": "DRS",
                "value": f"{r['drs']:.2f}",
                "threshold": "",
                "pass": "",
                "relaxed -10%": f"{r['drs_relaxed']:.2f}",
                "tightened +10%": f"{r['drs_strict']:.2f}",
            }
        )
    return out


def _effect_rows(effects: Sequence[VisibilityEffect]) -> list[dict[str, Any]]:
    return [
        {
            "model": e.model,
            "condition": e.condition,
            "within camera (pp)": pct(e.within_camera, sign=True, unit=" pp"),
            "unstratified (pp)": pct(e.unstratified, sign=True, unit=" pp"),
            "cameras with both": e.cameras_used,
            "cameras lacking clear": e.cameras_lacking,
        }
        for e in effects
    ]


def _board_metrics(ctx: ReportContext) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for m in ctx.data.get("leaderboard") or []:
        if getattr(m, "slice", "all") == "all":
            out[m.key.id] = m.metrics
    return out


def steel_tables(
    project: Any,
    decisions: pd.DataFrame,
    rs: M.Resampling,
    *,
    metrics_by_model: Mapping[str, Mapping[str, Any]] | None = None,
    annotations: pd.DataFrame | None = None,
    min_clips: int = MIN_ZONE_CLIPS,
    min_bin: int = MIN_BIN_DECISIONS,
) -> dict[str, Any]:
    """Every table of this module from one frame of decisions (typed results)."""
    cond = project.benchmark.conditions
    vis_col = cond.column if cond else "visibility"
    clear = cond.order[0] if cond and cond.order else "clear"
    humans, pooled = human_reference(
        score_humans(project, decisions_of_first(decisions), annotations)
        if annotations is not None
        else pd.DataFrame(),
        rs,
    )
    return {
        "zones": zone_tables(project, decisions, rs, min_clips=min_clips),
        "workers": worker_trends(project, decisions, rs, min_decisions=min_bin),
        "safety": safety_directions(project, decisions, rs),
        "drs": drs_sensitivity(metrics_by_model or {}, project.benchmark.checks or {}),
        "confound": camera_confound(decisions, ZONE_COLUMN, vis_col),
        "visibility": visibility_effects(project, decisions, rs, visibility=vis_col, clear=clear),
        "human": humans,
        "human_gap": human_gaps(pooled, decisions, rs),
    }


def decisions_of_first(decisions: pd.DataFrame) -> pd.DataFrame:
    """One entry's decisions: the gold (and its provenance) is the same for every entry."""
    e = entries(decisions)
    return next(iter(e.values())) if e else decisions


def report_sections(ctx: ReportContext) -> list[Section]:
    """SteelBench's appendix sections of ``truthline benchmark report`` (entry point
    ``truthline.report_sections``); empty unless the runs are SteelBench-like."""
    from truthline.benchmark import run_decisions
    from truthline.benchmark._registry import plain

    dec = run_decisions(ctx.store, ctx.project, ctx.run_ids, is_steel(ctx.project))
    if dec is None:
        return []
    b = ctx.project.benchmark
    rs = M.Resampling(ctx.resamples if ctx.resamples is not None else b.bootstrap_resamples, b.seed)
    ann = blind_annotations(ctx.store, ctx.project.name, dec["item_id"]) if ctx.store else None
    t = steel_tables(ctx.project, dec, rs, metrics_by_model=_board_metrics(ctx), annotations=ann)
    t |= layer_tables(ctx.project, dec, rs)  # per-layer accuracy; Fig. 12 on Layer 2 only
    t["crg_groups"] = crg_by_group(ctx.project, dec, rs)  # Table 22
    t["labels"] = {
        m.key.id: m.key.label(simulated=m.simulated) for m in ctx.data.get("leaderboard") or []
    }
    ctx.data["steelbench"] = plain(t)
    return sections(t) + layer_sections(t) + crg_group_sections(t)


def _label(t: Mapping[str, Any], model: str) -> str:
    """An entry as the report names it (``[SIMULATED]`` marked), from ``t["labels"]``."""
    return str((t.get("labels") or {}).get(model, model))


def named(rows: list[dict[str, Any]], t: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Table rows with each entry id replaced by the report's label of that entry."""
    return [{**r, "model": _label(t, r["model"])} if "model" in r else r for r in rows]


def sections(t: Mapping[str, Any]) -> list[Section]:
    """The report sections of ``steel_tables``' output (only those with rows)."""
    from truthline.report import Section

    z: ZoneTables = t["zones"]
    secs: list[Section] = []
    if z.zones or z.dropped_zones:
        dropped = ", ".join(f"{k} ({n})" for k, n in z.dropped_zones.items()) or "none"
        spread = "; ".join(f"{m} {100 * v:.1f} pp" for m, v in z.spread.items()) or "—"
        rho = "—" if z.agreement.mean_rho is None else f"{z.agreement.mean_rho:.3f}"
        secs.append(
            Section.of(
                "SteelBench: accuracy per zone (Fig. 10)",
                f"Primary-field accuracy per zone ({ZONE_COLUMN}) with >= {z.min_clips} clips "
                f"(dropped: {dropped}); spread (max - min): {spread}. Cross-model Spearman rho "
                f"of zone rankings, mean over {len(z.agreement.pairs)} model pairs on "
                f"{len(z.agreement.zones)} shared zones: {rho} (descriptive, no interval).",
                named(_zone_rows(z.zones, "zone"), t),
                n=[r.decisions for r in z.zones],
                metrics=["accuracy"],
            )
        )
    if z.domains:
        secs.append(
            Section.of(
                "SteelBench: accuracy per domain (Table 25)",
                f"Zones grouped into domains ({DOMAIN_COLUMN}), all of a domain's clips pooled.",
                named(_zone_rows(z.domains, "domain"), t),
                n=[r.decisions for r in z.domains],
                metrics=["accuracy"],
            )
        )
    if t["workers"]:
        secs.append(
            Section.of(
                "SteelBench: accuracy by worker count (Fig. 12)",
                "Per-worker accuracy on Layer-2 clips by gold worker count k (1-5); slope: "
                "least-squares over the kept bins, bins weighted equally, cluster bootstrap CI "
                f"refitting per resample; bins under {t['workers'][0].min_decisions} decisions "
                "dropped.",
                named(_trend_rows(t["workers"]), t),
                n=[r["n"] for r in _trend_rows(t["workers"])],
                metrics=["accuracy"],
            )
        )
    if t["safety"]:
        secs.append(
            Section.of(
                "SteelBench: safety error direction (Table 23)",
                "False alarms (a safe worker flagged) and missed violations per model; n: the "
                "true violations.",
                named(_safety_rows(t["safety"]), t),
                n=[r.violations for r in t["safety"]],
                metrics=["safety_recall", "false_alarm_share"],
            )
        )
    if t["drs"]:
        secs.append(
            Section.of(
                "SteelBench: DRS threshold sensitivity (Table 18)",
                "Each declared check at its threshold, relaxed 10 % in the model's favour and "
                "tightened 10 %; DRS = share of checks passed.",
                named(_drs_rows(t["drs"]), t),
                metrics=["drs"],
            )
        )
    secs += _confound_sections(t)
    return secs


def _confound_sections(t: Mapping[str, Any]) -> list[Section]:
    from truthline.report import Section

    out: list[Section] = []
    c: CameraConfound = t["confound"]
    if t["visibility"] or c.cramers_v is not None:
        v = "—" if c.cramers_v is None else f"{c.cramers_v:.2f}"
        out.append(
            Section.of(
                "SteelBench: camera confound (App. E.5)",
                f"Cramér's V between camera and visibility over {c.clips} clips "
                f"({c.cameras} cameras x {c.conditions} conditions, uncorrected chi-square): {v}. "
                "Effect = accuracy under the condition minus under clear, inside each camera "
                "having both (weights n_v n_clear / (n_v + n_clear), n: decisions), beside the "
                "unstratified effect; cluster bootstrap CIs.",
                named(_effect_rows(t["visibility"]), t),
                n=[e.n for e in t["visibility"]],
                metrics=["accuracy"],
            )
        )
    if t["human"]:
        rows = [
            {"who": h.who, "clips": h.clips, "accuracy": pct(h.accuracy), "n": h.decisions}
            for h in t["human"]
        ]
        rows += [
            {
                "who": f"model: {_label(t, g.model)}{' (best)' if g.best else ''}",
                "clips": g.clips,
                "accuracy": pct(g.model_accuracy),
                "human - model (pp)": pct(g.gap, sign=True, unit=" pp"),
                "n": g.decisions,
            }
            for g in t["human_gap"]
        ]
        out.append(
            Section.of(
                "SteelBench: human reference (App. D)",
                "Blind-arm annotations scored like a model against expert-reviewed gold only "
                "(never gold derived from the same human), primary field; the pooled human "
                "averages the annotators of each decision. Gap: pooled human minus model on the "
                "same decisions, paired cluster bootstrap CI.",
                rows,
                n=[r["n"] for r in rows],
                metrics=["accuracy", "paired_difference"],
            )
        )
    return out


# -- App. A: annotation layers ------------------------------------------------------------------
NO_LAYER = 0
"""The layer column of a decision whose item has no layer (no ``[layers]``, or no count)."""


@dataclass(frozen=True)
class LayerAccuracy:
    """One model's accuracy over every scored decision of one annotation layer's clips
    (Layer 1: scene-level fields only; Layer 2: scene-level and per-worker), cluster CI."""

    model: str
    layer: int
    clips: int
    decisions: int
    accuracy: CI | None


def with_layers(project: Any, decisions: pd.DataFrame) -> pd.DataFrame:
    """``decisions`` with a ``layer`` column: its item's layer from the item metadata the
    decision carries (``item_layer``; ``NO_LAYER`` where there is none)."""
    from truthline.project import item_layer

    d = decisions.copy()
    if not len(d):
        d["layer"] = pd.Series(dtype=int)
        return d
    metas = d["meta"] if "meta" in d else pd.Series([None] * len(d), index=d.index)
    d["layer"] = [
        (lay.layer if (lay := item_layer(project, m)) is not None else NO_LAYER) for m in metas
    ]
    return d


def layer_accuracy(project: Any, decisions: pd.DataFrame, rs: M.Resampling) -> list[LayerAccuracy]:
    """Per model and layer: accuracy over every scored decision (all target fields) of
    that layer's clips; empty unless the project declares ``[layers]`` and some item has
    a count."""
    if getattr(project, "layers", None) is None or not len(decisions):
        return []
    layered = with_layers(project, decisions)
    if not (layered["layer"] != NO_LAYER).any():  # no item has a count: nothing to split
        return []
    out = []
    for label, d in entries(layered).items():
        s = scored(project, d.drop(columns="layer"), rs)
        for layer in sorted(set(d["layer"])):
            rows = s.decisions[(d["layer"] == layer).to_numpy()]
            rows = rows[rows["correct"].notna()]
            out.append(
                LayerAccuracy(
                    label, int(layer), int(rows["item_id"].nunique()), len(rows), _accuracy(s, rows)
                )
            )
    return out


def layer2_worker_trends(
    project: Any, decisions: pd.DataFrame, rs: M.Resampling, **kw: Any
) -> list[WorkerTrend]:
    """Fig. 12 on Layer 2 clips only: with ``[layers]``, the decisions of items whose
    metadata puts them in Layer 1 are left out, whatever their gold count; items without a
    count keep the gold-count rule (1..5 gold workers) alone."""
    if getattr(project, "layers", None) is None:
        return worker_trends(project, decisions, rs, **kw)
    d = with_layers(project, decisions)
    return worker_trends(project, d[d["layer"] != 1].drop(columns="layer"), rs, **kw)


def layer_tables(project: Any, decisions: pd.DataFrame, rs: M.Resampling) -> dict[str, Any]:
    """The layer tables, merged into ``steel_tables``' output (``workers`` replaced by its
    Layer-2-only form when the project declares layers)."""
    if getattr(project, "layers", None) is None:
        return {"layers": []}
    return {
        "layers": layer_accuracy(project, decisions, rs),
        "workers": layer2_worker_trends(project, decisions, rs),
    }


def _layer_rows(rows: Sequence[LayerAccuracy]) -> list[dict[str, Any]]:
    return [
        {
            "model": r.model,
            "layer": f"Layer {r.layer}" if r.layer != NO_LAYER else "no layer (count missing)",
            "clips": r.clips,
            "accuracy": pct(r.accuracy),
            "n": r.decisions,
        }
        for r in sorted(rows, key=lambda r: (r.model, r.layer))
    ]


def layer_sections(t: Mapping[str, Any]) -> list[Section]:
    """The per-layer accuracy section (only when there are rows)."""
    from truthline.report import Section

    rows: Sequence[LayerAccuracy] = t.get("layers") or []
    if not rows:
        return []
    return [
        Section.of(
            "SteelBench: accuracy per annotation layer (App. A)",
            "Accuracy over every scored decision of each layer's clips: Layer 1 clips (more "
            "than 5 workers, or none) are scored on scene-level fields only, Layer 2 clips "
            "(1-5 workers) on scene-level and per-worker fields; the layer comes from each "
            "item's metadata count. Cluster bootstrap CIs.",
            named(_layer_rows(rows), t),
            n=[r.decisions for r in rows],
            metrics=["accuracy"],
        )
    ]
