"""The loop's vocabulary: the one definition of each set of names that crosses packages.

Every member is a ``StrEnum``: it *is* its string (``Arm.BLIND == "blind"``, hashes like it,
formats and serializes to JSON as it), so values read from the store, a project file or a
CLI option compare equal to the members and ``--json`` output is unchanged. Stdlib only:
every package, the core included, may import it.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "PUSH_ARMS",
    "REVIEW_ARMS",
    "Arm",
    "Direction",
    "Outcome",
    "Provenance",
    "Slice",
]


class Arm(StrEnum):
    """How an annotation was made (``annotations.arm``, ``arm_assignments.arm``)."""

    BLIND = "blind"
    """No model output shown."""
    ANCHORED = "anchored"
    """A model's prefill shown as a pre-annotation."""
    REVIEW = "review"
    """Tier-2 expert review of the tier-1 annotations (the expert reference)."""
    ADJUDICATION = "adjudication"
    """Tier-2 resolution of a disagreement."""
    IMPORT = "import"
    """Labels imported from a table (``audit import``)."""


PUSH_ARMS: tuple[Arm, ...] = (Arm.BLIND, Arm.ANCHORED, Arm.REVIEW)
"""The arms ``annotate push`` creates Label Studio projects for."""

REVIEW_ARMS: tuple[Arm, ...] = (Arm.REVIEW, Arm.ADJUDICATION)
"""Tier-2 arms: never counted as independent tier-1 labels."""


class Slice(StrEnum):
    """Gold slices by provenance (METRICS.md §4; ``truthline.audit.in_slice`` decides)."""

    ALL = "all"
    BLIND = "blind"
    ANCHORED = "anchored"
    VLM_SOURCED = "vlm-sourced"


class Provenance(StrEnum):
    """Where a gold value came from (``gold.provenance`` of a finalized snapshot)."""

    EXPERT = "expert"
    BLIND_CONSENSUS = "blind_consensus"
    ANCHORED_KEPT = "anchored_kept"
    """An annotator shown the prefill kept it: the VLM-sourced slice."""
    ANCHORED_CORRECTED = "anchored_corrected"
    ADJUDICATED = "adjudicated"


class Direction(StrEnum):
    """Direction of an anchored decision against the expert reference (audit §3)."""

    PRODUCTIVE_ANCHORING = "productive_anchoring"
    HARMFUL_ANCHORING = "harmful_anchoring"
    HARMFUL_OVERRIDE = "harmful_override"
    PRODUCTIVE_OVERRIDE = "productive_override"
    WRONG_OVERRIDE = "wrong_override"

    @property
    def label(self) -> str:
        """``"productive anchoring"``: how reports and pages name it."""
        return self.value.replace("_", " ")


class Outcome(StrEnum):
    """How one model answer ended (``benchmark samples --outcome``)."""

    OK = "ok"
    REFUSED = "refused"
    TRUNCATED = "truncated"
    PARSE_ERROR = "parse_error"
    INFRA_MISSING = "infra_missing"
    ERROR = "error"
