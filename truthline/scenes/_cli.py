"""``truthline scenes``: the scenes environment, environments and their grids, rendering."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from truthline._cli_common import JsonOpt, console, emit, err_console, workspace
from truthline.scenes._types import RenderSettings, SceneError, get_environment

app = typer.Typer(
    help="Rendered scenes: Blender environments, declared grids, rendering over workers.\n\n"
    "Environments (DORI person, the RealityBench scenes) render in long-lived Blender workers, "
    "fanned out over Ray when there are several.",
    no_args_is_help=True,
)


@app.command("env")
def env_cmd(
    ensure: Annotated[bool, typer.Option("--ensure", help="Create the venv if missing.")] = False,
) -> None:
    """Where the scenes environment (bpy 5.0.1 in its own venv) is; --ensure creates it."""
    from truthline.scenes import env

    if ensure:
        env.ensure()
    state = "ready" if env.installed() else "missing (truthline scenes env --ensure)"
    console.print(f"scenes venv: {env.venv_dir()} — {state}")


@app.command("list")
def list_cmd(as_json: JsonOpt = False) -> None:
    """The registered scene environments and their declared grids."""
    from truthline.errors import TruthlineError
    from truthline.scenes._types import environment

    rows: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    for name in environment.names():  # registered, or declared by an installed plug-in
        try:
            e = environment.get(name)
        except TruthlineError as exc:  # one broken plug-in must not hide the others
            failed[name] = str(exc)
            continue
        grids = {g.name: g.size for g in getattr(e, "grids", {}).values()}
        rows.append({"env": name, "version": e.version, "grids": grids})

    def render() -> None:
        for r in rows:
            gs = ", ".join(f"{k} ({v} frames)" for k, v in r["grids"].items()) or "no grids"
            console.print(f"{r['env']} v{r['version']}: {gs}")
        for err in failed.values():
            err_console.print(f"[yellow]{err}[/]")

    emit(rows, as_json, render)


@app.command("grid")
def grid_cmd(
    env_name: Annotated[str, typer.Argument(metavar="ENV", help="Environment, e.g. dori.")],
    grid: Annotated[str | None, typer.Option("--grid", help="One grid (default: all).")] = None,
    show_list: Annotated[
        bool, typer.Option("--list", help="Print each grid's axes and size.")
    ] = False,
    frames: Annotated[bool, typer.Option("--frames", help="Print every frame's params.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """An environment's declared grids: name, size and axes."""
    env = get_environment(env_name)
    grids = [env.grid(grid)] if grid else list(env.grids.values())  # type: ignore[attr-defined]
    data: list[dict[str, Any]] = [
        {
            "grid": g.name,
            "size": g.size,
            "axes": {k: list(v) for k, v in g.axes.items()},
            "fixed": dict(g.fixed),
            "doc": g.doc,
            **({"frames": list(g)} if frames else {}),
        }
        for g in grids
    ]

    def render() -> None:
        for d in data:
            console.print(f"[bold]{env_name} grid {d['grid']}[/]: {d['size']} frames — {d['doc']}")
            if show_list or frames:
                for k, v in d["axes"].items():
                    console.print(f"  {k} ({len(v)}): {', '.join(map(str, v))}")
                for k, v in d["fixed"].items():
                    console.print(f"  {k} = {v}")
            if frames:
                for p in d["frames"]:
                    console.print(f"  {p}")

    emit(data, as_json, render)


MAX_SIDE = 16384
"""The largest render side --res takes (Blender's own limit is 65536; a 16k frame already
takes gigabytes of memory)."""


def _res(value: str | None) -> tuple[int | None, int | None]:
    """``WIDTHxHEIGHT`` as two sides of 1 to MAX_SIDE pixels (0 would silently mean the
    camera's own size)."""
    if value is None:
        return None, None
    m = re.fullmatch(r"(\d{1,9})[xX](\d{1,9})", value.strip())
    if not m:
        raise SceneError(f"--res {value!r}: give WIDTHxHEIGHT in pixels, e.g. 960x540")
    w, h = int(m.group(1)), int(m.group(2))
    if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
        raise SceneError(f"--res {value!r}: each side must be 1 to {MAX_SIDE} pixels, e.g. 960x540")
    return w, h


@app.command("render")
def render_cmd(
    ctx: typer.Context,
    env_name: Annotated[str, typer.Argument(metavar="ENV", help="Environment, e.g. dori.")],
    grid: Annotated[
        str | None, typer.Option("--grid", help="Declared grid to render (default: tiny).")
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option("--sample", min=1, help="Render N frames from the environment's sampler."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Sampler seed (with --sample).")] = 0,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Store folder (default: <workspace>/media/scenes/ENV)."),
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", help="cycles (final frames) or workbench (previews, CI).")
    ] = "cycles",
    spp: Annotated[int, typer.Option("--spp", min=1, help="Cycles samples per pixel.")] = 16,
    res: Annotated[
        str | None, typer.Option("--res", help="Render size WxH (default: the camera's).")
    ] = None,
    denoise: Annotated[
        str, typer.Option("--denoise", help="OIDN quality: fast, high or none.")
    ] = "fast",
    exr: Annotated[bool, typer.Option("--exr", help="Also keep the linear EXR.")] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Render only the first N frames.")
    ] = None,
    device: Annotated[
        str,
        typer.Option(
            "--device",
            help="Cycles device: auto (a GPU when Cycles finds one: OptiX > CUDA > HIP > "
            "Metal > oneAPI, else the CPU), cpu, or gpu (fail without one).",
        ),
    ] = "auto",
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Blender workers (more than 1 fans out over Ray; default 1, or with --ray "
            "one per node).",
        ),
    ] = None,
    cpus_per_worker: Annotated[
        int | None,
        typer.Option(
            "--cpus-per-worker",
            min=1,
            help="CPUs each Ray worker reserves and renders with (Blender threads); "
            "default: a node's CPUs shared by the workers on it.",
        ),
    ] = None,
    ray_address: Annotated[
        str | None, typer.Option("--ray", help="Ray cluster address (default: a local Ray).")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds one frame may take.")
    ] = 900.0,
    as_json: JsonOpt = False,
) -> None:
    """Render a declared grid (or --sample N frames) into a content-addressed store; a rerun
    skips finished frames."""
    import numpy as np

    from truthline.scenes._render import render

    env = get_environment(env_name)
    if grid and sample:
        raise SceneError("give --grid or --sample, not both")
    eng = {"cycles": "CYCLES", "workbench": "BLENDER_WORKBENCH"}.get(engine.lower())
    if eng is None:
        raise SceneError(f"--engine {engine!r}: use cycles or workbench")
    dn = {"fast": "FAST", "high": "HIGH", "none": None}
    if denoise.lower() not in dn:
        raise SceneError(f"--denoise {denoise!r}: use fast, high or none")
    from truthline.scenes._device import check_request

    rx, ry = _res(res)
    settings = RenderSettings(
        device=check_request(device),
        engine=eng,  # type: ignore[arg-type]
        spp=spp,
        res_x=rx,
        res_y=ry,
        denoise=dn[denoise.lower()],  # type: ignore[arg-type]
        exr=exr,
    )
    if sample:
        rng = np.random.default_rng(seed)
        params = [env.sample(rng) for _ in range(sample)]
        what = f"sample of {sample} (seed {seed})"
    else:
        params = list(env.grid(grid or "tiny"))  # type: ignore[attr-defined]
        what = f"grid {grid or 'tiny'}"
    params = params[:limit] if limit else params
    dest = out or workspace(ctx).media_dir / "scenes" / env_name
    n = len(params)
    done = [0]

    def on_frame(job: Any, rec: Any, err: str | None) -> None:
        done[0] += 1
        if as_json:
            return
        if err:
            err_console.print(f"[red]frame {job.job_id} failed[/]: {err}")
        else:
            t = rec.timings.get("total", 0.0)
            console.print(f"[{done[0]}/{n}] {job.job_id} {t:.2f} s  {job.params}")

    rep = render(
        env_name,
        params,
        dest,
        settings,
        workers=workers,
        ray_address=ray_address,
        cpus_per_worker=cpus_per_worker,
        timeout_s=timeout,
        on_frame=on_frame,
    )
    devices = sorted({str(r.device.get("backend", "")) for r in rep.records} - {""})
    summary = {
        "store": str(dest),
        "planned": rep.planned,
        "rendered": rep.rendered,
        "skipped": rep.skipped,
        "failed": [{"job_id": j, "error": e} for j, e in rep.failed],
        "seconds": round(rep.seconds, 2),
        "frames_per_s": round(rep.frames_per_s, 3),
        "devices": devices,
    }

    def show() -> None:
        on = f" on {', '.join(devices)}" if devices else ""
        console.print(
            f"{env_name} {what}: {rep.rendered} rendered{on}, {rep.skipped} already done, "
            f"{len(rep.failed)} failed in {rep.seconds:.1f} s → {dest}"
        )

    emit(summary, as_json, show)
    if rep.failed:
        raise typer.Exit(1)
