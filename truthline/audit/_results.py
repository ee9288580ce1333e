"""Typed audit results that other packages read: the provenance gradient and the exclusion
signals per annotator.

The CLI, the dashboards, the reports and the demo all read these two; as nested dicts a
renamed key failed silently (``.get`` returned ``None``) in one of them. They are frozen
dataclasses now, read by attribute. ``to_dict()`` gives the JSON form, key for key what
``--json`` printed before; ``res["key"]`` still works on each of them (a read-only
mapping view, CI objects kept) so dict-reading callers keep working while they move over.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from truthline.stats import CI


def plain(obj: Any) -> Any:
    """JSON-able form of an audit value: CIs as dicts, NaN as ``None``, numpy scalars as
    Python numbers, typed results through their ``to_dict``."""
    if isinstance(obj, CI):
        return {
            k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in obj.as_dict().items()
        }
    if isinstance(obj, _View):
        return obj.to_dict()
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


class _View(Mapping[str, Any]):
    """Read-only mapping over a dataclass's fields, in declaration order."""

    def _keys(self) -> list[str]:
        return [f.name for f in fields(self)]  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def to_dict(self) -> dict[str, Any]:
        return {k: plain(getattr(self, k)) for k in self._keys()}


@dataclass(frozen=True, eq=False)
class ProvenanceGradient(_View):
    """One set of predictions scored against three references (METRICS.md, provenance
    gradient): blind-arm labels, anchored-arm labels and VLM-sourced gold."""

    predictions: str | None
    blind: CI
    anchored: CI
    vlm_sourced: CI
    inflation_pp: CI
    """VLM-sourced minus blind agreement, in percentage points."""

    @classmethod
    def from_section(cls, s: Mapping[str, Any]) -> ProvenanceGradient:
        return cls(**{f.name: s[f.name] for f in fields(cls)})


@dataclass(frozen=True, eq=False)
class OverrideLow(_View):
    """Overrides the prefill far less often than the least-overriding teammate."""

    value: float
    team_range: list[float]
    threshold: float
    ratio_to_team_low: float
    fired: bool


@dataclass(frozen=True, eq=False)
class VlmKappaHigh(_View):
    """Agrees with the model more than any teammate does, by a margin."""

    value: float
    team_range: list[float]
    threshold: float
    fired: bool


@dataclass(frozen=True, eq=False)
class ZeroProductive(_View):
    """Never corrected the model although it was wrong often enough to have to."""

    value: int
    vlm_errors: int
    min_vlm_errors: int
    team_range: list[int] | None
    fired: bool


Signal = OverrideLow | VlmKappaHigh | ZeroProductive


@dataclass(frozen=True, eq=False)
class AnnotatorSignals(_View):
    """One annotator's exclusion signals against the team range; flagged when two fire.
    An excluded annotator keeps its entry (``excluded``): the evidence stays visible."""

    signals: dict[str, Signal]
    fired: list[str]
    flagged: bool
    excluded: bool
