"""`truthline prefill` and `truthline models`: pre-annotation with VLMs/detectors, video mining."""

from __future__ import annotations

import typer

from truthline._cli_common import planned

app = typer.Typer(
    help="Pre-annotate items with a VLM or detector; mine videos into clips and frames."
)
planned(
    app,
    "prefill: runs a model (openai:, hf:, yolo:, simulated:) over the project's items and stores "
    "every answer with its cost; `prefill mine` turns videos into 8-frame clips.",
)

models_app = typer.Typer(help="Check model specs and endpoints.")
planned(models_app, "models: `models check SPEC` sends one test request to a model spec.")
