"""`truthline audit` (provenance audit, exclusions, gold) and `truthline stats` (agreement)."""

from __future__ import annotations

import typer

from truthline._cli_common import planned

app = typer.Typer(
    help="Provenance audit (blind vs anchored), annotator exclusion, gold with provenance."
)
planned(
    app,
    "audit: `run` reports anchoring, override rates and exclusion signals with CIs; "
    "`exclude` records a decision; `finalize` writes gold with provenance.",
)
