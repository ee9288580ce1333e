"""Process-wide state that lives as long as some model run does.

Why one home: a run freezes the heap (``_heap``) and holds the bytes of the images it
hashed (``_images.HELD``). Both are process-wide, so nested or concurrent runs (threads)
must share them: the first run to start sets the state up, the last to end tears it down.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

P = ParamSpec("P")
T = TypeVar("T")


class RunScope:
    """A counted scope: ``first`` runs when the count leaves 0, ``last`` when it returns to 0
    (``nested``, when given, on every other entry).

    Used as a decorator on a run's function (a coroutine function or a plain one), or as a
    context manager (a command such as ``run_benchmark`` holds the scope around the model
    runs it makes, without importing the models package at its own import). ``lock``
    (re-entrant) guards the count; state that must not change while a run starts or ends
    takes it too."""

    def __init__(
        self,
        first: Callable[[], None],
        last: Callable[[], None],
        nested: Callable[[], None] | None = None,
    ):
        self.lock = threading.RLock()
        self.depth = 0
        self._first = first
        self._last = last
        self._nested = nested

    def enter(self) -> None:
        with self.lock:
            if self.depth == 0:
                self._first()
            elif self._nested is not None:
                self._nested()
            self.depth += 1

    def leave(self) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                self._last()

    def __enter__(self) -> RunScope:
        self.enter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.leave()

    def __call__(self, fn: Callable[P, T]) -> Callable[P, T]:
        """``fn`` run inside this scope (awaited inside it when a coroutine function)."""
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def arun(*args: P.args, **kwargs: P.kwargs) -> Any:
                with self:
                    return await fn(*args, **kwargs)

            return cast(Callable[P, T], arun)

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            with self:
                return fn(*args, **kwargs)

        return run


__all__ = ["RunScope"]
