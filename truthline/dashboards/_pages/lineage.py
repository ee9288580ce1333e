"""Lineage: one item's field from the prefill prediction to each model's score on it.

The same ``truthline.store.lineage`` result ``truthline items show`` prints: the
predictions, what each annotator was shown (exposure), every annotation with its edits,
the review and adjudication, the gold value per snapshot with provenance and sources, and
each benchmark run's answer and score. The item and field live in the URL
(``lineage?item=KEY&field=PATH``), so other pages (Agreement's disagreeing items) link here.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from truthline.dashboards._context import Context
from truthline.dashboards._frame import cached
from truthline.dashboards._queries import item_keys
from truthline.dashboards._registry import page

URL_PATH = "lineage"
EVERY = "(every field)"


def lineage_link(key: str, field: str | None = None) -> str:
    """The Lineage page on item ``key`` (and ``field``), a relative URL."""
    return f"{URL_PATH}?" + urlencode({"item": key, **({"field": field} if field else {})})


def _v(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


def _frames(lin: Any) -> dict[str, pd.DataFrame]:
    """One table per step, in the order the value went through them (plain columns)."""
    d = lin.as_dict()
    preds = [p | {"value": _v(p["value"])} for p in d["predictions"]]
    exposures = [e | {"shown": _v(e["shown"])} for e in d["exposures"]]
    anns: list[dict[str, Any]] = []
    for a in d["annotations"]:
        edits = a.pop("edits")
        anns.append(a | {"value": _v(a["value"]), "edits": len(edits)})
        anns += [
            {
                "annotation_id": a["annotation_id"],
                "annotator": a["annotator"],
                "arm": a["arm"],
                "tier": a["tier"],
                "field_path": f"{a['field_path']} (earlier)",
                "value": _v(e["value"]),
                "skipped": e["skipped"],
                "revision": e["revision"],
                "stored_at": e["replaced_at"],
            }
            for e in reversed(edits)
        ]
    gold = [
        g | {"value": _v(g["value"]), "sources": ", ".join(map(str, g["sources"]))}
        for g in d["gold"]
    ]
    scores = [s | {"gold": _v(s["gold"]), "pred": _v(s["pred"])} for s in d["scores"]]
    return {
        "Prefill predictions": pd.DataFrame(preds),
        "Exposure": pd.DataFrame(exposures),
        "Annotations and edits": pd.DataFrame(anns),
        "Review and adjudication": pd.DataFrame(d["reviews"]),
        "Gold": pd.DataFrame(gold),
        "Benchmark scores": pd.DataFrame(scores),
    }


def _field_options(ctx: Context) -> list[str]:
    tops = list(ctx.project.field_types)
    leaves = [p for p in ctx.project.leaf_fields() if p not in tops]
    return [EVERY, *tops, *leaves]


@page("Lineage", order=50, icon=":material/timeline:", url_path=URL_PATH)
def lineage_page(ctx: Context) -> None:
    from truthline.errors import TruthlineError
    from truthline.store import lineage

    st.title("Lineage of a value")
    # the keys only (at 100k items the full rows are ~100 MB to unpickle on every render)
    keys = cached(ctx, "dashboards.item_keys", lambda: item_keys(ctx.store, ctx.name))
    if not keys:
        st.info("No items yet: `truthline items import` adds them.")
        return
    query = st.query_params.to_dict()
    want = query.get("item") or keys[0]
    if want not in keys:
        st.warning(f"no item {want!r} in this project; showing {keys[0]}")
        want = keys[0]
    fields = _field_options(ctx)
    want_field = query.get("field") or EVERY
    if want_field not in fields:
        fields.append(want_field)
    c1, c2 = st.columns([3, 2])
    key = str(c1.selectbox("Item", keys, index=keys.index(want), key="lineage-item"))
    field = str(c2.selectbox("Field", fields, index=fields.index(want_field), key="lineage-field"))
    path = None if field == EVERY else field
    st.query_params.from_dict({"item": key, **({"field": path} if path else {})})
    try:
        lin = cached(
            ctx,
            "truthline.store.lineage",
            lambda: lineage(ctx.store, ctx.name, key, path),
            key,
            path,
        )
    except TruthlineError as exc:
        st.error(str(exc))
        return
    st.caption(
        f"Item {lin.key} (id {lin.item_id}), {field}: the prefill prediction, what each "
        "annotator was shown, each annotation with its earlier values, the review, the gold "
        "value per snapshot and each benchmark run's score on it."
    )
    links = {"task_url": st.column_config.LinkColumn("Label Studio", display_text="open task")}
    for title, df in _frames(lin).items():
        st.header(title)
        if df.empty:
            st.info(f"{title}: none for this item and field.")
            continue
        st.dataframe(
            df,
            hide_index=True,
            key=f"lineage-{title.lower().replace(' ', '-')}",
            column_config={c: v for c, v in links.items() if c in df.columns},
        )
