"""The ``truthline`` command line: the loop's stages as sub-commands.

Exit codes: 0 success, 1 user error (bad input, missing thing), 2 usage error.

Start-up is kept short: the stage CLIs (prefill, annotate, audit, stats, benchmark, the
dashboards and the demo) pull in pandas, SQLAlchemy, OpenCV and more, so they are listed
here by name and one-line help and imported only when their sub-command runs
(``_LazyGroup``); ``truthline --help`` and ``--version`` import none of them.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from truthline import __version__
from truthline._cli_common import (
    JsonOpt,
    ProjectOpt,
    State,
    console,
    emit,
    err_console,
    print_json,
    state,
    workspace,
)
from truthline.errors import TruthlineError

if TYPE_CHECKING:
    from typer import _click

# Sub-commands imported on first use: name -> (module, attribute, one-line help).
# The help line is shown by ``truthline --help``; keep it in step with the stage's own help.
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "dashboard": (
        "truthline.dashboards._cli",
        "dashboard",
        "Start the dashboards on http://HOST:PORT (127.0.0.1 by default) and serve until Ctrl-C.",
    ),
    "demo": (
        "truthline.demo._cli",
        "demo",
        "Run the whole loop unattended on SIMULATED CCTV clips.",
    ),
    "prefill": (
        "truthline.prefill._cli",
        "app",
        "Pre-annotate items with a VLM or detector; mine videos into clips and frames.",
    ),
    "models": ("truthline.prefill._cli", "models_app", "Check model specs and endpoints."),
    "annotate": (
        "truthline.annotate._cli",
        "app",
        "Run Label Studio; push blind, anchored and review projects; pull annotations.",
    ),
    "audit": (
        "truthline.audit._cli",
        "app",
        "Provenance audit (blind vs anchored), annotator exclusion, gold with provenance.",
    ),
    "stats": (
        "truthline.stats._cli",
        "app",
        "Rater-agreement statistics (kappa, alpha, AC1 and more) with bootstrap confidence intervals.",
    ),
    "benchmark": (
        "truthline.benchmark._cli",
        "app",
        "Evaluate models on gold with the scoring contract; report and export.",
    ),
    "scenes": (
        "truthline.scenes._cli",
        "app",
        "Rendered scenes: Blender environments, declared grids, rendering over workers.",
    ),
}


PLUGIN_COMMANDS = "truthline.cli"
"""Entry-point group of command groups other packages add (a paper system's ``truthline
physalign``): ``name = "module:OBJECT"`` where OBJECT is a ``truthline.plugins.CommandGroup``
(target and one-line help) in a module that imports nothing heavy."""


def plugin_commands() -> dict[str, tuple[str, str, str]]:
    """Sub-commands declared by installed plug-ins, as LAZY_COMMANDS entries (read once);
    a built-in name wins over a plug-in's."""
    global _PLUGINS
    if _PLUGINS is None:
        from importlib.metadata import entry_points

        _PLUGINS = {}
        for ep in sorted(entry_points(group=PLUGIN_COMMANDS), key=lambda e: e.name):
            if ep.name in LAZY_COMMANDS or ep.name in _PLUGINS:
                continue
            try:
                group = ep.load()
            except ImportError as exc:  # a broken plug-in must not break the whole CLI
                from rich.markup import escape as _escape

                err_console.print(  # escaped: a bracket in the message is text, not markup
                    f"[yellow]plug-in command {_escape(f'{ep.name!r} ({ep.value}): {exc}')}[/]"
                )
                continue
            module, _, attr = group.target.partition(":")
            _PLUGINS[ep.name] = (module, attr or "app", group.help)
    return _PLUGINS


_PLUGINS: dict[str, tuple[str, str, str]] | None = None


def _lazy_commands() -> dict[str, tuple[str, str, str]]:
    return {**LAZY_COMMANDS, **plugin_commands()}


class _LazyGroup(TyperGroup):
    """The root group: stage sub-commands are imported when invoked, not when listed."""

    _listing = False

    def list_commands(self, ctx: _click.Context) -> list[str]:
        lazy = _lazy_commands()
        return [*super().list_commands(ctx), *(n for n in lazy if n not in self.commands)]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        lazy = _lazy_commands()
        if cmd is not None or cmd_name not in lazy:
            return cmd
        module, attr, short = lazy[cmd_name]
        if self._listing:  # the help page only needs the name and the line
            return typer.core.TyperCommand(name=cmd_name, help=short, callback=None)
        cmd = _load_command(cmd_name, module, attr)
        self.commands[cmd_name] = cmd
        return cmd

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        from typer._click.exceptions import UsageError

        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:  # suggest the lazy names too ("Did you mean 'audit'?")
            if args and "Did you mean" not in exc.message:
                from difflib import get_close_matches

                matches = get_close_matches(args[0], self.list_commands(ctx))
                if matches:
                    names = ", ".join(repr(m) for m in matches)
                    exc.message = f"{exc.message.rstrip('.')}. Did you mean {names}?"
            raise

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def _load_command(name: str, module: str, attr: str) -> _click.Command:
    """Import a stage's Typer app (or command function) and build it as ``app.add_typer`` /
    ``app.command`` would have."""
    import importlib

    from typer.main import get_command_from_info, get_group_from_info
    from typer.models import CommandInfo, TyperInfo

    obj = getattr(importlib.import_module(module), attr)
    opts: dict[str, Any] = {
        "pretty_exceptions_short": app.pretty_exceptions_short,
        "rich_markup_mode": app.rich_markup_mode,
    }
    if isinstance(obj, typer.Typer):
        return get_group_from_info(
            TyperInfo(obj, name=name), suggest_commands=app.suggest_commands, **opts
        )
    return get_command_from_info(CommandInfo(name=name, callback=obj), **opts)


app = typer.Typer(
    name="truthline",
    help="Human-in-the-loop annotation and provenance audit for VLM benchmarks.\n\n"
    "The loop: prefill (a VLM pre-annotates) -> annotate (Label Studio, blind and anchored arms) "
    "-> audit (agreement, anchoring, gold with provenance) -> benchmark (scored runs, export).",
    no_args_is_help=True,
    cls=_LazyGroup,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"truthline {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    workspace_dir: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            envvar="TRUTHLINE_WORKSPACE",
            help="Workspace folder (store, projects, media, secrets).  [default: ./workspace]",
        ),
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            envvar="TRUTHLINE_DB",
            help="SQLAlchemy URL of the store, e.g. postgresql+psycopg://user@host/db  "
            "[default: sqlite:///<workspace>/truthline.db]",
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    global _STATE
    ctx.obj = _STATE = State(workspace=workspace_dir, db=db)


_STATE: State | None = None
"""The invocation's state, for the error net in ``main`` (it names the store)."""


# -- init / projects ---------------------------------------------------------------------
@app.command()
def init(
    ctx: typer.Context,
    template: Annotated[str, typer.Argument(help="Bundled template name or a folder path.")],
    name: Annotated[
        str | None, typer.Option("--name", help="Project name (default: the template's).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite an existing project folder.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Copy a project template into the workspace and register it in the store."""
    ws = workspace(ctx)
    project = ws.init_project(template, name=name, force=force)
    data = {"project": project.name, "path": str(project.source), "workspace": str(ws.root)}
    emit(
        data,
        as_json,
        lambda: console.print(f"[green]initialized[/] {project.name} in {project.source}"),
    )


projects_app = typer.Typer(help="List and inspect the workspace's projects.", no_args_is_help=True)
app.add_typer(projects_app, name="projects")


@projects_app.command("list")
def projects_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Projects in the workspace, with their media kind and field count."""
    from rich.table import Table

    from truthline.workspace import list_templates

    ws = workspace(ctx)
    rows = []
    for n in ws.project_names():
        p = ws.project(n)
        rows.append(
            {
                "name": n,
                "title": p.title,
                "media": p.media,
                "fields": len(p.leaf_fields()),
                "path": str(p.source),
            }
        )

    def render() -> None:
        if not rows:
            console.print(f"no projects in {ws.root}; templates: {', '.join(list_templates())}")
            return
        table = Table("name", "title", "media", "fields", "path")
        for r in rows:
            table.add_row(*(str(r[k]) for k in ("name", "title", "media", "fields", "path")))
        console.print(table)

    emit(rows, as_json, render)


@projects_app.command("templates")
def projects_templates(as_json: JsonOpt = False) -> None:
    """Bundled project templates that `truthline init` can copy."""
    from truthline.workspace import list_templates

    names = list_templates()
    emit(names, as_json, lambda: console.print("\n".join(names)))


@projects_app.command("check")
def projects_check(
    path: Annotated[Path, typer.Argument(help="A project.toml/yaml or its folder.")],
) -> None:
    """Validate a project definition; every problem is listed with its field path."""
    from truthline.project import load_project

    p = load_project(path)
    console.print(f"[green]ok[/] {p.name}: {len(p.leaf_fields())} fields, media {p.media}")


# -- items -------------------------------------------------------------------------------
items_app = typer.Typer(help="Import and list media items.", no_args_is_help=True)
app.add_typer(items_app, name="items")


@items_app.command("import")
def items_import(
    ctx: typer.Context,
    path: Annotated[
        Path, typer.Argument(help="A folder of images/videos/frame folders, or one file.")
    ],
    metadata: Annotated[
        Path | None,
        typer.Option(
            "--metadata", help="CSV with a 'key' or 'path' column; other columns become strata."
        ),
    ] = None,
    media_root: Annotated[
        Path | None,
        typer.Option("--media-root", help="Folder media paths are relative to (default: PATH)."),
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import media as items (idempotent: re-importing adds nothing; corrupt files are skipped)."""
    from truthline.media import import_items

    ws = workspace(ctx)
    proj = ws.registered(project)
    rep = import_items(
        ws.store, proj, path, metadata=metadata, media_root=media_root, progress=not as_json
    )

    def render() -> None:
        console.print(
            f"[green]{rep.added} added[/], {rep.updated} updated, {rep.unchanged} unchanged, "
            f"[yellow]{len(rep.skipped)} skipped[/]"
        )
        for p, r in rep.skipped:
            console.print(f"  [yellow]skipped[/] {p}: {r}")

    emit({"project": proj.name, **rep.as_dict()}, as_json, render)


@items_app.command("list")
def items_list(
    ctx: typer.Context,
    project: ProjectOpt = None,
    limit: Annotated[
        int, typer.Option("--limit", min=0, help="Show at most N items (0 = all).")
    ] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Items of a project with their media and metadata."""
    from rich.table import Table

    ws = workspace(ctx)
    proj = ws.registered(project)
    rows = ws.store.items(proj.name)
    shown = rows if limit <= 0 else rows[:limit]
    data = [
        {
            "id": r["id"],
            "key": r["key"],
            "media": r["media"],
            "meta": r["meta"],
            "parent": r["parent"],
        }
        for r in shown
    ]

    def render() -> None:
        table = Table("id", "key", "media", "metadata", title=f"{proj.name}: {len(rows)} items")
        for r in data:
            meta = ", ".join(f"{k}={v}" for k, v in list(r["meta"].items())[:4])
            table.add_row(str(r["id"]), r["key"], str(len(r["media"])), meta)
        console.print(table)
        if len(shown) < len(rows):
            console.print(f"... {len(rows) - len(shown)} more (use --limit 0)")

    emit(data, as_json, render)


@items_app.command("show")
def items_show(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="The item's key (as `truthline items list` shows).")],
    field: Annotated[
        str | None,
        typer.Option(
            "--field",
            help="One field path: a top-level field (worker_count), an entity subfield "
            "(workers.action) or one entity's (workers[P1].action). Default: every field.",
        ),
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One value's lineage: the prefill prediction, what each annotator was shown, every
    annotation with its edits, the review, the gold value per snapshot with its provenance,
    and each benchmark run's answer and score."""
    from truthline._lineage_view import render_lineage
    from truthline.store import lineage

    ws = workspace(ctx)
    proj = ws.registered(project)
    if field is not None:
        head = field.split(".")[0].split("[")[0]
        if head not in proj.field_types:
            raise TruthlineError(
                f"no field {head!r} in project {proj.name!r} (fields: "
                f"{', '.join(proj.field_types)})"
            )
    lin = lineage(ws.store, proj.name, key, field)
    emit(lin.as_dict(), as_json, lambda: render_lineage(console, lin))


# -- status ------------------------------------------------------------------------------
@app.command()
def status(ctx: typer.Context, project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """Counts per stage: items, predictions, annotations per arm and tier, gold, runs."""
    from rich.table import Table

    ws = workspace(ctx)
    proj = ws.registered(project)
    data = ws.store.status(proj.name)

    def render() -> None:
        table = Table("stage", "count", title=f"{proj.name} ({ws.root})")
        table.add_row("items", str(data["items"]))
        if data["skipped_media"]:
            table.add_row("  skipped media", str(data["skipped_media"]))
        table.add_row("predictions", str(data["predictions"]["total"]))
        for model, by in data["predictions"]["by_model"].items():
            table.add_row(f"  {model}", ", ".join(f"{s} {n}" for s, n in by.items()))
        table.add_row("model cost (USD)", f"{data['model_cost_usd']:.4f}")
        table.add_row("annotations", str(data["annotations"]["total"]))
        for k, n in data["annotations"]["by_arm_tier"].items():
            table.add_row(f"  {k}", str(n))
        table.add_row("annotators", str(data["annotations"]["annotators"]))
        table.add_row("exclusions", str(data["exclusions"]))
        table.add_row("gold values", str(data["gold"]["values"]))
        table.add_row("benchmark runs", str(data["runs"]))
        console.print(table)

    emit(data, as_json, render)


def _say(message: str) -> None:
    from rich.text import Text

    err_console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


_PATH_LOCALS = {"self", "path", "file", "filename", "source", "filepath_or_buffer", "csv_path"}


def _input_file(exc: BaseException) -> str | None:
    """The file an error happened in, found in the failing frames (innermost first): an open
    file object's name, or a path-like local of the reading function."""
    import io

    tb = exc.__traceback__
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for name, value in frame.f_locals.items():
            fname = getattr(value, "name", None) if isinstance(value, io.IOBase) else None
            if isinstance(fname, str):
                return fname
            if name in _PATH_LOCALS and isinstance(value, str | Path) and Path(value).is_file():
                return str(value)
    return None


def _store_shown() -> str:
    st = _STATE
    if st is not None and st._ws is not None:
        from truthline.store import redact_url

        url = st._ws.url
        shown = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else redact_url(url)
        return f"the store at {shown}"
    return "the store"


def expected_failure(exc: BaseException) -> str | None:
    """One line for a failure of the user's input or environment, or None for a bug.

    Anything not recognised here is a bug and keeps its traceback."""
    mod = type(exc).__module__.split(".")[0]
    if isinstance(exc, UnicodeDecodeError):
        where = _input_file(exc)
        what = f"file {where}" if where else "an input file"
        return (
            f"{what} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}); save it as UTF-8"
        )
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f" writing {exc.filename}" if exc.filename else ""
        return f"no space left on the device{where}; free some space and rerun (saved work is kept)"
    if isinstance(exc, OSError) and exc.filename is not None:
        reason = exc.strerror or str(exc)
        target = f"{exc.filename} -> {exc.filename2}" if exc.filename2 else str(exc.filename)
        hint = ""
        if isinstance(exc, FileNotFoundError):
            hint = " (check the path; create missing folders first)"
        elif isinstance(exc, PermissionError):
            hint = " (check the permissions, or use another --workspace / --out)"
        return f"{target}: {reason}{hint}"
    if mod in ("_csv", "csv") and type(exc).__name__ == "Error":
        where = _input_file(exc)
        extra = ""
        if "field larger than field limit" in str(exc):
            extra = "; a cell that large is not metadata: check the file's quoting"
        return f"{'file ' + where if where else 'a CSV file'}: {exc}{extra}"
    if mod == "pyarrow":
        where = _input_file(exc)
        return f"{'file ' + where if where else 'Parquet/Arrow data'}: cannot be read: {exc}"
    if mod == "pandas" and type(exc).__name__ in ("ParserError", "EmptyDataError"):
        where = _input_file(exc)
        return f"{'file ' + where if where else 'a table file'}: cannot be read: {exc}"
    if mod == "sqlalchemy" and type(exc).__name__ in (
        "OperationalError",
        "DatabaseError",
        "DataError",
    ):
        from sqlalchemy.exc import DBAPIError

        from truthline.store import explain

        if isinstance(exc, DBAPIError):
            return f"{_store_shown()}: {explain(exc)}"
    return None


def main() -> None:
    """Entry point: user errors become one clear message and exit code 1.

    Expected failures of input or environment (bad encodings, missing or unwritable
    files, unreadable tables, database errors) also give one line and exit 1; anything else
    is a bug and keeps its traceback. ``TRUTHLINE_DEBUG=1`` shows the traceback always."""
    debug = os.environ.get("TRUTHLINE_DEBUG", "") not in ("", "0")
    try:
        rc = app(standalone_mode=False)
    except TruthlineError as exc:
        if debug:
            import traceback

            traceback.print_exc()
        _say(str(exc))
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except Exception as exc:
        # click's usage errors (typer vendors click) carry their own exit code (2)
        code = getattr(exc, "exit_code", None)
        if hasattr(exc, "show") and isinstance(code, int):
            exc.show()
            sys.exit(code)
        message = expected_failure(exc)
        if message is None or debug:
            raise
        _say(message)
        sys.exit(1)
    sys.exit(rc if isinstance(rc, int) else 0)


__all__ = ["app", "main", "print_json", "state"]
