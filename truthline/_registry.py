"""One registry helper behind every ``@decorator("name")`` in truthline.

Backends, coefficients, metrics, baselines, field types and simulation profiles are all
"a name → an object" table filled by a decorator. ``Registry`` is that table once: a
duplicate name is an error (two plug-ins silently shadowing each other is a bug nobody
sees), an unknown name is one clear line listing what exists, and an optional
entry-point group lets third-party packages add names without truthline importing them:
an entry point is loaded only when its name is asked for, so heavy libraries (torch,
ultralytics) stay unimported until used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

from truthline.errors import TruthlineError

T = TypeVar("T")


class Registry(Generic[T]):
    """Names → objects of one kind, filled by ``@registry.register(name)``."""

    def __init__(self, kind: str, entry_point_group: str | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._items: dict[str, T] = {}
        self._pending: dict[str, EntryPoint] | None = None

    def register(self, name: str, *, replace: bool = False) -> Callable[[T], T]:
        """A decorator that registers its argument under ``name`` and returns it unchanged."""

        def deco(obj: T) -> T:
            self.add(name, obj, replace=replace)
            return obj

        return deco

    def add(self, name: str, obj: T, *, replace: bool = False) -> None:
        """Register ``obj`` under ``name`` (what the decorator does, for non-decorator use)."""
        old = self._items.get(name)
        # The same object twice (a module imported again) is harmless; another one is a clash.
        if old is not None and old is not obj and not replace:
            raise TruthlineError(
                f"{self.kind} {name!r} is already registered ({_describe(old)}); "
                f"pass replace=True to override it with {_describe(obj)}"
            )
        self._items[name] = obj

    def _entry_points(self) -> dict[str, EntryPoint]:
        """Entry points of the group, read once (names only; nothing is imported here)."""
        if self._pending is None:
            self._pending = {}
            if self.entry_point_group:
                for ep in entry_points(group=self.entry_point_group):
                    self._pending.setdefault(ep.name, ep)
        return self._pending

    def _load(self, name: str) -> None:
        ep = self._entry_points().pop(name, None)
        if ep is None or name in self._items:
            return
        try:
            obj = ep.load()
        except ImportError as exc:
            raise TruthlineError(
                f"{self.kind} {name!r}: its plug-in {ep.value!r} "
                f"(entry point group {self.entry_point_group!r}) cannot be imported: {exc}"
            ) from exc
        # Loading usually registers through the decorator; a bare object registers here.
        if name not in self._items:
            self._items[name] = obj

    def get(self, name: str) -> T:
        """The object registered as ``name``; an unknown name lists the registered ones."""
        if name not in self._items:
            self._load(name)
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise TruthlineError(f"unknown {self.kind} {name!r} (registered: {known})") from None

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def names(self) -> list[str]:
        """Every registered name, plug-ins not yet loaded included, sorted."""
        return sorted(set(self._items) | set(self._entry_points()))

    def as_dict(self) -> dict[str, T]:
        """A copy of the loaded entries in registration order (plug-ins not yet loaded are
        left out): for callers whose output order is the order of definition."""
        return dict(self._items)

    def items(self) -> list[tuple[str, T]]:
        """``(name, object)`` for every name (loads every plug-in), sorted by name."""
        return [(n, self.get(n)) for n in self.names()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._items or name in self._entry_points())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self)} names)"


def _describe(obj: object) -> str:
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None)
    return f"{mod}.{qual}" if mod and qual else repr(obj)
