"""Built-in scene environments: every module here is imported (and so registered) on first
use of :func:`truthline.scenes.get_environment`. Modules import on the host without bpy."""

from __future__ import annotations

import importlib
import pkgutil

failed: dict[str, str] = {}
"""Modules that could not be imported: name -> error (shown when an environment is missing)."""


def _load_all() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        try:
            importlib.import_module(f"{__name__}.{info.name}")
        except Exception as exc:  # one broken environment must not hide the others
            failed[info.name] = f"{type(exc).__name__}: {exc}"


_load_all()
