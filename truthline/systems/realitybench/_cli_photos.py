"""``truthline pow photos``: real photos for the three matched questions (RealityBench §5,
Table 14). ``import`` adds a folder of photos with the user's own answers to the
proof-of-work project (``source = real``); after ``truthline benchmark run --project
proof-of-work`` over renders and photos, ``transfer`` compares the models' rankings on the
two per question."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from truthline._cli_common import JsonOpt, bounded_resamples, console, emit, workspace

app = typer.Typer(
    help="Real photos for the matched questions (tape_reading, visible_face, damage_severity): "
    "import them with their ground truth; rank transfer between rendered frames and photos.",
    no_args_is_help=True,
)

QuestionOpt = Annotated[
    str,
    typer.Option("--question", "-q", help="tape_reading, visible_face or damage_severity."),
]
ProjectName = Annotated[
    str | None,
    typer.Option("--project", "-p", help="Benchmark project (default: proof-of-work)."),
]


@app.command("import")
def import_cmd(
    ctx: typer.Context,
    photos: Annotated[Path, typer.Argument(help="Folder of photos.")],
    question: QuestionOpt,
    answers: Annotated[
        Path | None,
        typer.Option(
            "--answers",
            help="CSV with columns file, answer (and optional scene, notes); default "
            "PHOTOS/answers.csv. tape_reading: inches (12.5 or 12 1/2); visible_face: sides "
            "separated by ';'; damage_severity: minor, moderate or severe.",
        ),
    ] = None,
    project: ProjectName = None,
    as_json: JsonOpt = False,
) -> None:
    """Import real photos with their ground truth as items of the benchmark project (source
    real), gold beside the project's existing gold."""
    from truthline.systems.realitybench._photos import import_photos

    r = import_photos(workspace(ctx), photos, question, answers=answers, project=project)
    emit(
        r.as_dict(),
        as_json,
        lambda: console.print(
            f"{len(r.keys)} real photos for {r.question} ({r.scenes} scenes) in {r.project}, "
            f"gold {r.gold_snapshot[:12]} ({r.gold_values} values); next: truthline benchmark "
            f"run --project {r.project} --model ..., then truthline pow photos transfer RUN"
        ),
    )


@app.command("transfer")
def transfer_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="A run over rendered frames and real photos.")],
    question: Annotated[
        list[str] | None,
        typer.Option("--question", "-q", help="Matched question(s) (default: all three)."),
    ] = None,
    resamples: Annotated[
        int | None,
        typer.Option(
            "--resamples",
            min=0,
            callback=bounded_resamples,
            help="Bootstrap resamples (default: the project's; at most 100000, raised by "
            "TRUTHLINE_MAX_RESAMPLES).",
        ),
    ] = None,
    project: ProjectName = None,
    as_json: JsonOpt = False,
) -> None:
    """Rank transfer from rendered frames to real photos per matched question: Spearman rho
    and Pearson r with p-values, and the rank-confidence-set interval (Table 14)."""
    from rich.table import Table

    from truthline.systems.realitybench._photos import photo_transfer
    from truthline.systems.realitybench._pow import BENCH_PROJECT

    ws = workspace(ctx)
    proj = ws.registered(project or BENCH_PROJECT)
    out = [t.as_dict() for t in photo_transfer(ws.store, proj, run, question, resamples=resamples)]

    def render() -> None:
        table = Table(
            "question", "models", "Spearman rho [interval]", "p", "Pearson r", "p", "rankings",
            title=f"rendered frames -> real photos ({run})",
        )  # fmt: skip
        for t in out:
            if t.get("value") is None:
                table.add_row(t["question"], "–", t.get("note", ""), "", "", "", "")
                continue
            v = t["value"]
            table.add_row(
                t["question"], str(len(t["models"])),
                f"{_num(v['point'])} [{_num(v['low'])}, {_num(v['high'])}]",
                _num(t["spearman_p"], ".3g"), _num(t["pearson_r"]), _num(t["pearson_p"], ".3g"),
                t["verdict"],
            )  # fmt: skip
        console.print(table)

    emit({"run_id": run, "questions": out}, as_json, render)


def _num(x: float | None, spec: str = ".2f") -> str:
    """A number of the JSON result (None where it is undefined, e.g. tied scores)."""
    return "–" if x is None else format(x, spec)
