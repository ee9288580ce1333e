"""``run_audit``: the whole provenance audit as one plain data structure.

The CLI, the reports and the dashboards all call this one function and read its
``AuditResult.as_dict()``; nothing here prints.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from truthline.audit import _metrics as M
from truthline.audit._boot import Boot, Est
from truthline.audit._data import REVIEW_ARMS, AuditData, flatten_values, load
from truthline.audit._gold import GoldPolicy, GoldValue, decide
from truthline.audit._gold_standard import accuracy as gold_accuracy
from truthline.audit._gold_standard import exposure_violations
from truthline.audit._results import (
    AnnotatorSignals,
    OverrideLow,
    ProvenanceGradient,
    Signal,
    VlmKappaHigh,
    ZeroProductive,
    plain,
)
from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.store import Store, simulated_annotators


@dataclass
class AuditResult:
    """Every audit number (``CI`` objects) plus counts, signals and warnings."""

    project: str
    settings: dict[str, Any]
    counts: dict[str, Any]
    sections: dict[str, Any]
    signals: dict[str, AnnotatorSignals]
    exclusions: dict[str, str]
    before_after: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)
    excluded_annotators: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Active exclusion decisions: annotator -> reason, decided_by, decided_at (ISO).
    Excluded annotators keep their per-annotator rows and their ``signals`` entry (marked
    ``excluded``); they are left out of gold and of every team figure."""
    simulated_annotators: list[str] = field(default_factory=list)
    """Annotators the store marks SIMULATED (``annotations.simulated``): every
    per-annotator table shows "SIMULATED" beside them."""

    def __getitem__(self, key: str) -> Any:
        return self.sections[key]

    @property
    def gradient(self) -> ProvenanceGradient:
        """The provenance gradient (the same object as ``self["gradient"]``)."""
        return self.sections["gradient"]

    def as_dict(self) -> dict[str, Any]:
        return plain(
            {
                "project": self.project,
                "settings": self.settings,
                "counts": self.counts,
                **self.sections,
                "signals": self.signals,
                "exclusions": self.exclusions,
                "excluded_annotators": self.excluded_annotators,
                "simulated_annotators": self.simulated_annotators,
                "before_after": self.before_after,
                "warnings": self.warnings,
            }
        )


def _to_ci(obj: Any, boot: Boot) -> Any:
    if isinstance(obj, Est):
        return boot.ci(obj)
    if isinstance(obj, dict):
        return {k: _to_ci(v, boot) for k, v in obj.items()}
    return obj


@dataclass
class _Pass:
    """One set of excluded annotators, audited: its sections and its anchored-kept gold
    values (which the other side of an exclusion reuses outside the items it changes)."""

    excluded: set[str]
    sections: dict[str, Any]
    kept: list[GoldValue]


def _sections(
    data: AuditData,
    boot: Boot,
    excluded: set[str],
    grad_pred: dict[int, dict[str, Any]],
    grad_label: str | None,
    policy: GoldPolicy,
    *,
    reported: _Pass | None = None,
) -> _Pass:
    """Every section for one set of excluded annotators. ``reported``: this is the other
    side of that pass's exclusion, so compute only what ``_aggregates`` reads (its
    per-annotator rows and descriptive sections would repeat the reported side's; at 1M
    decisions the second full pass was a third of the audit), and resolve gold again only
    on the items whose changed annotators annotated."""
    c = M.Ctx(data, boot, excluded)
    reasons = {a: data.exclusions.get(a, "flagged") for a in excluded}
    if reported is not None:
        kept = _kept_again(data, reasons, policy, reported)
        return _Pass(
            excluded,
            {
                "override": M.override(c, team_only=True),
                "direction": M.direction(c, team_only=True),
                "correct_label": M.correct_label(c, team_only=True),
                "vlm_kappa": M.vlm_kappa(c, team_only=True),
                "iaa": M.iaa(c),
                "gradient": M.gradient(c, grad_pred, kept, grad_label),
            },
            kept,
        )
    # gold first, kept only as far as the sections need it (its values can outweigh the
    # decision table): the preview counts, the hash, and the VLM-sourced values
    gold = decide(data, reasons, policy)
    preview = gold.counts() | {"hash": gold.hash}
    kept = [g for g in gold.values if g.provenance == "anchored_kept"]
    del gold
    direc = M.direction(c)
    sections = {
        "override": M.override(c),
        "direction": direc,
        "correct_label": M.correct_label(c),
        "anchoring_bias": M.anchoring_bias(c),
        "vlm_kappa": M.vlm_kappa(c),
        "iaa": M.iaa(c),
        "time": M.timing(c),
        "flags": M.flags(c),
        "safety": M.safety(c),
        "residual_risk": M.residual_risk(c, direc["all"]["harmful_anchoring"]["rate"]),
        "gradient": M.gradient(c, grad_pred, kept, grad_label),
        "gold_preview": preview,
    }
    return _Pass(excluded, sections, kept)


def _kept_again(
    data: AuditData, reasons: dict[str, str], policy: GoldPolicy, reported: _Pass
) -> list[GoldValue]:
    """The anchored-kept gold values with ``reasons``' annotators excluded, from
    ``reported``'s: an item's gold depends on its own retained annotations alone, so only
    the items annotated (tier 1) by an annotator excluded on one side only are resolved
    again. Same values in the same order (item order, then path) as a full ``decide``."""
    changed = set(reasons) ^ reported.excluded
    touched = {
        a.item
        for a in data.annotations
        if a.annotator in changed and a.tier == 1 and a.arm not in REVIEW_ARMS
    }
    again = decide(data, reasons, policy, hashed=False, only=touched)
    kept = [g for g in reported.kept if g.item not in touched]
    kept += (g for g in again.values if g.provenance == "anchored_kept")
    index = data.item_index
    kept.sort(key=lambda g: index[g.item])  # stable: each item's values keep their order
    return kept


def _aggregates(s: dict[str, Any]) -> dict[str, Any]:
    """The team-level numbers shown before/after an exclusion."""
    out: dict[str, Any] = {
        "override_rate": s["override"]["team"]["override_rate"],
        "edit_depth": s["override"]["team"]["edit_depth"],
        "harmful_anchoring_rate": s["direction"]["all"]["harmful_anchoring"]["rate"],
        "productive_override_rate": s["direction"]["all"]["productive_override"]["rate"],
        "correct_label_rate": s["correct_label"]["all"],
        "vlm_kappa_team": s["vlm_kappa"]["team"],
        "gradient_anchored": s["gradient"]["anchored"],
    }
    for f, r in s["iaa"].items():
        out[f"kappa_anchored[{f}]"] = r["anchored"]
    for f, r in s["direction"]["by_field"].items():
        out[f"harmful_anchoring[{f}]"] = r["harmful_anchoring"]["rate"]
    return out


def signals(s: dict[str, Any], project: Project, excluded: set[str]) -> dict[str, AnnotatorSignals]:
    """Exclusion signals per annotator, each with the team range it is compared against
    (the other retained annotators). Flagged when at least two signals fire. Excluded
    annotators keep their entry, marked ``excluded: True``: the evidence stays visible."""
    cfg = project.audit
    ov = {a: r["override_rate"].point for a, r in s["override"]["by_annotator"].items()}
    kap = {a: e.point for a, e in s["vlm_kappa"]["by_annotator"].items()}
    out: dict[str, AnnotatorSignals] = {}
    for a in s["override"]["by_annotator"]:
        others = [b for b in ov if b != a and b not in excluded]
        o_vals = [ov[b] for b in others if np.isfinite(ov[b])]
        k_vals = [kap[b] for b in others if np.isfinite(kap.get(b, np.nan))]
        sig: dict[str, Signal] = {}
        if o_vals and np.isfinite(ov[a]):
            lo = min(o_vals)
            sig["override_low"] = OverrideLow(
                value=ov[a],
                team_range=[lo, max(o_vals)],
                threshold=lo / cfg.override_rate_factor,
                ratio_to_team_low=lo / ov[a] if ov[a] > 0 else float("inf"),
                fired=bool(ov[a] < lo / cfg.override_rate_factor),
            )
        if k_vals and np.isfinite(kap.get(a, np.nan)):
            ceil = max(k_vals)
            sig["vlm_kappa_high"] = VlmKappaHigh(
                value=kap[a],
                team_range=[min(k_vals), ceil],
                threshold=ceil + cfg.vlm_kappa_margin,
                fired=bool(kap[a] > ceil + cfg.vlm_kappa_margin),
            )
        dt = s["direction"]["by_annotator"].get(a)
        if dt is not None:
            errs = dt["vlm_errors"]
            prod = dt["productive_override"]["count"]
            team_prod = [
                s["direction"]["by_annotator"][b]["productive_override"]["count"] for b in others
            ]
            sig["zero_productive"] = ZeroProductive(
                value=prod,
                vlm_errors=errs,
                min_vlm_errors=cfg.min_vlm_errors,
                team_range=[min(team_prod), max(team_prod)] if team_prod else None,
                fired=bool(prod == 0 and errs >= cfg.min_vlm_errors),
            )
        fired = [k for k, v in sig.items() if v.fired]
        out[a] = AnnotatorSignals(
            signals=sig, fired=fired, flagged=len(fired) >= 2, excluded=a in excluded
        )
    return out


RERUN_MARK = "@"
"""A re-run of model version ``v`` is stored as ``v@<tag>`` (``truthline demo`` writes ``@rerun``)."""


def prediction_versions(store: Store, project: str) -> list[str]:
    """Every prediction ``model_version`` in the store for this project, sorted."""
    from sqlalchemy import select

    from truthline.store import tables as t

    with store.begin() as conn:
        rows = conn.execute(
            select(t.predictions.c.model_version)
            .where(t.predictions.c.project == project)
            .distinct()
        )
        return sorted(v for (v,) in rows if v)


def default_gradient_model(versions: list[str], shown: str | None) -> str | None:
    """THE default predictions of the provenance gradient (CLI, dashboards and reports all
    use this): a re-run of the shown model (``<shown>@...``, first in sort order) when the
    store has one, else the shown model itself. Scoring the shown predictions makes the
    VLM-sourced slice agree with itself by construction (METRICS.md, provenance gradient)."""
    if shown is None:
        return None
    return next((v for v in sorted(versions) if v.startswith(f"{shown}{RERUN_MARK}")), shown)


_GC_LOCK = threading.Lock()
_GC_HOLDERS = [0, False]  # audits running, whether the collector was on before the first


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while an audit runs. An audit builds millions of
    acyclic objects (refcounting frees them); the collector's generation scans over them grew
    faster than n (0.2 s to 2.4 s in ``decide`` for 4x the decisions). Results are the same;
    concurrent audits (dashboard sessions) restore it when the last one ends."""
    with _GC_LOCK:
        if _GC_HOLDERS[0] == 0:
            _GC_HOLDERS[1] = gc.isenabled()
            gc.disable()
        _GC_HOLDERS[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_HOLDERS[0] -= 1
            if _GC_HOLDERS[0] == 0 and _GC_HOLDERS[1]:
                gc.enable()


def run_audit(
    store: Store,
    project: Project,
    *,
    resamples: int | None = None,
    seed: int | None = None,
    model_version: str | None = None,
    gradient_model: str | None = None,
    policy: GoldPolicy | None = None,
) -> AuditResult:
    """The provenance audit over the store (METRICS.md §3), every number with a bootstrap CI.

    ``model_version``: the prefill ``v`` (default: the version shown to anchored annotators).
    ``gradient_model``: predictions scored in the provenance gradient (default:
    ``default_gradient_model``, a re-run of ``v`` when stored, else ``v`` with a warning that
    the VLM-sourced slice is then self-referential).
    """
    with _collector_paused():
        return _run_audit(store, project, resamples, seed, model_version, gradient_model, policy)


def _run_audit(
    store: Store,
    project: Project,
    resamples: int | None,
    seed: int | None,
    model_version: str | None,
    gradient_model: str | None,
    policy: GoldPolicy | None,
) -> AuditResult:
    B = project.audit.resamples if resamples is None else resamples
    sd = project.audit.seed if seed is None else seed
    policy = policy or GoldPolicy()
    data = load(store, project, model_version=model_version)
    if not data.annotations:
        raise TruthlineError(
            f"project {project.name!r} has no annotations in the store; pull them with "
            "`truthline annotate pull` or load a table with `truthline audit import-table`"
        )
    warnings: list[str] = []
    if data.model_version is None:
        warnings.append("no predictions in the store: override and direction need a prefill")
    breached = exposure_violations(store, project.name)
    if breached:
        warnings.append(
            f"{breached} blind label(s) have exposure violations found by `truthline annotate "
            "pull` (a prediction on the blind task, a label made from one, or an annotator who "
            "saw the item in another arm): they are not blind; see the store's "
            "exposure_violations table"
        )
    boot = Boot(data.clusters, B, sd)
    if gradient_model is None:
        gradient_model = default_gradient_model(
            prediction_versions(store, project.name), data.model_version
        )
    grad_label = gradient_model or data.model_version
    if gradient_model and gradient_model != data.model_version:
        grad_pred = _predictions(store, project, gradient_model, data)
    else:
        grad_pred = data.pred
        if data.model_version:
            warnings.append(
                f"self-reference: the provenance gradient scores {data.model_version!r}, the "
                "model that prefilled the anchored arm, so its VLM-sourced slice is circular "
                "by construction; pass a benchmark run of the model (gradient_model) instead"
            )
    excluded = set(data.exclusions)
    reported = _sections(data, boot, excluded, grad_pred, grad_label, policy)
    raw = reported.sections
    sig = signals(raw, project, excluded)
    flagged = {a for a, s in sig.items() if s.flagged}
    before_after = None
    if excluded or flagged:
        other = set() if excluded else flagged  # recorded exclusions: before; else after
        side = _sections(data, boot, other, grad_pred, grad_label, policy, reported=reported)
        if excluded:
            before, after, label = side.sections, raw, "recorded exclusions"
            who = sorted(excluded)
        else:
            before, after = raw, side.sections
            label, who = "preview: flagged annotators excluded", sorted(flagged)
        del side
        ba, aa = _aggregates(before), _aggregates(after)
        before_after = {
            "kind": label,
            "annotators": who,
            "rows": {
                k: {
                    "before": boot.ci(ba[k]),
                    "after": boot.ci(aa[k]),
                    "change": boot.ci(aa[k] - ba[k]),
                }
                for k in ba
            },
        }
    del reported  # its kept gold values: no longer needed
    for a in sorted(flagged - excluded):
        warnings.append(
            f"annotator {a!r} is flagged by {', '.join(sig[a].fired)}; review and record "
            f"a decision with `truthline audit exclude {a} --reason ...`"
        )
    sections = _to_ci(raw, boot)
    sections["gradient"] = ProvenanceGradient.from_section(sections["gradient"])
    # beside the signals, not one of them: each annotator's accuracy on known answers
    sections["gold_standard"] = {a: x.as_dict() for a, x in gold_accuracy(store, project).items()}
    counts = _counts(data, excluded)
    settings = {
        "resamples": B,
        "seed": sd,
        "scheme": boot.scheme,
        "clusters": boot.nc if boot.clustered else None,
        "model_version": data.model_version,
        "gradient_model": grad_label,
        "fields": data.fields,
        "ipw_review_weights": bool(data.review_weights),
        "thresholds": {
            "override_rate_factor": project.audit.override_rate_factor,
            "vlm_kappa_margin": project.audit.vlm_kappa_margin,
            "min_vlm_errors": project.audit.min_vlm_errors,
        },
    }
    return AuditResult(
        project=project.name,
        settings=settings,
        counts=counts,
        sections=sections,
        signals=sig,
        exclusions=dict(data.exclusions),
        before_after=before_after,
        warnings=warnings,
        excluded_annotators=_exclusion_records(store, project.name, data.exclusions),
        simulated_annotators=simulated_annotators(store, project.name),
    )


def _exclusion_records(
    store: Store, project: str, active: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Who excluded whom, when and why (the latest active decision per annotator)."""
    from truthline.audit._ops import exclusions

    out: dict[str, dict[str, Any]] = {}
    for r in exclusions(store, project):  # oldest first: the latest decision wins
        if r["active"] and r["annotator"] in active:
            when = r["decided_at"]
            out[r["annotator"]] = {
                "reason": r["reason"],
                "decided_by": r["decided_by"],
                "decided_at": when.isoformat() if hasattr(when, "isoformat") else when,
            }
    for a, reason in active.items():  # e.g. an exclusion set by a test double of the store
        out.setdefault(a, {"reason": reason, "decided_by": None, "decided_at": None})
    return dict(sorted(out.items()))


def _counts(data: AuditData, excluded: set[str]) -> dict[str, Any]:
    tier1 = [a for a in data.annotations if a.tier == 1 and a.arm not in REVIEW_ARMS]
    by_arm: dict[str, int] = {}
    for a in tier1:
        by_arm[a.arm] = by_arm.get(a.arm, 0) + 1
    return {
        "items": len(data.item_ids),
        "annotated_items": len({a.item for a in tier1}),
        "annotations_by_arm": by_arm,
        "annotators": data.annotators,
        "excluded": sorted(excluded),
        "expert_reviewed_items": len(data.expert),
        "decisions": len(data.d["unit"]),
        "decisions_with_expert": int((~np.isnan(data.d["he"])).sum()),
    }


def _predictions(
    store: Store, project: Project, version: str, data: AuditData
) -> dict[int, dict[str, Any]]:
    from sqlalchemy import select

    from truthline.store import tables as t

    # keyed entity lists name entities by key; unkeyed ones by their own index. Rows are
    # streamed: only one prediction's JSON is alive at a time.
    out: dict[int, dict[str, Any]] = {}
    with store.begin() as conn:
        rows = conn.execute(
            select(t.predictions.c.item_id, t.predictions.c["values"])
            .where(
                t.predictions.c.project == project.name,
                t.predictions.c.model_version == version,
            )
            .execution_options(yield_per=2000)
        )
        for item, values in rows:
            out[item] = flatten_values(project, values, {})
    if not out:
        raise TruthlineError(
            f"no predictions of model version {version!r} in project {project.name!r}"
        )
    return out
