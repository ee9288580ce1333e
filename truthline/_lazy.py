"""Package attributes imported on first use (PEP 562), for packages whose ``__init__`` must
stay cheap.

A paper system's package is imported whenever one of its plug-in entry points is read (the
``truthline --help`` listing reads its CLI group's one-line help), so its public API is
declared here as ``name -> module`` and each module is imported only when an attribute of it
is asked for. Type checkers see the same names through an ``if TYPE_CHECKING:`` import block
beside the table.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps a public name to the module
    that defines it (``"name"`` or ``"name:attr"`` when the module calls it otherwise)."""

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        globals_ = importlib.import_module(package).__dict__
        globals_[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
