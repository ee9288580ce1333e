"""Project rule baselines for the physics-diagrams template (PhysAlign).

``rule:nearest-region`` grounds a label to the candidate region nearest to it, using only
public inputs: ``candidates`` (candidate id -> region centre ``[x, y]`` or box
``[x0, y0, x1, y1]``) and ``label_xy`` (where the label is printed). It does not read the
label, so ``reading`` stays at the majority answer. The items it gets wrong form the
"hard subset" of the benchmark report.
"""

from __future__ import annotations

import math
from typing import Any

from truthline.benchmark import majority_answer, rule


def _centre(region: Any) -> tuple[float, float]:
    xs = [float(v) for v in region]
    if len(xs) == 4:
        return (xs[0] + xs[2]) / 2, (xs[1] + xs[3]) / 2
    return xs[0], xs[1]


@rule("nearest-region")
def nearest_region(request: Any, support: dict[str, Any]) -> dict[str, Any]:
    """The candidate whose region centre is nearest the label (ties: first listed)."""
    answer = majority_answer(request, support)
    meta = request.context.get("meta") or {}
    cands, at = meta.get("candidates"), meta.get("label_xy")
    if cands and at:
        x, y = float(at[0]), float(at[1])
        answer["candidate"] = min(cands, key=lambda c: math.dist((x, y), _centre(cands[c])))
    return answer
