"""Process-wide state that lives as long as some model run does.

Why one home: a run freezes the heap (``_heap``) and holds the bytes of the images it
hashed (``_images.HELD``). Both are process-wide, so nested or concurrent runs (threads)
must share them: the first run to start sets the state up, the last to end tears it down.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class RunScope:
    """A counted scope: ``first`` runs when the count leaves 0, ``last`` when it returns to 0.

    Used as a decorator on a run's coroutine function. ``lock`` (re-entrant) guards the
    count; state that must not change while a run starts or ends takes it too."""

    def __init__(self, first: Callable[[], None], last: Callable[[], None]):
        self.lock = threading.RLock()
        self.depth = 0
        self._first = first
        self._last = last

    def enter(self) -> None:
        with self.lock:
            if self.depth == 0:
                self._first()
            self.depth += 1

    def leave(self) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                self._last()

    def __call__(
        self, fn: Callable[P, Coroutine[Any, Any, T]]
    ) -> Callable[P, Coroutine[Any, Any, T]]:
        """``fn`` (a coroutine function) run inside this scope."""

        @functools.wraps(fn)
        async def run(*args: P.args, **kwargs: P.kwargs) -> T:
            self.enter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.leave()

        return run


__all__ = ["RunScope"]
