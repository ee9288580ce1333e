"""Project rule baselines for the physics-diagrams template (PhysAlign, PHYSALIGN.md §9).

``rule:nearest-region`` is the frozen ``nearest-region/v1`` rule: the candidate whose image
views (bbox rectangle, or polyline segments) lie nearest the anchor's bbox centre, from the
item's typed public inputs only (``anchor`` / ``label_xy`` and ``candidates``). It does not
read the label, so the reading field (``read``) stays at the majority answer. Malformed inputs raise: the
item's outcome is then ``error`` with the exception named. The items on which the rule is
applicable and wrong form the hard subset of the report; the rule is scored on the items
where it applies (``applies``), with its coverage beside the score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from truthline.benchmark import majority_answer, rule
from truthline.systems.physalign import nearest_region


def applicable(meta: Mapping[str, Any]) -> bool:
    """The rule's support H: an image anchor, every candidate with an image view and a
    clear nearest one (malformed inputs are outside it; their run records the error)."""
    try:
        return nearest_region(meta).applicable
    except (ValueError, TypeError, KeyError):
        return False


@rule("nearest-region", applies=applicable)
def nearest_region_rule(request: Any, support: dict[str, Any]) -> dict[str, Any]:
    """The candidate nearest the anchor (ties: first listed)."""
    answer = majority_answer(request, support)
    # the runner hands a rule the item's candidates under the project's ground_field
    ground = next(iter(request.context.get("item_candidates") or {}), "owner")
    answer[ground] = nearest_region(request.context.get("meta") or {}).alias
    return answer
