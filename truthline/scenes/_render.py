"""Render frames of an environment: plan jobs, run them on Blender workers, store results.

One worker runs in-process (a :class:`WorkerClient`); more fan out over Ray (a local Ray by
default, a cluster with ``ray_address``): each Ray actor owns one long-lived worker and
returns the image bytes; the host hashes, stores and records them, so a cluster needs no
shared filesystem and the store is written by one process. Ray's ``ActorPool`` does the
queueing. A rerun skips frames already complete in the store; a failed frame is reported
(with the worker's own error) and the others go on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from truthline.scenes._store import FrameStore
from truthline.scenes._types import (
    BaseEnvironment,
    FrameRecord,
    RenderSettings,
    SceneError,
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


class RenderActor:
    """A Ray actor body: one long-lived Blender worker (wrapped by ``ray.remote``)."""

    def __init__(self, timeout_s: float, threads: int):
        from truthline.scenes import env

        env.ensure(progress=False)  # a cluster node builds its own scenes venv once
        self.client = WorkerClient(timeout_s=timeout_s)
        self.threads = threads

    def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        if self.threads:
            payload = {**payload, "render": {**payload["render"], "threads": self.threads}}
        return execute(self.client, payload)

    def close(self) -> None:
        self.client.close()


def _ray_results(
    payloads: list[dict[str, Any]],
    workers: int,
    ray_address: str | None,
    timeout_s: float,
) -> Iterator[dict[str, Any]]:
    try:
        import ray
        from ray.util import ActorPool
    except ImportError as exc:
        raise SceneError(
            "fanning out over several workers needs Ray: pip install 'truthline[scenes]'"
        ) from exc
    started_here = not ray.is_initialized()
    if started_here:
        if ray_address:
            ray.init(address=ray_address, log_to_driver=False)
        else:
            ray.init(
                num_cpus=os.cpu_count() or 1,
                include_dashboard=False,
                log_to_driver=False,
                object_store_memory=256 * 1024 * 1024,
            )
    total = float(ray.cluster_resources().get("CPU", os.cpu_count() or 1))
    cpus = total / workers if not ray_address else 1.0
    threads = 0 if ray_address else max(1, int(cpus))
    actor_cls = ray.remote(num_cpus=cpus)(RenderActor)
    actors = [actor_cls.remote(timeout_s, threads) for _ in range(workers)]  # type: ignore[attr-defined]
    try:
        pool = ActorPool(actors)
        try:
            yield from pool.map_unordered(lambda a, p: a.run.remote(p), payloads)
        except ray.exceptions.RayError as exc:  # an actor died or its call raised
            first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise SceneError(
                f"a Ray render worker failed ({type(exc).__name__}: {first}); the frames "
                "finished so far are stored, rerun the same command to resume"
            ) from exc
    finally:
        for a in actors:
            with contextlib.suppress(Exception):  # a dead actor has nothing left to close
                ray.get(a.close.remote(), timeout=30)  # type: ignore[attr-defined]
            ray.kill(a)  # type: ignore[arg-type]
        if started_here:
            ray.shutdown()


def render(
    env_name: str,
    params: Iterable[Mapping[str, Any]],
    out: Path | str,
    settings: RenderSettings,
    *,
    workers: int = 1,
    ray_address: str | None = None,
    timeout_s: float = 900.0,
    on_frame: Callable[[Job, FrameRecord | None, str | None], None] | None = None,
    client: WorkerClient | None = None,
) -> RenderReport:
    """Render every frame of ``params`` into the store at ``out``; skip complete ones."""
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
            rep.failed.append((job.job_id, err))
            if on_frame:
                on_frame(job, None, err)

    payloads = [j.payload() for j in todo.values()]
    if workers <= 1 and not ray_address:
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
        for res in _ray_results(payloads, max(1, workers), ray_address, timeout_s):
            handle(res)
    rep.seconds = time.perf_counter() - t0
    return rep
