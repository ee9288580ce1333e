"""PhysAlign (seeds/002, shared/PHYSALIGN.md): generated diagram problems with known answers,
observational annotation passes in Label Studio, the probe compiler (public/private records,
aliases drawn once, a leak check), blind-first double verification with adjudication, and the
probe protocol's reporting checklist.

Public API (imported on first use, so reading this package's plug-in entry points is cheap):

* ``generate`` — N seeded problems (diagrams + §3 truth records) under a folder.
* ``compile_release`` / ``compile_records`` — records -> release tree; ``leak_check_release``
  and ``LeakError``; ``validate`` against ``PUBLIC_SCHEMA`` / ``PRIVATE_SCHEMA``.
* ``write_import_tables`` — items metadata and labels for a physics-diagrams project.
* ``render_prompt`` — a probe as text (public record only); ``nearest`` — the frozen
  nearest-region rule on a public record (``NEAREST_RULE``, ``view_distance``, ``MARGIN_PX``),
  ``nearest_region`` — the same rule on a benchmark item's typed inputs.

Plugs into the loop (entry points in pyproject.toml): the ``probe_protocol`` metric, its
report section, the run-manifest fact ``nearest_rule`` and the ``truthline physalign`` CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthline._lazy import lazy_exports

_EXPORTS = {
    "COMPAT": "truthline.systems.physalign._compile",
    "MAX_K": "truthline.systems.physalign._compile",
    "Release": "truthline.systems.physalign._compile",
    "compile_records": "truthline.systems.physalign._compile",
    "compile_release": "truthline.systems.physalign._compile",
    "probe_rng": "truthline.systems.physalign._compile",
    "write_import_tables": "truthline.systems.physalign._export",
    "generate": "truthline.systems.physalign._generate",
    "LeakError": "truthline.systems.physalign._leak",
    "leak_check_release": "truthline.systems.physalign._leak",
    "MARGIN_PX": "truthline.systems.physalign._nearest",
    "NEAREST_RULE": "truthline.systems.physalign._nearest",
    "Nearest": "truthline.systems.physalign._nearest",
    "nearest": "truthline.systems.physalign._nearest",
    "nearest_region": "truthline.systems.physalign._nearest",
    "view_distance": "truthline.systems.physalign._nearest",
    "render_prompt": "truthline.systems.physalign._prompt",
    "RecordError": "truthline.systems.physalign._records",
    "read_jsonl": "truthline.systems.physalign._records",
    "read_records": "truthline.systems.physalign._records",
    "PRIVATE_SCHEMA": "truthline.systems.physalign._schemas",
    "PUBLIC_SCHEMA": "truthline.systems.physalign._schemas",
    "SchemaError": "truthline.systems.physalign._schemas",
    "validate": "truthline.systems.physalign._schemas",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = [
    "COMPAT",
    "MARGIN_PX",
    "MAX_K",
    "NEAREST_RULE",
    "PRIVATE_SCHEMA",
    "PUBLIC_SCHEMA",
    "LeakError",
    "Nearest",
    "RecordError",
    "Release",
    "SchemaError",
    "compile_records",
    "compile_release",
    "generate",
    "leak_check_release",
    "nearest",
    "nearest_region",
    "probe_rng",
    "read_jsonl",
    "read_records",
    "render_prompt",
    "validate",
    "view_distance",
    "write_import_tables",
]

if TYPE_CHECKING:
    from truthline.systems.physalign._compile import (
        COMPAT,
        MAX_K,
        Release,
        compile_records,
        compile_release,
        probe_rng,
    )
    from truthline.systems.physalign._export import write_import_tables
    from truthline.systems.physalign._generate import generate
    from truthline.systems.physalign._leak import LeakError, leak_check_release
    from truthline.systems.physalign._nearest import (
        MARGIN_PX,
        NEAREST_RULE,
        Nearest,
        nearest,
        nearest_region,
        view_distance,
    )
    from truthline.systems.physalign._prompt import render_prompt
    from truthline.systems.physalign._records import RecordError, read_jsonl, read_records
    from truthline.systems.physalign._schemas import (
        PRIVATE_SCHEMA,
        PUBLIC_SCHEMA,
        SchemaError,
        validate,
    )
