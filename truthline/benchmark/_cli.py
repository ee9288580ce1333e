"""`truthline benchmark`: runs over gold, reports, provenance slices, export."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from truthline._cli_common import (
    JsonOpt,
    ProjectOpt,
    console,
    emit,
    err_console,
    output_path,
    resamples_option,
    whole_names,
    workspace,
    ws_project,
)
from truthline._names import check_name, inside

app = typer.Typer(
    help="Evaluate models on gold with the scoring contract; report and export.",
    no_args_is_help=True,
)

ResamplesOpt = Annotated[int | None, resamples_option("the project's setting")]


def _ci(d: dict | None) -> str:
    from truthline.stats import fmt_ci

    return fmt_ci(d)


def _note(*sources: object) -> None:
    """The thin-design note under a table (nothing when every design is adequate)."""
    from truthline.stats import design_note

    note = design_note(sources)
    if note:
        console.print(f"[yellow]{note}[/]")


def max_cost_option(value: float | None) -> float | None:
    """``--max-cost``: a finite USD amount >= 0 (NaN, infinity and negatives: exit 2)."""
    from truthline.errors import TruthlineError
    from truthline.models._prices import check_budget

    try:
        return check_budget(value)
    except TruthlineError as exc:
        raise typer.BadParameter(str(exc).removeprefix("--max-cost ")) from None


@app.command("run")
def run_cmd(
    ctx: typer.Context,
    model: Annotated[
        list[str],
        typer.Option(
            "--model",
            "-m",
            help="Model spec (repeatable): simulated:steel-strong, "
            "openai:gpt-4o-mini, rule:majority, rule:random, ...",
        ),
    ],
    gold: Annotated[
        str, typer.Option("--gold", help="Gold slice: all, blind, anchored or vlm-sourced.")
    ] = "all",
    snapshot: Annotated[
        str | None, typer.Option("--snapshot", help="Gold snapshot hash (prefix); default latest.")
    ] = None,
    variant: Annotated[
        str | None, typer.Option("--variant", help="Prompt variant from [prompts] variants.")
    ] = None,
    condition: Annotated[
        str,
        typer.Option(
            "--condition",
            help="base, or gt: [benchmark] given_as_truth (else action_field) handed over as "
            "truth where admissible; inadmissible items are left out and counted.",
        ),
    ] = "base",
    control: Annotated[
        str | None,
        typer.Option(
            "--control",
            help="Input control: no-image (no attachment, the prompt says so) or reorder "
            "(candidates and classes listed in another order; ids stay bound).",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N gold items.")
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--run", help="Add to / resume this run id (default: derived).")
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Parallel requests.")
    ] = 8,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost",
            callback=max_cost_option,
            help="Hard cap in USD (finite, >= 0): stop starting requests past it.",
        ),
    ] = None,
    retry_missing: Annotated[
        bool, typer.Option("--retry-missing", help="Re-send infrastructure-missing requests.")
    ] = False,
    max_failures: Annotated[
        int,
        typer.Option(
            "--max-failures",
            min=0,
            help="Stop after this many consecutive unfixable failures (endpoint down, "
            "key rejected; 0: never), close the run as partial and exit 1.",
        ),
    ] = 5,  # RunConfig.max_failures (the runner is imported lazily; a test keeps them equal)
    frames: Annotated[
        str | None,
        typer.Option(
            "--frames",
            help="Frame-density ablation: re-sample each clip from its source video at these "
            "frame counts (e.g. 1,2,4,8,15; positions i/(k-1) of the clip, 1: its centre), "
            "one entry per count in one run.",
        ),
    ] = None,
    video_root: Annotated[
        Path | None,
        typer.Option(
            "--video-root",
            help="With --frames: the folder the clips' videos were mined from "
            "(default: raw/videos in the workspace, where the demo writes them).",
        ),
    ] = None,
    wait_claimed: Annotated[
        bool,
        typer.Option(
            "--wait-claimed",
            help="Wait for requests another live run on this store has claimed (default: "
            "leave them to it and say so; a rerun afterwards takes its answers).",
        ),
    ] = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Ask every model again instead of reusing answers stored before this run "
            "started (by default a byte-identical request, e.g. a prefill's, is reused). "
            "Without --run the run is <derived>-fresh-N; rerunning resumes it.",
        ),
    ] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run models over gold and score them; rerunning the same command resumes the run."""
    from truthline.benchmark import RunConfig, RunInterrupted, run_benchmark

    if run_id is not None:  # a run id names files (reports/benchmark-<run>.md)
        check_name(run_id, "--run")
    ws, proj = ws_project(ctx, project)
    cfg = RunConfig(
        models=model,
        gold=gold,
        snapshot=snapshot,
        variant=variant,
        condition=condition,
        control=control or "",
        limit=limit,
        run_id=run_id,
        concurrency=concurrency,
        max_cost=max_cost,
        retry_missing=retry_missing,
        max_failures=max_failures or None,
        wait_claimed=wait_claimed,
        journal_dir=ws.root / "journal",
        fresh=fresh,
    )
    try:
        if frames is None:
            man = run_benchmark(ws.store, proj, cfg, progress=not as_json)
        else:
            man = _run_densities(ws, proj, cfg, frames, video_root, progress=not as_json)
    except RunInterrupted as exc:  # Ctrl-C / SIGTERM: one line, the signal's exit code
        err_console.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None

    emit(man, as_json, lambda: _render_run(man))


def _render_run(man: dict[str, Any]) -> None:
    """The run's entries: outcomes, fresh and reused answers, this run's cost."""
    from truthline.benchmark import EntryKey

    table = Table(
        "model",
        "variant",
        "condition",
        "control",
        "outcomes",
        "answers",
        "cost USD",
        title=f"run {man['run_id']} ({man['status']}), gold {man['gold_snapshot'][:12]}",
    )
    for e in man["entries"].values():
        key = EntryKey.of(e)
        table.add_row(
            key.label(parts=False, simulated=bool(e.get("simulated"))),
            key.variant,
            key.condition,
            key.control,
            ", ".join(f"{k} {v}" for k, v in e.get("status_counts", {}).items()),
            _answers_cell(e.get("answers") or {}),
            f"{e.get('cost_usd', 0):.4f}",
        )
    console.print(whole_names(table))
    console.print(f"next: truthline benchmark show {man['run_id']}")


def _creatable(out: Path) -> Path:
    """``out`` if its folder could be made (its nearest existing parent is a folder we may
    write), without making anything: an export that fails leaves no empty folder."""
    import os

    from truthline.errors import TruthlineError

    up = out.parent
    while not up.exists() and up != up.parent:
        up = up.parent
    if not up.is_dir() or not os.access(up, os.W_OK | os.X_OK):
        why = "not a folder" if not up.is_dir() else "permission denied"
        raise TruthlineError(f"--out {out}: cannot create the folder: {up} is {why}")
    return out


def _answers_cell(a: dict[str, Any]) -> str:
    """``fresh N, reused M ($X then)``: reused answers were stored before the run started
    (their original cost shown; this run's cost counts only fresh ones)."""
    if not a:
        return ""
    cell = f"fresh {a.get('fresh', 0)}, reused {a.get('reused', 0)}"
    if a.get("reused"):
        cell += f" (${a.get('reused_cost_usd', 0.0):.4f} then)"
    return cell


def _run_densities(
    ws: Any, proj: Any, cfg: Any, frames: str, video_root: Path | None, *, progress: bool
) -> dict[str, Any]:
    """One entry per frame count, all in one run: the first density's run id (derived
    unless ``--run`` names one) holds the others, so rerunning the command resumes it."""
    from dataclasses import replace

    from truthline.benchmark import run_benchmark
    from truthline.benchmark._frames import parse_densities

    root = video_root or ws.root / "raw" / "videos"
    out = ws.media_dir / proj.name / "resampled"
    man: dict[str, Any] = {}
    for k in parse_densities(frames):
        run = cfg.run_id or man.get("run_id")
        man = run_benchmark(
            ws.store,
            proj,
            replace(cfg, frames=k, video_root=root, frames_dir=out, run_id=run),
            progress=progress,
        )
    return man


@app.command("runs")
def runs_cmd(ctx: typer.Context, project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """Benchmark runs of the project."""
    from truthline.benchmark import list_runs

    ws, proj = ws_project(ctx, project)
    rows = list_runs(ws.store, proj.name)

    def render() -> None:
        table = Table("run", "status", "created", "gold", "models")
        for r in rows:
            table.add_row(
                r["run_id"],
                r["status"],
                str(r["created_at"])[:19],
                (r["gold_snapshot"] or "")[:12],
                ", ".join(r["models"]),
            )
        console.print(whole_names(table))

    emit(rows, as_json, render)


@app.command("show")
def show_cmd(
    ctx: typer.Context,
    run: Annotated[list[str], typer.Argument(help="Run id(s).")],
    gold: Annotated[str, typer.Option("--gold", help="Score on this gold slice.")] = "all",
    resamples: ResamplesOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Leaderboard of one or more runs: accuracy with CI, metrics, coverage, format rate, cost."""
    from truthline.benchmark import leaderboard

    ws, proj = ws_project(ctx, project)
    rows = leaderboard(ws.store, proj, run, slice_=gold, resamples=resamples)

    def render() -> None:
        from truthline.benchmark import is_across

        names = [
            n
            for n in proj.benchmark.metrics
            if n not in ("accuracy", "per_class") and not is_across(n)
        ]
        # the headline metrics get their own table: in one table with the accuracy interval
        # a dozen columns left every cell at "0…" on a 100-column terminal
        table = Table(
            "model", "accuracy [95% CI]", "coverage", "format", "cost USD",
            title=f"gold slice: {gold}",
        )  # fmt: skip
        metrics = Table("model", *names, title="headline metrics") if names else None
        from truthline.benchmark._mapper import mapped_entries

        mapped: dict[tuple[str, tuple[str, ...]], str] = {
            (e.run_id, (e.model, e.variant, e.condition, e.control)): e.label
            for e in mapped_entries(ws.store, sorted({r.run_id for r in rows}))
        }
        lines: list[str] = []
        for r in rows:
            vals = []
            for n in names:
                v = r.headline(n)
                vals.append("—" if v is None else f"{v:.3f}")
            by = mapped.get((r.run_id, tuple(r.key)))
            label = r.key.label("/", simulated=r.simulated, marker_first=True) + (
                f" — {by}" if by else ""  # mapped accuracy never shown as direct
            )
            table.add_row(
                label,
                _ci(r.accuracy),
                f"{r.coverage:.2f}",
                f"{r.format_rate:.2f}",
                f"{r.cost_usd:.4f}",
            )
            if metrics is not None:
                metrics.add_row(label, *vals)
                lines.append(
                    f"{escape(label)}: "
                    + ", ".join(f"{n} {v}" for n, v in zip(names, vals, strict=True))
                )
        console.print(whole_names(table))
        _note([r.accuracy for r in rows])
        if metrics is not None:
            # a table when every column fits its header, else one line per model (wraps)
            need = 1 + sum(
                3 + max(len(str(c.header)), *(len(str(x)) for x in c.cells))
                for c in metrics.columns
            )
            if need <= console.width:
                console.print(metrics)
            else:
                console.print("[bold]headline metrics[/]")
                for line in lines:
                    console.print(line)
        _frame_tables(ws.store, proj, sorted({r.run_id for r in rows}), resamples)

    emit([r.as_dict() for r in rows], as_json, render)


def _frame_tables(store: Any, proj: Any, runs: list[str], resamples: int | None) -> None:
    """``benchmark show``: accuracy by frames per clip for each run with ``--frames`` entries."""
    from truthline.benchmark._frames import density_table, frame_density

    for rid in runs:
        fd = frame_density(store, proj, rid, resamples=resamples)
        if fd is None:
            continue
        rows, ns = density_table(fd)
        table = Table(*rows[0], "n", title=f"run {rid}: accuracy by frames per clip")
        for r, n in zip(rows, ns, strict=True):
            table.add_row(*(str(v) for v in r.values()), str(n))
        console.print(whole_names(table))
        _note([r.accuracy for r in fd.rows], [r.change_pp for r in fd.rows])


@app.command("compare-gold")
def compare_gold_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    reference: Annotated[
        str,
        typer.Option(
            "--reference",
            help="labels: score against each arm's own tier-1 labels (every retained "
            "annotator's labels a reference of their arm; SteelBench's design). gold: score "
            "on the run's gold sliced by provenance (blind gold = blind consensus only). "
            "auto: labels where the store holds tier-1 labels of the run's items, else gold.",
        ),
    ] = "auto",
    resamples: ResamplesOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every model's score against blind vs anchored vs VLM-sourced references, the inflation
    over blind in pp with CIs, and the mean inflation over models with its CI."""
    from truthline.benchmark import compare_gold, compare_labels

    if reference not in ("auto", "labels", "gold"):
        raise typer.BadParameter("use auto, labels or gold", param_hint="--reference")
    ws, proj = ws_project(ctx, project)
    data = None
    if reference != "gold":
        data = compare_labels(ws.store, proj, run, resamples=resamples)
        if not data.models and reference == "auto":
            data = None
    if data is None:
        data = compare_gold(ws.store, proj, run, resamples=resamples)
    reference = data.reference

    def pp(d: dict | None) -> str:
        from truthline.stats import fmt_ci

        return fmt_ci(d, digits=1, sign=True)

    def render() -> None:
        table = Table(
            "model",
            "blind",
            "anchored",
            "vlm-sourced",
            "inflation (pp)",
            "vlm-sourced - blind (pp)",
            title=f"run {run}: scores by {'label' if reference == 'labels' else 'gold'} provenance",
        )
        for m in data.models:
            table.add_row(
                m.model,
                _ci(m.blind),
                _ci(m.anchored),
                _ci(m.vlm_sourced),
                pp(m.inflation_anchored_pp),
                pp(m.inflation_vlm_sourced_pp),
            )
        console.print(whole_names(table))
        _note([m.as_dict() for m in data.models])  # every interval of the rows
        if data.mean_inflation_pp is not None:
            mean = data.mean_inflation_anchored_ci
            console.print(
                f"higher on anchored {reference}: {data.higher_on_anchored}; mean inflation "
                + (pp(mean) if mean else f"{data.mean_inflation_pp:+.1f}")
                + " pp"
            )
        if not data.models and reference == "labels":
            console.print("no tier-1 labels of this run's items in the store; try --reference gold")

    emit(data.as_dict(), as_json, render)


@app.command("paired")
def paired_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    resamples: ResamplesOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Paired accuracy differences between the run's models (distinguishable: CI excludes 0)."""
    from truthline.benchmark import paired_matrix

    ws, proj = ws_project(ctx, project)
    data = paired_matrix(ws.store, proj, run, resamples=resamples)

    def render() -> None:
        table = Table("a", "b", "n", "a - b [95% CI]", "distinguishable")
        for c in data.pairs:
            table.add_row(
                c.a.id,
                c.b.id,
                str(c.n),
                _ci(c.difference),
                "yes" if c.distinguishable else "no",
            )
        console.print(whole_names(table))
        _note([c.difference for c in data.pairs])

    emit(data.as_dict(), as_json, render)


@app.command("conditions")
def conditions_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id holding base and gt conditions.")],
    model: Annotated[str, typer.Option("--model", "-m", help="Model alias.")],
    resamples: ResamplesOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Base vs +GT: net change with cluster CI and the repairs/harms transition table."""
    from truthline.benchmark import condition_change

    ws, proj = ws_project(ctx, project)
    data = condition_change(ws.store, proj, run, model, resamples=resamples)

    def render() -> None:
        console.print(f"{model}: net change {_ci(data['net_change'])}")
        console.print(
            f"repairs {data['repairs']}, harms {data['harms']}, kept right "
            f"{data['kept_right']}, kept wrong {data['kept_wrong']} (n {data['n']})"
        )
        _note(data)

    emit(data, as_json, render)


@app.command("across")
def across_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    metric_names: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="routing_oracle, ensemble, hard_subset, rank_transfer, paired_conditions, "
            "open_similarity (default: those the project names).",
        ),
    ] = None,
    gold: Annotated[str, typer.Option("--gold", help="Score on this gold slice.")] = "all",
    resamples: ResamplesOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Metrics across the run's models: routing oracle, ensemble, hard subset of a rule
    baseline, rank transfer, paired conditions, open-answer similarity."""
    from truthline.benchmark import across_metrics
    from truthline.errors import TruthlineError

    ws, proj = ws_project(ctx, project)
    try:
        data = across_metrics(
            ws.store, proj, run, names=metric_names or None, slice_=gold, resamples=resamples
        )
    except KeyError as exc:
        raise TruthlineError(str(exc.args[0])) from exc

    def render() -> None:
        from truthline.benchmark import across_sections
        from truthline.report import cell

        if not data["metrics"]:
            console.print("the project names no metrics across models; pass --metric NAME")
        for sec in across_sections(data):
            console.print(f"[bold]{sec.title}[/]")
            if sec.text:
                console.print(sec.text)
            if sec.table:
                cols = list(dict.fromkeys(k for r in sec.table for k in r))
                table = Table(*cols)
                for r in sec.table:
                    table.add_row(*(cell(r.get(c)) for c in cols))
                console.print(whole_names(table))
            if sec.note:
                console.print(f"[yellow]{sec.note}[/]")

    emit(data, as_json, render)


@app.command("transfer")
def transfer_cmd(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    against: Annotated[
        str | None, typer.Option("--against", help="A second run: transfer from RUN to it.")
    ] = None,
    column: Annotated[
        str | None,
        typer.Option(
            "--transfer-column",
            help="Metadata column splitting RUN's items into two sets "
            "(default: [benchmark] transfer_column).",
        ),
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Rank transfer: Spearman and Pearson (with p-values) between model scores on two item
    sets (two values of a column, or two runs)."""
    from truthline.benchmark import rank_transfer_runs, run_view
    from truthline.benchmark._across import transfer_by_column
    from truthline.benchmark._registry import plain
    from truthline.errors import TruthlineError

    ws, proj = ws_project(ctx, project)
    if against and column:
        raise typer.BadParameter("give --against or --transfer-column, not both")
    if against:
        data = rank_transfer_runs(ws.store, proj, run, against)
    else:
        col = column or proj.benchmark.transfer_column
        if not col:
            raise TruthlineError(
                "give --transfer-column COL or --against RUN2 "
                "(or declare [benchmark] transfer_column)"
            )
        data = plain(transfer_by_column(run_view(ws.store, proj, run, resamples=0), col))
    if data.get("value") is None:
        raise TruthlineError(data.get("note", "rank transfer not computable"))

    def render() -> None:
        a, b = data["sets"]
        table = Table("model", a, b, f"n decisions ({a} / {b})", title=f"rank transfer {a} -> {b}")
        for m, v in data["scores"].items():
            n = (data.get("n") or {}).get(m) or {}
            table.add_row(m, f"{v[a]:.3f}", f"{v[b]:.3f}", f"{n.get(a, '–')} / {n.get(b, '–')}")
        console.print(whole_names(table))
        console.print(
            f"Spearman rho {data['spearman_rho']:.3f} (p {data['spearman_p']:.3g}); "
            f"Pearson r {data['pearson_r']:.3f} (p {data['pearson_p']:.3g})"
        )

    emit(data, as_json, render)


@app.command("report")
def report_cmd(
    ctx: typer.Context,
    run: Annotated[list[str], typer.Argument(help="Run id(s).")],
    out: Annotated[
        Path | None, typer.Option("--out", help="report.md or report.html (plots beside it).")
    ] = None,
    resamples: ResamplesOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Leaderboard, per-condition table, per-class heatmap, safety regime, calibration,
    paired differences and provenance slices, as Markdown/HTML with PNG plots and CSV tables."""
    from truthline.benchmark._report import write_report

    ws, proj = ws_project(ctx, project)
    if out is None:  # the run id becomes the file name: one safe path component
        target = inside(ws.reports_dir, f"benchmark-{check_name(run[0], 'run id')}.md")
    else:
        target = out
    if target.suffix.lower() not in (".md", ".html", ".htm"):
        from truthline.errors import TruthlineError

        raise TruthlineError(f"--out {target}: use a .md or .html file name")
    target = output_path(target)
    data = write_report(ws.store, proj, run, target, resamples=resamples)
    emit(
        data,
        as_json,
        lambda: console.print(
            f"[green]wrote[/] {data['report']} (plots and CSV in {data['files']})"
        ),
    )


@app.command("export")
def export_cmd(
    ctx: typer.Context,
    out: Annotated[Path, typer.Option("--out", help="Release folder to create.")],
    fmt: Annotated[str, typer.Option("--format", help="parquet, jsonl or hf.")] = "parquet",
    gold: Annotated[str, typer.Option("--gold", help="Gold slice to release.")] = "all",
    snapshot: Annotated[str | None, typer.Option("--snapshot")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a non-empty folder.")] = False,
    hide_test_answers: Annotated[
        bool,
        typer.Option(
            "--hide-test-answers",
            help="Publish the test split without its answers (gold, provenance); they go "
            "to private/ only.",
        ),
    ] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a release: public inputs apart from private targets, checksums, datasheet."""
    from truthline.benchmark._export import export_release

    ws, proj = ws_project(ctx, project)
    # nothing is created before the export succeeds: it writes a hidden sibling of --out
    # and renames it into place (a file in the way is named by export_release)
    out = _creatable(out.expanduser())
    rel = export_release(
        ws.store,
        proj,
        out,
        fmt=fmt,
        snapshot=snapshot,
        slice_=gold,
        force=force,
        hide_test_answers=hide_test_answers,
    )

    def render() -> None:
        console.print(
            f"[green]exported[/] {proj.name} gold {rel['gold_snapshot'][:12]} to {out} ({fmt})"
            + ("; test answers withheld (private/ only)" if hide_test_answers else "")
        )
        if rel["licence"]["source"] is None:
            console.print(
                '[yellow]no licence: set license = "SPDX-ID" in the project definition '
                "(or add a LICENSE file) and export again[/]"
            )

    emit(rel, as_json, render)


@app.command("verify")
def verify_cmd(
    path: Annotated[Path, typer.Argument(help="A release folder.")], as_json: JsonOpt = False
) -> None:
    """Check a release's files against its SHA256SUMS (exit 1 on any mismatch, missing
    file, or file the list does not name)."""
    from truthline.benchmark._release import verify_files
    from truthline.errors import TruthlineError

    res = verify_files(path)
    bad = res.failures
    emit(
        {"release": str(path), **res.as_dict()},
        as_json,
        lambda: console.print("[green]ok[/]" if not bad else f"[red]{len(bad)} failures[/]"),
    )
    if bad:
        raise TruthlineError(f"{path}: {res.summary()}")


@app.command("samples")
def samples_cmd(
    ctx: typer.Context,
    run: Annotated[
        str | None, typer.Argument(help="Run id (omit with --prefill: prefill predictions).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the samples as JSONL to this file.")
    ] = None,
    prefill: Annotated[
        bool, typer.Option("--prefill", help="Prefill predictions instead of a run's answers.")
    ] = False,
    model: Annotated[str | None, typer.Option("--model", help="Only this model alias.")] = None,
    outcome: Annotated[
        str | None,
        typer.Option(
            "--outcome",
            help="ok, refused, truncated, parse_error, infra_missing, error or model_failure.",
        ),
    ] = None,
    field: Annotated[
        str | None, typer.Option("--field", help="Only samples with a decision on this field.")
    ] = None,
    stratum: Annotated[
        str | None, typer.Option("--stratum", help="Stratum value (strata joined by '|').")
    ] = None,
    correct: Annotated[
        bool | None,
        typer.Option("--correct/--wrong", help="Only samples with a correct / wrong decision."),
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Per-sample logs: every answer with its prompt text, raw output, parsed value,
    outcome, score per field, strata, cost, latency and Label Studio task links."""
    from truthline.benchmark import EntryKey
    from truthline.benchmark._samples import (
        OUTCOMES,
        SampleFilter,
        prefill_samples,
        run_samples,
        summarize,
        write_jsonl,
    )
    from truthline.errors import TruthlineError

    if (run is None) == (not prefill):
        raise typer.BadParameter("give a RUN id, or --prefill (not both)")
    if outcome is not None and outcome not in (*OUTCOMES, "model_failure", "parsed"):
        raise typer.BadParameter(
            f"--outcome {outcome!r}: use one of {', '.join(OUTCOMES)} or model_failure"
        )
    ws, proj = ws_project(ctx, project)
    flt = SampleFilter(model=model, outcome=outcome, field=field, stratum=stratum, correct=correct)
    if field is not None and field not in proj.leaf_fields():
        raise TruthlineError(f"--field {field!r}: not a field of project {proj.name!r}")
    recs = (
        prefill_samples(ws.store, proj, flt)
        if prefill
        else run_samples(ws.store, proj, str(run), flt)
    )
    summary = summarize(recs, flt)
    if out is not None:
        target = output_path(out)
        write_jsonl(recs, target)
        data = {"out": str(target), "written": len(recs), **summary}
        emit(
            data, as_json, lambda: console.print(f"[green]wrote[/] {len(recs)} samples to {target}")
        )
        return
    if as_json:
        emit(recs, True, lambda: None)
        return
    if not recs:
        console.print("no samples" + (" match these filters" if flt.query() else ""))
        return
    table = Table("model", "variant", "condition", "control", "samples", *OUTCOMES)
    groups: dict[EntryKey, dict[str, int]] = {}
    for r in recs:
        g = groups.setdefault(EntryKey.of(r), {})
        g[r["outcome"]] = g.get(r["outcome"], 0) + 1
    for key, g in groups.items():
        table.add_row(*key, str(sum(g.values())), *(str(g.get(o, 0)) for o in OUTCOMES))
    console.print(whole_names(table))
    console.print("write them with --out samples.jsonl, or print them with --json")


@app.command("metrics")
def metrics_cmd(ctx: typer.Context, project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """Registered metric names (usable in [benchmark] metrics) and rule baselines, with the
    project's own rules (rules.py beside its definition) when a project is at hand."""
    from truthline.benchmark import across_names, load_project_rules, registered_metrics
    from truthline.benchmark._baselines import registered_rules
    from truthline.errors import TruthlineError

    try:
        proj = workspace(ctx).project(project)
    except TruthlineError:  # no workspace or project at hand: the built-in rules only
        proj = None
    if proj is not None:
        load_project_rules(proj)  # a broken rules.py is reported, not hidden
    data = {
        "metrics": registered_metrics(),
        "across_models": across_names(),
        "rules": [f"rule:{r}" for r in registered_rules()],
    }
    emit(
        data,
        as_json,
        lambda: console.print(
            "metrics: " + ", ".join(data["metrics"]) + "\nrules: " + ", ".join(data["rules"])
        ),
    )
