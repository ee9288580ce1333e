"""`truthline annotate`: the Label Studio server, blind/anchored/review projects, push and pull."""

from __future__ import annotations

import typer

from truthline._cli_common import planned

app = typer.Typer(
    help="Run Label Studio; push blind, anchored and review projects; pull annotations."
)
planned(
    app,
    "annotate: `serve` starts a local Label Studio, `push --arm blind|anchored|review` creates tasks, "
    "`pull` brings annotations back into the store.",
)
