"""Runner overhead: this runner (store writes included) vs a bare AsyncOpenAI + semaphore
loop with the same parser, against the local stub at 0 ms and 200 ms latency.

    .venv/bin/python bench/runner_overhead.py [--n 2000] [--concurrency 64]

The stub runs in a separate process, so the CPU time measured here is the client's.
Goal: <= 3 ms client CPU per sample with durable records; throughput >= 0.9x the bare loop.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
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


def make_images(folder: Path, n: int) -> list[Path]:
    import cv2

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        f = folder / f"{i:05d}.png"
        cv2.imwrite(str(f), rng.integers(0, 255, (32, 32, 3), dtype=np.uint8))
        out.append(f)
    return out


def requests(project, images, tag: str):
    from truthline.models import ModelRequest

    return [
        ModelRequest(
            project=project.name,
            item_id=None,
            purpose="benchmark",
            system=None,
            user=f"{tag}: what is in image {i}?",
            images=[p],
            fields=project.field_types,
            settings={
                "temperature": 0.0,
                "max_tokens": 64,
                "image_policy": {"max_side": 64, "jpeg_quality": 85},
            },
        )
        for i, p in enumerate(images)
    ]


def run_ours(url: str, reqs, concurrency: int, db: Path) -> tuple[float, float]:
    from truthline.models import PARSED, run_requests
    from truthline.store import Store

    store = Store(f"sqlite:///{db}")
    c0, t0 = time.process_time(), time.perf_counter()
    res = run_requests(store, f"openai:stub@{url}", reqs, concurrency=concurrency, progress=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert all(r.status == PARSED for r in res), "stub answers must parse"
    store.close()
    return wall, cpu


def run_bare(url: str, reqs, concurrency: int) -> tuple[float, float]:
    import openai

    from truthline.fields import parse_fields, parse_json_answer
    from truthline.models._openai import build_messages

    async def main() -> None:
        client = openai.AsyncOpenAI(api_key="EMPTY", base_url=url, max_retries=0)
        sem = asyncio.Semaphore(concurrency)

        async def one(r) -> None:
            async with sem:
                resp = await client.chat.completions.create(
                    model="stub", messages=build_messages(r), temperature=0.0, max_tokens=64
                )
                parse_fields(r.fields, parse_json_answer(resp.choices[0].message.content))

        await asyncio.gather(*(one(r) for r in reqs))
        await client.close()

    c0, t0 = time.process_time(), time.perf_counter()
    asyncio.run(main())
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latencies", default="0,0.2")
    args = ap.parse_args()
    from truthline.project import validate_data

    project = validate_data(
        {
            "name": "bench",
            "media": "image",
            "fields": {
                "label": {"type": "single_choice", "choices": ["cat", "dog"]},
                "count": {"type": "number", "integer": True},
            },
        },
        "<bench>",
    )
    tmp = Path(tempfile.mkdtemp(prefix="truthline-bench-"))
    images = make_images(tmp / "img", args.n)
    print(f"runner overhead: {args.n} requests, 1 image each, concurrency {args.concurrency}")
    for lat in [float(x) for x in args.latencies.split(",")]:
        srv = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(lat)], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        try:
            assert srv.stdout is not None
            url = f"http://127.0.0.1:{int(srv.stdout.readline())}/v1"
            bw, bc = run_bare(url, requests(project, images, f"bare{lat}"), args.concurrency)
            ow, oc = run_ours(
                url,
                requests(project, images, f"ours{lat}"),
                args.concurrency,
                tmp / f"ours{lat}.db",
            )
        finally:
            srv.terminate()
            srv.wait()
        n = args.n
        print(f"\nstub latency {lat * 1000:.0f} ms")
        print(
            f"  bare AsyncOpenAI+semaphore: {n / bw:8.1f} samples/s  {1000 * bc / n:6.2f} ms CPU/sample"
        )
        print(
            f"  truthline runner + store  : {n / ow:8.1f} samples/s  {1000 * oc / n:6.2f} ms CPU/sample"
        )
        print(
            f"  ratio (runner / bare)     : throughput {(n / ow) / (n / bw):.2f}x of bare, "
            f"CPU {oc / bc:.2f}x; overhead {1000 * (oc - bc) / n:+.2f} ms CPU/sample"
        )


if __name__ == "__main__":
    main()
