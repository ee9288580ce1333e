"""`truthline prefill` and `truthline models`: pre-annotation with VLMs/detectors, video mining."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from truthline._cli_common import (
    JsonOpt,
    ProjectOpt,
    console,
    emit,
    err_console,
    whole_names,
    ws_project,
)

app = typer.Typer(
    help="Pre-annotate items with a VLM or detector; mine videos into clips and frames.",
    no_args_is_help=True,
)
models_app = typer.Typer(help="Check model specs and endpoints.", no_args_is_help=True)

ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="Model spec KIND:NAME[@URL][;opt=val]: openai:gpt-4o-mini, "
        "openai:NAME@http://127.0.0.1:8000/v1, hf:/path, yolo:yolo11n.yaml, simulated:steel-v1.",
    ),
]


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
    model: ModelOpt,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-c", min=1, help="Parallel requests.")
    ] = 8,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N items (by id).")
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option(
            "--max-cost",
            callback=max_cost_option,
            help="Hard cap in USD: each request's worst-case cost is reserved before it is "
            "sent (0 sends nothing to a paid model; models without a declared price need "
            ";price_in=...;price_out=... in the spec).",
        ),
    ] = None,
    retry_missing: Annotated[
        bool,
        typer.Option(
            "--retry-missing", help="Re-send requests whose stored outcome is infra_missing."
        ),
    ] = False,
    variant: Annotated[
        str | None,
        typer.Option("--variant", help="Prompt variant name (prompts.variants) or template path."),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            min=1,
            help="Output cap (default: the project's benchmark.output_cap).",
        ),
    ] = None,
    max_failures: Annotated[
        int,
        typer.Option(
            "--max-failures",
            min=0,
            help="Stop after this many consecutive unfixable failures (endpoint down, "
            "key rejected; 0: never) and exit 1.",
        ),
    ] = 5,
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
            help="Ask again for answers stored before this run started (default: a stored "
            "answer to the same request is reused); rerunning an unfinished fresh run "
            "resumes it.",
        ),
    ] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Ask a model about every item; each answer is stored as it arrives (reruns skip them)."""
    from truthline.prefill import prefill

    ws, proj = ws_project(ctx, project)
    rep = prefill(
        ws.store,
        proj,
        model,
        limit=limit,
        concurrency=concurrency,
        max_cost=max_cost,
        retry_missing=retry_missing,
        progress=not as_json,
        variant=variant,
        settings={"max_tokens": max_tokens},
        max_failures=max_failures or None,
        wait_claimed=wait_claimed,
        journal_dir=ws.root / "journal",
        fresh=fresh,
    )
    data = {"project": proj.name, **rep.as_dict()}

    def render() -> None:
        sim = " [yellow](SIMULATED model)[/]" if rep.simulated else ""
        origins = ", ".join(f"{k} {n}" for k, n in data.get("reused_from", {}).items())
        console.print(
            f"[bold]{rep.model}[/]{sim}: {rep.items} items, {data['fresh']} asked, "
            f"{data['reused']} reused" + (f" (stored by: {origins})" if origins else "")
        )
        for status, n in sorted(data["by_status"].items()):
            console.print(f"  {status}: {n}")
        for reason, n in sorted(data["by_reason"].items()):
            console.print(f"    {reason}: {n}")
        console.print(
            f"  cost this run: ${data['cost_usd']:.4f}; "
            f"predictions written: {rep.predictions_written}"
        )
        for ver, n in sorted(data.get("new_versions", {}).items()):
            console.print(
                f"  [yellow]{n} predictions were already shown to annotators[/] and stay as "
                f"they were; the new answers are version {ver}"
            )
        if rep.stopped == "budget":
            console.print(
                f"[yellow]stopped at the --max-cost budget (${max_cost})[/]; rerun to continue"
            )

    emit(data, as_json, render)
    if rep.stopped in ("interrupted", "terminated"):
        how = "interrupted" if rep.stopped == "interrupted" else "terminated (SIGTERM)"
        err_console.print(f"{how}: finished answers are stored; rerun to continue")
        raise typer.Exit(130 if rep.stopped == "interrupted" else 143)


@app.command("status")
def status_cmd(ctx: typer.Context, project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """Prefill answers per model: counts by outcome and reason, tokens, cost."""
    from truthline.prefill import prefill_status

    ws, proj = ws_project(ctx, project)
    data = prefill_status(ws.store, proj.name)

    def render() -> None:
        table = Table(
            "model",
            "parsed",
            "model failure",
            "infra missing",
            "no answer",
            "predictions",
            "versions",
            "cost (USD)",
            title=f"{proj.name}: {data['items']} items",
        )
        for alias, m in data["models"].items():
            bs = m["by_status"]
            name = alias + (" (SIMULATED)" if m["simulated"] else "")
            table.add_row(
                name,
                str(bs.get("parsed", 0)),
                str(bs.get("model_failure", 0)),
                str(bs.get("infra_missing", 0)),
                str(m["items_without_answer"]),
                str(m["predictions"]),
                ", ".join(f"{v} {n}" for v, n in m.get("versions", {}).items()),
                f"{m['cost_usd']:.4f}",
            )
        console.print(whole_names(table))
        for alias, m in data["models"].items():
            for reason, n in sorted(m["by_reason"].items()):
                console.print(f"  {alias} {reason}: {n}")
        if not data["models"]:
            console.print("no prefill answers yet; run `truthline prefill run --model SPEC`")

    emit(data, as_json, render)


@app.command("mine")
def mine_cmd(
    ctx: typer.Context,
    videos: Annotated[Path, typer.Argument(help="A video file or a folder of videos.")],
    detector: Annotated[
        str,
        typer.Option(
            "--detector", "-d", help="Detector spec: yolo:yolo11n.pt, scripted:detections.json."
        ),
    ] = "yolo:yolo11n.pt",
    metadata: Annotated[
        Path | None,
        typer.Option(
            "--metadata",
            help="CSV with a 'video' column (file name or stem) and camera, start "
            "(seconds or ISO time) and strata columns.",
        ),
    ] = None,
    min_conf: Annotated[
        float, typer.Option("--min-conf", min=0.0, max=1.0, help="Person confidence.")
    ] = 0.25,
    min_frames: Annotated[
        int,
        typer.Option("--min-frames", min=1, help="Consecutive sampled frames that open a clip."),
    ] = 5,
    fps: Annotated[
        float, typer.Option("--fps", min=0.001, help="Detection sampling rate (per second).")
    ] = 1.0,
    window: Annotated[
        float, typer.Option("--window", min=0.0, help="Dedup window, seconds.")
    ] = 60.0,
    keep: Annotated[int, typer.Option("--keep", min=1, help="Clips kept per window.")] = 4,
    sample: Annotated[
        int | None,
        typer.Option("--sample", min=1, help="Stratified sample of N clips after dedup."),
    ] = None,
    strata: Annotated[
        str, typer.Option("--strata", help="Comma-separated metadata columns to stratify on.")
    ] = "",
    class_column: Annotated[
        str | None, typer.Option("--class-column", help="Column whose classes get a minimum count.")
    ] = None,
    min_per_class: Annotated[int, typer.Option("--min-per-class", min=0)] = 15,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Mine videos into 8-frame clip items: person detection, dedup, stratified sampling."""
    from truthline.prefill._mine import MineConfig, mine_videos

    ws, proj = ws_project(ctx, project)
    cfg = MineConfig(
        min_conf=min_conf,
        min_frames=min_frames,
        sample_fps=fps,
        window_s=window,
        keep_per_window=keep,
        sample=sample,
        strata=[s.strip() for s in strata.split(",") if s.strip()],
        class_column=class_column,
        min_per_class=min_per_class,
        seed=seed,
    )
    rep = mine_videos(
        ws, proj, videos, detector=detector, metadata=metadata, config=cfg, progress=not as_json
    )
    data = {"project": proj.name, **rep.as_dict()}

    def render() -> None:
        console.print(
            f"{rep.videos} videos, {rep.candidates} candidate clips, "
            f"{rep.after_dedup} after dedup, [green]{rep.items_added} items added[/] "
            f"({rep.items_existing} already there)"
        )
        for path, reason in rep.skipped:
            console.print(f"  [yellow]skipped[/] {path}: {reason}")

    emit(data, as_json, render)


@models_app.command("check")
def check_cmd(
    spec: Annotated[str, typer.Argument(help="Model spec, e.g. openai:gpt-4o-mini.")],
    as_json: JsonOpt = False,
) -> None:
    """Send one test request; a down endpoint or a missing key is a clear error (exit 1)."""
    from truthline.models import check_model

    data = check_model(spec)

    def render() -> None:
        sim = " (SIMULATED)" if data["simulated"] else ""
        ok = "[green]ok[/]" if data["status"] == "parsed" else f"[yellow]{data['status']}[/]"
        console.print(
            f"{ok} {data['endpoint']}{sim}: answered in {data['latency_s']} s"
            + (f" ({data['reason']})" if data["reason"] else "")
        )

    emit(data, as_json, render)


@models_app.command("list")
def list_cmd(as_json: JsonOpt = False) -> None:
    """Registered backends (spec kinds) and simulated profiles."""
    from truthline.models import registered_backends
    from truthline.simulate import registered_profiles

    data = {"backends": registered_backends(), "simulated_profiles": registered_profiles()}
    emit(
        data,
        as_json,
        lambda: console.print(
            f"backends: {', '.join(data['backends'])}\n"
            f"simulated profiles: {', '.join(data['simulated_profiles'])}"
        ),
    )
