"""Render frames on Ray actors: one long-lived Blender worker per actor, sized to its CPUs.

Blender renders on every core it sees unless told otherwise, while a Ray actor reserves
only what it asks for; an actor that reserves 1 CPU and lets Blender use 16 oversubscribes
its node as soon as a second one lands there. So every actor reserves ``N`` CPUs and passes
``threads = N`` to Blender: by default one actor per node holding all of that node's CPUs
(a frame is parallel inside Cycles already), or ``cpus_per_worker`` each, or ``workers``
actors sharing the cluster. The placement is planned here from the node list
(:func:`plan_actors`, no Ray needed) and pinned with Ray's node-affinity scheduling, so a
plan that cannot run fails at once instead of leaving actors pending forever. It plans on
the nodes' total CPUs: on a cluster shared with other jobs, actors wait for room.

Actors return image bytes; the host alone writes the frame store (no shared filesystem).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from truthline.scenes._types import SceneError


@dataclass(frozen=True)
class NodeCPUs:
    """One alive Ray node and the CPUs it offers."""

    node_id: str
    cpus: float


@dataclass(frozen=True)
class ActorSlot:
    """One actor to start: the CPUs it reserves, Blender's thread count, and the node it
    is pinned to."""

    cpus: float
    threads: int
    node_id: str


def _share(cpus: float) -> tuple[float, int]:
    """A reservation Ray accepts (whole CPUs above one, a fraction below) and the Blender
    threads it pays for."""
    if cpus >= 1:
        whole = math.floor(cpus + 1e-9)
        return float(whole), whole
    return math.floor(cpus * 10_000) / 10_000, 1


def _interleave(slots: list[ActorSlot]) -> list[ActorSlot]:
    """Round-robin over nodes, so the first ``k`` slots spread over as many nodes as they
    can (a short job starts only as many actors as it has frames)."""
    by_node: dict[str, list[ActorSlot]] = {}
    for s in slots:
        by_node.setdefault(s.node_id, []).append(s)
    out: list[ActorSlot] = []
    queues = list(by_node.values())
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def plan_actors(
    nodes: Sequence[NodeCPUs], workers: int | None = None, cpus_per_worker: int | None = None
) -> list[ActorSlot]:
    """The actors for a cluster of ``nodes``, each pinned to a node, each reserving the
    CPUs its Blender renders with (``threads``).

    - neither given: one actor per node with all its CPUs;
    - ``cpus_per_worker`` only: as many actors of that size as fit on each node;
    - ``workers`` only: that many actors spread over the nodes in proportion to their CPUs
      (highest-average rule), each with its node's share (below one CPU: a fractional
      reservation and one thread);
    - both: ``workers`` actors of ``cpus_per_worker`` CPUs, each on the node with most room.
    Raises SceneError, with the numbers, when they cannot all be placed."""
    if workers is not None and workers < 1:
        raise SceneError(f"--workers must be >= 1, got {workers}")
    if cpus_per_worker is not None and cpus_per_worker < 1:
        raise SceneError(f"--cpus-per-worker must be >= 1, got {cpus_per_worker}")
    alive = [n for n in nodes if n.cpus > 0]
    if not alive:
        raise SceneError("the Ray cluster has no node with a CPU to render on")
    sizes = ", ".join(f"{n.cpus:g}" for n in alive)
    if workers is None and cpus_per_worker is None:
        return [ActorSlot(*_share(n.cpus), n.node_id) for n in alive]
    if workers is None:
        assert cpus_per_worker is not None
        n_cpu = cpus_per_worker
        slots = [
            ActorSlot(float(n_cpu), n_cpu, n.node_id)
            for n in alive
            for _ in range(math.floor(n.cpus / n_cpu + 1e-9))
        ]
        if not slots:
            raise SceneError(
                f"--cpus-per-worker {n_cpu}: no Ray node has that many CPUs "
                f"(nodes have {sizes}); ask for fewer"
            )
        return _interleave(slots)
    if cpus_per_worker is None:
        count = [0] * len(alive)
        for _ in range(workers):
            i = max(range(len(alive)), key=lambda j: (alive[j].cpus / (count[j] + 1), -j))
            count[i] += 1
        return _interleave(
            [
                ActorSlot(*_share(n.cpus / k), n.node_id)
                for n, k in zip(alive, count, strict=True)
                for _ in range(k)
            ]
        )
    free = [n.cpus for n in alive]
    placed = []
    for _ in range(workers):
        i = max(range(len(alive)), key=lambda j: (free[j], -j))
        if free[i] + 1e-9 < cpus_per_worker:
            room = sum(math.floor(c / cpus_per_worker + 1e-9) for c in (n.cpus for n in alive))
            raise SceneError(
                f"{workers} render workers of {cpus_per_worker} CPUs do not fit on the Ray "
                f"cluster (nodes have {sizes} CPUs: room for {room}); lower --workers or "
                "--cpus-per-worker"
            )
        free[i] -= cpus_per_worker
        placed.append(ActorSlot(float(cpus_per_worker), cpus_per_worker, alive[i].node_id))
    return placed


class RenderActor:
    """A Ray actor body: one long-lived Blender worker rendering with ``threads`` threads
    (wrapped by ``ray.remote`` with the same number of CPUs)."""

    def __init__(self, timeout_s: float, threads: int):
        import ray

        from truthline.scenes import env
        from truthline.scenes._worker import WorkerClient

        env.ensure(progress=False)  # a cluster node builds its own scenes venv once
        self.client = WorkerClient(timeout_s=timeout_s)
        self.threads = threads
        self.node_id = ray.get_runtime_context().get_node_id()

    def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        from truthline.scenes._render import execute

        if self.threads:
            payload = {**payload, "render": {**payload["render"], "threads": self.threads}}
        res = execute(self.client, payload)
        res.setdefault("worker", {})["ray_node_id"] = self.node_id
        return res

    def close(self) -> None:
        self.client.close()


def cluster_nodes(ray: Any) -> list[NodeCPUs]:
    """The alive nodes of the connected cluster and their CPU resources."""
    return [
        NodeCPUs(str(n["NodeID"]), float(n.get("Resources", {}).get("CPU", 0.0)))
        for n in ray.nodes()
        if n.get("Alive")
    ]


def ray_results(
    payloads: list[dict[str, Any]],
    workers: int | None,
    ray_address: str | None,
    timeout_s: float,
    *,
    cpus_per_worker: int | None = None,
) -> Iterator[dict[str, Any]]:
    """Run every payload on Ray actors planned by :func:`plan_actors`; yields results as
    they finish. Joins a running Ray session, else connects to ``ray_address``, else starts
    a local Ray with this machine's CPUs (and shuts down what it started)."""
    try:
        import ray
        from ray.util import ActorPool
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError as exc:
        raise SceneError(
            "fanning out over several workers needs Ray: pip install 'truthline[scenes]'"
        ) from exc
    started_here = not ray.is_initialized()
    if started_here:
        if ray_address:
            try:
                ray.init(address=ray_address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise SceneError(
                    f"--ray {ray_address}: cannot join the Ray cluster ({exc}); start it with "
                    "`ray start --head` and give its address as HOST:PORT"
                ) from exc
        else:
            ray.init(
                num_cpus=os.cpu_count() or 1,
                include_dashboard=False,
                log_to_driver=False,
                object_store_memory=256 * 1024 * 1024,
            )
    actors: list[Any] = []
    try:
        slots = plan_actors(cluster_nodes(ray), workers, cpus_per_worker)[: len(payloads)]
        actor_cls = ray.remote(RenderActor)
        for s in slots:
            pin = NodeAffinitySchedulingStrategy(s.node_id, soft=False)
            opts = actor_cls.options(num_cpus=s.cpus, scheduling_strategy=pin)
            actors.append(opts.remote(timeout_s, s.threads))
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
                ray.get(a.close.remote(), timeout=30)
            ray.kill(a)
        if started_here:
            ray.shutdown()
