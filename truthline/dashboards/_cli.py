"""`truthline dashboard`: Streamlit pages for agreement, the provenance audit and results."""

from __future__ import annotations

import typer

from truthline._cli_common import planned

app = typer.Typer(help="Open the Streamlit dashboards (agreement, provenance audit, benchmark).")
planned(
    app,
    "dashboard: starts Streamlit on 127.0.0.1 with overview, agreement, audit and benchmark pages.",
)
