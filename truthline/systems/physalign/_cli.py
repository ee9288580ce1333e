"""`truthline physalign`: generated diagram problems, annotation passes, probe compiler,
blind double verification and adjudication (shared/PHYSALIGN.md §1-4, §12, §14)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from truthline._cli_common import JsonOpt, console, emit, output_dir

if TYPE_CHECKING:
    from truthline.annotate import LSClient
    from truthline.store import Store

app = typer.Typer(
    help="PhysAlign probes: generated diagrams, annotation passes in Label Studio, probe "
    "compiler with a leak check, blind double verification and adjudication.",
    no_args_is_help=True,
)

SeedOpt = Annotated[int, typer.Option("--seed", help="Seed (the same seed gives the same bytes).")]
ReleaseOpt = Annotated[
    Path,
    typer.Option("--release", help="Release folder (public/ and private/ trees)."),
]


@app.command()
def generate(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the problems into.")],
    n: Annotated[int, typer.Option("--n", min=1, help="Number of parent problems.")] = 40,
    seed: SeedOpt = 1,
    compile_: Annotated[
        bool,
        typer.Option(
            "--compile/--no-compile",
            help="Also compile the known truth into OUT/release with import tables.",
        ),
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Draw N diagram problems (free body, incline, circuit, ray optics) with exact truth.

    Writes OUT/images/*.png, OUT/annotations.jsonl (passes 1-4 of every parent, the known
    answers), OUT/problems.jsonl and OUT/generated.json; with --compile (default) also
    OUT/release (public/private probe records) and OUT/release/import/{metadata,labels}.csv
    for `truthline items import` and `truthline audit import-table`.
    """
    from truthline.systems.physalign._compile import compile_release
    from truthline.systems.physalign._export import write_import_tables
    from truthline.systems.physalign._generate import ANNOTATIONS
    from truthline.systems.physalign._generate import generate as _generate

    out = output_dir(out)
    info = _generate(n, seed, out)
    if compile_:
        info["release"] = compile_release(out / ANNOTATIONS, out / "release", seed=seed)
        info["import"] = write_import_tables(out / "release", unverified=True)

    def render() -> None:
        console.print(
            f"{n} problems in {out} ({', '.join(f'{k} {v}' for k, v in info['domains'].items())})"
        )
        if compile_:
            r, imp = info["release"], info["import"]
            console.print(f"{r['probes']} probes compiled into {r['out']} ({r['types']})")
            console.print(
                f"import: truthline items import {imp['media']} --media-root {imp['media_root']} "
                f"--metadata {imp['metadata']}"
            )

    emit(info, as_json, render)


@app.command("compile")
def compile_cmd(
    annotations: Annotated[
        Path, typer.Argument(help="annotations.jsonl: one record of passes 1-4 per parent.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Release folder to write.")],
    seed: SeedOpt = 1,
    image_root: Annotated[
        Path | None,
        typer.Option(
            "--image-root",
            help="Folder the records' image paths are relative to "
            "(default: the annotations file's folder).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Compile reviewed pass-4 observations into public and private probe records.

    Aliases and display order are drawn once (stored in private/aliases.json and reused on
    every rerun); both trees are checked against the JSON Schemas and by the leak check
    before anything public is written. Exit 1 names the file, probe and field of a problem.
    """
    from truthline.systems.physalign._compile import compile_release

    info = compile_release(annotations, output_dir(out), seed=seed, image_root=image_root)
    emit(
        info,
        as_json,
        lambda: console.print(
            f"{info['probes']} probes from {info['parents']} parents -> {info['out']} "
            f"(types {info['types']}, sets {info['eligibility']}, {info['skipped']} observations skipped)"
        ),
    )


@app.command("leak-check")
def leak_check(
    ctx: typer.Context,
    release: ReleaseOpt,
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            "-p",
            help="Also render this workspace project's prompt for "
            "every row of RELEASE/import/metadata.csv and check it.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Check a release folder: no private value in a public file, file name or rendered prompt."""
    from truthline._cli_common import ws_project
    from truthline.systems.physalign._leak import leak_check_release

    proj = ws_project(ctx, project)[1] if project else None
    info = leak_check_release(release, project=proj)
    emit(
        info,
        as_json,
        lambda: console.print(
            f"[green]no leaks[/] in {info['probes']} probes, {info['files']} public files"
        ),
    )


@app.command("export")
def export(
    ctx: typer.Context,
    release: ReleaseOpt,
    unverified: Annotated[
        bool,
        typer.Option(
            "--unverified",
            help="Export compiled targets before verification "
            "(named as the generator's, not as verified).",
        ),
    ] = False,
    read_field: Annotated[
        str, typer.Option("--read-field", help="Project field for the reading.")
    ] = "reading",
    ground_field: Annotated[
        str, typer.Option("--ground-field", help="Project field for the candidate alias.")
    ] = "candidate",
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            "-p",
            help="Check the values against this workspace project's "
            "fields (its [benchmark] read_field / ground_field are used).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write import tables (items metadata and labels) for a physics-diagrams project.

    Only decided probes go in (approved directly, after adjudication, or with a corrected
    target); withheld and undecided ones are left out and counted."""
    from truthline._cli_common import ws_project
    from truthline.systems.physalign._export import write_import_tables

    proj = ws_project(ctx, project)[1] if project else None
    info = write_import_tables(
        release,
        read_field=read_field,
        ground_field=ground_field,
        unverified=unverified,
        project=proj,
    )

    def render() -> None:
        console.print(
            f"{info['items']} probes ({info['withheld']} withheld, {info['pending']} undecided "
            f"left out) -> {info['metadata']}, {info['labels']}"
        )
        console.print(
            f"truthline items import {info['media']} --media-root {info['media_root']} "
            f"--metadata {info['metadata']} && truthline audit import-table {info['labels']}"
        )

    emit(info, as_json, render)


# -- Label Studio: annotation passes ----------------------------------------------------------
WorkOpt = Annotated[
    Path,
    typer.Option(
        "--work",
        help="Work folder: annotations.jsonl (parents' images and text), "
        "images/, and the pulled records (the Label Studio state is in the workspace's store).",
    ),
]
UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="An existing Label Studio server (token in LABEL_STUDIO_API_KEY) "
        "instead of the workspace's own (`truthline annotate serve`).",
    ),
]
StageOpt = Annotated[str, typer.Option("--stage", help="observe (passes 1-3) or review (pass 4).")]
SimOpt = Annotated[
    list[str] | None,
    typer.Option("--annotator", help="Email of a SIMULATED annotator (repeatable)."),
]

passes_app = typer.Typer(
    help="Observational annotation passes 1-4 in Label Studio (answer-blind).",
    no_args_is_help=True,
)
app.add_typer(passes_app, name="passes")


def _client(ctx: typer.Context, url: str | None) -> LSClient:
    from truthline._cli_common import workspace
    from truthline.annotate import target

    return target(workspace(ctx), url=url).client


def _store(ctx: typer.Context) -> Store:
    """The workspace's store: it records the Label Studio projects, tasks, annotations and
    exposures of the passes, verification and adjudication (as for every project)."""
    from truthline._cli_common import workspace

    return workspace(ctx).store


def _users_file(ctx: typer.Context) -> Path:
    from truthline._cli_common import workspace
    from truthline.annotate import USERS_FILE

    return Path(workspace(ctx).secrets_dir) / USERS_FILE


@passes_app.command("push")
def passes_push(
    ctx: typer.Context,
    work: WorkOpt,
    stage: StageOpt = "observe",
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create the stage's Label Studio project (if needed) and import the parents it lacks.

    observe: diagram and problem text only. review: the pulled pass 1-3 annotation of each
    parent as a prediction for a second person to keep, fix or delete.
    """
    from truthline.systems.physalign._passes import push_passes

    client = _client(ctx, url)
    info = push_passes(_store(ctx), client, work, stage)
    emit(
        info,
        as_json,
        lambda: console.print(
            f"{stage}: {info['created']} tasks created, {info['existing']} already there -> "
            f"{info['project_url']}"
        ),
    )


@passes_app.command("pull")
def passes_pull(
    ctx: typer.Context, work: WorkOpt, url: UrlOpt = None, as_json: JsonOpt = False
) -> None:
    """Pull passes 1-3 into WORK/passes/draft.jsonl and, once reviewed, the consolidated
    records (pass 4: verified when annotator and reviewer agree) into WORK/passes/annotations.jsonl."""
    from truthline.systems.physalign._passes import pull_passes

    client = _client(ctx, url)
    info = pull_passes(_store(ctx), client, work)

    def render() -> None:
        o = info["observe"]
        console.print(f"passes 1-3: {o['annotated']} of {o['parents']} parents -> {o['file']}")
        _render_changes(o)
        if "review" in info:
            r = info["review"]
            console.print(
                f"pass 4: {r['reviewed']} reviewed, {r['verified']} observations verified, "
                f"{r['disputed']} disputed -> {r['file']}"
            )
            _render_changes(r)

    emit(info, as_json, render)


@passes_app.command("simulate")
def passes_simulate(
    ctx: typer.Context,
    work: WorkOpt,
    stage: StageOpt = "observe",
    annotator: SimOpt = None,
    drop_every: Annotated[
        int,
        typer.Option(
            "--drop-every", min=0, help="review: the reviewer deletes every N-th relation."
        ),
    ] = 0,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """SIMULATED annotators answer from the generator's truth (demos and tests only)."""
    from truthline.systems.physalign._passes import simulate_passes

    who = annotator or [f"sim-{stage}@physalign.local"]
    client = _client(ctx, url)
    info = simulate_passes(
        _store(ctx), client, work, stage, who, _users_file(ctx), drop_every=drop_every
    )
    emit(
        info,
        as_json,
        lambda: console.print(
            f"SIMULATED {stage}: {info['posted']} annotations posted as {', '.join(who)}"
        ),
    )


# -- blind verification and adjudication -------------------------------------------------------
ReviewerOpt = Annotated[
    list[str],
    typer.Option("--reviewer", help="Email of a blind reviewer (give exactly two)."),
]

verify_app = typer.Typer(
    help="Blind-first double verification: one Label Studio project per reviewer.",
    no_args_is_help=True,
)
app.add_typer(verify_app, name="verify")
adjudicate_app = typer.Typer(
    help="Third-reviewer adjudication of probes whose blind answers disagree or were flagged.",
    no_args_is_help=True,
)
app.add_typer(adjudicate_app, name="adjudicate")


def _render_counts(info: dict[str, Any]) -> None:
    console.print(
        f"{info['probes']} probes: " + ", ".join(f"{k} {v}" for k, v in info["by_status"].items())
    )
    _render_changes(info)


def _render_changes(info: dict[str, Any]) -> None:
    """What the store's reconciliation of a pull found (nothing printed when nothing)."""
    if info.get("deleted"):
        console.print(
            f"{info['deleted']} annotations deleted in Label Studio (kept, marked deleted)"
        )
    if info.get("restored"):
        console.print(f"{info['restored']} annotations back in Label Studio")
    if info.get("foreign_tasks"):
        ids = ", ".join(str(t["ls_task_id"]) for t in info["foreign_tasks"])
        console.print(f"[yellow]skipped tasks truthline did not push[/]: {ids}")
    for p in info.get("problems") or []:
        console.print(f"[yellow]{p}[/]")


@verify_app.command("push")
def verify_push(
    ctx: typer.Context,
    release: ReleaseOpt,
    reviewer: ReviewerOpt,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import every public probe into each reviewer's own blind project (no predictions,
    no targets, no source annotations; the task data passes the leak check first)."""
    from truthline.systems.physalign._verify import push_verify

    client = _client(ctx, url)
    info = push_verify(_store(ctx), client, release, reviewer)

    def render() -> None:
        for p in info["projects"]:
            console.print(
                f"{p['reviewer']}: {p['created']} tasks created, {p['existing']} already "
                f"there -> {p['project_url']}"
            )

    emit(info, as_json, render)


@verify_app.command("pull")
def verify_pull(
    ctx: typer.Context, release: ReleaseOpt, url: UrlOpt = None, as_json: JsonOpt = False
) -> None:
    """Pull both blind answers and decide: approved_direct iff both agree with each other and
    the target and neither flagged QC; otherwise the probe needs adjudication."""
    from truthline.systems.physalign._verify import pull_verify

    client = _client(ctx, url)
    info = pull_verify(_store(ctx), client, release)
    emit(info, as_json, lambda: _render_counts(info))


@verify_app.command("simulate")
def verify_simulate(
    ctx: typer.Context,
    release: ReleaseOpt,
    reviewer: ReviewerOpt,
    wrong_every: Annotated[
        int,
        typer.Option(
            "--wrong-every",
            min=0,
            help="The second reviewer answers another alias on every N-th probe.",
        ),
    ] = 0,
    flag_every: Annotated[
        int,
        typer.Option(
            "--flag-every", min=0, help="The second reviewer raises a QC flag on every N-th probe."
        ),
    ] = 0,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """SIMULATED blind reviewers answer from the private targets (demos and tests only)."""
    from truthline.systems.physalign._verify import simulate_verify

    client = _client(ctx, url)
    info = simulate_verify(
        _store(ctx),
        client,
        release,
        reviewer,
        _users_file(ctx),
        wrong_every=wrong_every,
        flag_every=flag_every,
    )
    emit(
        info,
        as_json,
        lambda: console.print(
            f"SIMULATED: {info['posted']} blind answers posted as {', '.join(info['reviewers'])}"
        ),
    )


@adjudicate_app.command("push")
def adjudicate_push(
    ctx: typer.Context, release: ReleaseOpt, url: UrlOpt = None, as_json: JsonOpt = False
) -> None:
    """Create the adjudication project (after the blind answers are pulled) with both answers,
    the private target and the source observation of every probe that needs it."""
    from truthline.systems.physalign._verify import push_adjudicate

    client = _client(ctx, url)
    info = push_adjudicate(_store(ctx), client, release)
    emit(
        info,
        as_json,
        lambda: console.print(
            f"{info['tasks']} probes to adjudicate ({info['created']} new) -> {info['project_url']}"
        ),
    )


@adjudicate_app.command("pull")
def adjudicate_pull(
    ctx: typer.Context, release: ReleaseOpt, url: UrlOpt = None, as_json: JsonOpt = False
) -> None:
    """Record each adjudication and the final decision with who decided and when."""
    from truthline.systems.physalign._verify import pull_adjudicate

    client = _client(ctx, url)
    info = pull_adjudicate(_store(ctx), client, release)
    emit(info, as_json, lambda: _render_counts(info))


@adjudicate_app.command("simulate")
def adjudicate_simulate(
    ctx: typer.Context,
    release: ReleaseOpt,
    adjudicator: Annotated[
        str, typer.Option("--adjudicator", help="Email of the SIMULATED third reviewer.")
    ] = "sim-adjudicator@physalign.local",
    withhold_every: Annotated[
        int, typer.Option("--withhold-every", min=0, help="Withhold every N-th probe as ambiguous.")
    ] = 0,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A SIMULATED third reviewer approves the known target (demos and tests only)."""
    from truthline.systems.physalign._verify import simulate_adjudicate

    client = _client(ctx, url)
    info = simulate_adjudicate(
        _store(ctx), client, release, adjudicator, _users_file(ctx), withhold_every=withhold_every
    )
    emit(info, as_json, lambda: console.print(f"SIMULATED: {info['posted']} adjudications posted"))


@app.command("status")
def status_cmd(release: ReleaseOpt, as_json: JsonOpt = False) -> None:
    """Probes, types, sets (G, L, P, H, H_hard), verification and adjudication of a release."""
    from truthline.systems.physalign._verify import status

    info = status(release)

    def render() -> None:
        console.print(
            f"{info['probes']} probes from {info['parents']} parents; types {info['types']}"
        )
        console.print(f"sets {info['sets']}")
        console.print(f"verification: {info['verification']}")
        if info.get("decided_by"):
            console.print(f"decided by: {info['decided_by']}")

    emit(info, as_json, render)
