"""A run freezes the heap it found (``_heap``) and gives it back, whatever ends the run."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from tests.models._requests import SETTINGS, tiny_request
from truthline.errors import TruthlineError
from truthline.models import ModelRequest, run_requests
from truthline.models._heap import frozen_depth, frozen_heap

GOOD = '{"label": "dog", "count": 3}'


class _Node:
    """A cyclic-garbage probe (a weakref says when the collector freed it)."""

    def __init__(self) -> None:
        self.me = self


def _cycle() -> weakref.ref:
    return weakref.ref(_Node())


def _req(tiny, images, i: int) -> ModelRequest:
    return tiny_request(
        tiny,
        f"What is it? {i}",
        [images[i % len(images)]],
        system=None,
        settings={**SETTINGS, "image_policy": {"max_side": 32}},
    )


def test_a_run_walks_only_what_it_allocates_and_gives_the_heap_back(stub, tiny, images, store):
    assert gc.get_freeze_count() == 0
    stub.answer = lambda body: GOOD
    before = _cycle()  # cyclic garbage the run finds: frozen with the rest of the heap
    seen: list[tuple[int, bool]] = []

    def on_result(_req, _res) -> None:
        during = _cycle()
        gc.collect()
        # the collector still frees what the run makes, not what it found
        seen.append((gc.get_freeze_count(), during() is None and before() is not None))

    spec = f"openai:stub-model@{stub.url};timeout=2"
    res = run_requests(
        store, spec, [_req(tiny, images, i) for i in range(3)], progress=False, on_result=on_result
    )
    assert [r.status for r in res] == ["parsed"] * 3
    assert len(seen) == 3 and all(n > 1000 and ok for n, ok in seen), seen
    assert gc.get_freeze_count() == 0 and frozen_depth() == 0
    gc.collect()
    assert before() is None  # given back: collected like any garbage


def test_a_run_that_fails_gives_the_heap_back_too(stub, tiny, images, store):
    with pytest.raises(TruthlineError, match="price"):
        run_requests(store, f"openai:unpriced@{stub.url}", [_req(tiny, images, 0)], max_cost=1.0)
    assert gc.get_freeze_count() == 0 and frozen_depth() == 0


def test_concurrent_runs_share_one_freeze_and_the_last_one_gives_it_back() -> None:
    order: list[tuple[str, int, bool]] = []

    @frozen_heap
    async def run(name: str, wait: float) -> None:
        await asyncio.sleep(wait)
        order.append((name, frozen_depth(), gc.get_freeze_count() > 0))

    async def both() -> None:
        await asyncio.gather(run("short", 0.01), run("long", 0.05))
        order.append(("after", frozen_depth(), gc.get_freeze_count() > 0))

    asyncio.run(both())
    assert order == [("short", 2, True), ("long", 1, True), ("after", 0, False)]


def test_a_command_holds_the_freeze_around_its_runs_and_a_nested_run_freezes_again() -> None:
    """A plain function decorated (a command: ``prefill``), the context form (what
    ``run_benchmark`` uses), and a nested run freezing what the outer one built."""
    threshold = gc.get_threshold()
    seen: dict[str, object] = {}

    @frozen_heap
    def command() -> str:
        seen["depth"] = frozen_depth()
        seen["young"] = gc.get_threshold()[0]
        built = [object() for _ in range(10)]  # noqa: F841 - what the outer run built
        outer = gc.get_freeze_count()
        with frozen_heap:
            seen["nested"] = (frozen_depth(), gc.get_freeze_count() > outer)
        seen["after nested"] = (frozen_depth(), gc.get_freeze_count() > 0)
        return "done"

    assert command() == "done"
    assert seen["depth"] == 1
    assert seen["young"] == max(threshold[0], 50_000)
    assert seen["nested"] == (2, True)
    assert seen["after nested"] == (1, True)  # the outer run still holds the freeze
    assert gc.get_freeze_count() == 0 and frozen_depth() == 0
    assert gc.get_threshold() == threshold  # the collector's thresholds given back


def test_a_command_that_raises_gives_the_heap_and_thresholds_back() -> None:
    threshold = gc.get_threshold()

    @frozen_heap
    def command() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        command()
    assert gc.get_freeze_count() == 0 and frozen_depth() == 0
    assert gc.get_threshold() == threshold


def test_the_benchmark_and_prefill_commands_hold_the_freeze(monkeypatch) -> None:
    """Their gold and requests are built inside the freeze, not before it."""
    from truthline.benchmark import _runner as bench_runner
    from truthline.prefill import _run as prefill_run

    depths: list[int] = []

    def fake_run_benchmark(*args, **kwargs):
        depths.append(frozen_depth())
        return {}

    monkeypatch.setattr(bench_runner, "_run_benchmark", fake_run_benchmark)
    bench_runner.run_benchmark(None, None, None)  # type: ignore[arg-type]

    def fake_parse(model):
        depths.append(frozen_depth())
        raise TruthlineError("stop here")

    monkeypatch.setattr(prefill_run, "parse_model_spec", fake_parse)

    class _Project:
        class prompts:  # the attribute path prefill reads
            mapped: dict = {}

    with pytest.raises(TruthlineError, match="stop here"):
        prefill_run.prefill(None, _Project(), "x")  # type: ignore[arg-type]
    assert depths == [1, 1]
    assert frozen_depth() == 0
