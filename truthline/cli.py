"""The ``truthline`` command line: the loop's stages as sub-commands.

Exit codes: 0 success, 1 user error (bad input, missing thing), 2 usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

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
from truthline.workspace import list_templates

app = typer.Typer(
    name="truthline",
    help="Human-in-the-loop annotation and provenance audit for VLM benchmarks.\n\n"
    "The loop: prefill (a VLM pre-annotates) -> annotate (Label Studio, blind and anchored arms) "
    "-> audit (agreement, anchoring, gold with provenance) -> benchmark (scored runs, export).",
    no_args_is_help=True,
    rich_markup_mode="rich",
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
    ctx.obj = State(workspace=workspace_dir, db=db)


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
    limit: Annotated[int, typer.Option("--limit", help="Show at most N items (0 = all).")] = 50,
    as_json: JsonOpt = False,
) -> None:
    """Items of a project with their media and metadata."""
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


# -- status ------------------------------------------------------------------------------
@app.command()
def status(ctx: typer.Context, project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """Counts per stage: items, predictions, annotations per arm and tier, gold, runs."""
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


# -- stage sub-apps ----------------------------------------------------------------------
def _mount() -> None:
    from truthline.annotate._cli import app as annotate_app
    from truthline.audit._cli import app as audit_app
    from truthline.benchmark._cli import app as benchmark_app
    from truthline.dashboards._cli import dashboard
    from truthline.demo._cli import demo
    from truthline.prefill._cli import app as prefill_app
    from truthline.prefill._cli import models_app
    from truthline.stats._cli import app as stats_app

    app.add_typer(prefill_app, name="prefill")
    app.add_typer(models_app, name="models")
    app.add_typer(annotate_app, name="annotate")
    app.add_typer(audit_app, name="audit")
    app.add_typer(stats_app, name="stats")
    app.add_typer(benchmark_app, name="benchmark")
    app.command("dashboard")(dashboard)
    app.command("demo")(demo)


_mount()


def main() -> None:
    """Entry point: user errors become one clear message and exit code 1."""
    try:
        rc = app(standalone_mode=False)
    except TruthlineError as exc:
        from rich.text import Text

        err_console.print(Text.assemble(("error: ", "bold red"), str(exc)), soft_wrap=True)
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
        # click's usage errors (typer may vendor click) carry their own exit code (2)
        code = getattr(exc, "exit_code", None)
        if hasattr(exc, "show") and isinstance(code, int):
            exc.show()
            sys.exit(code)
        raise
    sys.exit(rc if isinstance(rc, int) else 0)


__all__ = ["app", "main", "print_json", "state"]
