"""Benchmark: the embedded runner over gold, the scoring contract, metrics, reports, export.

Public API: ``run_benchmark``/``RunConfig`` (run or resume), ``load_run``, ``model_metrics``,
``leaderboard``, ``compare_gold``, ``paired_matrix``, ``condition_change`` (plain data for
the CLI and dashboards), ``write_report``, ``export_release``/``load_release``, the metric
registry (``metric``) and the rule-baseline registry (``rule``). Pure metric functions on
arrays live in ``truthline.benchmark.metrics``.
"""

from truthline.audit._gold import SLICES, in_slice
from truthline.benchmark import _metrics as metrics
from truthline.benchmark._baselines import registered_rules, rule
from truthline.benchmark._export import export_release, load_release
from truthline.benchmark._gold import Gold, GoldItem, load_gold
from truthline.benchmark._registry import Scored, compute_metrics, metric, registered_metrics
from truthline.benchmark._report import write_report
from truthline.benchmark._results import (
    RunData,
    compare_gold,
    condition_change,
    leaderboard,
    list_runs,
    load_run,
    model_metrics,
    paired_matrix,
)
from truthline.benchmark._runner import RunConfig, load_manifest, run_benchmark
from truthline.benchmark._scoring import score_answer

__all__ = [
    "SLICES",
    "Gold",
    "GoldItem",
    "RunConfig",
    "RunData",
    "Scored",
    "compare_gold",
    "compute_metrics",
    "condition_change",
    "export_release",
    "in_slice",
    "leaderboard",
    "list_runs",
    "load_gold",
    "load_manifest",
    "load_release",
    "load_run",
    "metric",
    "metrics",
    "model_metrics",
    "paired_matrix",
    "registered_metrics",
    "registered_rules",
    "rule",
    "run_benchmark",
    "score_answer",
    "write_report",
]
