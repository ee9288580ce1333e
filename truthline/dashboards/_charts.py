"""Every chart comes with its numbers: a Chart/Table switch and a CSV download."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import streamlit as st


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "chart"


def csv_bytes(table: pd.DataFrame) -> bytes:
    return table.to_csv(index=False).encode("utf-8")


def design_warning(*sources: Any) -> None:
    """``st.warning`` with the thin-design note of the intervals in ``sources`` (if any)."""
    from truthline.stats import design_note

    note = design_note(sources)
    if note:
        st.warning(note)


def chart(
    fig: Any,
    table: pd.DataFrame,
    name: str,
    *,
    caption: str | None = None,
    sources: list[Any] | None = None,
    links: dict[str, str] | None = None,
) -> None:
    """Render ``fig`` (plotly or altair) with a table view of ``table`` and its CSV download.

    ``name`` titles the chart and names the CSV file; it must be unique on the page.
    ``sources``: the results its intervals came from; a thin design shows a warning.
    ``links``: columns of ``table`` holding URLs (the Samples page behind each row), shown
    as links with the given text and left out of the CSV.
    """
    slug = _slug(name)
    st.markdown(f"**{name}**")
    if caption:
        st.caption(caption)
    if sources:
        design_warning(*sources)
    if table.empty:
        st.info(f"{name}: no data yet.")
        return
    tab_chart, tab_table = st.tabs(["Chart", "Table"])
    with tab_chart:
        if fig is None:
            st.caption("(table only)")
        elif hasattr(fig, "to_plotly_json"):
            st.plotly_chart(fig, key=f"fig-{slug}")
        else:
            st.altair_chart(fig, key=f"fig-{slug}")
    links = {c: t for c, t in (links or {}).items() if c in table.columns}
    shown = table
    if links:  # the links right after the row's name, not scrolled out of sight
        rest = [c for c in table.columns if c not in links]
        shown = table[[rest[0], *links, *rest[1:]]]
    with tab_table:
        st.dataframe(
            shown,
            hide_index=True,
            key=f"tbl-{slug}",
            column_config={
                c: st.column_config.LinkColumn(c, display_text=t) for c, t in links.items()
            },
        )
        if links:
            st.caption("Links open the samples (model answers) behind a row.")
    st.download_button(
        f"Download {name} (CSV)",
        csv_bytes(table.drop(columns=list(links))),
        file_name=f"{slug}.csv",
        mime="text/csv",
        key=f"csv-{slug}",
        on_click="ignore",
    )


def table(df: pd.DataFrame, name: str) -> None:
    """A table without a chart, still downloadable."""
    chart(None, df, name)
