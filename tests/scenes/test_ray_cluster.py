"""Rendering past one machine: actors sized to the CPUs Blender renders with, planned from
the node list (pure), then ``scenes render --ray ADDRESS`` against a real two-node Ray
cluster on loopback (a head and a second node, each ``ray start``-ed with one CPU): the
frames split over both nodes, each rendered with the one thread its actor reserved, and
the host the only process that writes the frame store."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from truthline.scenes import SceneError
from truthline.scenes._ray import ActorSlot, NodeCPUs, plan_actors
from truthline.scenes._store import FrameStore

RAY = Path(sys.executable).with_name("ray")
A, B, C = NodeCPUs("a", 16), NodeCPUs("b", 8), NodeCPUs("c", 2)


def test_by_default_one_actor_per_node_reserves_and_renders_with_all_its_cpus():
    assert plan_actors([A, B]) == [ActorSlot(16, 16, "a"), ActorSlot(8, 8, "b")]
    # a node without CPUs (e.g. a GPU-only or head-only node) gets none
    assert plan_actors([A, NodeCPUs("head", 0)]) == [ActorSlot(16, 16, "a")]
    with pytest.raises(SceneError, match="no node with a CPU"):
        plan_actors([NodeCPUs("head", 0)])


def test_cpus_per_worker_packs_each_node_and_threads_equal_the_reservation():
    slots = plan_actors([A, B, C], cpus_per_worker=4)
    assert [s.node_id for s in slots] == ["a", "b", "a", "b", "a", "a"]  # spread first
    assert all(s.cpus == 4 and s.threads == 4 for s in slots)
    assert sum(s.cpus for s in slots if s.node_id == "a") <= A.cpus  # never oversubscribed
    with pytest.raises(SceneError, match=r"--cpus-per-worker 32: no Ray node has .*16, 8, 2"):
        plan_actors([A, B, C], cpus_per_worker=32)


def test_workers_share_the_cluster_in_proportion_to_each_node():
    slots = plan_actors([A, B], workers=3)
    assert sorted((s.node_id, s.cpus, s.threads) for s in slots) == [
        ("a", 8, 8), ("a", 8, 8), ("b", 8, 8)]  # fmt: skip
    # more workers than CPUs: fractional reservations, one thread each, still within a node
    small = plan_actors([NodeCPUs("x", 2)], workers=3)
    assert [(s.threads, s.cpus) for s in small] == [(1, 0.6666)] * 3
    # Ray accepts whole CPUs above one: 3 CPUs over 2 workers reserve (and use) 1 each
    assert [(s.cpus, s.threads) for s in plan_actors([NodeCPUs("y", 3)], workers=2)] == [
        (1.0, 1), (1.0, 1)]  # fmt: skip
    for nodes in ([A, B, C], [NodeCPUs("x", 1)] * 1):
        for w in (1, 2, 5, 40):
            per_node: dict[str, float] = {}
            for s in plan_actors(nodes, workers=w):
                per_node[s.node_id] = per_node.get(s.node_id, 0) + s.cpus
                assert s.threads <= max(1, s.cpus)
            assert all(per_node[n.node_id] <= n.cpus + 1e-6 for n in nodes if n.node_id in per_node)


def test_workers_of_a_fixed_size_fail_at_once_when_they_cannot_all_be_placed():
    slots = plan_actors([A, B], workers=3, cpus_per_worker=8)
    assert sorted(s.node_id for s in slots) == ["a", "a", "b"]
    with pytest.raises(SceneError, match=r"4 render workers of 8 CPUs do not fit .*room for 3"):
        plan_actors([A, B], workers=4, cpus_per_worker=8)
    with pytest.raises(SceneError, match="--workers must be >= 1"):
        plan_actors([A], workers=0)


# -- a real two-node cluster on loopback -------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sessions_kill(sids: set[int]) -> None:
    """SIGKILL whatever is left in the sessions this test started (and nothing else)."""
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if os.getsid(int(d.name)) in sids:
                    os.kill(int(d.name), signal.SIGKILL)


@pytest.fixture
def ray_cluster(scenes_env: None) -> Iterator[tuple[str, set[str], dict[str, str]]]:
    """A head and a second node, one CPU each, on 127.0.0.1; yields (address, node ids).

    Each node is a ``ray start --block`` in its own session, so teardown stops exactly these
    two (``ray stop`` would stop every Ray on the machine, the suite's own included)."""
    if not RAY.is_file():
        pytest.fail(f"Ray's CLI is missing ({RAY}): pip install -e '.[scenes]'")
    port = _free_port()
    addr = f"127.0.0.1:{port}"
    tmp = Path(tempfile.mkdtemp(prefix="tlray-", dir="/tmp"))  # short: Ray's socket paths
    # one token for every process of this cluster: Ray 2.5x+ writes ~/.ray/auth_token when a
    # local Ray starts, and a head that finds it refuses drivers that do not send it
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}  # fmt: skip
    common = ["--num-cpus", "1", "--node-ip-address", "127.0.0.1", "--block",
              "--object-store-memory", str(80 * 1024 * 1024), "--disable-usage-stats"]  # fmt: skip
    procs: list[subprocess.Popen[bytes]] = []

    def start(args: list[str], log: str) -> None:
        with open(tmp / log, "wb") as f:
            procs.append(subprocess.Popen([str(RAY), "start", *args, *common], stdout=f,
                                          stderr=subprocess.STDOUT, env=env,
                                          start_new_session=True))  # fmt: skip

    probe = textwrap.dedent(f"""
        import json, time, ray
        ray.init(address="{addr}", log_to_driver=False)
        for _ in range(120):
            alive = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
            if len(alive) >= 2:
                break
            time.sleep(0.5)
        print(json.dumps(alive))
    """)
    try:
        start(["--head", "--port", str(port), "--include-dashboard=false",
               "--temp-dir", str(tmp / "r")], "head.log")  # fmt: skip
        for _ in range(120):  # the GCS listens once the head is up
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if procs[0].poll() is not None:
                pytest.fail(f"ray start --head exited: {(tmp / 'head.log').read_text()[-2000:]}")
            time.sleep(0.5)
        start(["--address", addr], "node.log")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                             timeout=120, env=env)  # fmt: skip
        nodes = (
            set(json.loads(out.stdout.strip().splitlines()[-1])) if out.returncode == 0 else set()
        )
        if len(nodes) != 2:
            logs = "".join((tmp / n).read_text()[-1500:] for n in ("head.log", "node.log"))
            pytest.fail(f"the two-node cluster did not come up: {out.stderr[-1500:]}\n{logs}")
        yield addr, nodes, env
    finally:
        # SIGTERM to each `ray start` (not its group: it drains its node through the GCS
        # first, ~10 s), then whatever is left of these two sessions is killed
        sids = {p.pid for p in procs}  # start_new_session: each one leads its own session
        for p in reversed(procs):  # the second node first, then the head
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=45)
        _sessions_kill(sids)
        shutil.rmtree(tmp, ignore_errors=True)


# The CLI runs in its own process (a driver joins a cluster once per process); this wrapper
# logs every file the host's frame store writes, so anything else in the store came from
# somewhere else.
WRAPPER = """
import sys
from truthline.scenes import _store
log = open(sys.argv[1], "a")
real = _store._atomic_write
def logged(path, data):
    real(path, data)
    log.write(str(path) + "\\n"); log.flush()
_store._atomic_write = logged
sys.argv = ["truthline", *sys.argv[2:]]
from truthline.cli import main
main()
"""


def test_scenes_render_splits_frames_over_two_ray_nodes_and_only_the_host_writes(
    ray_cluster: tuple[str, set[str], dict[str, str]], tmp_path: Path
) -> None:
    addr, nodes, env = ray_cluster
    store, log = tmp_path / "store", tmp_path / "writes.log"
    args = ["scenes", "render", "dori", "--ray", addr, "--engine", "workbench",
            "--res", "64x36", "--limit", "4", "--out", str(store), "--json"]  # fmt: skip
    t0 = time.perf_counter()
    cli = subprocess.Popen([sys.executable, "-c", WRAPPER, str(log), *args], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    out, err = cli.communicate(timeout=240)
    assert cli.returncode == 0, f"{out[-2000:]}\n{err[-3000:]}"
    summary = json.loads(out[out.index("{") :])
    assert (summary["rendered"], summary["failed"]) == (4, [])

    recs = list(FrameStore(store).records())
    assert len(recs) == 4
    used = {r.worker["ray_node_id"] for r in recs}
    assert used == nodes  # both nodes rendered (one actor each: one CPU each)
    for r in recs:
        assert r.worker["pid"] not in (cli.pid, None)  # a Blender worker on a Ray actor
        assert r.device["threads"] == 1  # Blender used exactly the one CPU its actor holds
    written = {Path(p) for p in log.read_text().split()}
    on_disk = {p for p in store.rglob("*") if p.is_file()}
    assert on_disk == written  # every file in the store came from the host process
    again = subprocess.run([sys.executable, "-m", "truthline", *args], capture_output=True,
                           text=True, timeout=240, env=env)  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout[again.stdout.index("{") :])["skipped"] == 4
    print(f"two-node render of 4 frames: {time.perf_counter() - t0:.1f} s")
