"""RealityBench's evaluation tables (App. D, E) from stored benchmark runs.

Table 5 (``model_rows``): per model false-accept and miss rates, acceptability precision,
recall and F1 and the documentation score on scorer-acceptable frames (stratified, scene-
clustered bootstrap CIs over items, as ``conditional_scores`` computes them), answer-grammar
match rate, replies cut by the output cap, mean thinking tokens and set cost. Table 6
(``paired_rows``): paired model differences in F1 and documentation score on the same items,
one scene-cluster bootstrap draw for both models. Tables 7 and 11 (``price_rows``): list
price per 1M tokens with its source date beside the set cost and tokens. Tables 8-10 are
``_conditional.pow_tables``; Table 12 and §7 are ``_ablation``; Table 13 (``human_rows``)
is ``_pow.validate_scorer`` per environment. Nothing here is a hard-coded number: every
figure comes from the runs' stored decisions, responses and manifests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import Scored
from truthline.stats import CI, design, draw, percentile_ci
from truthline.systems.realitybench._ablation import RERUN
from truthline.systems.realitybench._conditional import (
    ACCEPT_FIELD,
    any_match_fields,
    conditional_scores,
    doc_correct,
    fmt_ci,
    is_pow,
    verdicts,
)

if TYPE_CHECKING:
    from truthline.benchmark import ReportContext
    from truthline.report import Section

ENTRY = ["model", "variant", "item_id", "path", "entity"]
TRUNCATED = "truncated"
"""The failure reason of a reply cut by the output cap (finish reason ``length``)."""


def _ci_dict(ci: CI | None) -> dict[str, Any] | None:
    return ci.as_dict() if ci is not None else None


def _rows(rows: Sequence[Any]) -> list[dict[str, Any]]:
    return [r.as_dict() for r in rows]


# -- loading ------------------------------------------------------------------------------------
def load_decisions(store: Any, project: Any, run_ids: Sequence[str]) -> pd.DataFrame | None:
    """The base-condition, no-control decisions of ``run_ids`` (proof-of-work runs only), each
    (model, variant, item, decision) once: a later run's answer replaces an earlier one."""
    from truthline.benchmark import run_decisions

    dec = run_decisions(store, project, run_ids, is_pow)
    if dec is None:
        return None
    dec = dec[(dec["condition"] == "base") & (dec["control"] == "")]
    keys = [c for c in ENTRY if c in dec]
    dec = dec.assign(entity=dec["entity"].fillna("")) if "entity" in dec else dec
    return dec.drop_duplicates(keys, keep="last").reset_index(drop=True)


@dataclass(frozen=True)
class Usage:
    """What one model entry's replies cost and how they ended (from ``run_results``)."""

    model: str
    variant: str
    spec: str | None
    simulated: bool
    requests: int
    returned: int
    parsed: int
    truncated: int
    tokens_in: int
    tokens_out: int
    tokens_thinking: int
    thinking_replies: int
    """Replies whose API reported reasoning tokens (more than zero)."""
    cost_usd: float

    @property
    def format_rate(self) -> float | None:
        return self.parsed / self.returned if self.returned else None

    @property
    def mean_thinking(self) -> float | None:
        """Mean reasoning tokens per returned reply; None when no reply reported any."""
        return self.tokens_thinking / self.returned if self.thinking_replies else None


def usage(store: Any, run_ids: Sequence[str]) -> dict[tuple[str, str], Usage]:
    """Per (model, variant) of the runs' base entries: replies, parse and truncation counts,
    tokens and cost (a later run's entry replaces an earlier one's)."""
    from sqlalchemy import select

    from truthline.benchmark import load_manifest
    from truthline.store import tables

    r = tables.run_results
    out: dict[tuple[str, str], Usage] = {}
    for rid in run_ids:
        man = load_manifest(store, rid)
        with store.begin() as conn:
            rows = conn.execute(
                select(r.c.model, r.c.variant, r.c.status, r.c.scores).where(
                    r.c.run_id == rid, r.c.condition == "base", r.c.control == ""
                )
            ).all()
        acc: dict[tuple[str, str], list[Any]] = {}
        for row in rows:
            acc.setdefault((row.model, row.variant), []).append(row)
        for (model, variant), rs in acc.items():
            entry = man.get("entries", {}).get(f"{model}|{variant}|base|") or {}
            returned = [x for x in rs if x.status in ("parsed", "model_failure", "error")]
            toks = np.array(
                [((x.scores or {}).get("tokens") or [0, 0, 0])[:3] for x in returned], dtype=float
            ).reshape(-1, 3)
            out[(model, variant)] = Usage(
                model,
                variant,
                entry.get("spec"),
                bool(entry.get("simulated", False)),
                len(rs),
                len(returned),
                sum(x.status == "parsed" for x in rs),
                sum((x.scores or {}).get("reason") == TRUNCATED for x in rs),
                int(toks[:, 0].sum()),
                int(toks[:, 1].sum()),
                int(toks[:, 2].sum()),
                int((toks[:, 2] > 0).sum()),
                float(sum((x.scores or {}).get("cost_usd") or 0.0 for x in rs)),
            )
    return out


# -- Tables 7 and 11: prices ----------------------------------------------------------------------
@dataclass(frozen=True)
class PriceRow:
    """A model's list price (None: unpriced) with its source date, beside its set cost."""

    model: str
    input_per_m: float | None
    output_per_m: float | None
    source_date: str | None
    set_cost_usd: float | None
    tokens_in: int
    tokens_out: int
    tokens_thinking: int
    simulated: bool

    @property
    def priced(self) -> bool:
        return self.input_per_m is not None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "priced": self.priced}

    def shown(self) -> dict[str, Any]:
        """The row as Tables 7 and 11 print it."""
        cost = f"${self.set_cost_usd:.2f}" if self.set_cost_usd is not None else "unpriced"
        return {
            "model": self.model + (" [SIMULATED]" if self.simulated else ""),
            "USD / 1M input": f"{self.input_per_m:.2f}" if self.priced else "unpriced",
            "USD / 1M output": f"{self.output_per_m:.2f}" if self.output_per_m is not None else "",
            "price read": self.source_date or "not recorded",
            "set cost": cost,
            "tokens in / out / thinking": (
                f"{self.tokens_in} / {self.tokens_out} / {self.tokens_thinking}"
            ),
        }


def price_row(u: Usage) -> PriceRow:
    """The price of a usage entry's model spec: declared (table or spec options) or not."""
    from truthline.models import parse_model_spec
    from truthline.models._prices import price_date, price_for, price_known

    spec = parse_model_spec(u.spec) if u.spec else None
    known = spec is not None and price_known(spec)
    p = price_for(spec) if known and spec is not None else None
    return PriceRow(
        u.model,
        p.input_per_m if p else None,
        p.output_per_m if p else None,
        price_date(spec) if known and spec is not None else None,
        u.cost_usd if known else None,
        u.tokens_in,
        u.tokens_out,
        u.tokens_thinking,
        u.simulated,
    )


def price_rows(use: Mapping[tuple[str, str], Usage]) -> list[PriceRow]:
    """Tables 7 and 11: per model of the default prompt (the paper's set), price and cost."""
    return [price_row(u) for (_, v), u in use.items() if v == ""]


# -- Table 5: per model -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelRow:
    """One model entry's Table 5 row."""

    model: str
    variant: str
    frames: int
    false_accept_rate: CI | None
    miss_rate: CI | None
    precision: CI | None
    recall: CI | None
    f1: CI | None
    documentation: CI | None
    format_rate: float | None
    truncated: int | None
    mean_thinking_tokens: float | None
    price: PriceRow | None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "variant": self.variant, "frames": self.frames}
        for k in ("false_accept_rate", "miss_rate", "precision", "recall", "f1", "documentation"):
            out[k] = _ci_dict(getattr(self, k))
        out["format_rate"] = self.format_rate
        out["truncated"] = self.truncated
        out["mean_thinking_tokens"] = self.mean_thinking_tokens
        out["price"] = self.price.as_dict() if self.price else None
        return out

    def shown(self) -> dict[str, Any]:
        p = self.price
        sim = " [SIMULATED]" if p is not None and p.simulated else ""
        return {
            "model": self.model + (f" ({self.variant})" if self.variant else "") + sim,
            "frames": self.frames,
            "false-accept rate": fmt_ci(self.false_accept_rate),
            "miss rate": fmt_ci(self.miss_rate),
            "precision": fmt_ci(self.precision),
            "recall": fmt_ci(self.recall),
            "F1": fmt_ci(self.f1),
            "documentation": fmt_ci(self.documentation),
            "answer format": f"{self.format_rate:.2f}" if self.format_rate is not None else None,
            "cut by cap": self.truncated,
            "thinking tokens": (
                f"{self.mean_thinking_tokens:.0f}"
                if self.mean_thinking_tokens is not None
                else None
            ),
            "set cost": p.shown()["set cost"] if p else None,
        }


def model_rows(
    project: Any,
    decisions: pd.DataFrame,
    use: Mapping[tuple[str, str], Usage] | None = None,
    rs: M.Resampling | None = None,
) -> list[ModelRow]:
    """Table 5 from a run's decisions (and its ``usage``: format, truncation, thinking, cost;
    None without a store)."""
    rs = rs or M.Resampling(project.benchmark.bootstrap_resamples, project.benchmark.seed)
    rows = []
    for (variant, model), d in decisions.groupby(["variant", "model"]):
        r = conditional_scores(Scored(project, d.reset_index(drop=True), pd.DataFrame(), rs))
        if r.get("value") is None and "note" in r:
            continue
        a = r["acceptability"] or {}
        u = (use or {}).get((str(model), str(variant)))
        rows.append(
            ModelRow(
                str(model),
                str(variant),
                r["frames"]["acceptable"] + r["frames"]["rejected"],
                a.get("false_accept_rate"),
                a.get("miss_rate"),
                a.get("precision"),
                a.get("recall"),
                a.get("f1"),
                r["documentation_on_acceptable"],
                u.format_rate if u else None,
                u.truncated if u else None,
                u.mean_thinking if u else None,
                price_row(u) if u else None,
            )
        )
    return rows


# -- Table 6: paired differences ----------------------------------------------------------------------
@dataclass(frozen=True)
class PairRow:
    """Model a minus model b on the same items; distinguishable when the CI excludes zero."""

    a: str
    b: str
    items: int
    f1_difference: CI
    documentation_difference: CI

    @property
    def f1_distinguishable(self) -> bool:
        return self.f1_difference.excludes_zero()

    @property
    def documentation_distinguishable(self) -> bool:
        return self.documentation_difference.excludes_zero()

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "items": self.items,
            "f1_difference": self.f1_difference.as_dict(),
            "f1_distinguishable": self.f1_distinguishable,
            "documentation_difference": self.documentation_difference.as_dict(),
            "documentation_distinguishable": self.documentation_distinguishable,
        }

    def shown(self) -> dict[str, Any]:
        def mark(ci: CI, yes: bool) -> str | None:
            s = fmt_ci(ci)
            return f"{s} *" if s and yes else s

        return {
            "a": self.a,
            "b": self.b,
            "items": self.items,
            "F1 a - b": mark(self.f1_difference, self.f1_distinguishable),
            "documentation a - b": mark(
                self.documentation_difference, self.documentation_distinguishable
            ),
        }


def item_counts(project: Any, d: pd.DataFrame, items: list[str]) -> dict[str, np.ndarray]:
    """Per item: documentation (correct, decisions) on scorer-acceptable frames and the
    acceptability counts (tp, fp, fn); an unanswered verdict is a wrong one."""
    idx = pd.Index(items)
    ok = verdicts(d)
    accepted = d["item_id"].astype(str).map(lambda i: ok.get(i, False)).astype(bool)
    doc = d[(d["field"] != ACCEPT_FIELD) & accepted]
    acc = d[d["field"] == ACCEPT_FIELD]
    g = acc["gold"].astype(bool).to_numpy()
    p = np.array(
        [bool(x) if x is not None else not y for x, y in zip(acc["pred"], g, strict=True)],
        dtype=bool,
    )

    def per(rows: pd.DataFrame, w: np.ndarray) -> np.ndarray:
        pos = idx.get_indexer(rows["item_id"].astype(str))
        return np.bincount(pos, weights=w, minlength=len(items))

    return {
        "doc_c": per(doc, doc_correct(doc, any_match_fields(project))),
        "doc_n": per(doc, np.ones(len(doc))),
        "tp": per(acc, (g & p).astype(float)),
        "fp": per(acc, (~g & p).astype(float)),
        "fn": per(acc, (g & ~p).astype(float)),
    }


def _f1(x: Mapping[str, np.ndarray], W: np.ndarray) -> np.ndarray:
    tp, fp, fn = (W @ x[k] for k in ("tp", "fp", "fn"))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(2 * tp / (2 * tp + fp + fn))


def _doc(x: Mapping[str, np.ndarray], W: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((W @ x["doc_c"]) / (W @ x["doc_n"]))


def _scene_draw(d: pd.DataFrame, items: list[str], rs: M.Resampling) -> tuple[Any, np.ndarray]:
    """The design of ``items`` (scene clusters, within environment strata when no scene
    straddles two) and one bootstrap multiplicity matrix on it."""
    first = d.drop_duplicates("item_id")
    m = first.set_index(first["item_id"].astype(str)).reindex(items)
    clusters = m["parent"].fillna(pd.Series(items, index=m.index)).astype(str).tolist()
    strata = m["stratum"].fillna("").astype(str).tolist() if "stratum" in m else None
    if strata is not None:
        frame = pd.DataFrame({"c": clusters, "s": strata})
        if (frame.groupby("c")["s"].nunique() > 1).any():
            strata = None
    des = design(len(items), clusters, strata)
    cl, st = des.resampling(clusters, strata)
    return des, draw(len(items), rs.resamples, rs.seed, clusters=cl, strata=st).astype(float)


def paired_rows(
    project: Any, decisions: pd.DataFrame, rs: M.Resampling | None = None
) -> list[PairRow]:
    """Table 6: every pair of default-prompt models on the items both answered: the F1 and
    documentation differences with percentile CIs over one bootstrap draw of scenes
    (clusters, within environment strata when scenes do not straddle them)."""
    rs = rs or M.Resampling(project.benchmark.bootstrap_resamples, project.benchmark.seed)
    d = decisions[decisions["variant"] == ""]
    per = {str(m): g for m, g in d.groupby("model", sort=False)}
    draws: dict[tuple[str, ...], tuple[Any, np.ndarray]] = {}  # pairs on the same items share one
    out = []
    for a, b in combinations(per, 2):
        items = sorted(set(per[a]["item_id"].astype(str)) & set(per[b]["item_id"].astype(str)))
        if len(items) < 2:
            continue
        if tuple(items) not in draws:
            draws[tuple(items)] = _scene_draw(per[a], items, rs)
        des, W = draws[tuple(items)]
        one = np.ones((1, len(items)))
        xa, xb = item_counts(project, per[a], items), item_counts(project, per[b], items)
        diffs = []
        for stat in (_f1, _doc):
            point = float((stat(xa, one) - stat(xb, one))[0])
            boot = stat(xa, W) - stat(xb, W) if len(W) else np.array([])
            diffs.append(
                percentile_ci(
                    point,
                    boot,
                    level=rs.level,
                    seed=rs.seed,
                    scheme="cluster",
                    n=len(items),
                    design=des,
                )
            )
        out.append(PairRow(a, b, len(items), diffs[0], diffs[1]))
    return out


# -- Table 13: human ratings ----------------------------------------------------------------------------
@dataclass(frozen=True)
class HumanRow:
    """One environment's (or ``all``) ratings: raters, frames, raw pairwise agreement,
    Krippendorff's alpha with skips, and the scorer against the held-out rater majority."""

    environment: str
    raters: int
    frames: int
    pairwise_agreement: float
    krippendorff_alpha: float
    held_out: int
    scorer_agreement: CI | None
    ties_excluded: int
    gray_excluded: int

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scorer_agreement": _ci_dict(self.scorer_agreement)}

    def shown(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "raters": self.raters,
            "frames": self.frames,
            "raw agreement": f"{self.pairwise_agreement:.2f}",
            "Krippendorff alpha": f"{self.krippendorff_alpha:.2f}",
            "held-out frames": self.held_out,
            "scorer vs majority": fmt_ci(self.scorer_agreement, pct=True),
        }


def human_rows(
    frames: pd.DataFrame,
    ratings: pd.DataFrame,
    *,
    tune_frac: float = 0.6,
    seed: int = 0,
    resamples: int = 2000,
) -> list[HumanRow]:
    """Table 13: ``_pow.validate_scorer`` on all rated frames and on each environment's
    (tuning is per environment, so an environment's thresholds are the same either way)."""
    from truthline.systems.realitybench._pow import validate_scorer

    envs = dict(zip(frames["key"], frames["environment"], strict=True))
    rated = ratings[[k in envs for k in ratings.index]]
    out = []
    for env in ["all", *sorted({envs[k] for k in rated.index})]:
        r = rated if env == "all" else rated[[envs[k] == env for k in rated.index]]
        f = frames if env == "all" else frames[frames["environment"] == env]
        v = validate_scorer(f, r, tune_frac=tune_frac, seed=seed, resamples=resamples)
        c = v.counts
        given = r.map(lambda x: x is not None and not (isinstance(x, float) and np.isnan(x)))
        out.append(
            HumanRow(
                env,
                int(given.any(axis=0).sum()),
                len(r),
                v.pairwise,
                v.alpha,
                c["held_out_scored"],
                v.wilson if c["held_out_scored"] else None,
                c["ties_excluded"],
                c["gray_excluded"],
            )
        )
    return out


# -- report -------------------------------------------------------------------------------------------
def report_sections(ctx: ReportContext) -> list[Section]:
    """Tables 4-7, 11, 12 and the §7 analyses as sections of ``truthline benchmark report``
    (an extra ``truthline.report_sections`` entry point); none unless the runs are
    proof-of-work runs (acceptability verdicts, ``_conditional.is_pow``). Tables 8-10 come
    from ``_conditional.report_sections``; Table 13 needs the frame table (``truthline pow
    tables humans``)."""
    from truthline.report import Section
    from truthline.systems.realitybench import _ablation as A

    dec = load_decisions(ctx.store, ctx.project, ctx.run_ids)
    if dec is None or not len(dec):
        return []
    rs = M.Resampling(
        ctx.resamples if ctx.resamples is not None else ctx.project.benchmark.bootstrap_resamples,
        ctx.project.benchmark.seed,
    )
    env_col = ctx.project.benchmark.environment
    use = usage(ctx.store, ctx.run_ids) if ctx.store is not None else {}
    models = model_rows(ctx.project, dec, use, rs)
    pairs = paired_rows(ctx.project, dec, rs)
    prices = price_rows(use)
    trace = A.error_tracing(dec, env_col=env_col)
    gap = A.documentation_gap(ctx.project, dec, env_col=env_col)
    abl = A.prompt_order_ablation(dec, env_col=env_col, resamples=rs.resamples, seed=rs.seed)
    vdoc = A.variant_documentation(ctx.project, dec, resamples=rs.resamples, seed=rs.seed)
    ctx.data["realitybench_tables"] = {
        "models": _rows(models),
        "paired": _rows(pairs),
        "prices": _rows(prices),
        "error_tracing": _rows(trace),
        "documentation_gap": _rows(gap),
        "ablation": _rows(abl),
        "variant_documentation": _rows(vdoc),
    }
    secs = [
        Section.of(
            "RealityBench: models (Table 5)",
            "False accepts over scorer-rejected frames, misses over scorer-accepted ones, "
            "precision/recall/F1 of accepting, documentation on scorer-accepted frames "
            "(bootstrap over items, clustered by scene, stratified by environment); answer "
            "format = share of returned replies that parse; cut by cap = replies ended by the "
            "output cap; thinking tokens = mean reasoning tokens where the API reports them.",
            [m.shown() for m in models],
            n=[m.frames for m in models],
            metrics=["acceptability", "conditional", "format_rate", "cost_usd"],
        )
    ]
    if pairs:
        secs.append(
            Section.of(
                "RealityBench: paired model differences (Table 6)",
                "F1 and documentation of a minus b on the same items, one bootstrap draw of "
                "scenes for both; * marks a 95 % interval that excludes zero (distinguishable).",
                [p.shown() for p in pairs],
                n=[p.items for p in pairs],
                metrics=["paired_difference"],
            )
        )
    if prices:
        secs.append(
            Section.of(
                "RealityBench: prices and set cost (Tables 7, 11)",
                "List price per 1M tokens as declared (prompt at the input rate, thinking at "
                "the output rate) with the date it was read, and the set's cost from the "
                "API-reported tokens; models without a declared price are unpriced.",
                [p.shown() for p in prices],
                n=[p.tokens_in + p.tokens_out for p in prices],
                n_column="tokens",
                metrics=["cost_usd"],
            )
        )
    if trace:
        secs.append(
            Section.of(
                "RealityBench: error tracing of wrong rejections (Table 12)",
                "Environments whose acceptability shares a documentation field: of the wrong "
                "rejections (the scorer accepts, the model rejects), scene misreadings (the "
                "model's own answer for that field is wrong) against requirement misreadings "
                "(right answer, rejected anyway); and the reported defects that came with a "
                "rejection.",
                [_trace_shown(t) for t in trace],
                n=[t.wrong_rejections for t in trace],
            )
        )
    if gap:
        secs.append(
            Section.of(
                "RealityBench: documentation on acceptable vs other frames (§7)",
                "Share of correct documentation answers on frames the scorer accepts and on "
                "the frames it rejects.",
                [_gap_shown(g) for g in gap],
                n=[g.acceptable_n + g.other_n for g in gap],
                metrics=["conditional"],
            )
        )
    if abl:
        secs.append(
            Section.of(
                "RealityBench: prompt-order ablation (Table 4)",
                "Defect claims (a documentation answer that reports a defect) on the same "
                "items under each prompt variant against the default (verdict first), the "
                "paired difference with a scene-cluster CI, and a rerun of the default as the "
                "run-to-run noise: changed only when the CI excludes zero and the difference "
                "exceeds the rerun's.",
                [_ablation_shown(r) for r in abl],
                n=[r.items for r in abl],
            )
        )
    if vdoc:
        secs.append(
            Section.of(
                "RealityBench: documentation under each prompt variant (§7)",
                "Documentation score on scorer-acceptable frames under each prompt variant "
                "against the default (verdict first) on the same items, with a scene-cluster "
                "CI of the difference.",
                [_variant_doc_shown(r) for r in vdoc],
                n=[r.items for r in vdoc],
                metrics=["conditional"],
            )
        )
    return secs


def _variant_doc_shown(r: Any) -> dict[str, Any]:
    return {
        "model": r.model,
        "variant": r.variant,
        "default": f"{r.default_score:.2f}",
        "variant score": f"{r.variant_score:.2f}",
        "difference": fmt_ci(r.difference),
    }


def _pct(ci: CI | None) -> str | None:
    return fmt_ci(ci, pct=True)


def _trace_shown(t: Any) -> dict[str, Any]:
    return {
        "environment": t.environment,
        "model": t.model,
        "field": t.field,
        "wrong rejections": t.wrong_rejections,
        "scene misreading": t.scene_misreading,
        "requirement misreading": t.requirement_misreading,
        "unanswered": t.unanswered,
        "scene share %": _pct(t.scene_share),
        "defects reported": t.defect_claims,
        "defects rejected %": _pct(t.defect_rejection_share),
    }


def _gap_shown(g: Any) -> dict[str, Any]:
    def f(x: float | None) -> str | None:
        return f"{x:.2f}" if x is not None else None

    return {
        "model": g.model,
        "environment": g.environment,
        "on acceptable": f(g.on_acceptable),
        "on other": f(g.on_other),
        "gap": f(g.gap),
    }


def _ablation_shown(r: Any) -> dict[str, Any]:
    changed = {True: "yes", False: "no", None: "no rerun"}[r.changed_beyond_noise]
    if r.variant == RERUN:
        changed = "(the noise band)"
    return {
        "model": r.model,
        "environment": r.environment,
        "variant": r.variant,
        "default rate": f"{r.default_rate:.2f}",
        "variant rate": f"{r.variant_rate:.2f}",
        "difference": fmt_ci(r.difference),
        "rerun difference": fmt_ci(r.rerun_difference) if r.rerun_difference else None,
        "changed beyond noise": changed,
    }


# -- Figure 2: acceptability and documentation against set cost --------------------------------------
def plot_cost(rows: Sequence[ModelRow], path: Path) -> Path:
    """The paper's Figure 2: each model's acceptability F1 and documentation score (95 %
    intervals as error bars) against its set cost at list price, log scale; unpriced models
    stand at the left edge, marked. Returns the PNG written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = [r for r in rows if not r.variant]
    costs = [r.price.set_cost_usd if r.price else None for r in base]
    priced = [c for c in costs if c]
    floor = min(priced) / 3 if priced else 1e-3
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharex=True)
    for ax, key, label in (
        (axes[0], "f1", "acceptability F1"),
        (axes[1], "documentation", "documentation score"),
    ):
        for r, c in zip(base, costs, strict=True):
            ci = getattr(r, key)
            if ci is None:
                continue
            x = c if c else floor
            err = [[ci.point - (ci.low if ci.low is not None else ci.point)],
                   [(ci.high if ci.high is not None else ci.point) - ci.point]]  # fmt: skip
            ax.errorbar([x], [ci.point], yerr=err, fmt="o" if c else "s", capsize=3)
            sim = " (SIMULATED)" if r.price is not None and r.price.simulated else ""
            ax.annotate(r.model + sim + ("" if c else " [unpriced]"), (x, ci.point),
                        fontsize=6, xytext=(3, 3), textcoords="offset points")  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlim(floor / 2, max(priced, default=floor) * 2)
        ax.set_xlabel("set cost, USD at list price (log)")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1.02)
    fig.suptitle("RealityBench Figure 2: score against set cost")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
