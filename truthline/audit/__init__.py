"""Provenance audit (blind vs anchored), annotator exclusion and gold with provenance.

Public API: ``run_audit`` -> ``AuditResult`` (``.as_dict()`` for the CLI and dashboards),
``finalize`` (gold snapshot with provenance), ``exclude_annotator``, ``import_table``,
``review_queue``, ``self_reference``, ``withdraw`` / ``withdrawals`` (items withdrawn
from the benchmark with a reason), ``plan_sample_size``, the report renderers
``to_markdown`` / ``to_html``, and the one gold writer: ``insert_snapshot`` (what finalize,
``write_known_truth`` for gold known by construction and ``benchmark.load_release`` write
through).
"""

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
