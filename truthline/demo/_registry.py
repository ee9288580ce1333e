"""Demos other packages add to ``truthline demo`` (``--scenes`` runs SynDORBench's).

A demo is ``fn(workspace_dir, fresh, models, seed, as_json) -> None`` registered under the
name of its flag, here or through the entry-point group ``truthline.demos``; it prints its
own summary (or its result as JSON) and raises ``TruthlineError`` on bad input.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from truthline._registry import Registry

DemoFn = Callable[[Path | None, bool, list[str] | None, int, bool], None]

demos: Registry[DemoFn] = Registry("demo", entry_point_group="truthline.demos")
