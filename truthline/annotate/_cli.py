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
    blind_instance: Annotated[
        bool,
        typer.Option(
            "--blind-instance",
            help="Also run a second Label Studio for the blind arm only (its own data dir, "
            "admin and accounts): blind annotators get no account where predictions exist. "
            "Once served, later serves start it too.",
        ),
    ] = False,
    blind_port: Annotated[
        int | None,
        typer.Option(
            "--blind-port",
            min=1,
            max=65535,
            help="Port of the blind instance (default --port + 1).",
        ),
    ] = None,
    ls_database: Annotated[
        str | None,
        typer.Option(
            "--ls-database",
            envvar="TRUTHLINE_LS_DATABASE",
            show_envvar=True,
            help="Keep Label Studio's data in PostgreSQL (postgresql://user@host:port/db; a "
            "team's setup) instead of SQLite in the workspace; remembered for later serves. "
            "Password from the URL or TRUTHLINE_LS_DB_PASSWORD, never printed.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Start (or reuse) Label Studio bound to 127.0.0.1 with its data dir in the workspace.

    The first start creates Label Studio's own environment (if missing) and applies ~400
    database migrations (about 2 minutes). The admin login and API token are generated once
    and kept in <workspace>/secrets/label_studio.json (0600).
    """
    from truthline.annotate._blind import blind_state, serve_blind
    from truthline.annotate._local import serve as _serve
    from truthline.errors import TruthlineError

    ws = workspace(ctx)
    blind: dict | None = None
    if blind_instance or blind_state(ws):
        bport = blind_port or int(blind_state(ws).get("port") or port + 1)
        if bport in (port, media_port):
            raise TruthlineError(
                f"--blind-port {bport} is taken by Label Studio or the media server; give "
                "the blind instance a port of its own"
            )
        blind = serve_blind(ws, port=bport, progress=not as_json)
    info = _serve(
        ws,
        port=port,
        media_port=media_port,
        media_root=media_root,
        progress=not as_json,
        extra_origins=(blind["url"],) if blind else (),
        ls_database=ls_database,
    )
    if blind:
        info["blind_instance"] = blind

    def render() -> None:
        verb = "started" if info["started"] else "already running"
        console.print(f"[green]Label Studio {verb}[/] at {info['url']}")
        if blind:
            bverb = "started" if blind["started"] else "already running"
            console.print(
                f"[green]blind-arm Label Studio {bverb}[/] at {blind['url']} (admin and token "
                f"in {blind['credentials_file']})"
            )
        console.print(f"Label Studio's database: {info['ls_database']}")
        console.print(f"media served from {info['media_root']} at {info['media_base']}")
        console.print(
            f"admin login {info['admin']}; password and token in {info['credentials_file']}"
        )

    emit(info, as_json, render)


@app.command()
def stop(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Stop the workspace's Label Studio and media server."""
    from truthline.annotate._blind import stop_blind
    from truthline.annotate._local import stop as _stop

    ws = workspace(ctx)
    out = _stop(ws)
    out["blind_instance"] = stop_blind(ws)
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
    if arm == "blind" and url is None:
        from truthline.annotate._blind import blind_target, has_blind_instance

        if has_blind_instance(ws):  # blind tasks only on the blind arm's own instance
            tgt = blind_target(ws, tgt)
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
    from truthline.annotate._blind import blind_target, has_blind_instance, merge_reports, pushed_to
    from truthline.annotate._local import target
    from truthline.annotate._pull import pull as _pull

    ws, proj = ws_project(ctx, project)
    tgt = target(ws, url=url)
    targets = [tgt]
    if url is None and has_blind_instance(ws):  # the blind arm's own instance too
        targets.append(blind_target(ws, tgt))
    todo = [t for t in targets if pushed_to(ws.store, proj.name, t.client.url)] or targets[:1]
    reps = []
    for t in todo:
        with t.client:
            reps.append(_pull(ws.store, proj, t.client, progress=not as_json))
    rep = merge_reports(reps)

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
        if rep.exposure_violations:
            tasks = {(v["ls_project_id"], v["ls_task_id"]) for v in rep.exposure_violations}
            labels = {v["source_id"] for v in rep.exposure_violations if v["source_id"]}
            console.print(
                f"[red]{len(rep.exposure_violations)} exposure violations on {len(tasks)} blind "
                f"tasks[/] ({len(labels)} labels affected, kept in the store's "
                "exposure_violations): a prediction on the task, a label made from one, or an "
                "annotator who saw the item in another arm"
            )
        for p in rep.problems[:50]:
            console.print(f"  [yellow]{p}[/]")
        if len(rep.problems) > 50:
            console.print(f"  ... {len(rep.problems) - 50} more problems (see --json)")

    emit(rep.as_dict(), as_json, render)


@app.command("forget-project")
def forget_project(
    ctx: typer.Context,
    ls_project_id: Annotated[
        int, typer.Argument(min=1, help="The Label Studio project id (as pull reports it).")
    ],
    keep_annotations: Annotated[
        bool,
        typer.Option(
            "--keep-annotations", help="Keep the annotations pulled from it (they still count)."
        ),
    ] = False,
    delete_annotations: Annotated[
        bool,
        typer.Option(
            "--delete-annotations",
            help="Remove the annotations pulled from it, their history and exposure violations.",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Forget it even though it still exists on the server (never pulled again).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be removed; change nothing.")
    ] = False,
    blind_instance: Annotated[
        bool,
        typer.Option("--blind-instance", help="The project is on the blind arm's own instance."),
    ] = False,
    url: UrlOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove the store's records of a Label Studio project deleted on the server.

    Pull reports such a project on every run and push refuses its arm until it is forgotten;
    then push creates a fresh project. Its pulled annotations are never removed silently:
    choose --keep-annotations or --delete-annotations when it has any. Exposures (what each
    annotator was shown) are kept."""
    from truthline.annotate._forget import AnnotationChoice, describe, forget_client
    from truthline.annotate._forget import forget_project as _forget
    from truthline.errors import TruthlineError

    if keep_annotations and delete_annotations:
        raise TruthlineError("give --keep-annotations or --delete-annotations, not both")
    choice: AnnotationChoice | None = (
        "keep" if keep_annotations else "delete" if delete_annotations else None
    )
    ws, proj = ws_project(ctx, project)
    client = forget_client(ws, proj.name, ls_project_id, url=url, blind=blind_instance)
    with client:
        rep = _forget(
            ws.store,
            proj.name,
            client,
            ls_project_id,
            annotations=choice,
            force=force,
            dry_run=dry_run,
        )

    def render() -> None:
        for line in describe(rep):
            console.print(line, markup=False, highlight=False)

    emit(rep.as_dict(), as_json, render)


@app.command()
def config(ctx: typer.Context, project: ProjectOpt = None) -> None:
    """Print the Label Studio label config generated from the project schema."""
    from truthline.annotate._labelconfig import label_config

    typer.echo(label_config(workspace(ctx).project(project)))


@app.command("gold-standard")
def gold_standard(
    ctx: typer.Context,
    table: Annotated[
        Path | None,
        typer.Option(
            "--table", help="CSV of known answers: columns item (item key), field, value."
        ),
    ] = None,
    from_experts: Annotated[
        bool,
        typer.Option(
            "--from-experts", help="Take the known answers from the tier-2 (review) annotations."
        ),
    ] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record gold-standard items (known answers). Push mixes them, unmarked, into the blind
    and anchored queues at `[audit] gold_standard_rate`; the audit reports each annotator's
    accuracy on them."""
    from truthline.annotate._gold_standard import (
        answers_from_experts,
        answers_from_table,
        known_answers,
    )
    from truthline.errors import TruthlineError

    if (table is None) == (not from_experts):
        raise TruthlineError(
            "give exactly one source of known answers: --table CSV or --from-experts"
        )
    ws, proj = ws_project(ctx, project)
    n = (
        answers_from_table(ws.store, proj, table)
        if table is not None
        else answers_from_experts(ws.store, proj)
    )
    out = {
        "recorded": n,
        "items": len(known_answers(ws.store, proj.name)),
        "rate": proj.audit.gold_standard_rate,
    }

    def render() -> None:
        console.print(f"[green]{n} known answers recorded[/]; {out['items']} gold-standard items")
        if not out["rate"]:
            console.print(
                "[yellow]gold_standard_rate is 0 in the project's [audit] settings[/]: push "
                "mixes none in until it is set (e.g. 0.05)"
            )

    emit(out, as_json, render)


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
    arm: Annotated[
        str | None,
        typer.Option(
            "--arm",
            help="blind: accounts on the blind arm's own instance only (`serve "
            "--blind-instance`); their passwords go to a file of their own.",
        ),
    ] = None,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create login-capable accounts (invite-signup flow); passwords go to a 0600 file."""
    from truthline.annotate._blind import (
        blind_target,
        blind_users_path,
        has_blind_instance,
        other_instance_users,
        refuse_other_instance,
    )
    from truthline.annotate._local import target
    from truthline.annotate._users import USERS_FILE, _load, add_users, check_emails
    from truthline.errors import TruthlineError

    if arm not in (None, "blind"):
        raise typer.BadParameter(f"{arm!r}: the only arm with accounts of its own is blind")
    ws = workspace(ctx)
    tgt = target(ws, url=url)
    path = ws.secrets_dir / USERS_FILE
    if arm == "blind":
        if url is not None or not has_blind_instance(ws):
            raise TruthlineError(
                "--arm blind needs the blind arm's own instance: start it with "
                "`truthline annotate serve --blind-instance`"
            )
        main_client = tgt.client
        tgt, path = blind_target(ws, tgt), blind_users_path(ws)
        refuse_other_instance(
            check_emails(emails),
            other_instance_users(main_client, ws.secrets_dir / USERS_FILE),
            f"the instance holding predictions ({main_client.url})",
        )
    elif url is None and has_blind_instance(ws):
        btgt = blind_target(ws, tgt)
        refuse_other_instance(
            check_emails(emails),
            other_instance_users(btgt.client, blind_users_path(ws)),
            f"the blind arm's instance ({btgt.client.url})",
        )
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
