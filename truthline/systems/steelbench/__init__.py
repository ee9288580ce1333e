"""SteelBench (seeds/001): what is SteelBench's own on top of the generic loop — its
diagnostic metrics. The loop (gold, runner, scoring, the generic metrics such as accuracy,
macro-F1, ECE, nAUDC and F2-detect, reports) serves it unchanged; the steel-safety template
(``projects/steel-safety``) names these metrics and the loop imports ``_metrics`` the first
time a project names one.

Public API (imported on first use):

* ``crg`` — the conditional reasoning gap on arrays (among decisions with the action
  perceived correctly, the share with a wrong safety judgment), with a bootstrap CI.
* ``drs`` — the diagnostic readiness score: the share of declared checks passed on headline
  values, also under a ±10% threshold relaxation and tightening; ``DRS_NEEDS``, the metrics
  it computes even when a project does not list them.

Plugs into the loop (``truthline.metrics`` entry points in pyproject.toml): the metrics
``safety_recall``, ``false_alarm_share``, ``crg``, ``dwa`` and ``drs`` (``drs`` declares
``needs``, so the loop computes the metrics it reads first), and ``_tables``: the appendix
analyses (per-zone accuracy and the zone-ranking Spearman, the domain table, accuracy by
worker count with its slope, safety error directions, the DRS threshold sensitivity,
Cramér's V of camera and visibility, the human reference and each model's gap to it) as
report sections (entry point ``truthline.report_sections``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthline._lazy import lazy_exports

_EXPORTS = {
    "DRS_NEEDS": "truthline.systems.steelbench._metrics",
    "crg": "truthline.systems.steelbench._metrics",
    "drs": "truthline.systems.steelbench._metrics",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["DRS_NEEDS", "crg", "drs"]

if TYPE_CHECKING:
    from truthline.systems.steelbench._metrics import DRS_NEEDS, crg, drs
