"""`truthline benchmark`: runs over gold, reports, provenance slices, export."""

from __future__ import annotations

import typer

from truthline._cli_common import planned

app = typer.Typer(help="Evaluate models on gold with the scoring contract; report and export.")
planned(
    app,
    "benchmark: `run --model SPEC` scores models on gold with bootstrap CIs; `compare-gold`, "
    "`report` and `export` follow.",
)
