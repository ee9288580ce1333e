"""Agreement: per field the coefficients with CIs (forest plot), each annotator vs the
majority of the others, an annotator x annotator agreement matrix, rater confusion by
taxonomy group; filters by field, stratum, arm and annotator.

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
from truthline.vocab import Arm

DEFAULT_COEFS = ["alpha", "ac1", "pairwise"]
ARMS = {"all arms": None, "blind": Arm.BLIND, "anchored": Arm.ANCHORED}
"""The arm filter: label -> arm (``None``: every arm)."""
MEASURES = {"kappa": "Cohen's kappa", "agreement": "raw agreement"}
DESIGNS = {"declared design": None, "items only": "none"}
"""The resampling control: label -> the cluster/strata override ``declared_design`` takes
(``None``: the project's declared cluster and strata, as ``truthline stats agreement``)."""


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


def _strata_options(ctx: Context) -> list[str]:
    """ "all items" and one "column=value" per stratum: cached as the short list it is, not
    as every item's metadata (100k dicts to unpickle on each render)."""
    meta = _item_meta(ctx)
    cols = list(ctx.project.strata) or sorted({k for m in meta.values() for k in m})
    return ["all items"] + [
        f"{c}={v}" for c in cols for v in sorted({str(m.get(c)) for m in meta.values()})
    ]


def _annotators(ctx: Context) -> tuple[list[str], dict[str, str]]:
    """Tier-1 annotators of the project, and the excluded ones with their reason."""
    from sqlalchemy import select

    from truthline.store import tables as t

    a, x = t.annotations, t.exclusions
    with ctx.store.begin() as conn:
        names = sorted(
            r[0]
            for r in conn.execute(
                select(a.c.annotator)
                .where(a.c.project == ctx.name, a.c.tier == 1, a.c.deleted_at.is_(None))
                .distinct()
            )
        )
        excluded = {
            r[0]: r[1]
            for r in conn.execute(
                select(x.c.annotator, x.c.reason)
                .where(x.c.project == ctx.name, x.c.active.is_(True))
                .order_by(x.c.decided_at)
            )
        }
    return names, excluded


def _ratings(
    ctx: Context,
    field: str,
    arm: str | None,
    stratum: tuple[str, str] | None,
    annotators: tuple[str, ...] | None = None,
    design: str = "declared design",
):
    """Units x annotators for one field, restricted to the items of one stratum value and
    (``annotators``) to some annotators; units no chosen annotator rated are dropped. The
    ratings carry the resampling ``design`` (``declared_design``: the project's cluster and
    strata, or items only) and it comes back as the third value."""
    from truthline.stats import AgreementError, declared_design, ratings_from_store

    r, ft = ratings_from_store(ctx.store, ctx.project, field, arm=arm, tier=1)
    if annotators is not None:
        cols = [j for j, a in enumerate(r.raters) if str(a) in annotators]
        if len(cols) < 2:
            raise AgreementError(f"{field}: fewer than two of the chosen annotators rated it")
        r = r.subset(raters=cols)
        rated = np.flatnonzero(r.present.any(axis=1))
        parents = r.meta.get("parents")
        r = r.subset(units=rated)
        if parents:
            r.meta["parents"] = [parents[i] for i in rated]
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
        if parents:
            r.meta["parents"] = [parents[i] for i in keep]
    override = DESIGNS[design]
    return r, ft, declared_design(ctx.store, ctx.project, r, override, override)


def field_agreement(
    ctx: Context,
    field: str,
    arm: str | None,
    stratum: tuple[str, str] | None,
    coefs: tuple[str, ...],
    annotators: tuple[str, ...] | None = None,
    design: str = "declared design",
) -> dict[str, Any]:
    """Coefficients, rater-vs-majority and group confusion for one field (plain data),
    resampled under ``design`` (the ratings' clusters and strata)."""
    from truthline.stats import AgreementError, agreement, disagreement_structure, leave_one_out

    cfg = ctx.project.audit
    try:
        r, ft, used = _ratings(ctx, field, arm, stratum, annotators, design)
        res = agreement(r, list(coefs), level=str(ft.level), resamples=cfg.resamples, seed=cfg.seed)
    except AgreementError as exc:
        return {"field": field, "error": str(exc)}
    out: dict[str, Any] = {
        "field": field,
        "units": r.n_units,
        "raters": list(map(str, r.raters)),
        "coefficients": [x.as_dict() for x in res],
        "design": used.words(),
    }
    if ft.level in ("nominal", "ordinal"):
        try:
            out["loo"] = [  # clusters only: the rater-vs-majority CI takes no strata
                x.as_dict() for x in leave_one_out(r, resamples=cfg.resamples, seed=cfg.seed)
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


def pairwise_matrix(
    ctx: Context,
    fields: tuple[str, ...],
    arm: str | None,
    stratum: tuple[str, str] | None,
    annotators: tuple[str, ...] | None,
) -> list[dict[str, Any]]:
    """Every ordered annotator pair: ``n`` ratings on shared units (pooled over ``fields``),
    raw agreement and Cohen's kappa (``truthline.stats.cohen_kappa``) on field-qualified
    values, so two fields' labels never count as agreeing."""
    from truthline.stats import AgreementError, cohen_kappa

    per_rater: dict[str, dict[tuple[str, Any], str]] = {}
    for f in fields:
        try:
            r, _, _ = _ratings(ctx, f, arm, stratum, annotators)
        except AgreementError:
            continue
        for j, rater in enumerate(map(str, r.raters)):
            got = per_rater.setdefault(rater, {})
            for u in np.flatnonzero(r.codes[:, j] >= 0):
                got[(f, r.units[u])] = f"{f}={r.values[r.codes[u, j]]!r}"
    names = sorted(per_rater)
    rows: list[dict[str, Any]] = []
    for a in names:
        for b in names:
            shared = sorted(set(per_rater[a]) & set(per_rater[b]), key=str)
            x = [per_rater[a][k] for k in shared]
            y = [per_rater[b][k] for k in shared]
            kappa = float("nan")
            if len(shared) >= 2 and len(set(x) | set(y)) > 1:
                kappa = cohen_kappa(x, y)
            rows.append(
                {
                    "annotator_a": a,
                    "annotator_b": b,
                    "n": len(shared),
                    "agreement": (sum(p == q for p, q in zip(x, y, strict=True)) / len(shared))
                    if shared
                    else float("nan"),
                    "kappa": kappa,
                }
            )
    return rows


def _section_matrix(rows: list[dict[str, Any]], measure: str) -> None:
    st.header("Annotator x annotator agreement")
    df = pd.DataFrame(rows)
    fig = None
    if not df.empty:
        names = sorted(set(df["annotator_a"]))
        cell = df.set_index(["annotator_a", "annotator_b"])
        z = [[round(float(cell.loc[(a, b), measure]), 3) for b in names] for a in names]
        n = [[int(cell.loc[(a, b), "n"]) for b in names] for a in names]
        fig = heatmap(z, names, names)
        fig.update_traces(
            customdata=n,
            texttemplate="%{z}<br>n=%{customdata}",
            hovertemplate="%{y} vs %{x}: %{z} (n=%{customdata})<extra></extra>",
        )
    chart(
        fig,
        df,
        "Pairwise agreement between annotators",
        caption=f"{MEASURES[measure].capitalize()} on the units both rated, pooled over the "
        "selected fields (n: shared ratings). Point estimates: small n, wide uncertainty.",
    )


def disagreeing_items(
    ctx: Context,
    fields: tuple[str, ...],
    arm: str | None,
    stratum: tuple[str, str] | None,
    annotators: tuple[str, ...] | None,
) -> list[dict[str, Any]]:
    """Per item (or entity) and field where the chosen annotators disagree: their ratings,
    the share agreeing with the most common value, the item's Label Studio task (of the
    chosen arm; otherwise the first arm that has one) and its Lineage page, lowest share
    first."""
    from truthline.dashboards._pages.lineage import lineage_link
    from truthline.stats import AgreementError
    from truthline.store import item_task_urls

    ids = ctx.store.item_ids_by_key(ctx.name)
    tasks = item_task_urls(ctx.store, ctx.name)
    arms = [arm] if arm else sorted({a for _, a in tasks}, key=lambda a: (a != "blind", a))
    rows: list[dict[str, Any]] = []
    for f in fields:
        try:
            r, _, _ = _ratings(ctx, f, arm, stratum, annotators)
        except AgreementError:
            continue
        for u, unit in enumerate(map(str, r.units)):
            rated = [(str(r.raters[j]), int(c)) for j, c in enumerate(r.codes[u]) if c >= 0]
            codes = [c for _, c in rated]
            if len(set(codes)) < 2:
                continue
            key, _, eid = unit.partition("[")
            head, _, sub = f.partition(".")
            path = f"{head}[{eid.rstrip(']')}].{sub}" if eid and sub else f
            iid = ids.get(key, -1)
            url = next((tasks[(iid, a)] for a in arms if (iid, a) in tasks), None)
            rows.append(
                {
                    "field": f,
                    "item": unit,
                    "ratings": "; ".join(f"{a}={r.values[c]!r}" for a, c in rated),
                    "raters": len(rated),
                    "agreeing": max(map(codes.count, set(codes))) / len(codes),
                    "label_studio": url,
                    "lineage": lineage_link(key, path),
                }
            )
    return sorted(rows, key=lambda x: (x["agreeing"], x["field"], x["item"]))


def _section_disagreeing(ctx: Context, mkey: tuple[Any, ...]) -> None:
    """Disagreeing items, each linked to its Label Studio task and its lineage."""
    rows = cached(
        ctx, "dashboards.agreement.disagreeing_items", partial(disagreeing_items, ctx, *mkey), *mkey
    )
    st.header("Items the annotators disagree on")
    df = pd.DataFrame(rows)
    if df.empty:
        st.info("The chosen annotators agree on every item they share.")
        return
    st.caption(
        f"{len(df)} items (or entities) x fields with differing ratings, least agreement "
        "first; open the Label Studio task to look again, or its lineage."
    )
    st.dataframe(
        df,
        hide_index=True,
        key="agr-disagreeing",
        column_config={
            "label_studio": st.column_config.LinkColumn("Label Studio", display_text="open task"),
            "lineage": st.column_config.LinkColumn("Lineage", display_text="lineage"),
            "agreeing": st.column_config.NumberColumn("agreeing", format="%.2f"),
        },
    )


def _pull_caption(ctx: Context) -> None:
    """When the figures below were last refreshed from Label Studio."""
    from truthline.store import last_pull

    at = cached(ctx, "truthline.store.last_pull", lambda: last_pull(ctx.store, ctx.name))
    st.caption(
        f"As of the last pull at {at:%Y-%m-%d %H:%M:%S} UTC (the latest change it brought); "
        "`truthline annotate pull` refreshes it."
        if at
        else "No Label Studio pull yet: these are the annotations imported or simulated."
    )


@page("Agreement", order=20, icon=":material/groups:")
def agreement_page(ctx: Context) -> None:
    from truthline.stats import registered_coefficients

    st.title("Rater agreement")
    _pull_caption(ctx)
    fields = cached(ctx, "dashboards.agreement.fields", lambda: _fields(ctx))
    if not fields:
        st.info("No annotations yet: `truthline annotate pull` brings them from Label Studio.")
        return
    c1, c2, c3 = st.columns([3, 1, 2])
    chosen = c1.multiselect("Fields", fields, default=fields, key="agr-fields")
    arm_label = c2.selectbox("Arm", list(ARMS), key="agr-arm")
    options = cached(ctx, "dashboards.agreement.strata_options", lambda: _strata_options(ctx))
    strat_label = c3.selectbox("Stratum", options, key="agr-stratum")
    stratum: tuple[str, str] | None = None
    if strat_label != "all items":
        col, _, val = strat_label.partition("=")
        stratum = (col, val)
    c4, c5 = st.columns([3, 2])
    coefs = c4.multiselect(
        "Coefficients", list(registered_coefficients()), default=DEFAULT_COEFS, key="agr-coefs"
    )
    design = str(
        c5.radio(
            "Resampling",
            list(DESIGNS),
            horizontal=True,
            key="agr-design",
            help="Declared design: bootstrap the project's declared clusters within its "
            "declared strata, as `truthline stats agreement --project` does. Items only: "
            "resample items (or entities) independently, which is narrower when items of "
            "one cluster agree alike.",
        )
    )
    names, excluded = cached(ctx, "dashboards.agreement.annotators", lambda: _annotators(ctx))
    picked = st.multiselect(
        "Annotators",
        names,
        default=[a for a in names if a not in excluded],
        format_func=lambda a: f"{a} (excluded)" if a in excluded else a,
        key="agr-annotators",
        help="The figures on this page use these annotators' ratings only. Excluded "
        "annotators are left out by default (as in gold and the audit's team figures); "
        "add them to see their agreement.",
    )
    if excluded:
        st.caption("Excluded: " + "; ".join(f"{a} ({why})" for a, why in sorted(excluded.items())))
    if len(picked) < 2:
        st.info("Pick at least two annotators: agreement needs a pair.")
        return
    annotators = None if sorted(picked) == names else tuple(sorted(picked))
    arm = ARMS[arm_label]
    results: list[dict[str, Any]] = []
    with st.spinner("Computing agreement with bootstrap CIs ..."):
        for f in chosen:
            key = (f, arm, stratum, tuple(coefs), annotators, design)
            results.append(
                cached(ctx, "truthline.stats.agreement", partial(field_agreement, ctx, *key), *key)
            )
    cfg = ctx.project.audit
    designs = "; ".join(dict.fromkeys(r["design"] for r in results if "design" in r))
    st.caption(
        f"{arm_label}, {strat_label}, {len(picked)} of {len(names)} annotators; percentile "
        f"bootstrap, {cfg.resamples} resamples, seed {cfg.seed}; {designs or design}"
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
    measure = st.radio(
        "Matrix shows",
        ["kappa", "agreement"],
        format_func=MEASURES.__getitem__,
        horizontal=True,
        key="agr-matrix-measure",
    )
    mkey = (tuple(chosen), arm, stratum, annotators)
    _section_matrix(
        cached(
            ctx,
            "dashboards.agreement.pairwise_matrix",
            partial(pairwise_matrix, ctx, *mkey),
            *mkey,
        ),
        str(measure),
    )
    _section_disagreeing(ctx, mkey)
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
