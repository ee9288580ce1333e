"""`truthline demo`: the whole loop on embedded defaults, with SIMULATED data, models and people."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from truthline._cli_common import JsonOpt, console, err_console, print_json


def demo(
    workspace_dir: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="Workspace for the demo.  [default: ./demo-workspace, or TRUTHLINE_DEMO_WORKSPACE]",
        ),
    ] = None,
    size: Annotated[
        str,
        typer.Option(
            "--size",
            help="small (12 cameras, ~120 clips, a few minutes) or full (16 cameras, ~480 clips).",
        ),
    ] = "small",
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh", help="Start over: stop the demo's Label Studio and delete its workspace."
        ),
    ] = False,
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            help="Also prefill with a real model spec, e.g. openai:qwen2.5-vl@http://127.0.0.1:8000/v1 (repeatable).",
        ),
    ] = None,
    port: Annotated[int, typer.Option("--port", help="Label Studio port on 127.0.0.1.")] = 8080,
    media_port: Annotated[
        int, typer.Option("--media-port", help="Media server port on 127.0.0.1.")
    ] = 8090,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed for the simulation and every sample.")
    ] = 0,
    scenes: Annotated[
        bool,
        typer.Option(
            "--scenes",
            help="Run the SynDORBench demo instead: render a small DORI grid (Workbench), "
            "night-vision ISP, discernibility labels, benchmark tables "
            "[default workspace: ./demo-scenes-workspace].",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run the whole loop unattended on SIMULATED CCTV clips.

    Generates videos with known truth, mines clips, prefills with a SIMULATED VLM, starts
    Label Studio, has SIMULATED annotators (careful, noisy, over-corrector, rubber-stamper)
    and a SIMULATED expert label through its API, audits the anchoring, excludes the flagged
    annotator, finalizes gold, benchmarks two SIMULATED models and a rule baseline, and
    writes reports and a release. Rerunning resumes; --fresh starts over.
    """
    from truthline.demo._loop import Demo, fresh_workspace
    from truthline.workspace import Workspace

    if scenes:  # a demo another package registers (SynDORBench's, truthline.demos "scenes")
        from truthline.demo._registry import demos

        demos.get("scenes")(workspace_dir, fresh, model, seed, as_json)
        return
    root = Path(
        workspace_dir or os.environ.get("TRUTHLINE_DEMO_WORKSPACE") or "demo-workspace"
    ).resolve()
    if fresh:
        fresh_workspace(root)
    ws = Workspace.from_env(root)
    out = err_console if as_json else console
    if not out.is_terminal:
        out.width = max(out.width, 150)  # logs and CI: keep the summary table readable
    out.print(
        f"[bold]truthline demo[/] ({size}) in {root} — all data, models and annotators are SIMULATED"
    )
    result = Demo(
        ws,
        size=size,
        seed=seed,
        models=model,
        port=port,
        media_port=media_port,
        console=out,
        quiet=as_json,
    ).run()
    if as_json:
        print_json(result.as_dict())
