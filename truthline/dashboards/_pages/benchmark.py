"""Benchmark: leaderboard with CIs and cost, accuracy per condition (nAUDC), safety regime,
calibration, per-class heatmap, paired differences and the gold-provenance comparison.

Every number comes from ``truthline.benchmark`` (``leaderboard``, ``paired_matrix``,
``compare_gold``): the same calls as ``truthline benchmark``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from truthline.benchmark._samples import SampleFilter
from truthline.benchmark._types import BoardEntry, EntryKey, GoldComparison, PairedMatrix
from truthline.dashboards._charts import chart
from truthline.dashboards._context import Context
from truthline.dashboards._frame import cached
from truthline.dashboards._pages.samples import samples_link
from truthline.dashboards._plots import ci_bars, ci_row, forest, heatmap
from truthline.dashboards._registry import benchmark_sections, page
from truthline.dashboards._sections import render_sections
from truthline.stats import fmt_ci
from truthline.vocab import Slice

SAMPLE_LINKS = {
    "samples": "all answers",
    "samples_wrong": "wrong decisions",
    "samples_failures": "model failures",
}
"""Link columns to the Samples page: the items behind a row's numbers."""


def board_link(r: BoardEntry, **more: Any) -> str:
    """The Samples page behind one leaderboard entry's number, in the entry's gold slice
    (``more``: further filters)."""
    if r.slice not in (None, "all"):
        more.setdefault("slice", r.slice)
    return samples_link(r.run_id, SampleFilter.for_entry(r.key, **more))


def entry_label(key: EntryKey) -> str:
    """An entry as this page names it: ``"m [v3, no-image, gt]"``."""
    return key.label(wrap=(" [", "]"), condition_last=True)


def leaderboard_table(rows: list[BoardEntry]) -> pd.DataFrame:
    out = []
    for r in rows:
        out.append(
            {
                "model": entry_label(r.key),
                "run_id": r.run_id,
                **ci_row(r.accuracy, "accuracy"),
                "decisions": r.decisions,
                "requests": r.requests,
                "coverage": r.coverage,
                "format_rate": r.format_rate,
                "model_failure": r.model_failure,
                "infra_missing": r.infra_missing,
                "cost_usd": r.cost_usd,
                "simulated": r.simulated,
                "samples": board_link(r),
                "samples_wrong": board_link(r, correct=False),
                "samples_failures": board_link(r, outcome="model_failure"),
            }
        )
    return pd.DataFrame(out)


def _metric(r: BoardEntry, name: str) -> dict[str, Any]:
    return r.metrics.get(name) or {}


def _leaderboard(rows: list[BoardEntry]) -> None:
    df = leaderboard_table(rows)
    if df["simulated"].any():
        st.warning("Entries marked simulated=True are SIMULATED models.")
    fig = forest(
        df.rename(columns=lambda c: c.removeprefix("accuracy_")),
        "model",
        x_title="accuracy (95% CI)",
    )
    chart(
        fig,
        df,
        "Leaderboard",
        caption="Best accuracy first; coverage excludes infra-missing.",
        sources=[r.accuracy for r in rows],
        links=SAMPLE_LINKS,
    )


def _conditions(ctx: Context, rows: list[BoardEntry]) -> None:
    axis = ctx.project.benchmark.conditions
    order = list(axis.order) if axis else []
    recs = []
    for r in rows:
        m = _metric(r, "naudc")
        for cond, v in (m.get("per_condition") or {}).items():
            recs.append(
                {
                    "model": entry_label(r.key),
                    "condition": cond,
                    "accuracy": v.get("accuracy"),
                    "n": v.get("n"),
                    **ci_row(m.get("naudc"), "naudc"),
                    "samples": board_link(r, cond=str(cond)),
                }
            )
    df = pd.DataFrame(recs)
    fig = None
    if not df.empty:
        df["rank"] = df["condition"].map({c: i for i, c in enumerate(order)}).fillna(len(order))
        df = df.sort_values(["model", "rank"]).drop(columns="rank")
        df["series"] = df["model"] + "  nAUDC " + df["naudc_point"].map("{:.3f}".format)
        fig = px.line(df, x="condition", y="accuracy", color="series", markers=True)
        fig.update_xaxes(categoryorder="array", categoryarray=order)
        fig.update_layout(height=400, yaxis_title="accuracy")
    chart(
        fig,
        df.drop(columns=["series"], errors="ignore"),
        "Accuracy per condition (nAUDC)",
        caption=f"Conditions ordered by severity ({axis.column if axis else 'none declared'}).",
        links={"samples": "answers"},
    )


def _safety(ctx: Context, rows: list[BoardEntry]) -> None:
    sf = ctx.project.benchmark.safety_field
    recs = []
    for r in rows:
        rec, fa = _metric(r, "safety_recall"), _metric(r, "false_alarm_share")
        if not rec.get("value"):
            continue
        recs.append(
            {
                "model": entry_label(r.key),
                **ci_row(rec["value"], "recall"),
                **ci_row(fa.get("value"), "false_alarm_share"),
                "regime": fa.get("regime"),
                **{f"n_{k}": v for k, v in (rec.get("counts") or {}).items()},
                # the true violations: their accuracy is the recall
                "samples": board_link(r, field=sf, gold="true") if sf else None,
            }
        )
    df = pd.DataFrame(recs)
    fig = None
    if not df.empty:
        fig = go.Figure(
            go.Scatter(
                x=df["false_alarm_share_point"],
                y=df["recall_point"],
                text=df["model"],
                mode="markers+text",
                textposition="top center",
                marker=dict(size=12),
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=df["recall_high"] - df["recall_point"],
                    arrayminus=df["recall_point"] - df["recall_low"],
                ),
            )
        )
        fig.add_vline(x=0.5, line_dash="dot", annotation_text="false-alarm | false-safe")
        fig.update_layout(
            height=420,
            xaxis=dict(title="false-alarm share of safety errors", range=[-0.05, 1.05]),
            yaxis=dict(title="recall of violations", range=[-0.05, 1.05]),
        )
    chart(
        fig,
        df,
        "Safety regime",
        caption="Right of 0.5: errs towards false alarms.",
        links={"samples": "violations"},
    )


def _calibration(rows: list[BoardEntry]) -> None:
    recs = []
    for r in rows:
        m = _metric(r, "ece")
        for b in m.get("bins") or []:
            if b.get("n"):
                recs.append({"model": entry_label(r.key), **b, **ci_row(m.get("ece"), "ece")})
    df = pd.DataFrame(recs)
    fig = None
    if not df.empty:
        fig = px.line(
            df, x="confidence", y="accuracy", color="model", markers=True, hover_data=["bin", "n"]
        )
        fig.add_trace(
            go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect", line=dict(dash="dot"))
        )
        fig.update_layout(height=420, xaxis_title="stated confidence", yaxis_title="accuracy")
    chart(
        fig,
        df,
        "Calibration",
        caption="10 equal-width confidence bins; ECE per model in the table.",
    )


def _per_class(ctx: Context, rows: list[BoardEntry]) -> None:
    fields = sorted({f for r in rows for f in (_metric(r, "per_class").get("by_field") or {})})
    if not fields:
        chart(None, pd.DataFrame(), "Per-class accuracy")
        return
    primary = ctx.project.benchmark.action_field
    field = st.selectbox(
        "Per-class field",
        fields,
        index=fields.index(primary) if primary in fields else 0,
        key="bench-class-field",
    )
    recs = []
    for r in rows:
        classes = (_metric(r, "per_class").get("by_field") or {}).get(field, {}).get("classes", {})
        for cls, v in classes.items():
            link = board_link(r, field=field, gold=str(cls))
            recs.append({"model": entry_label(r.key), "class": cls, **v, "samples": link})
    df = pd.DataFrame(recs)
    fig = None
    if not df.empty:
        piv = df.pivot_table(index="model", columns="class", values="accuracy")
        fig = heatmap(piv.round(3).values, list(map(str, piv.columns)), list(piv.index))
    chart(fig, df, f"Per-class accuracy: {field}", links={"samples": "answers"})


def _paired(ctx: Context, run_id: str) -> None:
    from truthline.benchmark import paired_matrix

    pm: PairedMatrix = cached(
        ctx,
        "truthline.benchmark.paired_matrix",
        lambda: paired_matrix(ctx.store, ctx.project, run_id),
        run_id,
    )
    recs = [
        {
            "a": c.a.id,
            "b": c.b.id,
            "n": c.n,
            **ci_row(c.difference, "diff"),
            "distinguishable": c.distinguishable,
        }
        for c in pm.pairs
    ]
    df = pd.DataFrame(recs)
    fig = None
    if not df.empty:
        names = [e.id for e in pm.entries]
        z = [[None] * len(names) for _ in names]
        text = [[""] * len(names) for _ in names]
        for r in recs:
            i, j = names.index(r["a"]), names.index(r["b"])
            z[i][j], z[j][i] = r["diff_point"], -r["diff_point"]
            mark = "*" if r["distinguishable"] else ""
            text[i][j] = f"{r['diff_point']:+.3f}{mark}"
            text[j][i] = f"{-r['diff_point']:+.3f}{mark}"
        fig = go.Figure(
            go.Heatmap(
                z=z, x=names, y=names, text=text, texttemplate="%{text}", colorscale="RdBu", zmid=0
            )
        )
        fig.update_layout(height=160 + 40 * len(names), yaxis=dict(autorange="reversed"))
    chart(
        fig,
        df,
        f"Paired accuracy differences (run {run_id})",
        caption="Row minus column on common decisions; * = the paired 95% CI excludes zero.",
        sources=[pm.as_dict()],  # the thin-design warning reads the intervals in the JSON form
    )


def _label_provenance(ctx: Context, run_id: str) -> None:
    """The same answers against each arm's own labels (``compare_labels``: the paper's
    design), shown where the store holds tier-1 labels of the run's items."""
    from truthline.benchmark import compare_labels

    cg: GoldComparison = cached(
        ctx,
        "truthline.benchmark.compare_labels",
        lambda: compare_labels(ctx.store, ctx.project, run_id),
        run_id,
    )
    if not cg.models:
        return
    recs, infl = [], []
    for m in cg.models:
        label = entry_label(m.key)
        for sl in (Slice.BLIND.value, Slice.ANCHORED.value, Slice.VLM_SOURCED.value):
            ci = m.ci(sl)
            if ci:
                recs.append({"model": label, "labels": sl, **ci_row(ci)})
        infl.append(
            {
                "model": label,
                **ci_row(m.inflation_anchored_pp, "anchored_minus_blind_pp"),
                **ci_row(m.inflation_vlm_sourced_pp, "vlm_sourced_minus_blind_pp"),
            }
        )
    df = pd.DataFrame(recs)
    mean = cg.mean_inflation_anchored_ci
    if mean is not None:
        st.metric(
            "Mean inflation, anchored vs blind labels (pp)",
            fmt_ci(mean, digits=1, sign=True),
            help=f"higher on anchored labels: {cg.higher_on_anchored} models (rule baselines "
            "shown, not counted)",
        )
    chart(
        ci_bars(df, "model", color="labels", y_title="accuracy (95% CI)") if not df.empty else None,
        df.merge(pd.DataFrame(infl), on="model") if not df.empty else df,
        f"Accuracy against each arm's labels (run {run_id})",
        caption="Same answers, different references: every retained tier-1 annotator's labels "
        "are a reference of their arm; VLM-sourced = anchored labels that kept the prefill.",
        sources=[cg.as_dict()],
    )


def _gold_provenance(ctx: Context, run_id: str) -> None:
    from truthline.benchmark import compare_gold

    cg: GoldComparison = cached(
        ctx,
        "truthline.benchmark.compare_gold",
        lambda: compare_gold(ctx.store, ctx.project, run_id),
        run_id,
    )
    recs, infl = [], []
    for m in cg.models:
        label = entry_label(m.key)
        for sl in (Slice.BLIND.value, Slice.ANCHORED.value, Slice.VLM_SOURCED.value):
            ci = m.ci(sl)
            if ci:
                link = samples_link(run_id, SampleFilter.for_entry(m.key, slice=sl))
                recs.append({"model": label, "gold slice": sl, **ci_row(ci), "samples": link})
        infl.append(
            {
                "model": label,
                **ci_row(m.inflation_anchored_pp, "anchored_minus_blind_pp"),
                **ci_row(m.inflation_vlm_sourced_pp, "vlm_sourced_minus_blind_pp"),
            }
        )
    df = pd.DataFrame(recs)
    if cg.mean_inflation_pp is not None:
        st.metric(
            "Mean inflation, anchored vs blind gold (pp)",
            f"{cg.mean_inflation_pp:+.1f}",
            help=f"higher on anchored gold: {cg.higher_on_anchored} models",
        )
    chart(
        ci_bars(df, "model", color="gold slice", y_title="accuracy (95% CI)")
        if not df.empty
        else None,
        df.merge(pd.DataFrame(infl), on="model") if not df.empty else df,
        f"Accuracy by gold provenance (run {run_id})",
        sources=[cg.as_dict()],  # the thin-design warning reads the intervals in the JSON form
        links={"samples": "answers"},
    )


def _across(ctx: Context, run_id: str) -> None:
    """The metrics across models the project names (routing oracle, ensemble, hard subset,
    rank transfer, ...), each table row with its n: the report's sections."""
    from truthline.benchmark import across_metrics, across_sections

    data = cached(
        ctx,
        "truthline.benchmark.across_metrics",
        lambda: across_metrics(ctx.store, ctx.project, run_id),
        run_id,
    )
    secs = across_sections(data)
    if not secs:
        st.info("The project names no metrics across models ([benchmark] metrics).")
    for sec in secs:
        df = pd.DataFrame(sec.table)
        if len(df) and sec.n:
            ns = list(sec.n)
            cells = ns if all(isinstance(n, int) for n in ns) else [_n_cell(n) for n in ns]
            df.insert(len(df.columns), sec.n_column, cells)
        if df.empty:
            st.markdown(f"**{sec.title}**")
            st.caption(sec.text)
            continue
        chart(None, df, sec.title, caption=sec.text, sources=sec.sources)


def _n_cell(n: Any) -> str:
    return "–" if n is None else str(n)


@page("Benchmark", order=40, icon=":material/leaderboard:")
def benchmark(ctx: Context) -> None:
    from truthline.benchmark import leaderboard, list_runs

    st.title("Benchmark")
    runs = cached(ctx, "truthline.benchmark.list_runs", lambda: list_runs(ctx.store, ctx.name))
    if not runs:
        st.info(
            "No benchmark runs yet: `truthline benchmark run --model ...` scores models on gold."
        )
        return
    ids = [r["run_id"] for r in runs]
    c1, c2 = st.columns([3, 1])
    chosen = c1.multiselect("Runs", ids, default=ids, key="bench-runs") or ids
    slice_ = c2.selectbox("Gold slice", [s.value for s in Slice], key="bench-slice")
    rows = cached(
        ctx,
        "truthline.benchmark.leaderboard",
        lambda: leaderboard(ctx.store, ctx.project, list(chosen), slice_=slice_),
        tuple(chosen),
        slice_,
    )
    if not rows:
        st.info(f"No scored entries in the {slice_!r} gold slice of these runs.")
        return
    st.header("Leaderboard")
    _leaderboard(rows)
    st.header("Robustness and safety")
    _conditions(ctx, rows)
    _safety(ctx, rows)
    _calibration(rows)
    st.header("Per class")
    _per_class(ctx, rows)
    st.header("Paired differences and gold provenance")
    run_id = st.selectbox("Run", list(chosen), key="bench-run") if len(chosen) > 1 else chosen[0]
    _paired(ctx, run_id)
    _label_provenance(ctx, run_id)
    _gold_provenance(ctx, run_id)
    st.header("Across models")
    _across(ctx, run_id)
    # sections other packages register (the paper systems' tables; none for other runs)
    render_sections(benchmark_sections(ctx, list(chosen)))
