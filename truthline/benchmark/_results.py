"""Results: what the CLI, reports and Streamlit dashboards all read.

``load_run`` turns a run's stored rows into decision/entity DataFrames; ``leaderboard``,
``model_metrics``, ``compare_gold`` and ``paired_matrix`` compute from them and return the
typed results of ``truthline.benchmark._types`` (``as_dict()`` at the JSON edge). Outcome
accounting (METRICS.md §5): model failures are scored wrong and stay in the denominator;
infrastructure-missing answers are excluded and reported as coverage; the format rate is
the share of returned answers that parse.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select

from truthline.audit._gold import SLICES, in_slice
from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import Scored, compute_metrics, confidence_value, plain
from truthline.benchmark._runner import load_manifest
from truthline.benchmark._types import (
    CI,
    BoardEntry,
    EntryKey,
    FieldBalanced,
    GoldComparison,
    PairedCell,
    PairedMatrix,
    SliceScores,
)
from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.stats import is_count_share
from truthline.store import Store, tables

ENTRY = ["model", "variant", "condition", "control"]


@dataclass
class RunData:
    run_id: str
    manifest: dict[str, Any]
    decisions: pd.DataFrame
    entities: pd.DataFrame
    outcomes: pd.DataFrame
    """One row per (entry, item): status and failure reason."""

    def entries(self) -> list[EntryKey]:
        """The run's entries, in stored order (model, then item)."""
        if not len(self.outcomes):
            return []
        return [
            EntryKey(*x) for x in self.outcomes[ENTRY].drop_duplicates().itertuples(index=False)
        ]


def list_runs(store: Store, project: str | None = None) -> list[dict[str, Any]]:
    t = tables.runs
    q = select(t.c.id, t.c.project, t.c.status, t.c.created_at, t.c.manifest).order_by(
        t.c.created_at
    )
    if project:
        q = q.where(t.c.project == project)
    with store.begin() as conn:
        rows = conn.execute(q).all()
    return [
        {
            "run_id": r.id,
            "project": r.project,
            "status": r.status,
            "created_at": r.created_at.isoformat() if r.created_at else None,
            "gold_snapshot": (r.manifest or {}).get("gold_snapshot"),
            "models": sorted({e["model"] for e in (r.manifest or {}).get("entries", {}).values()}),
        }
        for r in rows
    ]


def load_run(store: Store, run_id: str, project: Project | None = None) -> RunData:
    """A run's scored decisions joined with item metadata (parent, stratum, condition)."""
    manifest = load_manifest(store, run_id)
    r, it = tables.run_results, tables.items
    with store.begin() as conn:
        rows = conn.execute(
            select(
                r.c.model,
                r.c.variant,
                r.c.condition,
                r.c.control,
                r.c.item_id,
                r.c.status,
                r.c.scores,
                it.c.parent,
                it.c.meta,
                it.c.key,
            )
            .join(it, it.c.id == r.c.item_id)
            .where(r.c.run_id == run_id)
            .order_by(r.c.model, r.c.item_id)
        ).all()
    settings = project.benchmark if project else None
    strata = settings.strata if settings else []
    cond_col = settings.conditions.column if settings and settings.conditions else None
    conf_ft = None
    if project and settings and settings.confidence_field:
        conf_ft = project.field(settings.confidence_field)
    per_entity_conf = bool(
        settings and settings.confidence_field and "." in settings.confidence_field
    )
    dec: list[dict[str, Any]] = []
    ent: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for row in rows:
        scores = row.scores or {}
        meta = row.meta or {}
        base = {
            "model": row.model,
            "variant": row.variant,
            "condition": row.condition,
            "control": row.control,
            "item_id": row.item_id,
        }
        out.append(
            {
                **base,
                "status": row.status,
                "reason": scores.get("reason"),
                "cost_usd": scores.get("cost_usd", 0.0),
            }
        )
        if row.status == "infra_missing":
            continue
        ctx = {
            "parent": row.parent,
            "stratum": "|".join(str(meta.get(s, "")) for s in strata) if strata else None,
            "cond": str(meta.get(cond_col))
            if cond_col and meta.get(cond_col) is not None
            else None,
            "confidence": confidence_value(conf_ft, scores.get("confidence"))
            if conf_ft and not per_entity_conf
            else None,
            "key": row.key,
            "meta": meta,
        }
        for d in scores.get("decisions", []):
            row_d = {**base, **ctx, "status": row.status, **d}
            if "confidence" in d:  # per-entity stated confidence (e.g. workers.confidence)
                row_d["confidence"] = (
                    confidence_value(conf_ft, d["confidence"]) if conf_ft else None
                )
            dec.append(row_d)
        for name, c in (scores.get("entities") or {}).items():
            ent.append({**base, "parent": row.parent, "list": name, **c})
    decisions = pd.DataFrame(dec)
    if len(decisions):
        decisions = decisions.rename(columns={"cond": "condition_value"})
    return RunData(run_id, manifest, decisions, pd.DataFrame(ent), pd.DataFrame(out))


def run_decisions(
    store: Store,
    project: Project,
    run_ids: Sequence[str],
    keep: Callable[[pd.DataFrame], bool] | None = None,
) -> pd.DataFrame | None:
    """The scored decisions of several runs in one frame, keeping only the runs ``keep``
    accepts (a system's sections ask for the runs of their own kind); None when none is kept."""
    parts = [load_run(store, rid, project).decisions for rid in run_ids]
    parts = [p for p in parts if keep is None or keep(p)]
    return pd.concat(parts, ignore_index=True) if parts else None


def _entry_mask(df: pd.DataFrame, entry: tuple[str, str, str, str]) -> Any:
    m = np.ones(len(df), dtype=bool)
    for col, val in zip(ENTRY, entry, strict=True):
        m &= (df[col] == val).to_numpy()
    return m


def scored_for(
    run: RunData,
    project: Project,
    entry: tuple[str, str, str, str],
    slice_: str = "all",
    *,
    resamples: int | None = None,
) -> Scored:
    """The ``Scored`` view of one entry, restricted to a gold provenance slice."""
    d = run.decisions
    d = d[_entry_mask(d, entry)] if len(d) else d
    if len(d) and slice_ != "all":
        arms = _arms_of(run)
        keep = [
            in_slice(slice_, p, arms.get(i))
            for p, i in zip(d["provenance"], d["item_id"], strict=True)
        ]
        d = d[np.array(keep, dtype=bool)]
    d = d.rename(columns={"condition": "run_condition", "condition_value": "condition"})
    e = run.entities
    e = e[_entry_mask(e, entry)] if len(e) else pd.DataFrame(columns=["item_id", "tp", "fp", "fn"])
    if slice_ != "all" and len(e):
        e = e[e["item_id"].isin(set(d["item_id"]))]
    b = project.benchmark
    rs = M.Resampling(b.bootstrap_resamples if resamples is None else resamples, b.seed)
    return Scored(project, d.reset_index(drop=True), e.reset_index(drop=True), rs)


def _arms_of(run: RunData) -> dict[int, str]:
    return run.manifest.get("_arms", {})


def attach_arms(store: Store, run: RunData) -> None:
    """Item arms (blind/anchored) for provenance slicing of expert gold."""
    t = tables.arm_assignments
    with store.begin() as conn:
        rows = conn.execute(
            select(t.c.item_id, t.c.arm).where(t.c.project == run.manifest["project"])
        ).all()
    run.manifest["_arms"] = {int(i): a for i, a in rows}


def _outcome_summary(run: RunData, entry: EntryKey) -> dict[str, Any]:
    o = run.outcomes[_entry_mask(run.outcomes, entry)]
    n = len(o)
    by = o["status"].value_counts().to_dict() if n else {}
    # a rule that raised ("error") answered: scored wrong, in the denominator, not missing
    returned = by.get("parsed", 0) + by.get("model_failure", 0) + by.get("error", 0)
    reasons = (
        o.loc[o["status"] != "parsed", "reason"].fillna("").value_counts().to_dict() if n else {}
    )
    return {
        "requests": n,
        "parsed": int(by.get("parsed", 0)),
        "model_failure": int(by.get("model_failure", 0)),
        "error": int(by.get("error", 0)),
        "infra_missing": int(by.get("infra_missing", 0)),
        "coverage": returned / n if n else float("nan"),
        "format_rate": by.get("parsed", 0) / returned if returned else float("nan"),
        "failure_reasons": {str(k): int(v) for k, v in reasons.items()},
        "cost_usd": float(o["cost_usd"].fillna(0).sum()) if n else 0.0,
    }


def model_metrics(
    store: Store,
    project: Project,
    run_id: str,
    *,
    slice_: str = "all",
    metrics: list[str] | None = None,
    resamples: int | None = None,
) -> list[BoardEntry]:
    """Every entry of a run with outcome accounting and the project's metrics, in the run's
    order."""
    run = load_run(store, run_id, project)
    attach_arms(store, run)
    names = metrics or list(project.benchmark.metrics) or ["accuracy"]
    if "accuracy" not in names:
        names = ["accuracy", *names]
    out = []
    for entry in run.entries():
        s = scored_for(run, project, entry, slice_, resamples=resamples)
        res = compute_metrics(s, names) if len(s.decisions) else {}
        out.append(
            BoardEntry(
                run_id=run_id,
                key=entry,
                slice=slice_,
                decisions=len(s.decisions),
                **_outcome_summary(run, entry),
                simulated=_simulated(run, entry),
                metrics=plain(res),
            )
        )
    return out


def _simulated(run: RunData, entry: EntryKey) -> bool:
    e = run.manifest.get("entries", {}).get(entry.manifest_key, {})
    return bool(e.get("simulated", False))


def leaderboard(
    store: Store,
    project: Project,
    run_ids: list[str],
    *,
    slice_: str = "all",
    resamples: int | None = None,
) -> list[BoardEntry]:
    """One row per model entry across runs, best accuracy first, with CI, coverage and cost."""
    rows = [
        m
        for rid in run_ids
        for m in model_metrics(store, project, rid, slice_=slice_, resamples=resamples)
    ]
    rows.sort(key=_best_first)
    return rows


def _best_first(r: BoardEntry) -> float:
    point = r.accuracy.get("point")
    return -(point if point is not None else -1)


def compare_gold(
    store: Store, project: Project, run_id: str, *, resamples: int | None = None
) -> GoldComparison:
    """Every model's accuracy on blind vs anchored vs VLM-sourced gold, and the inflation
    (anchored - blind, in pp) with a bootstrap CI.

    The slices hold different items but share their parents (clips of one video land in
    both arms), so they are resampled *paired*: one draw over the entry's units/clusters
    (all its decisions) serves every slice, and each difference is taken within a resample.
    Independent draws would ignore the shared clusters and misstate the difference's CI."""
    run = load_run(store, run_id, project)
    attach_arms(store, run)
    b = project.benchmark
    rs = M.Resampling(b.bootstrap_resamples if resamples is None else resamples, b.seed)
    models = []
    for entry in run.entries():
        s_all = scored_for(run, project, entry, "all", resamples=0)
        d = s_all.decisions
        masks = {sl: _slice_mask(run, d, sl) for sl in SLICES}
        res = sliced_accuracies(d, masks, s_all.boot_args(d) if len(d) else {}, rs)
        cis = {sl: plain(res["ci"][sl]) if res["ci"].get(sl) is not None else None for sl in SLICES}
        infl = {
            other: _diff_pp(cis, res["boot"], other, rs, res["u"], res["stat"])
            for other in ("anchored", "vlm-sourced")
        }
        models.append(SliceScores.of(entry, cis, infl, _field_balanced(d, masks, s_all, rs)))
    return GoldComparison(
        run_id=run_id,
        gold_snapshot=run.manifest.get("gold_snapshot"),
        models=tuple(models),
        resamples=rs.resamples,
        seed=rs.seed,
    )


def _slice_mask(run: RunData, d: pd.DataFrame, slice_: str) -> np.ndarray:
    if not len(d):
        return np.zeros(0, dtype=bool)
    if slice_ == "all":
        return np.ones(len(d), dtype=bool)
    arms = _arms_of(run)
    return np.array(
        [
            in_slice(slice_, p, arms.get(i))
            for p, i in zip(d["provenance"], d["item_id"], strict=True)
        ],
        dtype=bool,
    )


def _ratio_stat(a: np.ndarray, b: np.ndarray) -> Any:
    """sum(a) / sum(b) as a statistic of unit multiplicities (for the jackknife)."""
    return lambda V: M._div(V @ a, V @ b)


def sliced_accuracies(
    d: pd.DataFrame,
    masks: dict[Any, np.ndarray],
    args: dict[str, Any],
    rs: M.Resampling,
    weights: dict[Any, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Accuracy of each slice (a mask over the decisions ``d``) with CIs from ONE resampling
    draw over all of ``d``'s units/clusters/strata (``args`` from ``Scored.boot_args``), so
    differences between slices are paired. Returns ``{"ci": {slice: CI | None},
    "boot": {slice: replicates | None}, "W": the draw}``; ``weights`` (per slice, per
    decision) give weighted accuracies on the same draw."""
    out: dict[str, Any] = {"ci": {}, "boot": {}, "stat": {}, "W": None, "u": None}
    if not len(d):
        return {**out, "ci": dict.fromkeys(masks), "boot": dict.fromkeys(masks)}
    u = M._units(len(d), args["units"], args.get("clusters"), args.get("strata"))
    W = u.matrix(rs) if rs.resamples else None
    out["W"], out["u"] = W, u
    corr = d["correct"].astype(float).to_numpy()
    for sl, m in masks.items():
        if not m.any():
            out["ci"][sl] = out["boot"][sl] = out["stat"][sl] = None
            continue
        w = m.astype(float) * (weights[sl] if weights is not None else 1.0)
        na, nb = u.sums(corr * w), u.sums(w)
        out["stat"][sl] = _ratio_stat(na, nb)
        point = float(na.sum() / nb.sum())
        boot = None
        if W is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = (W @ na) / (W @ nb)
        cov = nb > 0
        a_c, b_c = na[cov], nb[cov]
        out["ci"][sl] = M.subset_ci(
            point,
            boot,
            rs,
            u,
            cov,
            _ratio_stat(a_c, b_c),
            (a_c, b_c) if is_count_share(a_c, b_c) else None,
        )
        out["boot"][sl] = boot
    return out


def _field_balanced(
    d: pd.DataFrame,
    masks: dict[str, np.ndarray],
    s_all: Scored,
    rs: M.Resampling,
) -> FieldBalanced:
    """Field-balanced accuracy per slice (the mean of per-field accuracies over the fields
    every slice holds) and its inflation over blind gold, in pp with a paired bootstrap CI
    (the same single draw as the plain accuracies).

    The slices hold different mixes of fields (blind consensus keeps mostly the decisions
    two annotators agreed on, i.e. easy fields), so plain accuracies differ by composition
    alone; balancing over the common fields compares like with like."""
    slices = ("blind", "anchored", "vlm-sourced")
    fields = (
        set.intersection(*(set(d.loc[masks[sl], "field"]) for sl in slices))
        if len(d) and all(masks[sl].any() for sl in slices)
        else set()
    )
    if not fields:
        return FieldBalanced(fields=())
    per_field = {
        (sl, f): masks[sl] & (d["field"] == f).to_numpy() for sl in slices for f in sorted(fields)
    }
    args = s_all.boot_args(d)
    res = sliced_accuracies(d, per_field, args, rs)
    u = M._units(len(d), args["units"], args.get("clusters"), args.get("strata"))
    in_fields = d["field"].isin(fields).to_numpy()
    corr = d["correct"].astype(float).to_numpy()
    boots: dict[str, np.ndarray | None] = {}
    full_stats: dict[str, Any] = {}
    cis: dict[str, CI | None] = {}
    for sl in slices:
        fstats = [res["stat"][(sl, f)] for f in sorted(fields)]
        full_stats[sl] = lambda V, fs=fstats: np.mean([g(V) for g in fs], axis=0)
        point = float(np.mean([res["ci"][(sl, f)].point for f in sorted(fields)]))
        boot = None
        if res["W"] is not None:
            boot = np.mean([res["boot"][(sl, f)] for f in sorted(fields)], axis=0)
        boots[sl] = boot
        covered = u.sums((masks[sl] & in_fields).astype(float)) > 0
        pairs = [
            (u.sums(corr * fm)[covered], u.sums(fm)[covered])
            for fm in (per_field[(sl, f)].astype(float) for f in sorted(fields))
        ]

        def stat(V: np.ndarray, pairs: list = pairs) -> np.ndarray:
            return np.mean([M._div(V @ a, V @ b) for a, b in pairs], axis=0)

        cis[sl] = plain(M.subset_ci(point, boot, rs, u, covered, stat))
    return FieldBalanced(
        fields=tuple(sorted(fields)),
        blind=cis["blind"],
        anchored=cis["anchored"],
        vlm_sourced=cis["vlm-sourced"],
        inflation_anchored_pp=_diff_pp(cis, boots, "anchored", rs, u, full_stats),
        inflation_vlm_sourced_pp=_diff_pp(cis, boots, "vlm-sourced", rs, u, full_stats),
    )


def _diff_pp(
    cis: Mapping[str, CI | None],
    boots: dict[str, Any],
    other: str,
    rs: M.Resampling,
    u: Any = None,
    stats: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """``other`` minus blind in pp, on the shared draw (paired); with the units ``u`` and
    each slice's statistic of the full multiplicities, the CI records the design and
    falls back to the cluster jackknife on a thin one (``M._ci``). ``cis``: each slice's
    accuracy."""
    a_ci, blind_ci = cis.get(other), cis.get("blind")
    if a_ci is None or blind_ci is None:
        return None
    point = 100 * (a_ci["point"] - blind_ci["point"])
    a, bl = boots.get(other), boots.get("blind")
    boot = 100 * (a - bl) if a is not None and bl is not None else None
    if u is None:
        return {"point": point, "low": None, "high": None, "resamples": rs.resamples}
    stat = None
    if stats is not None and stats.get(other) is not None and stats.get("blind") is not None:
        sa, sb = stats[other], stats["blind"]

        def stat(V: np.ndarray) -> np.ndarray:
            return 100 * (sa(V) - sb(V))

    return plain(M._ci(point, boot, rs, u, stat))


def paired_matrix(
    store: Store, project: Project, run_id: str, *, resamples: int | None = None
) -> PairedMatrix:
    """Paired accuracy differences between every two entries on their common decisions;
    "distinguishable" only when the paired 95% CI excludes zero."""
    run = load_run(store, run_id, project)
    attach_arms(store, run)
    entries = run.entries()
    views = {e: scored_for(run, project, e, resamples=resamples) for e in entries}
    cells = []
    for i, a in enumerate(entries):
        for j, b_ in enumerate(entries):
            if i >= j:
                continue
            da = views[a].decisions.set_index(["item_id", "path"])
            db = views[b_].decisions.set_index(["item_id", "path"])
            common = da.index.intersection(db.index)
            if not len(common):
                continue
            sub_a, sub_b = da.loc[common], db.loc[common]
            args = views[a].boot_args(sub_a.reset_index())
            res = M.paired_difference(
                sub_a["correct"].astype(float), sub_b["correct"].astype(float), **args
            )
            cells.append(
                PairedCell(
                    a=a,
                    b=b_,
                    n=len(common),
                    difference=plain(res["difference"]),
                    distinguishable=res["distinguishable"],
                )
            )
    return PairedMatrix(run_id, tuple(entries), tuple(cells))


def condition_change(
    store: Store, project: Project, run_id: str, model: str, *, resamples: int | None = None
) -> dict[str, Any]:
    """Base vs +GT for one model: net change with cluster CI and the transition table."""
    run = load_run(store, run_id, project)
    attach_arms(store, run)
    ents = [e for e in run.entries() if e.model == model]
    base = next((e for e in ents if e.condition == "base" and not e.control), None)
    gt = next((e for e in ents if e.condition == "gt" and not e.control), None)
    if base is None or gt is None:
        raise TruthlineError(f"run {run_id!r} lacks base and gt conditions for model {model!r}")
    sb, sg = (
        scored_for(run, project, base, resamples=resamples),
        scored_for(run, project, gt, resamples=resamples),
    )
    da = sb.decisions.set_index(["item_id", "path"])
    dg = sg.decisions.set_index(["item_id", "path"])
    common = da.index.intersection(dg.index)
    args = sb.boot_args(da.loc[common].reset_index())
    res = M.transitions(
        da.loc[common, "correct"].astype(bool), dg.loc[common, "correct"].astype(bool), **args
    )
    return {"model": model, **plain(res)}
