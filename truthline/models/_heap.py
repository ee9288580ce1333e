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

import functools
import gc
import threading
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_lock = threading.Lock()
_depth = 0


def _enter() -> None:
    global _depth
    with _lock:
        if _depth == 0:
            gc.freeze()
        _depth += 1


def _leave() -> None:
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0:
            gc.unfreeze()


def frozen_heap(
    fn: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Run the coroutine function ``fn`` with the heap it found frozen (see the module)."""

    @functools.wraps(fn)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        _enter()
        try:
            return await fn(*args, **kwargs)
        finally:
            _leave()

    return run


def frozen_depth() -> int:
    """How many runs hold the freeze now (tests read it)."""
    return _depth


__all__ = ["frozen_depth", "frozen_heap"]
