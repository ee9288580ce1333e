"""Metrics across the models of a run (METRICS.md §6): routing oracle, majority-of-models
ensemble, the hard subset of a rule baseline, rank transfer between two item sets, paired
conditions (Base/+GT) and open-answer similarity with per-model z-scores.

Each is one ``@metric(name, across=True)`` over a ``RunScored``. Models are compared on
their *common* decisions (same item and path), so an infrastructure-missing answer of one
model removes that decision for all, never counts against one. Who counts as a model is
decided once, by ``ranked_models``: a model's base entry (the main condition, no input
control; its prompt variants and +GT/no-image entries are not more models). Rule
baselines are models of kind ``rule``: they define the hard subset; RealityBench routes,
votes and ranks its VLMs only, so rules are left out there, and a note that counts models
names the rules and entries it left out instead of reporting a short count.

Rank transfer carries the simultaneous rank-confidence-set interval (``truthline.stats.
_ranks.rank_agreement``); the routing oracle is cross-fitted (``routing_crossfit``), the
in-sample oracle shown only labelled "in-sample (optimistic)".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import RunScored, Scored, _targets, across_names, metric
from truthline.benchmark._types import EntryKey
from truthline.fields import Text
from truthline.project import Project
from truthline.stats import boot_scores, cluster_sums, rank_agreement, routing_crossfit
from truthline.store import Store

BASE = ("base", "")
"""(condition, control) of the entries compared by routing, ensembles and rankings."""


def _base_models(v: RunScored, *, rules: bool = False) -> list[str]:
    return ranked_models(v, rules=rules).models


@dataclass(frozen=True)
class ModelCount:
    """The entries of a run that count as models (``models``) and those that do not: rule
    baselines (``rules``) and other entries of a counted model (``other``: a prompt variant
    beside the main one, +GT, an input control)."""

    models: list[str]
    rules: list[str]
    other: list[str]

    def short(self, need: int, what: str) -> str | None:
        """None when there are ``need`` models, else the note saying what was counted."""
        if len(self.models) >= need:
            return None
        left = []
        if self.rules:
            left.append(f"rule baselines are not ranked: {', '.join(self.rules)}")
        if self.other:
            left.append(f"other entries of these models: {', '.join(self.other)}")
        tail = f" ({'; '.join(left)})" if left else ""
        return f"{what} needs at least {need} models, got {len(self.models)}{tail}"


def ranked_models(v: RunScored, *, rules: bool = False) -> ModelCount:
    """Who counts as a model in a comparison across models: one entry per model, its base
    entry (condition ``base``, no control; with several prompt variants the main one, ``""``,
    else the first); rule baselines only when ``rules``."""
    models: list[str] = []
    seen: dict[str, str] = {}
    other: list[str] = []
    rule_labels = [k for k in v.entries if v.kinds.get(k) == "rule"]
    for k in v.entries:
        if k in rule_labels and not rules:
            continue
        key = v.keys.get(k, (k, "", *BASE))
        if tuple(key[2:4]) != BASE:
            other.append(k)
            continue
        name = str(key[0])
        if name in seen:  # a second prompt variant of one model: the main one counts
            if key[1] == "":
                other.append(seen[name])
                models[models.index(seen[name])] = k
                seen[name] = k
            else:
                other.append(k)
            continue
        seen[name] = k
        models.append(k)
    return ModelCount(models, [] if rules else rule_labels, other)


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
    """Best model per environment (``[benchmark] environment``, else the strata), cross-fitted
    (METRICS.md §6): chosen on one random half of the clusters, scored on the other, both
    ways; beside the best single model chosen the same way. The in-sample oracle (the
    paper's 0.86) is reported only under ``in_sample``, labelled optimistic."""
    count = ranked_models(v)
    note = count.short(2, "routing")
    if note:
        return {"value": None, "note": note}
    labels = count.models
    base, per = aligned(v, labels)
    if not len(base):
        return {"value": None, "note": "no decisions common to the models"}
    by, env = _environment(v, base)
    correct = np.column_stack([per[lab]["correct"].astype(float).to_numpy() for lab in labels])
    args = _boot(v, base)
    r = routing_crossfit(
        labels,
        correct,
        np.ones_like(correct),
        env,
        clusters=args.get("clusters") or args["units"],
        strata=args.get("strata"),
        resamples=v.rs.resamples,
        seed=v.rs.seed,
        level=v.rs.level,
        scheme="cluster" if args.get("clusters") else "item",
    )
    env_a = np.array([str(e) for e in env], dtype=object)
    n_env = {e: int((env_a == e).sum()) for e in r.environments}
    acc_env = {
        e: float(correct[env_a == e, labels.index(m)].mean()) for e, m in r.in_sample_choice.items()
    }
    return {
        "value": r.routed,
        "method": "cross-fitted: chosen on one half of the clusters, scored on the other",
        "environment": by,
        "best_by_environment": r.in_sample_choice,
        "choices_by_half": r.choices,
        "n_by_environment": n_env,
        "accuracy_by_environment": acc_env,
        "best_single": {"model": r.in_sample_single, "accuracy": r.best_single},
        "best_single_by_half": r.single_choices,
        "gain": r.gain.point,
        "gain_ci": r.gain,
        "in_sample": {
            "label": r.in_sample_label,
            "routed": r.in_sample,
            "best_single": r.in_sample_best_single,
        },
        "models": labels,
        "clusters": r.clusters,
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
    """Rank agreement of the models' accuracies on the two item sets named by ``[benchmark]
    transfer_column`` (e.g. source = render / real): Spearman rho and Pearson r with
    p-values, and the rank-confidence-set intervals (METRICS.md §6)."""
    col = v.settings.transfer_column
    if not col:
        return {"value": None, "note": "declare [benchmark] transfer_column (two item sets)"}
    return transfer_by_column(v, col)


@dataclass(frozen=True)
class SetScores:
    """Each model's accuracy on one item set (decisions common to the models there), its
    bootstrap replicates on the set's design and the decision/cluster counts."""

    name: str
    scores: dict[str, float]
    boot: np.ndarray | None
    n: dict[str, int]
    clusters: int
    scheme: str = "item"


def set_scores(
    v: RunScored,
    labels: list[str],
    name: str,
    keep: Callable[[pd.DataFrame], Any] | None = None,
    *,
    seed_offset: int = 0,
    score: Callable[[pd.DataFrame], np.ndarray] | None = None,
) -> SetScores:
    """``labels``' accuracies on the decisions ``keep`` (a decisions -> bool mask function;
    None: all) that every one of them has, with replicates drawn over the set's clusters
    within its strata (seed: the run's, plus ``seed_offset`` so two sets draw independently).
    ``score``: a decision's credit (default its ``correct``; RealityBench's "any named part
    counts" passes its own)."""
    base, per = aligned(v, labels)
    if len(base) and keep is not None:
        mask = np.asarray(keep(base), dtype=bool)
        base = base[mask].reset_index(drop=True)
        per = {lab: d[mask].reset_index(drop=True) for lab, d in per.items()}
    if not len(base):
        return SetScores(name, {}, None, {}, 0)
    credit = score or (lambda d: d["correct"].astype(float).to_numpy())
    c = np.column_stack([np.asarray(credit(per[lab]), dtype=float) for lab in labels])
    args = _boot(v, base)
    num_g, den_g, strata_g = cluster_sums(
        c, np.ones_like(c), args.get("clusters") or args["units"], args.get("strata")
    )
    boot = (
        boot_scores(num_g, den_g, strata_g, v.rs.resamples, v.rs.seed + seed_offset)
        if v.rs.resamples
        else None
    )
    return SetScores(
        name,
        dict(zip(labels, c.mean(0).tolist(), strict=True)),
        boot,
        dict.fromkeys(labels, len(base)),
        num_g.shape[0],
        "cluster" if args.get("clusters") else "item",
    )


def transfer_by_column(v: RunScored, col: str) -> dict[str, Any]:
    """Rank transfer between the two values of metadata column ``col``."""
    count = ranked_models(v)
    labels = count.models
    d0 = v.entries[labels[0]].decisions if labels else pd.DataFrame()
    names = sorted({str((m or {}).get(col, "")) for m in d0["meta"]} - {""}) if len(d0) else []
    if len(names) != 2:
        return {
            "value": None,
            "note": f"column {col!r} must split the items into two sets, found {names}",
        }

    def on(name: str) -> Any:
        return lambda b: b["meta"].map(lambda m: str((m or {}).get(col, "")) == name)

    def has(lab: str, name: str) -> bool:
        d = v.entries[lab].decisions
        return bool(len(d)) and bool(on(name)(d).any())

    # a model not run on one set (the paper: 22 of 26 models on real photos) drops out
    both = [lab for lab in labels if all(has(lab, n) for n in names)]
    sides = [set_scores(v, both, n, on(n), seed_offset=i) for i, n in enumerate(names)]
    return transfer(sides[0], sides[1], count, seed=v.rs.seed, level=v.rs.level)


def transfer(
    a: SetScores,
    b: SetScores,
    count: ModelCount | None = None,
    *,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """Rank agreement of the models' scores on two sets, as the metric's plain result:
    Spearman rho (``value``, with its rank-confidence-set interval), Kendall tau-b with its
    interval, Pearson r and the p-values (scores taken as exact), and per model its scores
    and decision counts."""
    names = [a.name, b.name]
    models = [m for m in a.scores if m in b.scores]
    if len(models) < 3:
        short = (count or ModelCount(models, [], [])).short(3, "rank transfer")
        return {
            "value": None,
            "sets": names,
            "note": short or f"rank transfer needs 3 models on both sets, got {len(models)}",
        }
    for side in (a, b):
        if len({round(side.scores[m], 12) for m in models}) == 1:
            return {
                "value": None,
                "sets": names,
                "models": models,
                "note": f"every model scores {side.scores[models[0]]:.3f} on {side.name!r}: "
                "a rank correlation is undefined when one set ties them all",
            }
    ia = [list(a.scores).index(m) for m in models]
    ib = [list(b.scores).index(m) for m in models]
    r = rank_agreement(
        models,
        [a.scores[m] for m in models],
        [b.scores[m] for m in models],
        None if a.boot is None else a.boot[:, ia],
        None if b.boot is None else b.boot[:, ib],
        tasks=(a.name, b.name),
        seed=seed,
        level=level,
        n=(a.clusters, b.clusters),
    )
    return {
        "value": r.rho_ci(a.scheme),
        "sets": names,
        "models": models,
        "spearman_rho": r.rho,
        "spearman_p": r.rho_p,
        "pearson_r": r.pearson_r,
        "pearson_p": r.pearson_p,
        "kendall_tau": r.tau_ci(a.scheme),
        "kendall_p": r.tau_p,
        "verdict": r.verdict,
        "concordant": r.concordant,
        "discordant": r.discordant,
        "unresolved": r.unresolved,
        "unresolved_pairs": [list(p) for p in r.unresolved_pairs],
        "rank_agreement": r,
        "scores": {m: {a.name: a.scores[m], b.name: b.scores[m]} for m in models},
        "n": {m: {a.name: a.n[m], b.name: b.n[m]} for m in models},
        "clusters": {a.name: a.clusters, b.name: b.clusters},
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
    in each run (matched by entry label), with replicates on each run's own design."""
    from truthline.benchmark._registry import plain

    va = run_view(store, project, run_a)
    vb = run_view(store, other or project, run_b)
    ca, cb = ranked_models(va), ranked_models(vb)
    common = [m for m in ca.models if m in cb.models]
    sa = set_scores(va, common, run_a) if common else SetScores(run_a, {}, None, {}, 0)
    sb = (
        set_scores(vb, common, run_b, seed_offset=1)
        if common
        else SetScores(run_b, {}, None, {}, 0)
    )
    count = ModelCount(common, ca.rules, ca.other)
    return plain(transfer(sa, sb, count, seed=va.rs.seed, level=va.rs.level))
