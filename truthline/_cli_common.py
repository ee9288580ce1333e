"""Shared CLI plumbing for the stage sub-apps: workspace/db options, --json output, errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from truthline.project import Project
    from truthline.workspace import Workspace

console = Console()
err_console = Console(stderr=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
ProjectOpt = Annotated[
    str | None,
    typer.Option("--project", "-p", help="Project name in the workspace (default: the only one)."),
]


@dataclass
class State:
    workspace: Path | None = None
    db: str | None = None
    _ws: Workspace | None = None

    @property
    def ws(self) -> Workspace:
        if self._ws is None:
            from truthline.workspace import Workspace  # lazy: keeps `truthline --help` fast

            self._ws = Workspace.from_env(self.workspace, self.db)
        return self._ws


def resamples_option(default: str) -> Any:
    """The ``--resamples`` option (>= 0) whose default is ``default``, e.g. a project setting:
    use as ``Annotated[int | None, resamples_option("[audit] resamples")]``."""
    return typer.Option("--resamples", min=0, help=f"Bootstrap resamples (default: {default}).")


def state(ctx: typer.Context) -> State:
    obj = ctx.find_root().obj
    if not isinstance(obj, State):
        obj = State()
        ctx.find_root().obj = obj
    return obj


def workspace(ctx: typer.Context) -> Workspace:
    return state(ctx).ws


def ws_project(ctx: typer.Context, project: str | None) -> tuple[Workspace, Project]:
    """The workspace and its registered ``--project``: where nearly every stage command starts."""
    ws = workspace(ctx)
    return ws, ws.registered(project)


def output_path(path: Path, option: str = "--out") -> Path:
    """An output file's path with its folder created (``--report`` / ``--out`` into a missing
    folder just works); a clear TruthlineError when it cannot be (a file in the way, no
    permission). Stage CLIs call it on every path they are about to write."""
    from truthline.errors import TruthlineError

    parent = path.expanduser().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TruthlineError(
            f"{option} {path}: cannot create the folder {parent}: {exc.strerror or exc}"
        ) from None
    if path.is_dir():
        raise TruthlineError(f"{option} {path}: is a folder; give a file name")
    return path


def output_dir(path: Path, option: str = "--out") -> Path:
    """An output folder, created with its parents; a clear error when it cannot be."""
    from truthline.errors import TruthlineError

    try:
        path.expanduser().mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TruthlineError(
            f"{option} {path}: cannot create the folder: {exc.strerror or exc}"
        ) from None
    return path


def print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=False, default=str))


def emit(data: Any, as_json: bool, render: Callable[[], None]) -> None:
    """Print ``data`` as JSON, or call ``render`` for the human-readable form."""
    if as_json:
        print_json(data)
    else:
        render()


def planned(app: typer.Typer, what: str) -> None:
    """Give a stage sub-app a default action that says what it will do (until it is built)."""

    @app.callback(invoke_without_command=True)
    def _default(ctx: typer.Context) -> None:
        if ctx.invoked_subcommand is None:
            console.print(what)
            console.print("Run with --help to see the commands available now.")
