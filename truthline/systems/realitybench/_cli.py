"""``truthline pow``: RealityBench proof-of-work frames step by step.

frames (sample, render, score, the rating project) -> people rate it (``truthline annotate
push/pull --project pow-acceptability``) -> validate (tune the scorer on the declared split,
report it on the rest) -> import (proof-of-work items and gold) -> ``truthline benchmark
run --project proof-of-work`` -> ``truthline benchmark report`` (per-environment tables).
"""

from __future__ import annotations

import json
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
from truthline.systems.realitybench._cli_photos import app as photos_app
from truthline.systems.realitybench._cli_tables import app as tables_app

app = typer.Typer(
    help="RealityBench proof-of-work frames: rendered environments, the acceptability scorer "
    "validated against raters, conditional benchmark items.",
    no_args_is_help=True,
)
app.add_typer(tables_app, name="tables")
app.add_typer(photos_app, name="photos")


def _dir(ws: Any) -> Path:
    d = Path(ws.root) / "scenes" / "pow"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _frames(ws: Any) -> Any:
    import pandas as pd

    from truthline.errors import TruthlineError

    p = _dir(ws) / "frames.csv"
    if not p.is_file():
        raise TruthlineError(f"{p}: no frame table; run `truthline pow frames` first")
    frames = pd.read_csv(p, keep_default_na=False).assign(
        acceptable=lambda f: f["acceptable"].astype(str) == "True",
        gray=lambda f: f["gray"].astype(str) == "True",
    )
    if "withdrawn" not in frames:  # a frame table written before render sanity checks
        frames["withdrawn"] = ""
    return frames


def _env_names(env: list[str] | None) -> tuple[str, ...]:
    from truthline.errors import TruthlineError
    from truthline.systems.realitybench import _pow

    bad = [e for e in env or [] if e not in _pow.ENVIRONMENTS]
    if bad:
        raise TruthlineError(
            f"--env {', '.join(bad)}: not a proof-of-work environment; use {', '.join(_pow.ENVIRONMENTS)}"
        )
    return tuple(env or _pow.ENVIRONMENTS)


@app.command("environments")
def environments_cmd(
    n: Annotated[
        int, typer.Option("--n", min=1, help="Random poses per environment for the rate.")
    ] = 400,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    env: Annotated[
        list[str] | None, typer.Option("--env", help="Environment(s); default all.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Tables 1 and 2: each environment's technician, requirement, documentation fields,
    acceptability terms (scene-derived vs image-derived primitives, with thresholds) and the
    acceptable fraction of random poses (planar proxy render, no Blender)."""
    from truthline.systems.realitybench._pow import environment_table

    rows = environment_table(_env_names(env), n=n, seed=seed)

    def show() -> None:
        from rich.table import Table

        t = Table(title="RealityBench environments (Tables 1-2)")
        for c in ("environment", "technician", "fields", "scene terms", "image terms", "acc."):
            t.add_column(c)
        for r in rows:
            t.add_row(
                r["environment"],
                r["technician"],
                ", ".join(r["fields"]),
                ", ".join(r["scene_terms"]),
                ", ".join(r["image_terms"]),
                f"{r['acceptable_random']:.2f}",
            )
        console.print(t)

    emit({"environments": rows}, as_json, show)


@app.command("rates")
def rates_cmd(
    n: Annotated[int, typer.Option("--n", min=1, help="Samples per environment.")] = 2000,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    env: Annotated[
        list[str] | None, typer.Option("--env", help="Environment(s); default all.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Acceptable rate of each environment's sampler without rendering: scene terms from the
    analytic GT, image terms from the planar proxy render."""
    from truthline.scenes import get_environment
    from truthline.systems.realitybench.envs._common import estimate_rates

    out = [estimate_rates(get_environment(e), n, seed) for e in _env_names(env)]  # type: ignore[arg-type]

    def show() -> None:
        for r in out:
            console.print(
                f"{r['env']:<13} acceptable {r['acceptable']:.3f}  scene terms {r['scene_acceptable']:.3f}  "
                f"clean frames {r['clean_frames']} ({r['clean_acceptable']:.3f} acceptable)  "
                f"failed: {r['failed_terms']}"
            )

    emit({"rates": out}, as_json, show)


@app.command("frames")
def frames_cmd(
    ctx: typer.Context,
    per_env: Annotated[int, typer.Option("--per-env", min=1, help="Frames per environment.")] = 30,
    positive: Annotated[
        int,
        typer.Option(
            "--positive",
            min=0,
            help="Extra positive-stratum (clean) frames per environment, to estimate misses "
            "where acceptable random poses are rare; false accepts use random frames only.",
        ),
    ] = 0,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    engine: Annotated[str, typer.Option("--engine", help="cycles or workbench.")] = "cycles",
    spp: Annotated[int, typer.Option("--spp", min=1)] = 8,
    device: Annotated[
        str,
        typer.Option("--device", help="Cycles device: auto (GPU if any, else CPU), cpu or gpu."),
    ] = "auto",
    res: Annotated[str, typer.Option("--res", help="WxH of the phone camera.")] = "960x720",
    env: Annotated[
        list[str] | None, typer.Option("--env", help="Environment(s); default all.")
    ] = None,
    append: Annotated[
        bool,
        typer.Option(
            "--append",
            help="Add this rendering of the same sampled scenes (same --seed and --per-env) to "
            "the frame table instead of replacing it: rank transfer between renderings.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Sample, render and score frames of every environment; write the frame table and the
    rating project pow-acceptability (push it blind with overlap for the raters)."""
    from truthline.errors import TruthlineError
    from truthline.scenes import RenderSettings
    from truthline.scenes._device import check_request
    from truthline.systems.realitybench import _pow

    ws = workspace(ctx)
    try:
        w, h = (int(x) for x in res.lower().split("x"))
    except ValueError:
        raise TruthlineError(f"--res {res!r}: give WIDTHxHEIGHT, e.g. 960x720") from None
    eng = {"cycles": "CYCLES", "workbench": "BLENDER_WORKBENCH"}.get(engine.lower())
    if eng is None:
        raise TruthlineError(f"--engine {engine!r}: use cycles or workbench")
    settings = RenderSettings(
        engine=eng,  # type: ignore[arg-type]
        spp=spp,
        device=check_request(device),
        denoise="FAST" if eng == "CYCLES" else None,
        mask=True,  # the visible mask: render sanity checks (App. D)
    )
    d = _dir(ws)
    recs = _pow.render_frames(
        per_env,
        d / "store",
        settings,
        envs=_env_names(env),
        seed=seed,
        res=(w, h),
        positive=positive,
    )
    from truthline.scenes._store import FrameStore

    frames = _pow.frame_table(FrameStore(d / "store"), recs, d / "images")
    frames["rendering"] = f"{engine.lower()}-{spp}spp-{w}x{h}"
    if append and (d / "frames.csv").is_file():
        import pandas as pd

        old = _frames(ws)
        frames = pd.concat([old[~old["key"].isin(frames["key"])], frames], ignore_index=True)
    frames.to_csv(d / "frames.csv", index=False)
    _pow.write_rating_project(ws, frames)
    info = {
        "frames": len(frames),
        "acceptable": int(frames["acceptable"].sum()),
        "gray": int(frames["gray"].sum()),
        "withdrawn": int((frames["withdrawn"].astype(str) != "").sum()),
        "frame_table": str(d / "frames.csv"),
        "rating_project": _pow.RATING_PROJECT,
    }

    def show() -> None:
        console.print(
            f"{info['frames']} frames ({info['acceptable']} acceptable by the untuned scorer, "
            f"{info['gray']} in the gray zone, {info['withdrawn']} failing render sanity checks) "
            f"→ {info['frame_table']}; rating project "
            f"{_pow.RATING_PROJECT}.\nNext: truthline annotate push --project "
            f"{_pow.RATING_PROJECT} --arm blind --split 0 --overlap 6, rate, truthline annotate "
            f"pull --project {_pow.RATING_PROJECT}, then truthline pow validate."
        )

    emit(info, as_json, show)


@app.command("simulate-ratings")
def simulate_ratings_cmd(
    ctx: typer.Context,
    seed: Annotated[int, typer.Option("--seed", help="Rater noise seed.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """SIMULATED raters rate the rating project (demos and tests; never for a real study)."""
    from truthline.systems.realitybench import _pow

    ws = workspace(ctx)
    n = _pow.simulate_ratings(ws.store, _pow.RATING_PROJECT, _frames(ws), seed=seed)
    emit(
        {"ratings": n, "simulated": True},
        as_json,
        lambda: console.print(f"{n} SIMULATED ratings stored"),
    )


@app.command("validate")
def validate_cmd(
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
    """Tune the scorer's thresholds per environment on the declared split against the rater
    majority and report it on the rest (ties and gray frames excluded and counted), with
    each rater against the others and Krippendorff's alpha; writes thresholds.json."""
    from truthline.systems.realitybench import _pow

    ws = workspace(ctx)
    project = ws.registered(_pow.RATING_PROJECT)
    v = _pow.validate_scorer(
        _frames(ws),
        _pow.ratings_table(ws.store, project),
        tune_frac=tune_frac,
        seed=seed,
        resamples=resamples,
    )
    d = v.as_dict()
    (_dir(ws) / "thresholds.json").write_text(
        json.dumps({e: t["thresholds"] for e, t in v.tuned.items()}, indent=1)
    )
    (_dir(ws) / "validation.json").write_text(json.dumps(d, indent=1, default=str))

    def show() -> None:
        ag = v.report.agreement
        c = v.counts
        console.print(
            f"held-out agreement with the rater majority {100 * ag.point:.0f}% "
            f"[{100 * ag.low:.0f}, {100 * ag.high:.0f}] on {c['held_out_scored']} frames "
            f"({c['ties_excluded']} ties and {c['gray_excluded']} gray excluded; {c['tuning']} tuned); "
            f"{v.report.summary() or ''}\nKrippendorff alpha {v.alpha:.3f}, raw pairwise {v.pairwise:.3f}"
        )
        for r in v.loo:
            console.print(
                f"  {r.rater}: {100 * r.agreement.point:.0f}% with the others' majority on {r.units}"
            )
        for e, t in v.tuned.items():
            console.print(f"  {e}: {t['thresholds']} (default {t['default']})")

    emit(d, as_json, show)


@app.command("import")
def import_cmd(
    ctx: typer.Context,
    as_json: JsonOpt = False,
) -> None:
    """proof-of-work benchmark items and gold from the frame table (verdicts re-decided with
    the tuned thresholds of `truthline pow validate` when present)."""
    from truthline.systems.realitybench import _pow

    ws = workspace(ctx)
    frames = _frames(ws)
    th = _dir(ws) / "thresholds.json"
    if th.is_file():
        frames = _pow.apply_thresholds(frames, json.loads(th.read_text()))
    proj = _pow.import_benchmark(ws, frames)
    snap = _pow.write_gold(ws.store, proj, frames)
    from truthline.audit import reason_counts, withdrawals

    gone = withdrawals(ws.store, proj.name)
    info = {
        "items": len(frames),
        "acceptable": int(frames["acceptable"].sum()),
        "gray_excluded": int(frames["gray"].sum()),
        "withdrawn": len(gone),
        "withdrawn_by_reason": reason_counts(gone),
        "gold_snapshot": snap,
        "tuned": th.is_file(),
    }
    emit(
        info,
        as_json,
        lambda: console.print(
            f"{len(frames)} proof-of-work items ({info['gray_excluded']} gray-zone frames without "
            f"a verdict, {len(gone)} withdrawn), gold {snap[:12]}; next: truthline benchmark run "
            "--project proof-of-work --model ..."
        ),
    )


@app.command("withdraw")
def withdraw_cmd(
    ctx: typer.Context,
    keys: Annotated[
        list[str], typer.Argument(help="Frame keys (ENV/JOB), as frames.csv names them.")
    ],
    reason: Annotated[str, typer.Option("--reason", help="Why (recorded, shown in reports).")] = "",
    undo: Annotated[bool, typer.Option("--undo", help="Reinstate the frames.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Withdraw frames from the proof-of-work benchmark with a recorded reason (e.g. a texture
    defect found after rendering); runs, releases and reports leave them out and count them."""
    from truthline.audit import withdraw
    from truthline.systems.realitybench import _pow

    ws = workspace(ctx)
    n = withdraw(ws.store, _pow.BENCH_PROJECT, keys, reason, undo=undo)
    verb = "reinstated" if undo else "withdrawn"
    emit(
        {verb: n, "reason": reason},
        as_json,
        lambda: console.print(
            f"{n} frame(s) {verb}" + (f": {reason}" if reason and not undo else "")
        ),
    )
