"""Runner overhead: the real commands' code paths vs a bare AsyncOpenAI + semaphore loop.

    .venv/bin/python bench/runner_overhead.py [--sizes 1000,3000,10000] [--repeat 3]

Measured against the same local stub server (a separate process, so the CPU time here is
the client's), with the same AsyncOpenAI client and HTTP call (``AsyncOpenAI.post`` on
``/chat/completions``, what the ``openai:`` backend calls). The bare loop reads the SDK's
typed ``ChatCompletion``, as a user's loop would; the backend reads the JSON body itself
(~0.15 ms/request less), so part of the runner's ratio is that parse:

* ``bare``: what a minimal client does: a semaphore loop over prompts built beforehand,
  each image file's raw bytes base64'd into the data URL (no PIL, no re-encode), POST,
  parse the answer. ``--reference`` adds the old baseline (a JPEG re-encode per request,
  what truthline sent before it kept sources that fit the policy), ``bare create()`` (the SDK's ``chat.completions.create``) and ``bare
  workers`` (the same raw loop in the runner's shape, a fixed pool of workers on a queue:
  ~30% less CPU than the semaphore loop here, where httpcore polls each idle pooled
  connection's socket before every request) and ``bare, heap frozen`` (the raw loop
  under ``gc.freeze()``, as the runner runs: ``truthline.models._heap``; how much of the
  runner's ratio that freeze accounts for).
* ``prefill()``: what ``truthline prefill run`` runs: prompts rendered, cache keys
  (image hashes), claims, the journal, a durable ``responses`` row and a ``predictions``
  row per item.
* ``run_benchmark()``: what ``truthline benchmark run`` runs: requests from gold, answers
  stored, every answer scored into ``run_results``.

Each real path runs in image-cache scenarios (``--scenarios``), on a fresh store each
time (so every request is sent):

* ``cold``: nothing encoded yet (a first run: the process's encoded images and file
  hashes and the workspace's ``image-cache/`` emptied): every image hashed and encoded.
  The fixture's 32 px PNGs fit the default policy, so "encoded" is the check that keeps
  them as they are (a header read and a decode, ~0.05 ms); a source that must be resized
  pays one JPEG encode instead (kept on disk when it takes over 1 ms).
* ``disk``: a rerun in a new process: the workspace holds the encoded images and the
  verdicts on which sources are sent as they are (read again from ``kept-sources.txt``),
  the process has none in memory (file hashes forgotten too).
* ``memory``: the images already encoded in this process (another model or variant).

Own CPU (``--no-own`` skips it): the same three loops again with every answer given
in-process (``answered_in_process``: no socket, no server; each client still serializes its
body and parses the answer), so what is left is each path's own work. It varies far less
than the whole run, and ``1 + (path's own - bare's own) / bare's CPU`` is the ratio the
path would have if its HTTP cost what the bare loop's does: where the excess comes from.

CPU is ``process_time`` (all threads: the writer's too), the median over ``--repeat``
interleaved rounds. Goal (issue 28): <= 1.05x bare CPU per sample; the last lines pool
every size's rounds per path and give the median round ratio's 95% bootstrap interval and
whether it puts the path within the goal, past it, or cannot tell at the machine's noise.
Rows go to the "runner" section of bench/SCALE.md with the cost exponent k (CPU ∝ n^k)
over the sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import functools
import json
import shutil
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
sys.path.insert(0, str(Path(__file__).parent))
from _scale import fit_exponent, record, row  # noqa: E402  (bench/_scale.py, beside this)

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
        self.n = n
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


_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


def raw_data_url(path: Path) -> str:
    """What a minimal client sends: the file's own bytes, base64'd (no decode, no resize)."""
    mime = _MIME.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode()


def bare(url: str, reqs, concurrency: int, mode: str = "raw") -> None:
    """``mode``: ``raw`` (the baseline), ``reencode`` (a JPEG re-encode per request, the
    old baseline), ``create`` (the SDK's ``chat.completions.create``, re-encoding) or
    ``workers`` (raw, in the runner's shape: a fixed pool of workers on a queue)."""
    import openai

    from truthline.fields import parse_fields, parse_json_answer
    from truthline.models._images import reencode
    from truthline.models._openai import _request_options

    def messages(r) -> list[dict]:
        content: list[dict] = [{"type": "text", "text": r.user}]
        policy = r.settings["image_policy"]
        for p in r.images:
            if mode in ("raw", "workers"):
                u = raw_data_url(p)
            else:
                u = (
                    "data:image/jpeg;base64,"
                    + base64.b64encode(reencode(p.read_bytes(), p, policy)).decode()
                )
            content.append({"type": "image_url", "image_url": {"url": u, "detail": "auto"}})
        sys_ = [{"role": "system", "content": r.system}] if r.system else []
        return [*sys_, {"role": "user", "content": content}]

    async def main() -> None:
        from openai.types.chat import ChatCompletion

        client = openai.AsyncOpenAI(api_key="EMPTY", base_url=url, max_retries=0)
        options = _request_options()
        sem = asyncio.Semaphore(concurrency)

        async def one(r) -> None:
            async with sem:
                kw = {"temperature": 0.0, "max_tokens": r.settings["max_tokens"]}
                if mode == "create":
                    resp = await client.chat.completions.create(
                        model="stub", messages=messages(r), **kw
                    )
                else:
                    body = {"model": "stub", "messages": messages(r), **kw}
                    resp = await client.post(
                        "/chat/completions", body=body, cast_to=ChatCompletion, options=options
                    )
                parse_fields(r.fields, parse_json_answer(resp.choices[0].message.content))

        if mode == "workers":  # the runner's shape: a fixed pool of tasks on a queue
            queue: asyncio.Queue = asyncio.Queue()
            for r in reqs:
                queue.put_nowait(r)

            async def worker() -> None:
                while not queue.empty():
                    await one(queue.get_nowait())

            await asyncio.gather(*(worker() for _ in range(concurrency)))
        else:
            await asyncio.gather(*(one(r) for r in reqs))
        await client.close()

    asyncio.run(main())


def _frozen(fn: Callable[..., None], *args: object) -> None:
    import gc

    gc.freeze()
    try:
        fn(*args)
    finally:
        gc.unfreeze()


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
    assert counts == {"parsed": fx.n}, counts  # not store.items(): the check is not timed


def set_scenario(fx: Fixture, scenario: str) -> None:
    """Put the image caches in the state the scenario names (see the module docstring)."""
    from truthline.models import _image_cache, _images
    from truthline.models._image_cache import MEMORY, clear_image_cache

    if scenario in ("cold", "disk"):
        MEMORY.clear()
        _images._HASHES.clear()
        _image_cache._VERDICTS.clear()
    if scenario == "cold":
        clear_image_cache(fx.tmp / "image-cache")


def warm_up(url: str, fx: Fixture, concurrency: int) -> None:
    """Imports (the packages' ``__init__`` are lazy: the first path timed would pay them)
    and first connections, before anything is timed."""
    import truthline.benchmark._runner
    import truthline.models._openai
    import truthline.models._runner
    import truthline.prefill._run  # noqa: F401

    store = fx.store()
    bare(url, fx.requests(store, "warm")[:50], concurrency)
    store.close()
    for fn in (ours_prefill, ours_benchmark):
        small = fx.store()
        fn(url, fx, small, concurrency)
        small.close()


SCENARIO_TEXT = {
    "cold": "first run, images not yet encoded",
    "disk": "rerun in a new process, images encoded in the workspace",
    "memory": "images already encoded in this process",
}


REFERENCE_MODES = (
    ("bare, re-encode", "reencode"),
    ("bare create()", "create"),
    ("bare workers", "workers"),
)


def timed_real(
    path: Callable[..., None], scenario: str, url: str, fx: Fixture, concurrency: int
) -> tuple[float, float]:
    """One real path timed on a fresh store, the caches in ``scenario``'s state (the store
    made and closed outside the timed call)."""
    store = fx.store()
    set_scenario(fx, scenario)
    try:
        return timed(lambda: path(url, fx, store, concurrency))
    finally:
        store.close()


def measure(
    n: int, args: argparse.Namespace
) -> tuple[dict[str, list[tuple[float, float]]], dict[str, list[tuple[float, float]]]]:
    """``(wall, cpu)`` per path at ``n`` requests, one pair per round (in round order), and
    each path's own bare loop per round: the mean of the bare runs just before and just
    after it (every path sits between two bare runs, so a machine whose speed drifts
    within a round moves both sides of each ratio alike)."""
    tmp = Path(tempfile.mkdtemp(prefix="truthline-bench-"))
    fx = Fixture(tmp, n)
    srv = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    figures: dict[str, list[tuple[float, float]]] = {}
    own_bare: dict[str, list[tuple[float, float]]] = {}
    scenarios = [x for x in args.scenarios.split(",") if x]
    try:
        assert srv.stdout is not None
        url = f"http://127.0.0.1:{int(srv.stdout.readline())}/v1"
        warm_up(url, fx, args.concurrency)
        for rep in range(args.repeat):
            store = fx.store()
            reqs = fx.requests(store, f"bare-{rep}")
            store.close()

            run_bare = functools.partial(bare, url, reqs, args.concurrency)

            # each entry times one path when called: the bare variants, then the real paths
            timings: dict[str, Callable[[], tuple[float, float]]] = {}
            if args.reference:
                for name, mode in REFERENCE_MODES:
                    timings[name] = functools.partial(
                        timed, functools.partial(bare, url, reqs, args.concurrency, mode)
                    )
                timings["bare, heap frozen"] = functools.partial(
                    timed, functools.partial(_frozen, bare, url, reqs, args.concurrency)
                )
            for scenario in scenarios:
                for name, path in (
                    ("prefill()", ours_prefill),
                    ("run_benchmark()", ours_benchmark),
                ):
                    timings[f"{name} {scenario}"] = functools.partial(
                        timed_real, path, scenario, url, fx, args.concurrency
                    )
            bares = [timed(run_bare)]
            for name, time_path in timings.items():
                figures.setdefault(name, []).append(time_path())
                bares.append(timed(run_bare))
                own_bare.setdefault(name, []).append(_mean(bares[-2:]))
            figures.setdefault("bare", []).append(_mean(bares))
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return figures, own_bare


ANSWER = {
    "id": "own",
    "object": "chat.completion",
    "created": 0,
    "model": "stub",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": '{"label": "dog", "count": 3}'},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}
ANSWER_BYTES = json.dumps(ANSWER).encode()


@contextlib.contextmanager
def answered_in_process():
    """Both clients answered at once in this process (no socket, no server): the backend's
    ``_post`` and the SDK's ``AsyncOpenAI.post`` serialize the body, as the SDK does before
    sending, and parse the stub's answer, as each does on receiving it (the backend: JSON;
    the bare loop: the SDK's ``ChatCompletion``). What is left of a path's CPU is its own
    work, everything but HTTP, far less noisy than the whole run: the runner's excess
    over the bare loop comes out of the difference."""
    import openai

    from truthline.models import _openai

    async def backend_post(self, body):
        await asyncio.sleep(0)
        json.dumps(body)
        return json.loads(ANSWER_BYTES)

    async def sdk_post(self, path, *, cast_to, body=None, options=None, **kw):
        await asyncio.sleep(0)
        json.dumps(body)
        return cast_to.model_validate(json.loads(ANSWER_BYTES))

    saved = (
        _openai.OpenAIBackend._post,
        _openai.OpenAIBackend._get_client,
        openai.AsyncOpenAI.post,
    )
    _openai.OpenAIBackend._post = backend_post
    _openai.OpenAIBackend._get_client = lambda self: None
    openai.AsyncOpenAI.post = sdk_post
    try:
        yield
    finally:
        _openai.OpenAIBackend._post, _openai.OpenAIBackend._get_client = saved[:2]
        openai.AsyncOpenAI.post = saved[2]


def measure_own(n: int, args: argparse.Namespace) -> dict[str, list[float]]:
    """CPU per request (seconds) of the bare loop and of each real path with every answer
    given in-process (``answered_in_process``), ``--repeat`` interleaved rounds, images
    already encoded (the memory scenario)."""
    tmp = Path(tempfile.mkdtemp(prefix="truthline-bench-own-"))
    fx = Fixture(tmp, n)
    url = "http://127.0.0.1:9/v1"  # never reached
    out: dict[str, list[float]] = {}
    paths = (("prefill()", ours_prefill), ("run_benchmark()", ours_benchmark))
    try:
        with answered_in_process():
            for _, path in paths:  # imports and first encodes, not timed
                store = fx.store()
                path(url, fx, store, args.concurrency)
                store.close()
            for rep in range(args.repeat):
                store = fx.store()
                reqs = fx.requests(store, f"own-{rep}")
                store.close()
                _, c = timed(functools.partial(bare, url, reqs, args.concurrency))
                out.setdefault("bare", []).append(c / n)
                for name, path in paths:
                    _, c = timed_real(path, "memory", url, fx, args.concurrency)
                    out.setdefault(name, []).append(c / n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _mean(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return (statistics.fmean(w for w, _ in runs), statistics.fmean(c for _, c in runs))


def round_ratios(rounds: list[tuple[float, float]], bare: list[tuple[float, float]]) -> list[float]:
    """A path's CPU per round over its own bare loop in that round (the bare runs either side
    of it: a machine whose speed drifts moves both sides of each ratio alike; a ratio of
    medians would take it in)."""
    return [c / b for (_, c), (_, b) in zip(rounds, bare, strict=True)]


def summary(rounds: list[tuple[float, float]], bare: list[tuple[float, float]]):
    """Median wall and CPU of a path, and the median and range of its per-round CPU ratio
    (``round_ratios``)."""
    ratios = round_ratios(rounds, bare)
    return (
        statistics.median(w for w, _ in rounds),
        statistics.median(c for _, c in rounds),
        statistics.median(ratios),
        (min(ratios), max(ratios)),
    )


GOAL = 1.05
"""Issue 28: a real path's CPU per sample at most this times the bare loop's."""


def median_ci(ratios: list[float], seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the median round ratio (``truthline.stats``'s
    resampling). Why: on a shared machine rounds differ by more than the distance to the
    goal, so a median alone cannot say whether the goal is met; the interval can."""
    from truthline.stats import draw, percentile_ci

    x = np.asarray(ratios, dtype=float)
    w = draw(len(x), 4000, seed)
    boot = np.array([np.median(np.repeat(x, m)) for m in w])
    ci = percentile_ci(float(np.median(x)), boot, seed=seed, n=len(x))
    return ci.low, ci.high


def verdict(lo: float, hi: float) -> str:
    """Whether the interval puts the path within ``GOAL``, past it, or cannot tell."""
    if hi <= GOAL:
        return f"goal met (<= {GOAL}x)"
    if lo > GOAL:
        return f"goal not met (> {GOAL}x)"
    return f"undecided at this noise (interval spans {GOAL}x: more rounds or a quieter machine)"


NOTE = (
    "CPU per sample (process_time, every thread) of the real paths against a bare AsyncOpenAI "
    "+ semaphore loop sending each image file's raw bytes, same stub server (another process), "
    "median of {repeat} interleaved rounds (each ratio: the median of the rounds' ratios to "
    "the bare runs just before and after the path in that round, their range beside it), stub latency {lat} ms, concurrency "
    "{conc}. "
    "Scenarios: cold = first run (every image hashed and encoded); disk = rerun in a new "
    "process (images encoded in the workspace's image-cache/); memory = images already "
    "encoded in this process (another model or variant). The 32 px test PNGs fit the "
    "default policy, so they are sent as they are (checked and decoded once per workspace, "
    "the verdict kept in image-cache/kept-sources.txt; never re-encoded): cold measures "
    "that check, disk reads the verdicts back. "
    "Goal (issue 28): <= 1.05x."
)


def own_rows(n: int, own: dict[str, list[float]], bare_cpu: float) -> list[dict]:
    """Print and row the own-CPU figures: each path's CPU per request with answers given
    in-process, and the ratio it implies, ``1 + (own - bare's own) / bare's CPU`` with
    HTTP (the whole bare loop's, measured above): what the path would cost over the bare
    loop if their HTTP cost the same."""
    base = statistics.median(own["bare"])
    print(
        f"  own CPU, answers in-process (no HTTP), median of {len(own['bare'])} rounds: "
        f"bare {1000 * base:.3f} ms/sample"
    )
    rows = [
        row(
            "runner own CPU/sample, bare (answers in-process: no HTTP)",
            f"{1000 * base:.3f} ms",
            f"{1000 * bare_cpu:.3f} ms (bare loop with HTTP)",
            ratio=None,
            n=n,
        )
    ]
    for name, cpus in own.items():
        if name == "bare":
            continue
        mine = statistics.median(cpus)
        implied = 1 + (mine - base) / bare_cpu
        print(
            f"  {name:24s}: {1000 * mine:6.3f} ms/sample own, {1000 * (mine - base):+.3f} over "
            f"bare's own: implies {implied:.3f}x of bare"
        )
        rows.append(
            row(
                f"runner own CPU/sample, {name} (answers in-process: no HTTP)",
                f"{1000 * mine:.3f} ms ({1000 * (mine - base):+.3f} ms over bare's own)",
                f"{1000 * bare_cpu:.3f} ms (bare loop with HTTP); implied ratio in the ratio column",
                ratio=implied,
                n=n,
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.0, help="stub latency, seconds")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scenarios", default="cold,disk,memory")
    ap.add_argument("--reference", action="store_true", help="also the old baselines")
    ap.add_argument("--no-record", action="store_true", help="do not rewrite SCALE.md")
    ap.add_argument(
        "--no-own",
        action="store_true",
        help="skip the own-CPU rounds (answers given in-process: each path without HTTP)",
    )
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    print(
        f"runner overhead: 1 image per request, concurrency {args.concurrency}, stub latency "
        f"{args.latency * 1000:.0f} ms, median of {args.repeat} interleaved rounds (ratios: "
        "the median of each round's ratio to the bare runs either side of it)"
    )
    rows: list[dict] = []
    cpu: dict[str, list[tuple[int, float]]] = {}
    pooled: dict[str, list[float]] = {}
    for n in sizes:
        figures, own_bare = measure(n, args)
        bc = statistics.median(c for _, c in figures["bare"])
        print(f"\nn = {n:,}")
        for name, rounds in {"bare": figures.pop("bare"), **figures}.items():
            w, c, ratio, (lo, hi) = summary(rounds, own_bare.get(name, rounds))
            if name in own_bare:  # every path but the bare loop itself
                pooled.setdefault(name, []).extend(round_ratios(rounds, own_bare[name]))
            cpu.setdefault(name, []).append((n, c))
            scen = name.rsplit(" ", 1)[-1]
            what = f" ({SCENARIO_TEXT[scen]})" if scen in SCENARIO_TEXT else ""
            tail = (
                ""
                if name == "bare"
                else f"  CPU/sample {ratio:.3f}x of bare (rounds {lo:.2f}-{hi:.2f}){what}"
            )
            print(
                f"  {name:24s}: {n / w:8.1f} samples/s  {1000 * c / n:6.3f} ms CPU/sample{tail}",
                flush=True,
            )
            rows.append(
                row(
                    f"runner CPU/sample, {name}" + (f" ({SCENARIO_TEXT[scen]})" if what else ""),
                    f"{1000 * c / n:.3f} ms",
                    ""
                    if name == "bare"
                    else f"{1000 * bc / n:.3f} ms (bare loop, raw bytes); rounds {lo:.2f}-{hi:.2f}x",
                    ratio=None if name == "bare" else ratio,
                    n=n,
                )
            )
        if not args.no_own:
            rows.extend(own_rows(n, measure_own(n, args), bc / n))
    if pooled:  # the ratio does not depend on n (k ~ 1): every size's rounds decide together
        print("\nverdict, rounds of every size pooled (median ratio, 95% bootstrap interval):")
        for name, ratios in pooled.items():
            lo, hi = median_ci(ratios)
            med = statistics.median(ratios)
            print(
                f"  {name:24s}: {med:.3f}x [{lo:.3f}, {hi:.3f}], {len(ratios)} rounds: {verdict(lo, hi)}"
            )
            rows.append(
                row(
                    f"runner verdict, {name}: median round ratio, n = {args.sizes} pooled",
                    f"{med:.3f}x [{lo:.3f}, {hi:.3f}] (95% bootstrap, {len(ratios)} rounds)",
                    verdict(lo, hi),
                    ratio=med,
                    n=sizes[-1],
                )
            )
    if len(sizes) > 1:
        for name, pts in cpu.items():
            k = fit_exponent([p[0] for p in pts], [p[1] for p in pts])
            print(f"  cost exponent k (CPU ∝ n^k), {name}: {k:.2f}")
            rows.append(
                row(
                    f"runner CPU, {name}: k over n = {args.sizes}",
                    f"{1000 * pts[-1][1] / pts[-1][0]:.3f} ms/sample at {pts[-1][0]:,}",
                    ratio=None,
                    n=pts[-1][0],
                    k=k,
                )
            )
    if not args.no_record:
        note = NOTE.format(
            repeat=args.repeat, lat=f"{args.latency * 1000:.0f}", conc=args.concurrency
        )
        print(f"wrote {record('runner', rows, note)}")


if __name__ == "__main__":
    main()
