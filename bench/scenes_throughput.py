"""Scene rendering throughput: truthline's worker path vs bare Blender, and 1 vs 2 workers.

Baseline: a plain bpy script in the same scenes venv renders the same frames with the same
scene code and settings in a loop (reset, build, camera, render, mask, GT) and writes the
files; no JSON jobs, no pipe, no hashing, no records. truthline: ``scenes.render`` with one
long-lived worker, the images stored by content hash and a record per frame. Both include
starting Python + bpy. Then the same frames through Ray with 1 and 2 workers (one Ray
session, started before the clock; each worker gets cores/workers render threads).

    .venv/bin/python bench/scenes_throughput.py [--frames 10] [--repeat 3] [--engine cycles|workbench]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from truthline.scenes import RenderSettings, get_environment
from truthline.scenes import env as scenes_env
from truthline.scenes._render import plan, render

BARE = r"""
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
import bpy
from truthline.scenes._types import RenderSettings, get_environment
from truthline.scenes.worker._ctx import Ctx
jobs = json.loads(Path(sys.argv[1]).read_text())
out = Path(sys.argv[2])
for i, j in enumerate(jobs):
    env = get_environment(j["env"])
    ctx = Ctx(RenderSettings.from_dict(j["render"]), j["seed"])
    h = env.build(ctx, j["params"])
    ctx.set_camera(*env.camera(j["params"], h))
    d = out / str(i)
    d.mkdir(parents=True, exist_ok=True)
    ctx.render(d)
    ctx.render_mask(d)
    env.extract(ctx, j["params"], h)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def bare_blender(jobs: list[dict], out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of the plain bpy loop (process start included)."""
    shim = Path(tempfile.mkdtemp(prefix="bench-shim-"))
    os.symlink(Path(__file__).resolve().parents[1] / "truthline", shim / "truthline")
    (shim / "jobs.json").write_text(json.dumps(jobs))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(shim)
    t, c = time.perf_counter(), _children_cpu()
    subprocess.run(
        [str(scenes_env.python_exe()), "-c", BARE, str(shim / "jobs.json"), str(out)],
        check=True,
        env=env,
        cwd=shim,
        capture_output=True,
    )
    return time.perf_counter() - t, _children_cpu() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--engine", choices=["cycles", "workbench"], default="cycles")
    ap.add_argument("--spp", type=int, default=4)
    ap.add_argument("--res", default="320x180")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-ray", action="store_true")
    a = ap.parse_args()
    rx, ry = (int(x) for x in a.res.split("x"))
    settings = RenderSettings(
        engine="CYCLES" if a.engine == "cycles" else "BLENDER_WORKBENCH",
        spp=a.spp,
        res_x=rx,
        res_y=ry,
        denoise="FAST" if a.engine == "cycles" else None,
    )
    grid = get_environment("dori").grid("small")  # type: ignore[attr-defined]
    # day frames only: midnight ones add an EXR the baseline would have to match
    params = [p for p in grid if p["lighting"] == "noon"][: a.frames]
    n = len(params)
    jobs = [j.payload() for j in plan("dori", params, settings)]
    print(
        f"{n} DORI frames, {settings.engine} {settings.spp} spp, {rx}x{ry}, {os.cpu_count()} cores"
    )

    bares, bare_cpus, ourss, our_cpus, inside = [], [], [], [], []
    for _ in range(a.repeat):  # alternate, so load from other processes hits both alike
        with tempfile.TemporaryDirectory() as tmp:
            w, c = bare_blender(jobs, Path(tmp) / "bare")
            bares.append(w)
            bare_cpus.append(c)
            t, c, h = time.perf_counter(), _children_cpu(), time.process_time()
            rep = render("dori", params, Path(tmp) / "tl", settings)
            ourss.append(time.perf_counter() - t)
            # the worker's CPU (a child, reaped when render() closes it) + this process's
            our_cpus.append(_children_cpu() - c + time.process_time() - h)
            assert rep.rendered == n and not rep.failed, rep.failed
            inside.append(sum(r.timings.get("total", 0.0) for r in rep.records))
    med = statistics.median
    bare, ours, in_worker = med(bares), med(ourss), med(inside)
    bare_cpu, our_cpu = med(bare_cpus), med(our_cpus)
    print(f"median of {a.repeat} alternating runs (load {os.getloadavg()[0]:.1f})")
    print(
        f"bare Blender loop     {bare:7.2f} s wall {bare_cpu:7.2f} s CPU  {n / bare:6.3f} frames/s"
    )
    print(
        f"truthline (1 worker)  {ours:7.2f} s wall {our_cpu:7.2f} s CPU  {n / ours:6.3f} frames/s"
    )
    print(
        f"  inside the worker's frames {in_worker:.2f} s; start-up, JSON, hashing and records "
        f"{ours - in_worker:.2f} s ({(ours - in_worker) / n * 1000:.0f} ms/frame incl. the start)"
    )
    print(f"ratio truthline / bare, frames per wall second: {bare / ours:.3f}x  (goal >= 0.9x)")
    print(f"ratio truthline / bare, frames per CPU second:  {bare_cpu / our_cpu:.3f}x")

    if a.skip_ray:
        return
    import ray

    t = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False,
             object_store_memory=256 * 1024 * 1024)  # fmt: skip
    print(f"(Ray start {time.perf_counter() - t:.1f} s, not counted)")
    try:
        walls = {}
        for w in (1, 2):
            with tempfile.TemporaryDirectory() as tmp:
                t = time.perf_counter()
                rep = render("dori", params, Path(tmp), settings, workers=w)
                walls[w] = time.perf_counter() - t
                assert rep.rendered == n and not rep.failed, rep.failed
            print(f"Ray, {w} worker(s)      {walls[w]:7.2f} s  {n / walls[w]:6.3f} frames/s")
        print(f"speed-up 2 vs 1 workers: {walls[1] / walls[2]:.2f}x on {os.cpu_count()} cores")
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
