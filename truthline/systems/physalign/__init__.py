"""PhysAlign data side: generated diagram problems with known answers, observational
annotation passes in Label Studio, the probe compiler (public/private records, aliases drawn
once, a leak check), and blind-first double verification with adjudication.

The specification is shared/PHYSALIGN.md (§1-4 probe records, §12 verification, §14 the
Label Studio mapping). Public API:

* ``generate`` — N seeded problems (diagrams + §3 truth records) under a folder.
* ``compile_release`` / ``compile_records`` — records -> release tree; ``leak_check_release``
  and ``LeakError``; ``validate`` against ``PUBLIC_SCHEMA`` / ``PRIVATE_SCHEMA``.
* ``write_import_tables`` — items metadata and labels for a physics-diagrams project.
* ``render_prompt`` — a probe as text (public record only); ``nearest`` — the frozen
  nearest-region rule (``NEAREST_RULE``, ``view_distance``, ``MARGIN_PX``).
"""

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
from truthline.systems.physalign._nearest import MARGIN_PX, nearest, view_distance
from truthline.systems.physalign._nearest import RULE as NEAREST_RULE
from truthline.systems.physalign._prompt import render_prompt
from truthline.systems.physalign._records import RecordError, read_jsonl, read_records
from truthline.systems.physalign._schemas import PRIVATE_SCHEMA, PUBLIC_SCHEMA, SchemaError, validate

__all__ = [
    "COMPAT",
    "MARGIN_PX",
    "MAX_K",
    "NEAREST_RULE",
    "PRIVATE_SCHEMA",
    "PUBLIC_SCHEMA",
    "LeakError",
    "RecordError",
    "Release",
    "SchemaError",
    "compile_records",
    "compile_release",
    "generate",
    "leak_check_release",
    "nearest",
    "probe_rng",
    "read_jsonl",
    "read_records",
    "render_prompt",
    "validate",
    "view_distance",
    "write_import_tables",
]
