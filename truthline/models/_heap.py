"""The process's heap as it stood before a run, kept out of the cyclic collector's walks.

Why: a run imports SQLAlchemy, the OpenAI SDK, pydantic, Jinja2, NumPy, and it holds the
project and the store, so the heap holds some hundreds of thousands of objects before
the first request. Every full (generation 2) collection walks all of them, and none of
them can become cyclic garbage because of the run. Measured on the runner bench
(``bench/runner_overhead.py``, 2,000 answers, a few full collections in a run), one
full collection costs about 110 ms, which is about 0.05 ms per answer. ``gc.freeze()``
moves the existing objects to the permanent generation, so during the run the collector
walks only what the run allocates. ``gc.unfreeze()`` at the end gives them back.
Reference counting still frees frozen objects that are dropped. A cycle among them is
collected after the run.

The young generation is collected every ``YOUNG`` allocations while the freeze is held,
not every 700: each answer allocates a few hundred container objects (its row, messages,
futures), almost all freed by reference counting, so the default threshold ran a young
collection every few answers and promoted whatever was in flight to be walked again
(0.02-0.03 ms per answer on the bench; none at 50,000). Cyclic garbage waits at most that
many allocations, a few megabytes.

The commands hold it too (``run_benchmark``, ``prefill``), not only the model runs they
make: reading a benchmark's gold allocates a row per decision, and on the bench's 3,000
items that read set off one full collection of the whole heap (~120 ms, 0.04 ms per
answer) before the first request was sent.

Process-wide state is counted: nested or concurrent runs (threads) share one freeze,
and only the last to finish unfreezes.
"""

from __future__ import annotations

import gc

from truthline.models._scope import RunScope

YOUNG = 50_000
"""Allocations between two young-generation collections while a run holds the freeze
(CPython's default is 700)."""
_before: list[tuple[int, ...]] = []
"""The collector's thresholds when the outermost run began (one entry while frozen)."""


def _freeze() -> None:
    gc.freeze()
    _before[:] = [gc.get_threshold()]
    gc.set_threshold(max(_before[0][0], YOUNG), *_before[0][1:])


def _unfreeze() -> None:
    gc.set_threshold(*_before.pop())
    gc.unfreeze()


frozen_heap = RunScope(_freeze, _unfreeze, nested=gc.freeze)
"""Decorates a run (a command such as ``run_benchmark``, or a model run's coroutine
function): it runs with the heap it found frozen. A run nested in another freezes again,
so what the outer one built before it (gold, requests) is left out of the walks too."""


def frozen_depth() -> int:
    """How many runs hold the freeze now (tests read it)."""
    return frozen_heap.depth


__all__ = ["frozen_depth", "frozen_heap"]
