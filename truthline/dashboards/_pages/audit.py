"""Provenance audit: direction table, anchoring with CIs, blind vs anchored agreement,
the anchoring quadrant, exclusion signals (before/after), the provenance gradient, time.

Every number comes from ``truthline.audit.run_audit`` (the same call as ``truthline audit``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from truthline.dashboards._charts import chart, design_warning
from truthline.dashboards._context import Context
from truthline.dashboards._frame import cached
from truthline.dashboards._plots import ci_bars, ci_row, forest
from truthline.dashboards._registry import page
from truthline.errors import TruthlineError
from truthline.stats import fmt_ci
from truthline.vocab import Direction

SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "hexagon", "cross")
"""Marker shapes per annotator, so close points stay distinguishable without colour."""

DIRECTIONS = tuple(Direction)


def audit_result(ctx: Context, gradient_model: str | None = None) -> dict[str, Any]:
    """``run_audit(...).as_dict()``, cached per data version and gradient model (``None``:
    run_audit's own default, the same one ``truthline audit run`` uses)."""
    from truthline.audit import run_audit

    return cached(
        ctx,
        "truthline.audit.run_audit",
        lambda: run_audit(ctx.store, ctx.project, gradient_model=gradient_model).as_dict(),
        gradient_model,
    )


def _with_gradient_choice(ctx: Context, res: dict[str, Any]) -> dict[str, Any]:
    """Offer every stored prediction version for the provenance gradient; the preselected one
    is the default ``run_audit`` chose (``default_gradient_model``), so the page and the CLI
    show the same number until someone picks another."""
    from truthline.audit import prediction_versions

    versions = cached(
        ctx,
        "truthline.audit._audit.prediction_versions",
        lambda: prediction_versions(ctx.store, ctx.name),
    )
    default = res["settings"].get("gradient_model")
    if len(versions) < 2 or default not in versions:
        return res
    choice = st.selectbox(
        "Provenance gradient scores",
        versions,
        index=versions.index(default),
        key="audit-gradient-model",
        help="Predictions scored against blind, anchored and VLM-sourced labels. The prefill "
        "shown to annotators agrees with its own VLM-sourced labels by construction: the "
        "default is a re-run of the model when the store has one.",
    )
    return res if choice == default else audit_result(ctx, choice)


def direction_table(res: dict[str, Any], fields: list[str]) -> pd.DataFrame:
    rows = []
    for f, tab in res["direction"]["by_field"].items():
        if f not in fields:
            continue
        row: dict[str, Any] = {"field": f, "decisions": tab["n"], "vlm_errors": tab["vlm_errors"]}
        for k in DIRECTIONS:
            row[f"{k}_count"] = tab[k]["count"]
            row[f"{k}_rate"] = ci_row(tab[k]["rate"])["point"]
        rows.append(row)
    return pd.DataFrame(rows)


def shown_name(res: dict[str, Any], annotator: str) -> str:
    """An annotator's name as the charts show it: excluded annotators keep their rows, marked;
    SIMULATED annotators (marked in the store) say so, never read as real people."""
    name = f"{annotator} (excluded)" if annotator in (res.get("exclusions") or {}) else annotator
    return f"{name} (SIMULATED)" if annotator in (res.get("simulated_annotators") or ()) else name


def _rates(blocks: dict[str, Any], key: str, what: str) -> list[dict[str, Any]]:
    return [
        {key: name, "measure": what, **ci_row(tab[what]["rate"]), "n": tab["n"]}
        for name, tab in blocks.items()
    ]


def _section_direction(res: dict[str, Any], fields: list[str]) -> None:
    st.header("Direction of anchoring")
    dt = direction_table(res, fields)
    fig = None
    if not dt.empty:
        long = dt.melt(
            id_vars=["field"], value_vars=[f"{k}_rate" for k in DIRECTIONS], var_name="direction"
        )
        long["direction"] = long["direction"].str.removesuffix("_rate")
        fig = px.bar(long, x="value", y="field", color="direction", orientation="h")
        fig.update_layout(
            barmode="stack", height=140 + 36 * len(dt), xaxis_title="share of decisions"
        )
    chart(
        fig,
        dt,
        "Direction table per field",
        caption="Anchored decisions with an expert reference: kept/changed prefill x VLM right/wrong.",
    )
    by_field = [
        r
        for what in ("harmful_anchoring", "productive_anchoring")
        for r in _rates(
            {f: t for f, t in res["direction"]["by_field"].items() if f in fields}, "field", what
        )
    ]
    df = pd.DataFrame(by_field)
    chart(
        forest(df, "field", color="measure", x_title="rate (95% CI)") if not df.empty else None,
        df,
        "Harmful and productive anchoring per field",
    )
    by_ann = [
        r
        for what in ("harmful_anchoring", "productive_anchoring")
        for r in _rates(
            {shown_name(res, a): t for a, t in res["direction"]["by_annotator"].items()},
            "annotator",
            what,
        )
    ]
    da = pd.DataFrame(by_ann)
    chart(
        forest(da, "annotator", color="measure", x_title="rate (95% CI)") if not da.empty else None,
        da,
        "Harmful and productive anchoring per annotator",
    )


def _section_iaa(res: dict[str, Any], fields: list[str]) -> None:
    st.header("Blind vs anchored agreement")
    rows, diffs = [], []
    for f, r in res["iaa"].items():
        if f not in fields:
            continue
        for arm in ("blind", "anchored"):
            rows.append({"field": f, "arm": arm, **ci_row(r[arm]), "pairs": r[f"{arm}_pairs"]})
        diffs.append({"field": f, **ci_row(r["diff"], "diff")})
    df = pd.DataFrame(rows)
    chart(
        ci_bars(df, "field", color="arm", y_title="Cohen's kappa (95% CI)")
        if not df.empty
        else None,
        df.merge(pd.DataFrame(diffs), on="field") if not df.empty else df,
        "Inter-annotator kappa, blind vs anchored",
        caption="diff_* columns: anchored minus blind with its bootstrap CI.",
    )


def _section_quadrant(res: dict[str, Any]) -> None:
    st.header("Anchoring quadrant")
    vk = res["vlm_kappa"]["by_annotator"]
    cl = res["correct_label"]["by_annotator"]
    rows = [
        {
            "annotator": shown_name(res, a),
            **ci_row(vk[a], "vlm_kappa"),
            **ci_row(cl.get(a), "expert_agreement"),
        }
        for a in vk
    ]
    df = pd.DataFrame(rows)
    fig = None
    if not df.empty:
        # one trace per annotator (legend, not text labels: close points made labels overlap)
        fig = go.Figure(
            [
                go.Scatter(
                    x=[r.vlm_kappa_point],
                    y=[r.expert_agreement_point],
                    name=str(r.annotator),
                    mode="markers",
                    marker=dict(size=12, symbol=SYMBOLS[i % len(SYMBOLS)]),
                    error_x=dict(
                        type="data",
                        symmetric=False,
                        array=[r.vlm_kappa_high - r.vlm_kappa_point],
                        arrayminus=[r.vlm_kappa_point - r.vlm_kappa_low],
                    ),
                )
                for i, r in enumerate(df.itertuples())
            ]
        )
        ceiling = res["vlm_kappa"].get("ceiling")
        if ceiling is not None:
            fig.add_vline(
                x=ceiling,
                line_dash="dot",
                annotation_text="team ceiling",
                annotation_position="bottom right",
            )
        fig.update_layout(
            height=420,
            xaxis_title="kappa with the VLM prefill (anchored arm)",
            yaxis_title="agreement with the expert (correct-label rate)",
        )
    chart(
        fig,
        df,
        "Kappa with the VLM vs agreement with the expert, per annotator",
        caption="Right and low: defers to the VLM without being right more often. The team "
        "ceiling leaves excluded annotators out.",
    )


def signals_table(res: dict[str, Any]) -> pd.DataFrame:
    """One row per annotator and signal; excluded annotators keep theirs (``excluded``,
    ``exclusion_reason``), compared against the retained team."""
    rows = []
    records = res.get("excluded_annotators") or {}
    for a, s in res["signals"].items():
        rec = records.get(a) or {}
        for name, sig in s["signals"].items():
            rng = sig.get("team_range") or [None, None]
            rows.append(
                {
                    "annotator": a,
                    "signal": name,
                    "value": sig.get("value"),
                    "team_low": rng[0],
                    "team_high": rng[1],
                    "threshold": sig.get("threshold", sig.get("min_vlm_errors")),
                    "fired": bool(sig.get("fired")),
                    "flagged": bool(s["flagged"]),
                    "excluded": bool(s.get("excluded")),
                    "simulated": a in (res.get("simulated_annotators") or ()),
                    "exclusion_reason": rec.get("reason"),
                }
            )
    return pd.DataFrame(rows)


def _exclusion_text(annotator: str, rec: dict[str, Any]) -> str:
    who = f", by {rec['decided_by']}" if rec.get("decided_by") else ""
    when = f", {str(rec['decided_at'])[:16].replace('T', ' ')}" if rec.get("decided_at") else ""
    return f"{annotator} ({rec.get('reason')}{who}{when})"


def exclusions_table(res: dict[str, Any]) -> pd.DataFrame:
    """Excluded annotators: the decision and the signal values it rests on."""
    rows = []
    for a, rec in (res.get("excluded_annotators") or {}).items():
        s = res["signals"].get(a, {})
        row: dict[str, Any] = {
            "annotator": a,
            "reason": rec.get("reason"),
            "decided_by": rec.get("decided_by"),
            "decided_at": rec.get("decided_at"),
            "signals_fired": ", ".join(s.get("fired", [])),
        }
        for name, sig in s.get("signals", {}).items():
            row[name] = sig.get("value")
        rows.append(row)
    return pd.DataFrame(rows)


def _section_signals(res: dict[str, Any]) -> None:
    st.header("Exclusion signals")
    df = signals_table(res)
    flagged = (
        sorted({r.annotator for r in df.itertuples() if r.flagged and not r.excluded})
        if not df.empty
        else []
    )
    if flagged:
        st.error(f"Flagged (two or more signals): {', '.join(flagged)}")
    elif not df.empty:
        st.success("No retained annotator fires two or more exclusion signals.")
    records = res.get("excluded_annotators") or {
        a: {"reason": why} for a, why in (res.get("exclusions") or {}).items()
    }
    if records:
        st.info(
            "Excluded already, not part of gold or the team figures (their rows stay below, "
            "marked excluded): "
            + "; ".join(_exclusion_text(a, r) for a, r in sorted(records.items()))
        )
        st.dataframe(exclusions_table(res), hide_index=True)
    fig = None
    if not df.empty:
        num = df[df["signal"] != "zero_productive"]
        fig = go.Figure()
        for sig, sub in num.groupby("signal"):
            fig.add_trace(
                go.Scatter(
                    x=sub["value"],
                    y=[
                        f"{sig}: {a}" + (" (excluded)" if x else "")
                        for a, x in zip(sub["annotator"], sub["excluded"], strict=True)
                    ],
                    mode="markers",
                    name=f"{sig} value",
                    marker=dict(
                        size=11, color=["crimson" if f else "steelblue" for f in sub["fired"]]
                    ),
                    error_x=None,
                )
            )
            fig.add_trace(
                go.Scatter(
                    x=list(sub["team_low"]) + list(sub["team_high"]),
                    y=[
                        f"{sig}: {a}" + (" (excluded)" if x else "")
                        for a, x in zip(sub["annotator"], sub["excluded"], strict=True)
                    ]
                    * 2,
                    mode="markers",
                    marker=dict(symbol="line-ns-open", size=14, color="gray"),
                    name=f"{sig} team range",
                )
            )
        fig.update_layout(height=140 + 30 * len(num), yaxis=dict(autorange="reversed"))
    chart(fig, df, "Signals against the team range", caption="Red: the signal fired.")
    ba = res.get("before_after")
    if ba:
        rows = [
            {
                "aggregate": k,
                **ci_row(v["before"], "before"),
                **ci_row(v["after"], "after"),
                **ci_row(v["change"], "change"),
            }
            for k, v in ba["rows"].items()
        ]
        bdf = pd.DataFrame(rows)
        long = pd.concat(
            [
                bdf[["aggregate", f"{w}_point", f"{w}_low", f"{w}_high"]]
                .rename(columns=lambda c, w=w: c.removeprefix(f"{w}_"))
                .assign(when=w)
                for w in ("before", "after")
            ]
        )
        title = f"Before/after excluding {', '.join(ba['annotators'])} ({ba['kind']})"
        # rates and coefficients live on [-1, 1]; counts such as edit depth get their own
        # axis, or they squash every rate into a sliver
        wide = set(long.loc[long["high"].abs() > 1, "aggregate"])
        unit = long[~long["aggregate"].isin(wide)]
        chart(
            forest(unit, "aggregate", color="when", x_title="rate or coefficient (95% CI)"),
            bdf[~bdf["aggregate"].isin(wide)],
            title,
        )
        if wide:
            chart(
                forest(
                    long[long["aggregate"].isin(wide)],
                    "aggregate",
                    color="when",
                    x_title="value (95% CI)",
                ),
                bdf[bdf["aggregate"].isin(wide)],
                f"{title}: other scales",
            )


def _section_gradient(res: dict[str, Any]) -> None:
    st.header("Provenance gradient")
    g = res["gradient"]
    rows = [
        {"reference": ref, **ci_row(g.get(key))}
        for ref, key in (
            ("blind-arm labels", "blind"),
            ("anchored-arm labels", "anchored"),
            ("VLM-sourced gold", "vlm_sourced"),
        )
    ]
    df = pd.DataFrame(rows)
    infl = ci_row(g.get("inflation_pp"))
    interval = fmt_ci(infl, digits=1, point=False, design=False, missing="")
    st.metric(
        "Inflation blind -> VLM-sourced (pp)",
        fmt_ci(infl["point"], digits=1, sign=True, missing="n/a"),
        help=f"95% CI {interval}" if interval else None,
    )
    chart(
        ci_bars(df, "reference", y_title="agreement of the predictions (95% CI)"),
        df,
        f"One set of predictions ({g.get('predictions')}) against three references",
    )


def _section_time(res: dict[str, Any], fields: list[str]) -> None:
    st.header("Time: prefill kept vs overridden")
    t = res["time"]
    rows = [
        {"field": "all fields", "when": w, **ci_row(t["all"][w])} for w in ("kept", "overridden")
    ]
    rows += [
        {"field": f, "when": w, **ci_row(r[w])}
        for f, r in t["by_field"].items()
        if f in fields
        for w in ("kept", "overridden")
    ]
    df = pd.DataFrame(rows)
    chart(
        ci_bars(df, "field", color="when", y_title="mean lead time, s (95% CI)"),
        df,
        "Mean annotation time when the prefill was kept vs overridden",
    )


@page("Provenance audit", order=30, url_path="audit", icon=":material/policy:")
def audit(ctx: Context) -> None:
    st.title("Provenance audit")
    try:
        res = _with_gradient_choice(ctx, audit_result(ctx))
    except TruthlineError as exc:
        st.info(str(exc))
        return
    for w in res.get("warnings", []):
        st.warning(w)
    design_warning(res)
    s, c = res["settings"], res["counts"]
    st.caption(
        f"{c['annotated_items']} annotated items, {c['decisions_with_expert']} decisions with an "
        f"expert reference; prefill {s['model_version']}; {s['resamples']} resamples "
        f"({s['scheme']}"
        + (f" over {s['clusters']} clusters" if s.get("clusters") else "")
        + f"), seed {s['seed']}; the clusters column beside each interval says how many "
        "clusters it resampled"
    )
    fields = list(s["fields"])
    chosen = st.multiselect("Fields", fields, default=fields, key="audit-fields")
    _section_direction(res, chosen)
    _section_iaa(res, chosen)
    _section_quadrant(res)
    _section_signals(res)
    _section_gradient(res)
    _section_time(res, chosen)
