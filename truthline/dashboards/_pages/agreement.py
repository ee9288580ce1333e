"""Agreement: per field the coefficients with CIs (forest plot), each annotator vs the
majority of the others, rater confusion by taxonomy group; filters by field, stratum, arm.

Numbers come from ``truthline.stats`` through the same calls as ``truthline stats``
(``ratings_from_store`` -> ``agreement`` / ``leave_one_out`` / ``disagreement_structure``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from truthline.dashboards._charts import chart
from truthline.dashboards._context import Context
from truthline.dashboards._frame import cached
from truthline.dashboards._plots import forest, heatmap
from truthline.dashboards._registry import page

DEFAULT_COEFS = ["alpha", "ac1", "pairwise"]
ARMS = {"all arms": None, "blind": "blind", "anchored": "anchored"}


def _fields(ctx: Context) -> list[str]:
    """Comparable leaf fields that have tier-1 annotations (the audit's list when declared)."""
    from sqlalchemy import select

    from truthline.store import tables as t

    with ctx.store.begin() as conn:
        heads = {
            r[0]
            for r in conn.execute(
                select(t.annotations.c.field_path)
                .where(
                    t.annotations.c.project == ctx.name,
                    t.annotations.c.tier == 1,
                    t.annotations.c.deleted_at.is_(None),
                )
                .distinct()
            )
        }
    declared = list(ctx.project.audit.fields)
    out = []
    for path, ft in ctx.project.leaf_fields().items():
        if ft.level is None or path.split(".")[0] not in heads:
            continue
        parent = ctx.project.field_types[path.split(".")[0]]
        key = getattr(getattr(parent, "spec", None), "key", None)
        if key and path.endswith(f".{key}"):
            continue
        if declared and path not in declared:
            continue
        out.append(path)
    return out


def _item_meta(ctx: Context) -> dict[str, dict[str, Any]]:
    return {r["key"]: dict(r["meta"] or {}) for r in ctx.store.items(ctx.name)}


def _ratings(ctx: Context, field: str, arm: str | None, stratum: tuple[str, str] | None):
    """Units x annotators for one field, restricted to the items of one stratum value."""
    from truthline.stats import AgreementError, ratings_from_store

    r, ft = ratings_from_store(ctx.store, ctx.project, field, arm=arm, tier=1)
    parents = r.meta.get("parents")
    if stratum:
        col, val = stratum
        meta = _item_meta(ctx)
        keep = [
            i
            for i, u in enumerate(r.units)
            if str(meta.get(str(u).split("[")[0], {}).get(col)) == val
        ]
        if not keep:
            raise AgreementError(f"no {field} ratings on items with {col}={val}")
        r = r.subset(units=np.asarray(keep, dtype=np.int64))
        parents = [parents[i] for i in keep] if parents else None
    clusters = parents if parents and all(p is not None for p in parents) else None
    return r, ft, clusters


def field_agreement(
    ctx: Context,
    field: str,
    arm: str | None,
    stratum: tuple[str, str] | None,
    coefs: tuple[str, ...],
) -> dict[str, Any]:
    """Coefficients, rater-vs-majority and group confusion for one field (plain data)."""
    from truthline.stats import AgreementError, agreement, disagreement_structure, leave_one_out

    cfg = ctx.project.audit
    try:
        r, ft, clusters = _ratings(ctx, field, arm, stratum)
        res = agreement(
            r,
            list(coefs),
            level=str(ft.level),
            resamples=cfg.resamples,
            seed=cfg.seed,
            clusters=clusters,
        )
    except AgreementError as exc:
        return {"field": field, "error": str(exc)}
    out: dict[str, Any] = {
        "field": field,
        "units": r.n_units,
        "raters": list(map(str, r.raters)),
        "coefficients": [x.as_dict() for x in res],
    }
    if ft.level in ("nominal", "ordinal"):
        try:
            out["loo"] = [
                x.as_dict()
                for x in leave_one_out(r, resamples=cfg.resamples, seed=cfg.seed, clusters=clusters)
            ]
        except AgreementError as exc:
            out["loo_error"] = str(exc)
    group_of = getattr(ft, "group_of", None)
    if group_of is not None and getattr(ft.spec, "taxonomy", None):
        try:
            out["structure"] = disagreement_structure(r, group_of)
        except AgreementError as exc:
            out["structure_error"] = str(exc)
    return out


@page("Agreement", order=20, icon=":material/groups:")
def agreement_page(ctx: Context) -> None:
    from truthline.stats import registered_coefficients

    st.title("Rater agreement")
    fields = cached(ctx, "dashboards.agreement.fields", lambda: _fields(ctx))
    if not fields:
        st.info("No annotations yet: `truthline annotate pull` brings them from Label Studio.")
        return
    c1, c2, c3 = st.columns([3, 1, 2])
    chosen = c1.multiselect("Fields", fields, default=fields, key="agr-fields")
    arm_label = c2.selectbox("Arm", list(ARMS), key="agr-arm")
    strata_cols = list(ctx.project.strata) or sorted(
        {
            k
            for m in cached(ctx, "dashboards.item_meta", lambda: _item_meta(ctx)).values()
            for k in m
        }
    )
    meta = cached(ctx, "dashboards.item_meta", lambda: _item_meta(ctx))
    options = ["all items"] + [
        f"{c}={v}" for c in strata_cols for v in sorted({str(m.get(c)) for m in meta.values()})
    ]
    strat_label = c3.selectbox("Stratum", options, key="agr-stratum")
    stratum: tuple[str, str] | None = None
    if strat_label != "all items":
        col, _, val = strat_label.partition("=")
        stratum = (col, val)
    coefs = st.multiselect(
        "Coefficients", list(registered_coefficients()), default=DEFAULT_COEFS, key="agr-coefs"
    )
    arm = ARMS[arm_label]
    results: list[dict[str, Any]] = []
    with st.spinner("Computing agreement with bootstrap CIs ..."):
        for f in chosen:
            key = (f, arm, stratum, tuple(coefs))
            results.append(
                cached(ctx, "truthline.stats.agreement", partial(field_agreement, ctx, *key), *key)
            )
    cfg = ctx.project.audit
    st.caption(
        f"{arm_label}, {strat_label}; percentile bootstrap, {cfg.resamples} resamples "
        f"(clustered by item parent), seed {cfg.seed}"
    )
    for r in results:
        if "error" in r:
            st.info(f"{r['field']}: {r['error']}")
    coef_rows = [
        {"field": r["field"], **c}
        for r in results
        if "coefficients" in r
        for c in r["coefficients"]
    ]
    df = pd.DataFrame(coef_rows)
    st.header("Coefficients per field")
    chart(
        forest(df, "field", color="title", x_title="coefficient (95% CI)", ref=0.0)
        if not df.empty
        else None,
        df,
        "Agreement coefficients with CIs",
    )
    st.header("Each annotator vs the majority of the others")
    loo = pd.DataFrame([{"field": r["field"], **x} for r in results for x in r.get("loo", [])])
    chart(
        forest(loo, "rater", color="field", x_title="agreement with the others' majority (95% CI)")
        if not loo.empty
        else None,
        loo,
        "Rater vs majority (ties excluded)",
    )
    st.header("Disagreement by taxonomy group")
    structured = [r for r in results if r.get("structure")]
    if not structured:
        st.info("No taxonomy field among the selected fields.")
    for r in structured:
        s = r["structure"]
        groups = s["groups"]
        gd = s["group_disagreements"]
        z = [[gd.get(a, {}).get(b, 0) for b in groups] for a in groups]
        table = pd.DataFrame(z, index=groups, columns=groups).reset_index(names="group")
        share = s.get("share_within_group")
        chart(
            heatmap(z, groups, groups),
            table,
            f"Rater confusion by group: {r['field']}",
            caption=(
                f"{s['disagreements']:.0f} disagreeing rater pairs of {s['pairs']:.0f}; "
                f"{share:.0%} fall within one group."
                if share is not None
                else None
            ),
        )
