"""Provenance audit (blind vs anchored), annotator exclusion and gold with provenance.

Public API: ``run_audit`` -> ``AuditResult`` (``.as_dict()`` for the CLI and dashboards),
``finalize`` (gold snapshot with provenance), ``exclude_annotator``, ``import_table``,
``review_queue``, ``self_reference``, ``withdraw`` / ``withdrawals`` (items withdrawn
from the benchmark with a reason), ``plan_sample_size``, the report renderers
``to_markdown`` / ``to_html``, and the one gold writer: ``insert_snapshot`` (what finalize,
``write_known_truth`` for gold known by construction and ``benchmark.load_release`` write
through).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthline._lazy import lazy_exports

# public name -> defining module, imported on first use: importing a submodule (the
# stage's CLI for `--help`) loads none of the others (issue 28)
_EXPORTS = {
    "AuditResult": "truthline.audit._audit",
    "default_gradient_model": "truthline.audit._audit",
    "prediction_versions": "truthline.audit._audit",
    "run_audit": "truthline.audit._audit",
    "AuditData": "truthline.audit._data",
    "flatten": "truthline.audit._data",
    "load": "truthline.audit._data",
    "PROVENANCES": "truthline.audit._gold",
    "SLICES": "truthline.audit._gold",
    "Gold": "truthline.audit._gold",
    "GoldItem": "truthline.audit._gold",
    "GoldPolicy": "truthline.audit._gold",
    "GoldResult": "truthline.audit._gold",
    "in_slice": "truthline.audit._gold",
    "insert_snapshot": "truthline.audit._gold",
    "latest_snapshot": "truthline.audit._gold",
    "load_gold": "truthline.audit._gold",
    "resolve_snapshot": "truthline.audit._gold",
    "write_known_truth": "truthline.audit._gold",
    "ImportReport": "truthline.audit._import",
    "ImportTableError": "truthline.audit._import",
    "import_table": "truthline.audit._import",
    "Plan": "truthline.audit._ops",
    "QueueItem": "truthline.audit._ops",
    "exclude_annotator": "truthline.audit._ops",
    "exclusions": "truthline.audit._ops",
    "finalize": "truthline.audit._ops",
    "plan_sample_size": "truthline.audit._ops",
    "queue_rows": "truthline.audit._ops",
    "review_queue": "truthline.audit._ops",
    "self_reference": "truthline.audit._ops",
    "to_html": "truthline.audit._report",
    "to_markdown": "truthline.audit._report",
    "AnnotatorSignals": "truthline.audit._results",
    "OverrideLow": "truthline.audit._results",
    "ProvenanceGradient": "truthline.audit._results",
    "VlmKappaHigh": "truthline.audit._results",
    "ZeroProductive": "truthline.audit._results",
    "Withdrawal": "truthline.audit._withdraw",
    "reason_counts": "truthline.audit._withdraw",
    "withdraw": "truthline.audit._withdraw",
    "withdrawals": "truthline.audit._withdraw",
}
_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS)
__getattr__ = _lazy_getattr

if TYPE_CHECKING:
    from truthline.audit._audit import (
        AuditResult,
        default_gradient_model,
        prediction_versions,
        run_audit,
    )
    from truthline.audit._data import AuditData, flatten, load
    from truthline.audit._gold import (
        PROVENANCES,
        SLICES,
        Gold,
        GoldItem,
        GoldPolicy,
        GoldResult,
        in_slice,
        insert_snapshot,
        latest_snapshot,
        load_gold,
        resolve_snapshot,
        write_known_truth,
    )
    from truthline.audit._import import ImportReport, ImportTableError, import_table
    from truthline.audit._ops import (
        Plan,
        QueueItem,
        exclude_annotator,
        exclusions,
        finalize,
        plan_sample_size,
        queue_rows,
        review_queue,
        self_reference,
    )
    from truthline.audit._report import to_html, to_markdown
    from truthline.audit._results import (
        AnnotatorSignals,
        OverrideLow,
        ProvenanceGradient,
        VlmKappaHigh,
        ZeroProductive,
    )
    from truthline.audit._withdraw import Withdrawal, reason_counts, withdraw, withdrawals

__all__ = [
    "PROVENANCES",
    "SLICES",
    "AnnotatorSignals",
    "AuditData",
    "AuditResult",
    "Gold",
    "GoldItem",
    "GoldPolicy",
    "GoldResult",
    "ImportReport",
    "ImportTableError",
    "OverrideLow",
    "Plan",
    "ProvenanceGradient",
    "QueueItem",
    "VlmKappaHigh",
    "Withdrawal",
    "ZeroProductive",
    "default_gradient_model",
    "exclude_annotator",
    "exclusions",
    "finalize",
    "flatten",
    "import_table",
    "in_slice",
    "insert_snapshot",
    "latest_snapshot",
    "load",
    "load_gold",
    "plan_sample_size",
    "prediction_versions",
    "queue_rows",
    "reason_counts",
    "resolve_snapshot",
    "review_queue",
    "run_audit",
    "self_reference",
    "to_html",
    "to_markdown",
    "withdraw",
    "withdrawals",
    "write_known_truth",
]
