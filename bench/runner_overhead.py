"""Runner overhead: the real commands' code paths vs a bare AsyncOpenAI + semaphore loop.

    .venv/bin/python bench/runner_overhead.py [--n 1000] [--concurrency 64] [--repeat 3]

Measured, against the same local stub server (a separate process, so the CPU time here
is the client's), with the same AsyncOpenAI client, the same HTTP call and the same image
encoding and answer parser:

* ``bare``: a semaphore loop over pre-built requests: encode images, POST, parse. It
  calls exactly what the ``openai:`` backend calls (``AsyncOpenAI.post`` on
  ``/chat/completions``); ``bare create()`` (the SDK's ``chat.completions.create``, which
  adds a per-call TypedDict transform) is printed for reference.
* ``prefill()``: what ``truthline prefill run`` runs: prompts rendered, cache keys
  (image hashes), a durable ``responses`` row and a ``predictions`` row per item.
* ``run_benchmark()``: what ``truthline benchmark run`` runs: requests from gold, answers
  stored, every answer scored into ``run_results``.

Each path runs ``--repeat`` times on a fresh store, interleaved; the median is reported.
Goal (issue 13): <= 1.05x bare CPU per sample and >= 0.95x bare throughput.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = """
import sys, time
from truthline.models._stub import StubServer
s = StubServer(answer=lambda b: '{"label": "dog", "count": 3}', latency_s=float(sys.argv[1]))
s.start(); print(s.port, flush=True)
while True: time.sleep(3600)
"""

PROJECT = """
name = "bench"
media = "image"
[fields.label]
type = "single_choice"
choices = ["cat", "dog"]
[fields.count]
type = "number"
integer = true
min = 0
"""


def make_images(folder: Path, n: int) -> None:
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        cv2.imwrite(str(folder / f"{i:05d}.png"), rng.integers(0, 255, (32, 32, 3), np.uint8))


class Fixture:
    """A project with ``n`` image items and a gold snapshot; a fresh store per run."""

    def __init__(self, tmp: Path, n: int):
        from truthline.project import load_project

        self.tmp = tmp
        (tmp / "proj").mkdir(parents=True, exist_ok=True)
        (tmp / "proj" / "project.toml").write_text(PROJECT)
        self.project = load_project(tmp / "proj")
        make_images(tmp / "img", n)
        self.runs = 0

    def store(self):
        from truthline.media import import_items
        from truthline.store import Store, json_hash, now, tables

        self.runs += 1
        store = Store(f"sqlite:///{self.tmp / f'run{self.runs}.db'}")
        store.upsert_project(self.project, str(self.tmp / "proj"))
        import_items(store, self.project, self.tmp / "img", progress=False)
        items = store.items(self.project.name)
        ts = now()
        snap = json_hash(["bench", self.runs])
        with store.begin() as conn:
            conn.execute(
                tables.gold_snapshots.insert().values(
                    hash=snap, project="bench", policy={}, counts={}, created_at=ts
                )
            )
            rows = [
                dict(
                    snapshot=snap,
                    project="bench",
                    item_id=it["id"],
                    field_path=f,
                    value=v,
                    provenance="blind_consensus",
                    sources=[],
                )
                for it in items
                for f, v in (("label", "dog" if it["id"] % 2 else "cat"), ("count", 3))
            ]
            conn.execute(tables.gold.insert(), rows)
            conn.execute(
                tables.arm_assignments.insert(),
                [
                    dict(project="bench", item_id=it["id"], arm="blind", seed=0, created_at=ts)
                    for it in items
                ],
            )
        return store

    def requests(self, store, tag: str):
        from truthline.models import default_settings, item_requests

        items = store.items(self.project.name)
        reqs = item_requests(
            self.project, items, purpose="prefill", settings=default_settings(self.project)
        )
        for r in reqs:
            r.user += f" ({tag})"
        return reqs


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def bare(url: str, reqs, concurrency: int, create: bool) -> None:
    import openai

    from truthline.fields import parse_fields, parse_json_answer
    from truthline.models._openai import _request_options, build_messages

    async def main() -> None:
        from openai.types.chat import ChatCompletion

        client = openai.AsyncOpenAI(api_key="EMPTY", base_url=url, max_retries=0)
        options = _request_options()
        sem = asyncio.Semaphore(concurrency)

        async def one(r) -> None:
            async with sem:
                kw = {"temperature": 0.0, "max_tokens": r.settings["max_tokens"]}
                if create:
                    resp = await client.chat.completions.create(
                        model="stub", messages=build_messages(r), **kw
                    )
                else:
                    body = {"model": "stub", "messages": build_messages(r), **kw}
                    resp = await client.post(
                        "/chat/completions", body=body, cast_to=ChatCompletion, options=options
                    )
                parse_fields(r.fields, parse_json_answer(resp.choices[0].message.content))

        await asyncio.gather(*(one(r) for r in reqs))
        await client.close()

    asyncio.run(main())


def ours_prefill(url: str, fx: Fixture, store, concurrency: int) -> None:
    from truthline.prefill import prefill

    rep = prefill(store, fx.project, f"openai:stub@{url}", concurrency=concurrency, progress=False)
    assert rep.summary["by_status"] == {"parsed": rep.items}, rep.summary
    assert rep.predictions_written == rep.items


def ours_benchmark(url: str, fx: Fixture, store, concurrency: int) -> None:
    from truthline.benchmark import RunConfig, run_benchmark

    cfg = RunConfig(models=[f"openai:stub@{url}"], concurrency=concurrency)
    man = run_benchmark(store, fx.project, cfg, progress=False)
    counts = next(iter(man["entries"].values()))["status_counts"]
    assert counts == {"parsed": len(store.items("bench"))}, counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latencies", default="0,0.2")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="truthline-bench-"))
    fx = Fixture(tmp, args.n)
    n = args.n
    print(
        f"runner overhead: {n} requests, 1 image each, concurrency {args.concurrency}, "
        f"median of {args.repeat} interleaved runs"
    )
    for lat in [float(x) for x in args.latencies.split(",")]:
        srv = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(lat)], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        figures: dict[str, list[tuple[float, float]]] = {}
        try:
            assert srv.stdout is not None
            url = f"http://127.0.0.1:{int(srv.stdout.readline())}/v1"
            # warm-up: imports (the benchmark package pulls in scipy), first connections
            import truthline.benchmark
            import truthline.prefill  # noqa: F401

            warm = fx.store()
            bare(url, fx.requests(warm, "warm")[:50], args.concurrency, create=False)
            warm.close()
            for rep in range(args.repeat):
                store = fx.store()
                reqs = fx.requests(store, f"bare{lat}-{rep}")
                paths: dict[str, Callable[[], object]] = {
                    "bare": lambda r=reqs, u=url: bare(u, r, args.concurrency, create=False),
                    "bare create()": lambda r=reqs, u=url: bare(
                        u, r, args.concurrency, create=True
                    ),
                    "prefill()": lambda s=store, u=url: ours_prefill(u, fx, s, args.concurrency),
                }
                for name, fn in paths.items():
                    figures.setdefault(name, []).append(timed(fn))
                store.close()
                store = fx.store()  # run_benchmark on a store whose cache is empty
                figures.setdefault("run_benchmark()", []).append(
                    timed(lambda s=store, u=url: ours_benchmark(u, fx, s, args.concurrency))
                )
                store.close()
        finally:
            srv.terminate()
            srv.wait()
        med = {
            k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
            for k, v in figures.items()
        }
        bw, bc = med["bare"]
        print(f"\nstub latency {lat * 1000:.0f} ms")
        for name, (w, c) in med.items():
            ratio = (
                ""
                if name == "bare"
                else (f"  throughput {bw / w:.2f}x of bare, CPU/sample {c / bc:.2f}x")
            )
            print(f"  {name:16s}: {n / w:8.1f} samples/s  {1000 * c / n:6.2f} ms CPU/sample{ratio}")


if __name__ == "__main__":
    main()
