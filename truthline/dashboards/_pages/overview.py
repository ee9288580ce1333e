"""Overview: where every item is in the loop, what the models cost, where to annotate."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from truthline.dashboards._charts import chart
from truthline.dashboards._context import Context
from truthline.dashboards._frame import cached
from truthline.dashboards._queries import label_studio_links, loop_funnel, model_costs
from truthline.dashboards._registry import page

STAGE_ORDER = [
    "imported",
    "prefilled",
    "assigned",
    "pushed",
    "annotated",
    "reviewed",
    "in gold",
    "benchmarked",
]


def simulated_banner(ctx: Context, status: dict) -> None:
    """Say loudly when what is shown comes from simulated models or annotators."""
    sim = cached(ctx, "overview.simulated", lambda: _simulated_counts(ctx))
    if any(sim.values()):
        parts = ", ".join(f"{n} {what}" for what, n in sim.items() if n)
        st.warning(f"SIMULATED data in this store: {parts}. Numbers here are from simulations.")


def _simulated_counts(ctx: Context) -> dict[str, int]:
    from sqlalchemy import func, select

    from truthline.store import tables as t

    with ctx.store.begin() as conn:

        def n(table, *where) -> int:
            return int(
                conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one()
            )

        return {
            "simulated model responses": n(
                t.responses, t.responses.c.project == ctx.name, t.responses.c.simulated.is_(True)
            ),
            "simulated annotations": n(
                t.annotations,
                t.annotations.c.project == ctx.name,
                t.annotations.c.source == "simulated",
                t.annotations.c.deleted_at.is_(None),
            ),
        }


@page("Overview", order=0, icon=":material/home:")
def overview(ctx: Context) -> None:
    st.title(f"Overview: {ctx.project.title or ctx.name}")
    status = cached(ctx, "Store.status", lambda: ctx.store.status(ctx.name))
    simulated_banner(ctx, status)
    cols = st.columns(6)
    cols[0].metric("Items", status["items"])
    cols[1].metric("Predictions", status["predictions"]["total"])
    cols[2].metric("Annotations", status["annotations"]["total"])
    cols[3].metric("Gold values", status["gold"]["values"])
    cols[4].metric("Benchmark runs", status["runs"])
    cols[5].metric("Model cost (USD)", f"{status['model_cost_usd']:.4f}")

    funnel = pd.DataFrame(
        cached(ctx, "dashboards.loop_funnel", lambda: loop_funnel(ctx.store, ctx.name))
    )
    fig = None
    if not funnel.empty:
        funnel["label"] = funnel["stage"] + ": " + funnel["detail"].astype(str)
        order = {s: i for i, s in enumerate(STAGE_ORDER)}
        funnel = funnel.sort_values("stage", key=lambda s: s.map(order), kind="stable")
        fig = px.bar(
            funnel,
            x="items",
            y="label",
            color="stage",
            orientation="h",
            text="items",
            category_orders={"label": list(funnel["label"])},
        )
        fig.update_traces(textangle=0, textposition="outside", cliponaxis=False)
        fig.update_layout(height=80 + 32 * len(funnel), showlegend=False, yaxis_title=None)
    chart(
        fig,
        funnel.drop(columns=["label"], errors="ignore"),
        "Items through the loop",
        caption="Distinct items that reached each stage (prefill by outcome, push/annotation by arm).",
    )

    costs = pd.DataFrame(
        cached(ctx, "dashboards.model_costs", lambda: model_costs(ctx.store, ctx.name))
    )
    cfig = None
    caption = "Every model call in the responses cache."
    if not costs.empty:
        # free or SIMULATED models cost nothing: a chart of zeros says nothing, calls do
        measure = "cost_usd" if costs["cost_usd"].sum() > 0 else "calls"
        if measure == "calls":
            caption += " No call has a cost yet (SIMULATED or free models): calls are shown."
        cfig = px.bar(costs, x="model", y=measure, color="purpose", barmode="group", text=measure)
        cfig.update_layout(height=320)
    chart(cfig, costs, "Model cost so far", caption=caption)

    st.subheader("Label Studio")
    links = cached(
        ctx, "dashboards.label_studio_links", lambda: label_studio_links(ctx.store, ctx.name)
    )
    if links:
        for link in links:
            cohort = f" ({link['cohort']})" if link["cohort"] else ""
            st.markdown(f"- **{link['arm']}**{cohort}: [{link['title']}]({link['url']})")
    else:
        st.info("No Label Studio projects yet: `truthline annotate push` creates them.")
    with st.expander("Store status (raw)"):
        st.json(status)
