"""Report-model sections drawn with Streamlit: how a plug-in's dashboard section is shown.

Paper systems describe their dashboard tables as ``truthline.report.Section`` objects (they
never import streamlit); a level-2 section is a page header, a deeper one a subheader, a
paragraph a caption, a table a dataframe with the values as the system gave them, a figure
an image.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from truthline.report import Figure, Paragraph, Section, Table


def render_sections(sections: Sequence[Section]) -> None:
    """Draw ``sections`` in order."""
    for s in sections:
        (st.header if s.level <= 2 else st.subheader)(s.title)
        for b in s.blocks:
            if isinstance(b, Paragraph):
                st.caption(b.text)
            elif isinstance(b, Table):
                # the rows as the system gave them (``Table.from_rows`` keeps them), else cells
                frame = pd.DataFrame(b.data or b.rows, columns=b.columns)
                st.dataframe(frame, hide_index=True)
            elif isinstance(b, Figure):
                st.image(b.data, caption=b.title)
