"""Samples: the model answers behind every benchmark number, one item at a time.

Filters (model, outcome, field, stratum, correct / incorrect) live in the URL's query
parameters, so a link from the Benchmark page (``samples?run=R&model=M&outcome=...``)
opens exactly the items behind the number it sits beside; the counts at the top are the
same n that number rests on. Each item shows its image(s), the prompt as sent, the raw
output, parsed vs gold per decision and links to its Label Studio tasks. The records are
``truthline.benchmark._samples``'s (what ``benchmark samples`` exports).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from truthline.benchmark._samples import OUTCOMES, SampleFilter, summarize
from truthline.benchmark._types import EntryKey
from truthline.dashboards._context import Context
from truthline.dashboards._frame import cached
from truthline.dashboards._registry import page

PREFILL = "prefill predictions"
ALL = "(all)"
PAGE_SIZE = 10
URL_PATH = "samples"


def samples_link(run_id: str, flt: SampleFilter) -> str:
    """The Samples page filtered to ``flt`` in run ``run_id`` (a relative URL)."""
    return f"{URL_PATH}?" + urlencode({"run": run_id, **flt.query()})


def _records(ctx: Context, source: str) -> list[dict[str, Any]]:
    from truthline.benchmark._samples import prefill_samples, run_samples

    if source == PREFILL:
        return cached(
            ctx,
            "truthline.benchmark._samples.prefill_samples",
            lambda: prefill_samples(ctx.store, ctx.project),
        )
    return cached(
        ctx,
        "truthline.benchmark._samples.run_samples",
        lambda: run_samples(ctx.store, ctx.project, source),
        source,
    )


def _choice(label: str, options: list[str], current: str | None, key: str) -> str | None:
    """A select box whose first value comes from the URL; ``(all)`` is no filter."""
    opts = [ALL, *options]
    if current is not None and current not in opts:
        opts.append(current)
    got = st.selectbox(label, opts, index=opts.index(current) if current else 0, key=key)
    return None if got == ALL else got


def _filters(recs: list[dict[str, Any]], start: SampleFilter) -> SampleFilter:
    """The filter widgets, started from the URL's filter."""
    c = st.columns(5)
    with c[0]:
        model = _choice("Model", sorted({r["model"] for r in recs}), start.model, "samples-model")
    with c[1]:
        outcome = _choice("Outcome", [*OUTCOMES, "model_failure"], start.outcome, "samples-outcome")
    with c[2]:
        fields = sorted({d["field"] for r in recs for d in r["decisions"]})
        field = _choice("Field", fields, start.field, "samples-field")
    with c[3]:
        strata = sorted({str(r["stratum"]) for r in recs if r["stratum"] is not None})
        stratum = _choice("Stratum", strata, start.stratum, "samples-stratum")
    with c[4]:
        opts = ["any", "correct", "incorrect"]
        now = {None: "any", True: "correct", False: "incorrect"}[start.correct]
        pick = st.selectbox("Decisions", opts, index=opts.index(now), key="samples-correct")
        correct = {"any": None, "correct": True, "incorrect": False}[pick]
    flt = replace(
        start, model=model, outcome=outcome, field=field, stratum=stratum, correct=correct
    )
    rest = {
        k: v
        for k, v in flt.query().items()
        if k not in ("model", "outcome", "field", "stratum", "correct")
    }
    if rest:
        st.caption(
            "Also filtered by "
            + ", ".join(f"{k} = {v}" for k, v in rest.items())
            + " (from the link)."
        )
    return flt


def _table(shown: list[dict[str, Any]], flt: SampleFilter) -> pd.DataFrame:
    rows = []
    for r in shown:
        ds = flt.decisions(r)
        rows.append(
            {
                "item": r["item"],
                "model": r["model"],
                "variant": r["variant"],
                "condition": r["condition"],
                "control": r["control"],
                "outcome": r["outcome"],
                "decisions": len(ds),
                "correct": sum(bool(d["correct"]) for d in ds),
                "stratum": r["stratum"],
                "answer": "reused" if r.get("reused") else "fresh",
                "cost_usd": r["cost_usd"],
                "latency_s": r["latency_s"],
                "label_studio": r["label_studio"][0]["url"] if r["label_studio"] else None,
            }
        )
    return pd.DataFrame(rows)


def _media(r: dict[str, Any]) -> None:
    files = [Path(p) for p in r["media"]]
    present = [p for p in files if p.is_file()]
    if not present:
        st.caption("media not found on this machine: " + ", ".join(map(str, files)))
        return
    if r["media_kind"] == "video":
        st.video(str(present[0]))
        return
    st.image([str(p) for p in present[:8]], width=160 if len(present) > 1 else 320)


def _item(r: dict[str, Any], flt: SampleFilter) -> None:
    """One sample: media and links left; prompt, output and parsed vs gold right."""
    left, right = st.columns([1, 2])
    with left:
        _media(r)
        for t in r["label_studio"]:
            st.markdown(f"[Label Studio task {t['task_id']} ({t['arm']})]({t['url']})")
        if not r["label_studio"]:
            st.caption("not pushed to Label Studio")
        st.caption(
            f"cost ${r['cost_usd']:.4f} · tokens {r['tokens']['in']}/{r['tokens']['out']}"
            + (f" · {r['latency_s']:.2f} s" if r["latency_s"] is not None else "")
            + (f" · strata {r['stratum']}" if r["stratum"] else "")
        )
        if r.get("reused_from"):
            st.caption(_reused_text(r["reused_from"]))
    with right:
        st.markdown(f"**outcome** `{r['outcome']}`" + (f" ({r['reason']})" if r["reason"] else ""))
        if r["prompt"]:
            with st.expander("Prompt as sent"):
                if r["prompt"].get("system"):
                    st.text(r["prompt"]["system"])
                st.text(r["prompt"]["user"])
        else:
            st.caption(r["prompt_note"] or "no prompt recorded")
        st.markdown("**Raw output**")
        st.code(r["raw_output"] or "(none)", language="json", wrap_lines=True)
        ds = flt.decisions(r) if flt.on_decisions else r["decisions"]
        if ds:
            st.markdown("**Parsed vs gold**")
            st.dataframe(
                pd.DataFrame(
                    [
                        {
                            "decision": d["path"],
                            "gold": _cell(d["gold"]),
                            "parsed": _cell(d["pred"]),
                            "correct": bool(d["correct"]),
                            "credit": d.get("credit"),
                            "provenance": d.get("provenance"),
                        }
                        for d in ds
                    ]
                ),
                hide_index=True,
                key=f"samples-dec-{r['item_id']}-{r['model']}-{r['variant']}-{r['condition']}-{r['control']}",
            )


def _reused_text(src: dict[str, Any]) -> str:
    """Where a reused answer came from: no call was made for it in this run."""
    by = (
        f"run {src['run_id']}"
        if src.get("run_id")
        else str(src.get("purpose") or "an earlier call")
    )
    return (
        f"reused answer (no call in this run): response {src['response_id']} stored by {by} "
        f"at {str(src['stored_at'])[:19]}, cost then ${float(src.get('cost_usd') or 0):.4f}"
    )


def _cell(v: Any) -> str:
    return "—" if v is None else str(v)


@page("Samples", order=45, icon=":material/list_alt:", url_path=URL_PATH)
def samples(ctx: Context) -> None:
    from truthline.benchmark import list_runs

    st.title("Samples")
    runs = [r["run_id"] for r in list_runs(ctx.store, ctx.name)]
    query = st.query_params.to_dict()
    sources = [*runs, PREFILL]
    want = query.get("run") or (runs[0] if runs else PREFILL)
    if want not in sources:
        st.warning(f"no run {want!r} in this project; showing {sources[0]}")
        want = sources[0]
    source = st.selectbox("Run", sources, index=sources.index(want), key="samples-run")
    recs = _records(ctx, source)
    if not recs:
        st.info(
            "No model answers here yet: `truthline benchmark run` (or `prefill run`) stores them."
        )
        return
    flt = _filters(recs, SampleFilter.from_query(query))
    st.query_params.from_dict({"run": source, **flt.query()})
    shown = [r for r in recs if flt.keeps(r)]
    sm = summarize(shown, flt)
    c = st.columns(4)
    c[0].metric("samples", sm["samples"])
    c[1].metric("decisions", sm["decisions"])
    c[2].metric("correct", sm["correct"])
    c[3].metric("accuracy", f"{sm['correct'] / sm['decisions']:.3f}" if sm["decisions"] else "—")
    if sm["outcomes"]:
        st.caption("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(sm["outcomes"].items())))
    if not shown:
        st.info("No sample matches these filters.")
        return
    st.dataframe(
        _table(shown, flt),
        hide_index=True,
        key="samples-table",
        column_config={
            "label_studio": st.column_config.LinkColumn("Label Studio", display_text="open task")
        },
    )
    pages = (len(shown) - 1) // PAGE_SIZE + 1
    at = st.number_input("Page", 1, pages, 1, key="samples-page") if pages > 1 else 1
    first = (int(at) - 1) * PAGE_SIZE
    st.caption(f"items {first + 1}–{min(first + PAGE_SIZE, len(shown))} of {len(shown)}")
    for r in shown[first : first + PAGE_SIZE]:
        key = EntryKey.of(r)
        label = f"{r['item']} · " + key.label(" · ", wrap=(" · ", ""), condition_last=True)
        with st.expander(f"{label} — {r['outcome']}", expanded=first == 0 and r is shown[0]):
            _item(r, flt)
