"""Provenance audit (blind vs anchored), annotator exclusion and gold with provenance.

Public API: ``run_audit`` -> ``AuditResult`` (``.as_dict()`` for the CLI and dashboards),
``finalize`` (gold snapshot with provenance), ``exclude_annotator``, ``import_table``,
``review_queue``, ``self_reference``, ``plan_sample_size`` and the report renderers.
"""

from truthline.audit._audit import AuditResult, run_audit
from truthline.audit._data import AuditData, flatten, load
from truthline.audit._gold import PROVENANCES, SLICES, GoldPolicy, GoldResult, in_slice, load_gold

__all__ = [
    "PROVENANCES",
    "SLICES",
    "AuditData",
    "AuditResult",
    "GoldPolicy",
    "GoldResult",
    "flatten",
    "in_slice",
    "load",
    "load_gold",
    "run_audit",
]
