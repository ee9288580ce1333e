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
    from rich.table import Table

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


def bounded_resamples(value: int | None) -> int | None:
    """``--resamples`` within TRUTHLINE_MAX_RESAMPLES (``_limits``): a billion resamples
    would run for days; refused as a usage error (exit 2) naming the limit."""
    from truthline._limits import MAX_RESAMPLES

    if value is not None and value > MAX_RESAMPLES.value():
        raise typer.BadParameter(MAX_RESAMPLES.over(value))
    return value


RESAMPLES_HELP = "Bootstrap resamples (at most 100000, raised by TRUTHLINE_MAX_RESAMPLES)."


def resamples_option(default: str) -> Any:
    """The ``--resamples`` option (0 to TRUTHLINE_MAX_RESAMPLES) whose default is ``default``,
    e.g. a project setting: use as ``Annotated[int | None, resamples_option("[audit] resamples")]``."""
    return typer.Option(
        "--resamples",
        min=0,
        callback=bounded_resamples,
        help=f"Bootstrap resamples (default: {default}; at most 100000, raised by "
        "TRUTHLINE_MAX_RESAMPLES).",
    )


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


NAME_HEADERS = frozenset({"model", "a", "b", "annotator", "run", "name", "entry"})
"""Headers of the columns that name things (models, annotators, runs): ``whole_names``
keeps those whole."""


def _cell_len(cell: Any) -> int:
    """Terminal cells a table cell takes: a string as rich shows it (markup removed)."""
    from rich.text import Text

    if isinstance(cell, Text):
        return cell.cell_len
    if isinstance(cell, str):
        try:
            return Text.from_markup(cell).cell_len
        except Exception:  # not valid markup: shown as is
            return len(cell)
    return len(str(cell))


def whole_names(table: Table) -> Table:
    """``table`` with its name columns never wrapped nor truncated: rich otherwise shrinks
    every column to fit the terminal, and at 100 columns ``simulated:steel-strong`` and
    ``simulated:steel-weak`` both came out as ``s…``, so models could not be told apart.
    The other columns wrap instead. Call it once the rows are added."""
    for col in table.columns:
        header = str(col.header).strip().lower()
        first = header.split()[0] if header else ""
        if header in NAME_HEADERS or first in ("model", "annotator"):  # not "models": a list
            widths = [_cell_len(c) for c in col.cells]
            col.no_wrap = True
            col.overflow = "fold"
            col.min_width = max([len(header), *widths])
    return table


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
