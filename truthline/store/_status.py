"""What the store holds for one project, per stage of the loop: a typed result that the
CLI (``truthline status``), the dashboards' overview and the audit read.

``to_dict()`` is the JSON form ``truthline status --json`` prints (same keys, same order).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class PredictionCounts:
    total: int
    by_model: dict[str, dict[str, int]]
    """model version -> prediction status -> count."""


@dataclass(frozen=True)
class AnnotationCounts:
    total: int
    by_arm_tier: dict[str, int]
    """``"<arm>/tier<n>"`` -> annotated tasks."""
    annotators: int


@dataclass(frozen=True)
class GoldCounts:
    snapshots: int
    latest: str | None
    """Hash of the newest snapshot (``resolve_snapshot``'s rule), ``None`` without gold."""
    values: int
    """Gold values in the newest snapshot."""


@dataclass(frozen=True)
class StageCounts:
    """Counts per stage: items, predictions, annotations, gold, runs, exclusions."""

    project: str
    items: int
    skipped_media: int
    predictions: PredictionCounts
    model_cost_usd: float
    annotations: AnnotationCounts
    gold: GoldCounts
    runs: int
    exclusions: int
    """Active exclusion decisions."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
