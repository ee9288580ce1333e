"""``truthline pow tables``: RealityBench's evaluation tables from stored benchmark runs.

One subcommand per paper table (``--run`` repeatable; default every run of the
proof-of-work project, a later run's answers replacing an earlier one's, so name the runs
when a rerun is among them; ``--json`` for the rows as data):

* ``ablation`` (Table 4, ``--rerun RUN``: the default prompt asked again),
* ``models`` (Table 5), ``paired`` (Table 6), ``prices`` (Tables 7 and 11),
* ``environments`` (Tables 8-9), ``fields`` (Table 10),
* ``tracing`` (Table 12 and §7's misreading shares), ``gap`` (§7: documentation on
  acceptable vs other frames), ``humans`` (Table 13, from the frame table and ratings).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from truthline._cli_common import (
    RESAMPLES_HELP,
    JsonOpt,
    bounded_resamples,
    console,
    emit,
    workspace,
)

app = typer.Typer(
    help="RealityBench's evaluation tables (App. D, E) from stored proof-of-work runs.",
    no_args_is_help=True,
)

RunOpt = Annotated[
    list[str] | None,
    typer.Option("--run", help="Run id(s); default: every run of the project."),
]
ProjectOpt = Annotated[str, typer.Option("--project", help="The benchmark project.")]
ResamplesOpt = Annotated[
    int | None,
    typer.Option(
        "--resamples",
        min=0,
        callback=bounded_resamples,
        help="Bootstrap resamples (default: project; at most 100000, raised by "
        "TRUTHLINE_MAX_RESAMPLES).",
    ),
]


def _context(
    ctx: typer.Context, project: str, runs: list[str] | None, exclude: Sequence[str] = ()
) -> tuple[Any, Any, list[str], Any]:
    from truthline.benchmark import list_runs
    from truthline.errors import TruthlineError
    from truthline.systems.realitybench._tables import load_decisions

    ws = workspace(ctx)
    proj = ws.registered(project)
    ids = runs or [
        r["run_id"] for r in list_runs(ws.store, proj.name) if r["run_id"] not in exclude
    ]
    dec = load_decisions(ws.store, proj, ids) if ids else None
    if dec is None or not len(dec):
        raise TruthlineError(
            f"no proof-of-work decisions in {', '.join(ids) or 'any run'} of {proj.name}; run "
            "`truthline benchmark run --project proof-of-work --model ...` first"
        )
    return ws, proj, ids, dec


def _rs(proj: Any, resamples: int | None) -> Any:
    from truthline.benchmark._metrics import Resampling

    b = proj.benchmark
    return Resampling(resamples if resamples is not None else b.bootstrap_resamples, b.seed)


def _show(rows: list[dict[str, Any]], title: str) -> Callable[[], None]:
    def render() -> None:
        from rich.table import Table

        t = Table(title=title)
        cols = list(rows[0]) if rows else []
        for c in cols:
            t.add_column(str(c))
        for r in rows:
            t.add_row(*("" if r.get(c) is None else str(r.get(c)) for c in cols))
        console.print(t)

    return render


@app.command("models")
def models_cmd(
    ctx: typer.Context,
    run: RunOpt = None,
    project: ProjectOpt = "proof-of-work",
    resamples: ResamplesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Table 5: false-accept/miss rates, precision/recall/F1, documentation, answer format,
    replies cut by the output cap, mean thinking tokens, set cost."""
    from truthline.systems.realitybench import _tables as T

    ws, proj, ids, dec = _context(ctx, project, run)
    rows = T.model_rows(proj, dec, T.usage(ws.store, ids), _rs(proj, resamples))
    emit(
        {"runs": ids, "models": [r.as_dict() for r in rows]},
        as_json,
        _show([r.shown() for r in rows], "Table 5"),
    )


@app.command("figure2")
def figure2_cmd(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="PNG to write.")] = Path("figure2.png"),
    run: RunOpt = None,
    project: ProjectOpt = "proof-of-work",
    resamples: ResamplesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Figure 2: each model's acceptability F1 and documentation score against set cost."""
    from truthline.systems.realitybench import _tables as T

    ws, proj, ids, dec = _context(ctx, project, run)
    rows = T.model_rows(proj, dec, T.usage(ws.store, ids), _rs(proj, resamples))
    path = T.plot_cost(rows, out)
    emit(
        {"runs": ids, "figure": str(path), "models": [r.as_dict() for r in rows]},
        as_json,
        lambda: console.print(f"Figure 2 -> {path}"),
    )


@app.command("paired")
def paired_cmd(
    ctx: typer.Context,
    run: RunOpt = None,
    project: ProjectOpt = "proof-of-work",
    resamples: ResamplesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Table 6: paired model differences in F1 and documentation (* = CI excludes zero)."""
    from truthline.systems.realitybench import _tables as T

    _, proj, ids, dec = _context(ctx, project, run)
    rows = T.paired_rows(proj, dec, _rs(proj, resamples))
    emit(
        {"runs": ids, "paired": [r.as_dict() for r in rows]},
        as_json,
        _show([r.shown() for r in rows], "Table 6"),
    )


@app.command("prices")
def prices_cmd(
    ctx: typer.Context,
    run: RunOpt = None,
    project: ProjectOpt = "proof-of-work",
    as_json: JsonOpt = False,
) -> None:
    """Tables 7 and 11: list price per 1M input/output tokens with the date it was read,
    tokens and set cost; unpriced models shown as unpriced."""
    from truthline.systems.realitybench import _tables as T

    ws, _, ids, _ = _context(ctx, project, run)
    rows = T.price_rows(T.usage(ws.store, ids))
    emit(
        {"runs": ids, "prices": [r.as_dict() for r in rows]},
        as_json,
        _show([r.shown() for r in rows], "Tables 7 and 11"),
    )


@app.command("environments")
def environments_cmd(
    ctx: typer.Context,
    run: RunOpt = None,
    project: ProjectOpt = "proof-of-work",
    resamples: ResamplesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Tables 8-9: per environment and model, acceptability F1 and false-accept rate."""
    from truthline.systems.realitybench._conditional import pow_tables

    _, proj, ids, dec = _context(ctx, project, run)
    rows = pow_tables(proj, dec[dec["variant"] == ""], _rs(proj, resamples))["by_environment"]
    emit({"runs": ids, "by_environment": rows}, as_json, _show(rows, "Tables 8-9"))


@app.command("fields")
def fields_cmd(
    ctx: typer.Context,
    run: RunOpt = None,
    project: ProjectOpt = "proof-of-work",
    resamples: ResamplesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Table 10: per documentation field and model, the score on scorer-accepted frames."""
    from truthline.systems.realitybench._conditional import pow_tables

    _, proj, ids, dec = _context(ctx, project, run)
    rows = pow_tables(proj, dec[dec["variant"] == ""], _rs(proj, resamples))["by_field"]
    emit({"runs": ids, "by_field": rows}, as_json, _show(rows, "Table 10"))


@app.command("tracing")
def tracing_cmd(
    ctx: typer.Context,
    run: RunOpt = None,
    project: ProjectOpt = "proof-of-work",
    as_json: JsonOpt = False,
) -> None:
    """Table 12 / §7: wrong rejections split into scene and requirement misreadings, and
    the reported defects that triggered a rejection (per model and pooled)."""
    from truthline.systems.realitybench import _ablation as A
    from truthline.systems.realitybench._tables import _trace_shown

    _, proj, ids, dec = _context(ctx, project, run)
    rows = A.error_tracing(dec[dec["variant"] == ""], env_col=proj.benchmark.environment)
    emit(
        {"runs": ids, "error_tracing": A.rows_of(rows)},
        as_json,
        _show([_trace_shown(r) for r in rows], "Table 12"),
    )


@app.command("gap")
def gap_cmd(
    ctx: typer.Context,
    run: RunOpt = None,
    project: ProjectOpt = "proof-of-work",
    as_json: JsonOpt = False,
) -> None:
    """§7: documentation score on scorer-acceptable frames vs the others, per model."""
    from truthline.systems.realitybench import _ablation as A
    from truthline.systems.realitybench._tables import _gap_shown

    _, proj, ids, dec = _context(ctx, project, run)
    rows = A.documentation_gap(proj, dec[dec["variant"] == ""], env_col=proj.benchmark.environment)
    emit(
        {"runs": ids, "documentation_gap": A.rows_of(rows)},
        as_json,
        _show([_gap_shown(r) for r in rows], "Documentation on acceptable vs other frames"),
    )


@app.command("ablation")
def ablation_cmd(
    ctx: typer.Context,
    run: RunOpt = None,
    rerun: Annotated[
        str | None,
        typer.Option(
            "--rerun",
            help="A run of the default prompt asked again under a distinct cache key (`truthline "
            "benchmark run --model 'SPEC;replicate=1' --run pow-rerun`): the noise band.",
        ),
    ] = None,
    project: ProjectOpt = "proof-of-work",
    resamples: ResamplesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Table 4: defect claims under the prompt variants (verdict last, no verdict) against
    the default on the same items, paired CI by scene, changed only beyond rerun noise;
    and each variant's documentation score against the default's."""
    from truthline.systems.realitybench import _ablation as A
    from truthline.systems.realitybench._tables import (
        _ablation_shown,
        _variant_doc_shown,
        load_decisions,
    )

    ws, proj, ids, dec = _context(ctx, project, run, exclude=[rerun] if rerun else [])
    again = load_decisions(ws.store, proj, [rerun]) if rerun else None
    rs = _rs(proj, resamples)
    rows = A.prompt_order_ablation(
        A.with_rerun(dec, again),
        env_col=proj.benchmark.environment,
        resamples=rs.resamples,
        seed=rs.seed,
    )
    docs = A.variant_documentation(proj, dec, resamples=rs.resamples, seed=rs.seed)

    def show() -> None:
        _show([_ablation_shown(r) for r in rows], "Table 4: defect claims")()
        _show([_variant_doc_shown(r) for r in docs], "Documentation under each variant")()

    emit(
        {
            "runs": ids,
            "rerun": rerun,
            "ablation": A.rows_of(rows),
            "documentation": A.rows_of(docs),
        },
        as_json,
        show,
    )


@app.command("humans")
def humans_cmd(
    ctx: typer.Context,
    tune_frac: Annotated[
        float, typer.Option("--tune-frac", min=0.0, max=0.95, help="Declared tuning share.")
    ] = 0.6,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    resamples: Annotated[
        int, typer.Option("--resamples", min=0, callback=bounded_resamples, help=RESAMPLES_HELP)
    ] = 2000,
    as_json: JsonOpt = False,
) -> None:
    """Table 13: per environment, raters, frames, raw pairwise agreement, Krippendorff's
    alpha (skips allowed) and the scorer against the held-out rater majority."""
    from truthline.systems.realitybench import _pow
    from truthline.systems.realitybench._cli import _frames
    from truthline.systems.realitybench._tables import human_rows

    ws = workspace(ctx)
    ratings = _pow.ratings_table(ws.store, ws.registered(_pow.RATING_PROJECT))
    rows = human_rows(_frames(ws), ratings, tune_frac=tune_frac, seed=seed, resamples=resamples)
    emit(
        {"humans": [r.as_dict() for r in rows]},
        as_json,
        _show([r.shown() for r in rows], "Table 13"),
    )
