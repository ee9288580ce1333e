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

Process-wide state is counted: nested or concurrent runs (threads) share one freeze,
and only the last to finish unfreezes.
"""

from __future__ import annotations

import gc

from truthline.models._scope import RunScope

frozen_heap = RunScope(gc.freeze, gc.unfreeze)
"""Decorates a model run's coroutine function: it runs with the heap it found frozen."""


def frozen_depth() -> int:
    """How many runs hold the freeze now (tests read it)."""
    return frozen_heap.depth


__all__ = ["frozen_depth", "frozen_heap"]
