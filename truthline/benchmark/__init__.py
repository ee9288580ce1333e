"""Benchmark: the embedded runner over gold, the scoring contract, metrics, reports, export.

Public API: ``run_benchmark``/``RunConfig`` (run or resume; ``RunInterrupted`` on
Ctrl-C/SIGTERM), ``load_run``, ``model_metrics``, ``leaderboard``, ``compare_gold`` (a run
on its gold's provenance slices), ``compare_labels`` (the same answers against each arm's own
labels, the SteelBench Fig. 13 design), ``paired_matrix`` (typed results for the CLI, report, dashboards and systems: ``EntryKey``, a
run entry and the one way it is written; ``BoardEntry``, ``GoldComparison`` of
``SliceScores``, ``PairedMatrix`` of ``PairedCell``s, each with ``as_dict()`` for the JSON
edge), ``condition_change`` (plain data), ``write_report`` (a paper system's report section
receives a ``ReportContext`` and returns ``truthline.report.Section``s; ``across_sections``
shows the metrics across models), ``export_release``/``load_release``, the metric
registry (``metric``; ``metric(name, across=True)`` for metrics comparing the models of a
run, computed by ``across_metrics``) and the rule-baseline registry (``rule``; a project adds
rules in ``rules.py`` beside its definition, see ``load_project_rules``). Pure metric
functions on arrays live in ``truthline.benchmark.metrics``.
"""

from truthline.audit._gold import SLICES, in_slice
from truthline.benchmark import _metrics as metrics
from truthline.benchmark._across import across_metrics, rank_transfer_runs, run_view
from truthline.benchmark._baselines import (
    load_project_rules,
    majority_answer,
    registered_rules,
    rule,
)
from truthline.benchmark._export import export_release, load_release
from truthline.benchmark._gold import Gold, GoldItem, load_gold
from truthline.benchmark._references import compare_labels
from truthline.benchmark._registry import (
    RunScored,
    Scored,
    across_names,
    compute_metrics,
    compute_run_metrics,
    is_across,
    metric,
    registered_metrics,
)
from truthline.benchmark._report import ReportContext, across_sections, write_report
from truthline.benchmark._results import (
    RunData,
    compare_gold,
    condition_change,
    leaderboard,
    list_runs,
    load_run,
    model_metrics,
    paired_matrix,
    run_decisions,
)
from truthline.benchmark._runner import RunConfig, RunInterrupted, load_manifest, run_benchmark
from truthline.benchmark._scoring import score_answer
from truthline.benchmark._types import (
    BoardEntry,
    EntryKey,
    FieldBalanced,
    GoldComparison,
    PairedCell,
    PairedMatrix,
    SliceScores,
)

__all__ = [
    "SLICES",
    "BoardEntry",
    "EntryKey",
    "FieldBalanced",
    "Gold",
    "GoldComparison",
    "GoldItem",
    "PairedCell",
    "PairedMatrix",
    "ReportContext",
    "RunConfig",
    "RunData",
    "RunInterrupted",
    "RunScored",
    "Scored",
    "SliceScores",
    "across_metrics",
    "across_names",
    "across_sections",
    "compare_gold",
    "compare_labels",
    "compute_metrics",
    "compute_run_metrics",
    "condition_change",
    "export_release",
    "in_slice",
    "is_across",
    "leaderboard",
    "list_runs",
    "load_gold",
    "load_manifest",
    "load_project_rules",
    "load_release",
    "load_run",
    "majority_answer",
    "metric",
    "metrics",
    "model_metrics",
    "paired_matrix",
    "rank_transfer_runs",
    "registered_metrics",
    "registered_rules",
    "rule",
    "run_benchmark",
    "run_decisions",
    "run_view",
    "score_answer",
    "write_report",
]
