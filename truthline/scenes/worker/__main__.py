"""The long-lived Blender worker loop (see the package docstring for the protocol)."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

# cv2 reads EXR only when this is set before its import (environments may import cv2).
os.environ.setdefault("OPENCV_IO_ENABLE_OPENEXR", "1")


def _render(job: dict[str, Any]) -> dict[str, Any]:
    from truthline.scenes._types import RenderSettings, get_environment
    from truthline.scenes.worker._ctx import Ctx, mask_stats

    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    if job.get("env_module"):  # registers the environment (no entry points in this venv)
        import importlib

        importlib.import_module(job["env_module"])
    env = get_environment(job["env"])
    settings = RenderSettings.from_dict(job["render"])
    params = job["params"]
    out_dir = Path(job["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(settings, job.get("seed"))
    timings["reset"] = time.perf_counter() - t0
    t = time.perf_counter()
    handles = env.build(ctx, params)
    spec, pose, effects = env.camera(params, handles)
    ctx.set_camera(spec, pose, effects)
    timings["build"] = time.perf_counter() - t
    t = time.perf_counter()
    files = ctx.render(out_dir)
    timings["render"] = time.perf_counter() - t
    gt: dict[str, Any] = {}
    if settings.mask:
        t = time.perf_counter()
        files["mask"] = ctx.render_mask(out_dir)
        assert ctx.mask is not None
        gt.update(mask_stats(ctx.mask))
        timings["mask"] = time.perf_counter() - t
    t = time.perf_counter()
    gt.update(env.extract(ctx, params, handles))
    timings["extract"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    return {
        "ok": True,
        "files": files,
        "gt": gt,
        "camera": {"spec": spec.to_dict(), "pose": pose.to_dict(), "effects": effects.to_dict()},
        "timings": timings,
        # Blender's own count: the system's threads when the settings leave it at 0 (AUTO)
        "device": {**ctx.device, "threads": int(ctx.scene.render.threads)},
    }


def _project(job: dict[str, Any]) -> dict[str, Any]:
    """Blender's own projection of points (``world_to_camera_view``), for cross-checks."""
    from bpy_extras.object_utils import world_to_camera_view  # type: ignore[import-not-found]
    from mathutils import Vector  # type: ignore[import-not-found]

    from truthline.scenes._types import CameraPose, CameraSpec, Effects, RenderSettings
    from truthline.scenes.worker._ctx import Ctx

    spec = CameraSpec.from_dict(job["spec"])
    res = job.get("res") or [spec.res_x, spec.res_y]
    ctx = Ctx(RenderSettings(res_x=res[0], res_y=res[1]), 0)
    cam = ctx.set_camera(spec, CameraPose.from_dict(job["pose"]), Effects())
    out = []
    for p in job["points"]:
        v = world_to_camera_view(ctx.scene, cam, Vector(p))
        out.append([v.x * res[0], (1 - v.y) * res[1], v.z])
    return {"ok": True, "points": out}


def _metarig(job: dict[str, Any]) -> dict[str, Any]:
    """The live Rigify metarig's body bones (head, tail), for cross-checks."""
    from truthline.scenes.worker._humanoid import metarig_rest

    return {"ok": True, "bones": metarig_rest()}


OPS = {"render": _render, "project": _project, "metarig": _metarig}


def main() -> int:
    out = os.fdopen(int(sys.argv[1]), "w", buffering=1)

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    import bpy  # type: ignore[import-not-found]

    send({"ready": True, "blender_version": bpy.app.version_string, "pid": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        op = job.get("op", "render")
        if op == "exit":
            break
        if op == "crash":  # tests: a hard crash mid-job
            os._exit(int(job.get("code", 70)))
        try:
            fn = OPS[op]
            res = fn(job)
        except Exception as exc:
            res = {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=8),
            }
        res["job_id"] = job.get("job_id", "")
        res["blender_version"] = bpy.app.version_string
        send(res)
        print(f"truthline-worker: {op} {res['job_id']} done", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
