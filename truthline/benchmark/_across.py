"""Metrics across the models of a run (METRICS.md §6): routing oracle, majority-of-models
ensemble, the hard subset of a rule baseline, rank transfer between two item sets, paired
conditions (Base/+GT) and open-answer similarity with per-model z-scores.

Each is one ``@metric(name, across=True)`` over a ``RunScored``. Models are compared on
their *common* decisions (same item and path), so an infrastructure-missing answer of one
model removes that decision for all, never counts against one. Rule baselines are models
of kind ``rule``: they define the hard subset but are left out of routing, ensembles and
rankings.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import RunScored, Scored, _targets, across_names, metric
from truthline.benchmark._types import EntryKey
from truthline.fields import Text
from truthline.project import Project
from truthline.store import Store

BASE = ("base", "")
"""(condition, control) of the entries compared by routing, ensembles and rankings."""


def _base_models(v: RunScored, *, rules: bool = False) -> list[str]:
    return [k for k in v.models(rules=rules) if v.keys.get(k, ("", "", *BASE))[2:] == BASE]


def _none(x: Any) -> Any:
    return None if isinstance(x, float) and math.isnan(x) else x


def aligned(
    v: RunScored, labels: list[str], fields: list[str] | None = None
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The decisions every one of ``labels`` has (same item and path), in one order:
    ``(base, per_model)`` where ``base`` carries item_id, path, field, gold, parent, stratum,
    meta (from the first model) and ``per_model[label]`` its pred/correct/credit rows."""
    frames = {}
    for lab in labels:
        d = v.entries[lab].decisions
        if fields is not None and len(d):
            d = d[d["field"].isin(fields)]
        frames[lab] = d.set_index(["item_id", "path"]) if len(d) else None
    if not labels or any(f is None for f in frames.values()):
        return pd.DataFrame(), {}
    common = frames[labels[0]].index  # type: ignore[union-attr]
    for lab in labels[1:]:
        common = common.intersection(frames[lab].index)  # type: ignore[union-attr]
    common = common.sort_values()
    base = frames[labels[0]].loc[common].reset_index()  # type: ignore[union-attr]
    per = {lab: frames[lab].loc[common].reset_index() for lab in labels}  # type: ignore[union-attr]
    return base, per


def _boot(v: RunScored, base: pd.DataFrame) -> dict[str, Any]:
    """Units/clusters/strata of aligned decisions, as the project declares."""
    return Scored(v.project, base, pd.DataFrame(), v.rs).boot_args(base)


def _environment(v: RunScored, base: pd.DataFrame) -> tuple[str, list[str]]:
    col = v.settings.environment
    if col:
        return col, [str((m or {}).get(col, "")) for m in base["meta"]]
    if "stratum" in base and base["stratum"].notna().any():
        return "stratum", base["stratum"].fillna("").astype(str).tolist()
    return "all", ["all"] * len(base)


@metric("routing_oracle", across=True)
def _routing(v: RunScored) -> dict[str, Any]:
    """Best model per environment (``[benchmark] environment``, else the strata) and the
    accuracy of routing each environment's decisions to it, beside the best single model."""
    labels = _base_models(v)
    if len(labels) < 2:
        return {"value": None, "note": "routing needs at least two models in the run"}
    base, per = aligned(v, labels)
    if not len(base):
        return {"value": None, "note": "no decisions common to the models"}
    by, env = _environment(v, base)
    correct = {lab: per[lab]["correct"].astype(float).to_numpy() for lab in labels}
    r = M.routing_oracle(correct, env)
    env_a = np.array([str(e) for e in env], dtype=object)
    routed = np.zeros(len(base))
    n_env: dict[str, int] = {}
    acc_env: dict[str, float] = {}
    for e, lab in r["best_by_environment"].items():
        mask = env_a == e
        routed[mask] = correct[lab][mask]
        n_env[e] = int(mask.sum())
        acc_env[e] = float(correct[lab][mask].mean())
    singles = {lab: float(c.mean()) for lab, c in correct.items()}
    best = max(singles, key=lambda k: singles[k])
    ci = M.accuracies({"routed": routed, "best": correct[best]}, **_boot(v, base))
    return {
        "value": ci["routed"],
        "environment": by,
        "best_by_environment": r["best_by_environment"],
        "n_by_environment": n_env,
        "accuracy_by_environment": acc_env,
        "best_single": {"model": best, "accuracy": ci["best"]},
        "gain": float(routed.mean() - singles[best]),
        "n": len(base),
    }


@metric("ensemble", across=True)
def _ensemble(v: RunScored) -> dict[str, Any]:
    """Majority-of-models ensemble: per decision the most common answer of the run's models,
    judged with the field type's ``agree``. A tie has no majority and is scored wrong (never
    given to the model listed first); tied decisions are counted in ``ties``."""
    labels = _base_models(v)
    if len(labels) < 2:
        return {"value": None, "note": "an ensemble needs at least two models in the run"}
    base, per = aligned(v, labels)
    if not len(base):
        return {"value": None, "note": "no decisions common to the models"}
    correct = np.zeros(len(base), dtype=bool)
    by_field = {}
    n_field: dict[str, int] = {}
    ties: dict[str, int] = {}
    for f in base["field"].unique():
        mask = (base["field"] == f).to_numpy()
        ft = v.project.field(str(f))
        vote = M.majority_vote(
            {lab: [_none(x) for x in per[lab].loc[mask, "pred"]] for lab in labels},
            [_none(x) for x in base.loc[mask, "gold"]],
            ft.agree,
        )
        correct[mask] = vote["correct"]
        by_field[str(f)] = vote["accuracy"]
        n_field[str(f)] = int(mask.sum())
        ties[str(f)] = vote["ties"]
    args = _boot(v, base)
    singles = {lab: float(per[lab]["correct"].astype(float).mean()) for lab in labels}
    best = max(singles, key=lambda k: singles[k])
    return {
        "value": M.accuracy(correct.astype(float), **args),
        "by_field": by_field,
        "n_by_field": n_field,
        "members": labels,
        "best_single": {"model": best, "accuracy": singles[best]},
        "gain": float(correct.mean() - singles[best]),
        "n": len(base),
        "ties": sum(ties.values()),
        "ties_by_field": ties,
        "tie_rule": "a tie has no majority and is scored wrong",
    }


def _hard_rule(v: RunScored) -> str | None:
    rules = [k for k in v.entries if v.kinds.get(k) == "rule"]
    want = v.settings.hard_rule
    if want:
        hit = [k for k in rules if k == want or k.split("|", 1)[0] == want]
        return hit[0] if hit else None
    supplied = [k for k in rules if k.split("|", 1)[0] not in ("rule:majority", "rule:random")]
    pick = supplied or rules
    return pick[0] if pick else None


@metric("hard_subset", across=True)
def _hard(v: RunScored) -> dict[str, Any]:
    """The hard subset: decisions the rule baseline (``[benchmark] hard_rule``, else the
    run's project-supplied rule, else its first rule) gets wrong; every model's accuracy
    on it and on the rest, on decisions common to the rule and the models."""
    rule_lab = _hard_rule(v)
    if rule_lab is None:
        want = v.settings.hard_rule
        return {
            "value": None,
            "note": f"run has no rule baseline {want!r}" if want else "run has no rule baseline",
        }
    labels = _base_models(v)
    if not labels:
        return {"value": None, "note": "no models beside the rule"}
    base, per = aligned(v, [rule_lab, *labels])
    if not len(base):
        return {"value": None, "note": "no decisions common to the rule and the models"}
    hard = ~per[rule_lab]["correct"].astype(bool).to_numpy()
    correct = {lab: per[lab]["correct"].astype(float).to_numpy() for lab in labels}
    models: dict[str, dict[str, Any]] = {lab: {} for lab in labels}
    # one resampling draw per subset serves every model (same decisions, same units)
    for name, mask in (("hard", hard), ("easy", ~hard), ("all", None)):
        sub = base if mask is None else base[mask].reset_index(drop=True)
        if not len(sub):
            for lab in labels:
                models[lab][name] = None
            continue
        cols = {lab: c if mask is None else c[mask] for lab, c in correct.items()}
        for lab, ci in M.accuracies(cols, **_boot(v, sub)).items():
            models[lab][name] = ci
    return {
        "value": None,
        "rule": rule_lab,
        "n": len(base),
        "hard_decisions": int(hard.sum()),
        "hard_share": float(hard.mean()),
        "hard_items": int(base.loc[hard, "item_id"].nunique()),
        "models": models,
    }


@metric("rank_transfer", across=True)
def _rank_transfer(v: RunScored) -> dict[str, Any]:
    """Spearman and Pearson (with p-values) between model accuracies on the two item sets
    named by ``[benchmark] transfer_column`` (e.g. synthetic vs real)."""
    col = v.settings.transfer_column
    if not col:
        return {"value": None, "note": "declare [benchmark] transfer_column (two item sets)"}
    return transfer_by_column(v, col)


def transfer_by_column(v: RunScored, col: str) -> dict[str, Any]:
    """Rank transfer between the two values of metadata column ``col``."""
    labels = _base_models(v)
    scores: dict[str, dict[str, float]] = {}
    counts: dict[str, dict[str, int]] = {}
    for lab in labels:
        d = v.entries[lab].decisions
        if not len(d):
            continue
        sets = d["meta"].map(lambda m: str((m or {}).get(col, "")))
        for name, grp in d.groupby(sets):
            scores.setdefault(str(name), {})[lab] = float(grp["correct"].astype(float).mean())
            counts.setdefault(str(name), {})[lab] = len(grp)
    names = sorted(k for k in scores if k)
    if len(names) != 2:
        return {
            "value": None,
            "note": f"column {col!r} must split the items into two sets, found {names}",
        }
    a, b = names
    return _transfer(scores[a], scores[b], names, (counts[a], counts[b]))


def _transfer(
    a: dict[str, float],
    b: dict[str, float],
    names: list[str],
    n: tuple[dict[str, int], dict[str, int]],
) -> dict[str, Any]:
    """Rank correlation of the models' scores on two sets; ``n``: each model's decisions
    behind its score on each set."""
    if len(set(a) & set(b)) < 3:
        return {
            "value": None,
            "sets": names,
            "note": f"rank transfer needs 3 models on both sets, got {len(set(a) & set(b))}",
        }
    r = M.rank_transfer(a, b)
    return {
        "value": r["spearman_rho"],
        "sets": names,
        **r,
        "scores": {m: {names[0]: a[m], names[1]: b[m]} for m in r["models"]},
        "n": {m: {names[0]: n[0][m], names[1]: n[1][m]} for m in r["models"]},
    }


@metric("paired_conditions", across=True)
def _paired_conditions(v: RunScored) -> dict[str, Any]:
    """Base vs +GT per model (same items, one input given as truth): net change with CI and
    the repairs/harms transition table."""
    out: dict[str, Any] = {}
    by_model: dict[tuple[str, str], dict[str, str]] = {}
    for lab, (model, variant, cond, control) in v.keys.items():
        if not control:
            by_model.setdefault((model, variant), {})[cond] = lab
    for (model, variant), conds in by_model.items():
        if "base" not in conds or "gt" not in conds:
            continue
        base, per = aligned(v, [conds["base"], conds["gt"]])
        if not len(base):
            continue
        res = M.transitions(
            per[conds["base"]]["correct"].astype(bool),
            per[conds["gt"]]["correct"].astype(bool),
            **_boot(v, base),
        )
        out[EntryKey(model, variant).label("|", wrap=("|", ""))] = res  # model|variant
    if not out:
        return {"value": None, "note": "no model has both --condition base and gt in this run"}
    return {"value": None, "models": out}


@metric("open_similarity", across=True)
def _open_similarity(v: RunScored) -> dict[str, Any]:
    """Open answers (text target fields): cosine similarity of answer and reference with the
    local MiniLM embedder, per model the mean (with CI) and its z-score across models."""
    texts = _targets(next(iter(v.entries.values())), (Text,)) if v.entries else []
    labels = _base_models(v)
    if not texts or not labels:
        return {"value": None, "note": "no text target fields"}
    base, per = aligned(v, labels, texts)
    if not len(base):
        return {"value": None, "note": "no text decisions common to the models"}
    r = M.open_answer_similarity(
        {lab: [_none(x) for x in per[lab]["pred"]] for lab in labels},
        [str(g) for g in base["gold"]],
        embed=_EMBED,
    )
    sim = M.accuracies({lab: r["per_item"][lab] for lab in labels}, **_boot(v, base))
    return {
        "value": None,
        "fields": texts,
        "n": len(base),
        "models": {lab: {"similarity": sim[lab], "z": r["z"][lab]} for lab in labels},
    }


_EMBED = None
"""Embedder override for ``open_similarity`` (None: the bundled local MiniLM)."""


# -- building the view ----------------------------------------------------------------------
def run_view(
    store: Store,
    project: Project,
    run_id: str,
    *,
    slice_: str = "all",
    resamples: int | None = None,
) -> RunScored:
    """Every entry of a run as one ``RunScored``, keyed by ``EntryKey.id``."""
    from truthline.benchmark._results import attach_arms, load_run, scored_for

    run = load_run(store, run_id, project)
    attach_arms(store, run)
    b = project.benchmark
    rs = M.Resampling(b.bootstrap_resamples if resamples is None else resamples, b.seed)
    entries, kinds = {}, {}
    keys: dict[str, tuple[str, str, str, str]] = {}
    for e in run.entries():
        lab = e.id
        entries[lab] = scored_for(run, project, e, slice_, resamples=resamples)
        kinds[lab] = run.manifest.get("entries", {}).get(e.manifest_key, {}).get("kind", "")
        keys[lab] = e
    return RunScored(project, entries, kinds, keys, rs)


def across_metrics(
    store: Store,
    project: Project,
    run_id: str,
    *,
    names: list[str] | None = None,
    slice_: str = "all",
    resamples: int | None = None,
) -> dict[str, Any]:
    """The metrics across models that the project names (or ``names``), as plain data."""
    from truthline.benchmark._registry import compute_run_metrics, is_across, plain

    if names:
        unknown = [n for n in names if not is_across(n)]
        if unknown:
            raise KeyError(
                f"not a metric across models: {', '.join(unknown)} "
                f"(those are: {', '.join(across_names())})"
            )
    wanted = [n for n in (names or list(project.benchmark.metrics)) if is_across(n)]
    view = run_view(store, project, run_id, slice_=slice_, resamples=resamples)
    return {"run_id": run_id, "slice": slice_, "metrics": plain(compute_run_metrics(view, wanted))}


def rank_transfer_runs(
    store: Store,
    project: Project,
    run_a: str,
    run_b: str,
    *,
    other: Project | None = None,
) -> dict[str, Any]:
    """Rank transfer between two runs (e.g. synthetic and real gold): each model's accuracy
    in each run, matched by entry label."""
    from truthline.benchmark._registry import plain

    va = run_view(store, project, run_a, resamples=0)
    vb = run_view(store, other or project, run_b, resamples=0)

    def accs(v: RunScored) -> dict[str, float]:
        return {
            lab: float(v.entries[lab].decisions["correct"].astype(float).mean())
            for lab in _base_models(v)
            if len(v.entries[lab].decisions)
        }

    def counts(v: RunScored) -> dict[str, int]:
        return {lab: len(v.entries[lab].decisions) for lab in _base_models(v)}

    return plain(_transfer(accs(va), accs(vb), [run_a, run_b], (counts(va), counts(vb))))
