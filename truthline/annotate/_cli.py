"""`truthline annotate`: the Label Studio server, blind/anchored/review projects, push and pull."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from truthline._cli_common import JsonOpt, ProjectOpt, console, emit, workspace, ws_project

app = typer.Typer(
    help="Run Label Studio; push blind, anchored and review projects; pull annotations.",
    no_args_is_help=True,
)

UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="An existing Label Studio server (token in LABEL_STUDIO_API_KEY) instead of the "
        "workspace's own.",
    ),
]


@app.command()
def serve(
    ctx: typer.Context,
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, help="Label Studio port on 127.0.0.1.")
    ] = 8080,
    media_port: Annotated[
        int, typer.Option("--media-port", min=1, max=65535, help="Port of the media server.")
    ] = 8090,
    media_root: Annotated[
        Path | None,
        typer.Option(
            "--media-root",
            help="Folder the media URLs start at (default: the items' common root); only "
            "registered item media under it are served, to Label Studio's origin only.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Start (or reuse) Label Studio bound to 127.0.0.1 with its data dir in the workspace.

    The first start creates Label Studio's own environment (if missing) and applies ~400
    database migrations (about 2 minutes). The admin login and API token are generated once
    and kept in <workspace>/secrets/label_studio.json (0600).
    """
    from truthline.annotate._local import serve as _serve

    ws = workspace(ctx)
    info = _serve(ws, port=port, media_port=media_port, media_root=media_root, progress=not as_json)

    def render() -> None:
        verb = "started" if info["started"] else "already running"
        console.print(f"[green]Label Studio {verb}[/] at {info['url']}")
        console.print(f"media served from {info['media_root']} at {info['media_base']}")
        console.print(
            f"admin login {info['admin']}; password and token in {info['credentials_file']}"
        )

    emit(info, as_json, render)


@app.command()
def stop(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Stop the workspace's Label Studio and media server."""
    from truthline.annotate._local import stop as _stop

    out = _stop(workspace(ctx))
    emit(
        out,
        as_json,
        lambda: console.print("stopped" if out["label_studio"] else "Label Studio was not running"),
    )


@app.command()
def push(
    ctx: typer.Context,
    arm: Annotated[str, typer.Option("--arm", help="blind | anchored | review")],
    annotators: Annotated[
        list[str] | None,
        typer.Option("--annotators", help="Emails of the cohort (a project per cohort); repeat."),
    ] = None,
    overlap: Annotated[
        int | None,
        typer.Option("--overlap", help="Annotations per task (default: project audit settings)."),
    ] = None,
    split: Annotated[
        float | None, typer.Option("--split", help="Share of items in the anchored arm.")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Assignment / sampling seed.")] = None,
    model_version: Annotated[
        str | None, typer.Option("--model", help="Prefill model version shown (anchored).")
    ] = None,
    sample: Annotated[
        int | None, typer.Option("--sample", help="Review: number of items to sample.")
    ] = None,
    strategy: Annotated[str, typer.Option("--strategy", help="Review: random | risk.")] = "random",
    url: UrlOpt = None,
    media_base: Annotated[
        str | None, typer.Option("--media-url", help="Base URL of the media for --url servers.")
    ] = None,
    media_root: Annotated[
        Path | None, typer.Option("--media-root", help="Folder --media-url serves.")
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create the arm's Label Studio project and import the tasks it lacks (idempotent)."""
    from truthline.annotate._local import target
    from truthline.annotate._push import ARMS
    from truthline.annotate._push import push as _push
    from truthline.errors import TruthlineError

    if arm not in ARMS:
        raise typer.BadParameter(f"{arm!r} is not one of {', '.join(ARMS)}", param_hint="--arm")
    ws, proj = ws_project(ctx, project)
    tgt = target(ws, url=url, media_base=media_base, media_root=media_root)
    if not tgt.media_base or tgt.media_root is None:
        raise TruthlineError(
            "--url needs --media-url and --media-root (where annotators' browsers get media)"
        )
    with tgt.client:
        rep = _push(
            ws.store,
            proj,
            tgt.client,
            arm,
            media_base=tgt.media_base,
            media_root=tgt.media_root,
            annotators=annotators,
            overlap=overlap,
            split=split,
            seed=seed,
            model_version=model_version,
            sample=sample,
            strategy=strategy,
            progress=not as_json,
        )

    def render() -> None:
        console.print(
            f"[green]{rep.created} tasks created[/], {rep.existing} already there"
            + (f", {rep.recovered} recovered" if rep.recovered else "")
            + f" in project {rep.ls_project_id} ({rep.title})"
        )
        if rep.arm == "anchored":
            console.print(f"predictions from {rep.model_version}: {rep.predictions}")
            if rep.skipped_no_prediction:
                console.print(
                    f"[yellow]{rep.skipped_no_prediction} items have no prediction[/] (not pushed)"
                )
        console.print(f"open {rep.project_url}")

    emit(rep.as_dict(), as_json, render)


@app.command()
def pull(
    ctx: typer.Context,
    url: UrlOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Bring annotations back into the store (idempotent; edits keep their history)."""
    from truthline.annotate._local import target
    from truthline.annotate._pull import pull as _pull

    ws, proj = ws_project(ctx, project)
    tgt = target(ws, url=url)
    with tgt.client:
        rep = _pull(ws.store, proj, tgt.client, progress=not as_json)

    def render() -> None:
        console.print(
            f"[green]{rep.annotations} annotations[/]: {rep.new} new, {rep.updated} updated, "
            f"{rep.unchanged} unchanged ({rep.skipped_annotations} skipped tasks)"
        )
        if rep.deleted or rep.restored:
            console.print(
                f"[yellow]{rep.deleted} deleted in Label Studio[/] since the last pull (kept "
                f"in the store as deleted, excluded from statistics and gold)"
                + (f"; {rep.restored} deleted earlier are back" if rep.restored else "")
            )
        if rep.foreign_tasks:
            by: dict[int, list[int]] = {}
            for t in rep.foreign_tasks:
                by.setdefault(t["ls_project_id"], []).append(t["ls_task_id"])
            where = "; ".join(
                f"project {p}: tasks {', '.join(map(str, ids[:20]))}"
                + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
                for p, ids in by.items()
            )
            console.print(
                f"[yellow]{len(rep.foreign_tasks)} tasks truthline did not push skipped[/] "
                f"(no known item id; imported by hand?): {where}"
            )
        for p in rep.problems[:50]:
            console.print(f"  [yellow]{p}[/]")
        if len(rep.problems) > 50:
            console.print(f"  ... {len(rep.problems) - 50} more problems (see --json)")

    emit(rep.as_dict(), as_json, render)


@app.command()
def config(ctx: typer.Context, project: ProjectOpt = None) -> None:
    """Print the Label Studio label config generated from the project schema."""
    from truthline.annotate._labelconfig import label_config

    typer.echo(label_config(workspace(ctx).project(project)))


users_app = typer.Typer(help="Annotator accounts that can log in.", no_args_is_help=True)
app.add_typer(users_app, name="users")


@users_app.command("add")
def users_add(
    ctx: typer.Context,
    emails: Annotated[list[str], typer.Argument(help="Annotator emails.")],
    show_passwords: Annotated[
        bool,
        typer.Option("--show-passwords", help="Print the new passwords (otherwise only the file)."),
    ] = False,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create login-capable accounts (invite-signup flow); passwords go to a 0600 file."""
    from truthline.annotate._local import target
    from truthline.annotate._users import USERS_FILE, _load, add_users

    ws = workspace(ctx)
    tgt = target(ws, url=url)
    path = ws.secrets_dir / USERS_FILE
    with tgt.client:
        rows = add_users(tgt.client, emails, path)
    if show_passwords:
        known = _load(path)
        for r in rows:
            if r["email"] in known:
                r["password"] = known[r["email"]]["password"]

    def render() -> None:
        for r in rows:
            pw = f"  password {r['password']}" if "password" in r else ""
            console.print(f"{r['email']}: {r['status']} (user {r['user_id']}){pw}")
        console.print(f"passwords are in {path} (0600); log in at {tgt.client.url}/user/login/")

    emit({"users": rows, "secrets_file": str(path)}, as_json, render)
