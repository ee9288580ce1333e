"""Render frames of an environment: plan jobs, run them on Blender workers, store results.

One worker runs in-process (a :class:`WorkerClient`); more fan out over Ray (a local Ray by
default, a cluster with ``ray_address``; see ``_ray`` for how actors are sized to the CPUs
Blender uses): each Ray actor owns one long-lived worker and returns the image bytes; the
host hashes, stores and records them, so a cluster needs no shared filesystem and the store
is written by one process. A rerun skips frames already complete in the store; a failed
frame is reported (with the worker's own error) and the others go on, except ``--device
gpu`` on a machine without one, which stops the run at its first frame.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from truthline.scenes._device import NoGPUError
from truthline.scenes._ray import ray_results
from truthline.scenes._store import FrameStore
from truthline.scenes._types import (
    BaseEnvironment,
    FrameRecord,
    RenderSettings,
    WorkerError,
    canonical_json,
    get_environment,
    job_key,
)
from truthline.scenes._worker import WorkerClient


def frame_seed(env: str, params: Mapping[str, Any]) -> int:
    """A stable per-frame seed from the params (same frame, same noise, on any machine)."""
    return int(hashlib.sha256(canonical_json([env, params]).encode()).hexdigest()[:8], 16)


@dataclass(frozen=True)
class Job:
    """One frame to render."""

    env: str
    env_version: str
    params: dict[str, Any]
    seed: int
    render: RenderSettings

    @property
    def job_id(self) -> str:
        return job_key(self.env, self.env_version, self.params, self.seed, self.render)

    def payload(self) -> dict[str, Any]:
        return {
            "op": "render",
            "job_id": self.job_id,
            "env": self.env,
            # the worker has no entry points (it runs in the bpy venv): it imports this
            "env_module": type(get_environment(self.env)).__module__,
            "params": self.params,
            "seed": self.seed,
            "render": self.render.to_dict(),
        }


def plan(env_name: str, params: Iterable[Mapping[str, Any]], settings: RenderSettings) -> list[Job]:
    """Jobs for ``params`` (each with the environment's per-frame render overrides)."""
    env = get_environment(env_name)
    overrides = getattr(env, "render_overrides", None)
    check = getattr(env, "check", None)
    jobs = []
    for p in params:
        p = dict(p)
        if check is not None:
            check(p)
        s = dataclasses.replace(settings, **overrides(p)) if overrides else settings
        jobs.append(Job(env.name, env.version, p, frame_seed(env.name, p), s))
    return jobs


def execute(
    client: WorkerClient, payload: dict[str, Any], timeout_s: float | None = None
) -> dict[str, Any]:
    """Run one job on ``client`` and return its result with the image bytes inlined
    (``data: {variant: [ext, bytes]}``); a failure comes back as ``ok: False``."""
    tmp = tempfile.mkdtemp(prefix="truthline-frame-")
    try:
        try:
            res = client.request({**payload, "out_dir": tmp}, timeout_s=timeout_s)
        except WorkerError as exc:
            return {"ok": False, "job_id": payload.get("job_id"), "error": str(exc)}
        res["worker"] = {"host": socket.gethostname(), "pid": client.pid}
        if res.get("ok"):
            res["data"] = {
                v: [Path(p).suffix.lstrip("."), Path(p).read_bytes()]
                for v, p in res.pop("files").items()
            }
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def finish(store: FrameStore, job: Job, res: Mapping[str, Any]) -> FrameRecord:
    """Store a successful result's images and write its record (host side: score and
    questions run here)."""
    env = get_environment(job.env)
    images, exts = {}, {}
    for variant, (ext, data) in res["data"].items():
        images[variant] = store.put_image(data, ext)
        exts[variant] = ext
    rec = FrameRecord(
        env=job.env,
        env_version=job.env_version,
        params=job.params,
        seed=job.seed,
        render=job.render.to_dict(),
        blender_version=str(res.get("blender_version", "")),
        camera=dict(res.get("camera", {})),
        gt=dict(res.get("gt", {})),
        timings=dict(res.get("timings", {})),
        images=images,
        image_ext=exts,
        job_id=job.job_id,
        device=dict(res.get("device", {})),
        worker=dict(res.get("worker", {})),
    )
    acc = None
    if type(env).score is not BaseEnvironment.score and "rgb" in images:
        import numpy as np
        from PIL import Image

        with Image.open(store.variant_path(rec, "rgb")) as im:
            acc = env.score(rec.gt, np.asarray(im.convert("RGB")))
    if acc is not None:
        rec.acceptability = acc.to_dict()
    rec.questions = env.questions(rec.gt, acc)
    store.save(rec)
    return rec


@dataclass
class RenderReport:
    planned: int = 0
    skipped: int = 0
    rendered: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    records: list[FrameRecord] = field(default_factory=list)

    @property
    def frames_per_s(self) -> float:
        return self.rendered / self.seconds if self.seconds > 0 else 0.0


def render(
    env_name: str,
    params: Iterable[Mapping[str, Any]],
    out: Path | str,
    settings: RenderSettings,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    cpus_per_worker: int | None = None,
    timeout_s: float = 900.0,
    on_frame: Callable[[Job, FrameRecord | None, str | None], None] | None = None,
    client: WorkerClient | None = None,
) -> RenderReport:
    """Render every frame of ``params`` into the store at ``out``; skip complete ones.

    One in-process worker unless ``workers`` > 1, ``ray_address`` or ``cpus_per_worker``
    asks for Ray; there ``workers``/``cpus_per_worker`` size the actors (default: one per
    node with all its CPUs, see :func:`~truthline.scenes._ray.plan_actors`)."""
    t0 = time.perf_counter()
    store = FrameStore(out)
    jobs = plan(env_name, params, settings)
    rep = RenderReport(planned=len(jobs))
    todo: dict[str, Job] = {}
    for j in jobs:
        if j.job_id in todo:
            continue
        if store.has(j.job_id):
            rep.skipped += 1
            rep.records.append(store.load(j.job_id))
        else:
            todo[j.job_id] = j
    if not todo:
        rep.seconds = time.perf_counter() - t0
        return rep

    def handle(res: dict[str, Any]) -> None:
        job = todo[str(res.get("job_id"))]
        if res.get("ok"):
            rec = finish(store, job, res)
            rep.rendered += 1
            rep.records.append(rec)
            if on_frame:
                on_frame(job, rec, None)
        else:
            err = str(res.get("error", "unknown error"))
            if err.startswith(f"{NoGPUError.__name__}: "):  # the same for every frame: stop
                raise NoGPUError(err.split(": ", 1)[1])
            rep.failed.append((job.job_id, err))
            if on_frame:
                on_frame(job, None, err)

    payloads = [j.payload() for j in todo.values()]
    if (workers or 1) <= 1 and not ray_address and cpus_per_worker is None:
        own = client is None
        cl = client or WorkerClient(timeout_s=timeout_s)
        try:
            cl.start()  # a missing or broken scenes venv is one error, not one per frame
            for p in payloads:
                handle(execute(cl, p))
        finally:
            if own:
                cl.close()
    else:
        for res in ray_results(
            payloads, workers, ray_address, timeout_s, cpus_per_worker=cpus_per_worker
        ):
            handle(res)
    rep.seconds = time.perf_counter() - t0
    return rep


_ray_results = ray_results  # the name tests and older callers import
