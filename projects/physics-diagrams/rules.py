"""Project rule baselines for the physics-diagrams template (PhysAlign, PHYSALIGN.md §9).

``rule:nearest-region`` is the frozen ``nearest-region/v1`` rule: the candidate whose image
views (bbox rectangle, or polyline segments) lie nearest the anchor's bbox centre, from the
item's typed public inputs only (``anchor`` / ``label_xy`` and ``candidates``). It does not
read the label, so ``reading`` stays at the majority answer. Malformed inputs raise: the
item's outcome is then ``error`` with the exception named. The items on which the rule is
applicable and wrong form the hard subset of the report.
"""

from __future__ import annotations

from typing import Any

from truthline.benchmark import majority_answer, rule
from truthline.systems.physalign import nearest_region


@rule("nearest-region")
def nearest_region_rule(request: Any, support: dict[str, Any]) -> dict[str, Any]:
    """The candidate nearest the anchor (ties: first listed)."""
    answer = majority_answer(request, support)
    answer["candidate"] = nearest_region(request.context.get("meta") or {}).alias
    return answer
