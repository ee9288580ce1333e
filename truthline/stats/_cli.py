"""`truthline stats`: rater-agreement statistics with confidence intervals."""

from __future__ import annotations

import typer

from truthline._cli_common import planned

app = typer.Typer(help="Rater-agreement statistics with confidence intervals.")
planned(
    app, "stats: `agreement FILE` computes Krippendorff's alpha, kappas, AC1 with bootstrap CIs."
)
