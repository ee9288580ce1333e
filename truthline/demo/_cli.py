"""`truthline demo`: the loop on embedded defaults, with SIMULATED data."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from truthline._cli_common import JsonOpt, console, emit, print_json
from truthline.workspace import Workspace


def demo(
    workspace_dir: Annotated[
        Path | None,
        typer.Option(
            "--workspace", help="Workspace for the demo (default: a new temporary folder)."
        ),
    ] = None,
    clips: Annotated[
        int, typer.Option("--clips", help="Number of simulated clips to generate.")
    ] = 12,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """Run the demo on SIMULATED CCTV clips: init steel-safety, import generated media, show status."""
    from truthline.demo._scene import write_dataset
    from truthline.media import import_items

    root = workspace_dir or Path(tempfile.mkdtemp(prefix="truthline-demo-"))
    ws = Workspace.from_env(root)
    console.print(f"[bold]truthline demo[/] in {ws.root} (all data here is SIMULATED)")
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    console.print(f"generating {clips} simulated 8-frame CCTV clips in {media} ...")
    csv_path = write_dataset(media, n_clips=clips, seed=seed)
    rep = import_items(ws.store, project, media, metadata=csv_path, progress=not as_json)
    status = ws.store.status(project.name)
    data = {"workspace": str(ws.root), "import": rep.as_dict(), "status": status}

    def render() -> None:
        console.print(
            f"imported: {rep.added} added, {rep.unchanged} unchanged, {len(rep.skipped)} skipped"
        )
        print_json(status)
        console.print(f"\nnext: truthline --workspace {ws.root} status")

    emit(data, as_json, render)
