"""`truthline physalign`: generated diagram problems, annotation passes, probe compiler,
blind double verification and adjudication (shared/PHYSALIGN.md §1-4, §12, §14)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from truthline._cli_common import JsonOpt, console, emit, output_dir

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
    from truthline.physalign._compile import compile_release
    from truthline.physalign._export import write_import_tables
    from truthline.physalign._generate import ANNOTATIONS
    from truthline.physalign._generate import generate as _generate

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
    from truthline.physalign._compile import compile_release

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
def leak_check(release: ReleaseOpt, as_json: JsonOpt = False) -> None:
    """Check a release folder: no private value in a public file, file name or rendered prompt."""
    from truthline.physalign._leak import leak_check_release

    info = leak_check_release(release)
    emit(
        info,
        as_json,
        lambda: console.print(
            f"[green]no leaks[/] in {info['probes']} probes, {info['files']} public files"
        ),
    )


@app.command("export")
def export(
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
    as_json: JsonOpt = False,
) -> None:
    """Write import tables (items metadata and labels) for a physics-diagrams project."""
    from truthline.physalign._export import write_import_tables

    info = write_import_tables(
        release, read_field=read_field, ground_field=ground_field, unverified=unverified
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
