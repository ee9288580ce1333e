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

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from truthline._lazy import lazy_exports

# public name -> defining module, imported on first use: importing a submodule (the
# stage's CLI for `--help`) loads none of the others (issue 28)
_EXPORTS = {
    "SLICES": "truthline.audit._gold",
    "in_slice": "truthline.audit._gold",
    "across_metrics": "truthline.benchmark._across",
    "rank_transfer_runs": "truthline.benchmark._across",
    "run_view": "truthline.benchmark._across",
    "load_project_rules": "truthline.benchmark._baselines",
    "majority_answer": "truthline.benchmark._baselines",
    "registered_rules": "truthline.benchmark._baselines",
    "rule": "truthline.benchmark._baselines",
    "export_release": "truthline.benchmark._export",
    "load_release": "truthline.benchmark._export",
    "Gold": "truthline.benchmark._gold",
    "GoldItem": "truthline.benchmark._gold",
    "load_gold": "truthline.benchmark._gold",
    "compare_labels": "truthline.benchmark._references",
    "RunScored": "truthline.benchmark._registry",
    "Scored": "truthline.benchmark._registry",
    "across_names": "truthline.benchmark._registry",
    "compute_metrics": "truthline.benchmark._registry",
    "compute_run_metrics": "truthline.benchmark._registry",
    "is_across": "truthline.benchmark._registry",
    "metric": "truthline.benchmark._registry",
    "registered_metrics": "truthline.benchmark._registry",
    "ReportContext": "truthline.benchmark._report",
    "across_sections": "truthline.benchmark._report",
    "write_report": "truthline.benchmark._report",
    "RunData": "truthline.benchmark._results",
    "compare_gold": "truthline.benchmark._results",
    "condition_change": "truthline.benchmark._results",
    "leaderboard": "truthline.benchmark._results",
    "list_runs": "truthline.benchmark._results",
    "load_run": "truthline.benchmark._results",
    "model_metrics": "truthline.benchmark._results",
    "paired_matrix": "truthline.benchmark._results",
    "run_decisions": "truthline.benchmark._results",
    "RunConfig": "truthline.benchmark._runner",
    "RunInterrupted": "truthline.benchmark._runner",
    "load_manifest": "truthline.benchmark._runner",
    "run_benchmark": "truthline.benchmark._runner",
    "score_answer": "truthline.benchmark._scoring",
    "BoardEntry": "truthline.benchmark._types",
    "EntryKey": "truthline.benchmark._types",
    "FieldBalanced": "truthline.benchmark._types",
    "GoldComparison": "truthline.benchmark._types",
    "PairedCell": "truthline.benchmark._types",
    "PairedMatrix": "truthline.benchmark._types",
    "SliceScores": "truthline.benchmark._types",
}
_lazy_getattr, _lazy_dir = lazy_exports(__name__, _EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "metrics":  # the module of pure metric functions on arrays
        import importlib

        return importlib.import_module("truthline.benchmark._metrics")
    return _lazy_getattr(name)


def __dir__() -> list[str]:
    return sorted([*_lazy_dir(), "metrics"])


if TYPE_CHECKING:
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
