"""`truthline physalign`: generated diagram problems, annotation passes, probe compiler,
blind double verification and adjudication (shared/PHYSALIGN.md §1-4, §12, §14)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from truthline._cli_common import JsonOpt, console, emit, output_dir, whole_names

if TYPE_CHECKING:
    from truthline.annotate import LSClient
    from truthline.store import Store

app = typer.Typer(
    help="PhysAlign probes: generated diagrams or your own problems, annotation passes in "
    "Label Studio (or loaded from files), probe compiler with exact-input dedup and a leak "
    "check, blind double verification and adjudication, screening states and the "
    "post-construction audit.",
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
            f"(types {info['types']}, sets {info['eligibility']}, {info['skipped']} observations "
            f"skipped, {info['deduplicated']} exact-input duplicates collapsed, "
            f"{info['linked_parent_groups']} groups of parents sharing an image kept in one split)"
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
    ] = "read",
    ground_field: Annotated[
        str, typer.Option("--ground-field", help="Project field for the candidate alias.")
    ] = "owner",
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
        if info.get("held_corrections"):
            console.print(
                f"[yellow]{info['held_corrections']} corrected targets held back[/] until a "
                f"fresh blind re-verification approves them: {', '.join(info['held_probe_ids'])}"
            )
        if info.get("risk_isolated"):
            console.print(
                f"[yellow]{info['risk_isolated']} risk-isolated probes left out[/]: "
                f"{', '.join(info['isolated_probe_ids'])}"
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
        if info.get("screening"):
            console.print(f"screening: {info['screening']}")

    emit(info, as_json, render)


# -- a user's own problems, and decisions from files ------------------------------------------
@app.command("import-problems")
def import_problems_cmd(
    table: Annotated[
        Path,
        typer.Argument(
            help="CSV or JSONL, one row per problem: problem_id, image (file path), text, "
            "and optionally question and domain."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Work folder to create.")],
    image_root: Annotated[
        Path | None,
        typer.Option(
            "--image-root",
            help="Folder the image paths are relative to (default: the table's folder).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Import your own diagrams and problem texts (not generated) as a work folder.

    Writes OUT/annotations.jsonl and OUT/images/ (PNG); then annotate with `passes push`
    (Label Studio) or bring annotations in with `passes load`, and compile as usual.
    """
    from truthline.systems.physalign._import import import_problems

    info = import_problems(table, output_dir(out), image_root)
    emit(info, as_json, lambda: console.print(f"{info['problems']} problems -> {info['file']}"))


@passes_app.command("load")
def passes_load(
    work: WorkOpt,
    observe: Annotated[
        Path,
        typer.Option(
            "--observe",
            help="Passes 1-3: a Label Studio JSON export (or the same "
            "list, one entry per annotation with parent_id, annotator, result).",
        ),
    ],
    review: Annotated[
        Path | None,
        typer.Option("--review", help="Pass 4: the reviewer's export of the same parents."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Load pass annotations from files instead of a Label Studio server (same converter and
    consolidation as `passes pull`: verified only when annotator and reviewer both hold it)."""
    from truthline.systems.physalign._import import load_passes

    info = load_passes(work, observe, review)

    def render() -> None:
        o = info["observe"]
        console.print(f"passes 1-3: {o['annotated']} of {o['parents']} parents -> {o['file']}")
        if "review" in info:
            r = info["review"]
            console.print(
                f"pass 4: {r['reviewed']} reviewed, {r['verified']} observations verified, "
                f"{r['disputed']} disputed -> {r['file']}"
            )

    emit(info, as_json, render)


RoundOpt = Annotated[
    str,
    typer.Option(
        "--round",
        help="verify: the first blind round (decides every probe); reverify: the fresh "
        "blind round on corrected targets.",
    ),
]


@verify_app.command("load")
def verify_load(
    release: ReleaseOpt,
    answers: Annotated[
        Path,
        typer.Argument(
            help="CSV or JSONL: probe_id, reviewer, role, read, qc_flags (';'-separated), "
            "note, submitted_at."
        ),
    ],
    round_: RoundOpt = "verify",
    as_json: JsonOpt = False,
) -> None:
    """Record blind answers from a file, decided by the same rules as `verify pull`."""
    from truthline.systems.physalign._reverify import load_answers

    info = load_answers(release, answers, round_)

    def render() -> None:
        if "by_status" in info:
            _render_counts(info)
        else:
            console.print(
                f"{info['corrected']} corrected targets: {info['reverify']}; held back: "
                f"{', '.join(info['held']) or 'none'}"
            )

    emit(info, as_json, render)


@verify_app.command("reverify-push")
def verify_reverify_push(
    ctx: typer.Context,
    release: ReleaseOpt,
    reviewer: ReviewerOpt,
    url: UrlOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A fresh blind project per reviewer with the probes whose target was corrected (the
    adjudicator cannot re-verify: they saw the target)."""
    from truthline.systems.physalign._reverify import push_reverify

    info = push_reverify(_store(ctx), _client(ctx, url), release, reviewer)
    emit(
        info,
        as_json,
        lambda: console.print(
            f"{info['probes']} corrected probes -> "
            + ", ".join(f"{p['reviewer']} {p['project_url']}" for p in info["projects"])
        ),
    )


@verify_app.command("reverify-pull")
def verify_reverify_pull(
    ctx: typer.Context, release: ReleaseOpt, url: UrlOpt = None, as_json: JsonOpt = False
) -> None:
    """Pull the re-verification: a corrected target is approved only when both fresh blind
    answers equal it and neither flagged QC."""
    from truthline.systems.physalign._reverify import pull_reverify

    info = pull_reverify(_store(ctx), _client(ctx, url), release)
    emit(
        info,
        as_json,
        lambda: console.print(
            f"{info['corrected']} corrected targets: {info['reverify']}; held back: "
            f"{', '.join(info['held']) or 'none'}"
        ),
    )


@adjudicate_app.command("load")
def adjudicate_load(
    release: ReleaseOpt,
    decisions: Annotated[
        Path,
        typer.Argument(
            help="CSV or JSONL: probe_id, adjudicator, decision (approve_target, "
            "correct_target_regenerate, correct_probe_regenerate, withhold_ambiguous), "
            "corrected_role, corrected_read, rationale, submitted_at."
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Record third-reviewer decisions from a file, as `adjudicate pull` records them."""
    from truthline.systems.physalign._reverify import load_adjudications

    info = load_adjudications(release, decisions)
    emit(info, as_json, lambda: _render_counts(info))


@app.command("screening")
def screening_cmd(
    release: ReleaseOpt,
    isolate: Annotated[
        Path | None,
        typer.Option(
            "--isolate",
            help="CSV or JSONL of probe or parent ids (column id, optional reason) to isolate "
            "as risks; parents sharing their original image are isolated with them.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Screening state of every probe candidate, admission and parent retention.

    Each probe is in exactly one state: approved, rejected, further review, incomplete or
    risk-isolated; corrected targets are counted by their blind re-verification."""
    from rich.table import Table

    from truthline.systems.physalign._screening import STATES, screening_table

    info = screening_table(release, isolate)

    def render() -> None:
        n = info["candidates"]
        t = Table(
            "state", "probes", "share", title=f"{n} candidates, {info['candidate_parents']} parents"
        )
        for s in STATES:
            share = info["shares"][s]
            t.add_row(
                s.replace("_", " "), str(info["states"][s]), "" if share is None else f"{share:.2%}"
            )
        console.print(t)
        a = info["admission"]
        console.print(
            f"admission: {a['approved_before_isolation']} approved, {a['risk_isolated']} "
            f"risk-isolated, {a['retained']} retained from {a['retained_parents']} parents "
            f"({a['parents_complete']} complete, {a['parents_partial']} partial, "
            f"{a['parents_without_retained_probe']} without a retained probe)"
        )
        c = info["corrections"]
        console.print(
            f"corrected targets: {c['corrected_targets']}, re-verification {c['reverify']}"
        )
        if info["not_compiled"]:
            console.print(f"observations not compiled: {info['not_compiled']}")

    emit(info, as_json, render)


post_audit_app = typer.Typer(
    help="Post-construction quality audit of retained probes: a declared sample allocated "
    "across groups in a fixed-seed hash order, first-pass and post-correction rates.",
    no_args_is_help=True,
)
app.add_typer(post_audit_app, name="post-audit")


@post_audit_app.command("plan")
def post_audit_plan(
    release: ReleaseOpt,
    n: Annotated[int, typer.Option("--n", min=1, help="Probes to audit in all.")],
    by: Annotated[
        list[str] | None,
        typer.Option("--by", help="Group by probe_type and/or domain (repeatable)."),
    ] = None,
    census_smallest: Annotated[
        int,
        typer.Option("--census-smallest", min=0, help="Audit the K smallest groups in full."),
    ] = 0,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """Declare the audit sample (written once): allocation per group and, within a group,
    probes in sha256("SEED|probe_id") order; writes a worksheet for the auditors."""
    from truthline.systems.physalign._post_audit import plan

    info = plan(
        release, n, by=tuple(by or ["probe_type"]), seed=seed, census_smallest=census_smallest
    )
    emit(
        info,
        as_json,
        lambda: console.print(
            f"{info['n']} of {info['frame']} retained probes: {info['allocation']} -> "
            f"{info['worksheet']}"
        ),
    )


@post_audit_app.command("report")
def post_audit_report(
    release: ReleaseOpt,
    outcomes: Annotated[
        Path,
        typer.Option(
            "--outcomes",
            help="The filled worksheet (CSV or JSONL): probe_id, first_pass (pass/flag), "
            "reinspection (pass/unresolved, for flagged probes).",
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """First-pass and post-correction acceptance rates of the audited sample, overall and per
    group, with Wilson intervals widened for parent clusters."""
    from rich.table import Table

    from truthline.systems.physalign._post_audit import report

    info = report(release, outcomes)

    def ci(r: dict[str, Any]) -> str:
        if r["point"] is None:
            return "-"
        return f"{r['point']:.2%} [{r['low']:.2%}, {r['high']:.2%}]"

    def render() -> None:
        t = Table(
            "group", "size", "sampled", "audited", "first pass", "after correction", "unresolved"
        )
        for g, a in info["allocation"].items():
            s = info["groups"][g]
            t.add_row(
                g,
                str(a["group_size"]),
                str(a["audited"]),
                str(s["audited"]),
                ci(s["first_pass_rate"]),
                ci(s["after_correction_rate"]),
                str(s["unresolved"]),
            )
        o = info["overall"]
        t.add_row(
            "all",
            str(info["frame"]),
            str(info["sample"]),
            str(o["audited"]),
            ci(o["first_pass_rate"]),
            ci(o["after_correction_rate"]),
            str(o["unresolved"]),
        )
        console.print(t)
        if info["not_yet_audited"]:
            console.print(
                f"[yellow]{len(info['not_yet_audited'])} sampled probes not audited yet[/]"
            )
        console.print(info["note"])

    emit(info, as_json, render)


@app.command("solve")
def solve_cmd(
    ctx: typer.Context,
    problems: Annotated[
        Path,
        typer.Option(
            "--problems",
            help="CSV or JSONL of parent problems: parent, format (choice, fill-in, "
            "short-answer, calculation), problem_text, question, options (JSON letter -> "
            "text), images (';'-separated paths relative to the table).",
        ),
    ],
    references: Annotated[
        Path,
        typer.Option(
            "--references",
            help="CSV or JSONL of references: parent, format, answer, rel_tol, abs_tol.",
        ),
    ],
    run: Annotated[
        str,
        typer.Option(
            "--run", help="The benchmark run whose grounding the outcomes join (Table 17)."
        ),
    ],
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="Model spec to ask every problem (repeatable)."),
    ] = None,
    replies: Annotated[
        Path | None,
        typer.Option("--replies", help="CSV or JSONL of replies instead: model, parent, reply."),
    ] = None,
    credit: Annotated[
        Path | None,
        typer.Option(
            "--credit",
            help="Expert grades of short-answer and calculation replies: model, parent, "
            "points, max_points[, final_correct]; ungraded ones stay pending.",
        ),
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", help="Output cap of a worked solution.")
    ] = None,
    project: Annotated[str | None, typer.Option("--project", help="Project name.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Original-problem solving (SolveAcc): ask or load each parent problem's reply, score
    the last \\boxed{...} against the reference under its tolerance (expert credit for
    worked solutions), keep the outcomes with the run so its report adds SolveAcc and the
    grounding split by solve-correct vs solve-wrong parents (Δsolve)."""
    from rich.table import Table

    from truthline._cli_common import ws_project
    from truthline.errors import TruthlineError
    from truthline.systems.physalign import _solve as S

    if bool(model) == (replies is not None):
        raise TruthlineError("give either --model SPEC (ask) or --replies FILE (load), not both")
    ws, proj = ws_project(ctx, project)
    try:
        refs = S.read_references(references)
        grades = S.read_credit(credit) if credit else []
        if replies is not None:
            got = S.read_replies(replies)
        else:
            probs = S.read_problems(problems)
            got = [r for m in model or [] for r in S.run_solve(ws.store, proj, m, probs)]
    except KeyError as exc:  # a missing column: name the table and the column
        raise TruthlineError(f"solve tables: missing column {exc} (see --help)") from exc
    outcomes = S.score_replies(got, refs, grades)
    path = S.write_outcomes(proj, run, outcomes)
    by_model: dict[str, list[Any]] = {}
    for o in outcomes:
        by_model.setdefault(o.model, []).append(o)
    accs = [S.solve_acc(v) for v in by_model.values()]
    info = {
        "run": run,
        "outcomes": str(path),
        "models": [
            {
                "model": a.model,
                "solve_acc": a.value.as_dict(),
                "scored": a.scored,
                "failed": a.failed,
                "pending": a.pending,
                "infra_missing": a.infra_missing,
            }
            for a in accs
        ],
    }

    def render() -> None:
        from truthline.stats import fmt_ci

        t = Table("model", "SolveAcc [95% CI]", "scored", "no box", "pending", "missing")
        for a in accs:
            t.add_row(
                a.model,
                fmt_ci(a.value),
                str(a.scored),
                str(a.failed),
                str(a.pending),
                str(a.infra_missing),
            )
        console.print(whole_names(t))
        console.print(f"outcomes kept in {path}; `truthline benchmark report {run}` adds Δsolve")

    emit(info, as_json, render)
