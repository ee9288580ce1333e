"""``@metric(name, needs=...)``: a metric that reads other metrics' results is computed after
them (by depth, named order within a depth), its needs are computed once even when the
project does not name them (and not returned); an unknown need, a need across models and a
cycle of needs are refused before anything is computed. SteelBench's DRS goes through it,
and the steel-safety template loads SteelBench's metrics lazily."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pytest

from truthline.benchmark import _registry as R
from truthline.benchmark import compute_metrics, is_across, metric
from truthline.benchmark import metrics as M
from truthline.benchmark._runner import check_metric_names
from truthline.benchmark._scoring import _decision
from truthline.errors import TruthlineError
from truthline.project import Project

RS0 = M.Resampling(resamples=0)


@pytest.fixture
def toy(monkeypatch) -> list[str]:
    """Toy metrics registered for one test only (the registry is restored afterwards); the
    list records the order in which they are computed."""
    R.across_names()  # every plug-in imported first: none registers into the copies below
    monkeypatch.setattr(R._METRICS, "_items", dict(R._METRICS._items))
    monkeypatch.setattr(R._RUN_METRICS, "_items", dict(R._RUN_METRICS._items))
    monkeypatch.setattr(R, "_NEEDS", dict(R._NEEDS))
    calls: list[str] = []

    @metric("t_base")
    def _base(s: R.Scored) -> dict[str, Any]:
        calls.append("t_base")
        return {"value": 0.25}

    @metric("t_other")
    def _other(s: R.Scored) -> dict[str, Any]:
        calls.append("t_other")
        return {"value": 0.5}

    @metric("t_mid", needs=("t_base",))
    def _mid(s: R.Scored, results: Mapping[str, Any]) -> dict[str, Any]:
        calls.append("t_mid")
        return {"value": 2 * R.headline(results["t_base"]), "saw": sorted(results)}

    @metric("t_top", needs=("t_mid", "t_other"))
    def _top(s: R.Scored, results: Mapping[str, Any]) -> dict[str, Any]:
        calls.append("t_top")
        return {"value": R.headline(results["t_mid"]) + R.headline(results["t_other"])}

    return calls


def _steel_scored(project: Project) -> R.Scored:
    """Six workers: action right on four, safety judgment right on four."""
    rows = []
    cases = [  # (action gold, pred), (violation gold, pred)
        (("B1", "B1"), (True, True)),
        (("B1", "B2"), (True, False)),
        (("A1", "A1"), (False, True)),
        (("A1", "A1"), (False, False)),
        (("B2", "B2"), (True, True)),
        (("B2", "A1"), (False, False)),
    ]
    for item, ((ag, ap), (vg, vp)) in enumerate(cases):
        for leaf, g, p in (("workers.action", ag, ap), ("workers.safety_violation", vg, vp)):
            d = _decision(project.field(leaf), leaf, leaf, "P1", g, p, "")
            rows.append({"item_id": item, "parent": item, "stratum": None, "condition": None,
                         "meta": {}, "confidence": None, **d})  # fmt: skip
    ents = pd.DataFrame(
        [{"item_id": i, "list": "workers", "tp": 1, "fp": 0, "fn": 0} for i in range(6)]
    )
    return R.Scored(project, pd.DataFrame(rows), ents, RS0)


def _empty(project: Project) -> R.Scored:
    return R.Scored(project, pd.DataFrame(columns=["item_id", "field"]), pd.DataFrame(), RS0)


def test_a_metric_is_computed_after_its_needs_by_depth_in_named_order(toy, steel_project):
    s = _empty(steel_project)
    out = compute_metrics(s, ["t_top", "t_other", "t_mid"])
    # depth 0: t_other; depth 1: t_mid; depth 2: t_top (named order kept within a depth)
    assert list(out) == ["t_other", "t_mid", "t_top"]
    # t_base is needed but not named: computed (once, just before t_mid), not returned
    assert toy == ["t_other", "t_base", "t_mid", "t_top"]
    assert out["t_mid"]["saw"] == ["t_base", "t_other"]  # everything computed before it
    assert out["t_top"]["value"] == pytest.approx(1.0)
    assert R.metric_needs("t_top") == ("t_mid", "t_other") and R.metric_needs("t_base") == ()


def test_unnamed_needs_are_computed_once_and_not_returned(toy, steel_project):
    out = compute_metrics(_empty(steel_project), ["t_top", "t_mid", "t_top"])
    assert list(out) == ["t_mid", "t_top"]
    assert toy == ["t_base", "t_mid", "t_other", "t_top"]
    assert out["t_top"]["value"] == pytest.approx(1.0)


def test_an_unknown_need_is_refused_before_anything_runs(toy, steel_project):
    @metric("t_broken", needs=("t_base", "t_nowhere"))
    def _broken(s: R.Scored, results: Mapping[str, Any]) -> dict[str, Any]:
        raise AssertionError("never computed")

    with pytest.raises(KeyError, match=r"'t_broken' needs 't_nowhere', which is not registered"):
        compute_metrics(_empty(steel_project), ["t_other", "t_broken"])
    assert toy == []
    # the runner's check before any model call says the same, naming the project file
    named = steel_project.model_copy(
        update={"benchmark": steel_project.benchmark.model_copy(update={"metrics": ["t_broken"]})}
    )
    with pytest.raises(TruthlineError, match=r"\[benchmark\] metrics: .*needs 't_nowhere'"):
        check_metric_names(named)


def test_a_cycle_of_needs_is_refused_clearly(toy, steel_project):
    @metric("t_a", needs=("t_base", "t_b"))
    def _a(s: R.Scored, results: Mapping[str, Any]) -> dict[str, Any]:
        raise AssertionError("never computed")

    @metric("t_b", needs=("t_c",))
    def _b(s: R.Scored, results: Mapping[str, Any]) -> dict[str, Any]:
        raise AssertionError("never computed")

    @metric("t_c", needs=("t_a",))
    def _c(s: R.Scored, results: Mapping[str, Any]) -> dict[str, Any]:
        raise AssertionError("never computed")

    with pytest.raises(KeyError, match=r"in a cycle: t_a -> t_b -> t_c -> t_a"):
        compute_metrics(_empty(steel_project), ["t_other", "t_a"])
    with pytest.raises(KeyError, match=r"in a cycle: t_b -> t_c -> t_a -> t_b"):
        compute_metrics(_empty(steel_project), ["t_b"])
    assert toy == []


def test_needs_are_refused_where_they_cannot_mean_anything(toy, steel_project):
    with pytest.raises(ValueError, match="needs itself"):
        metric("t_self", needs=("t_self",))
    with pytest.raises(ValueError, match="needs is for per-model metrics"):
        metric("t_run", across=True, needs=("t_base",))

    @metric("t_run_metric", across=True)
    def _run(v: R.RunScored) -> dict[str, Any]:
        return {"value": None}

    @metric("t_wants_run", needs=("t_run_metric",))
    def _wants(s: R.Scored, results: Mapping[str, Any]) -> dict[str, Any]:
        raise AssertionError("never computed")

    with pytest.raises(KeyError, match=r"needs 't_run_metric', a metric across models"):
        compute_metrics(_empty(steel_project), ["t_wants_run"])


def _drs_before_needs(s: R.Scored, names: list[str]) -> dict[str, Any]:
    """DRS as the loop computed it before ``needs`` (a special case by name): the headline of
    every other named metric, plus the fixed ones it reads, then the checks."""
    from truthline.systems import steelbench

    out = {n: R._METRICS[n](s) for n in names if n != "drs" and n in R._METRICS}  # type: ignore[call-arg]
    values = {k: R.headline(v) for k, v in out.items()}
    for k in ("naudc", "crg", "safety_recall", "dwa", "accuracy", "macro_f1", "f2_detect"):
        if k not in values and k in R._METRICS:
            values[k] = R.headline(R._METRICS[k](s))  # type: ignore[call-arg]
    r = steelbench.drs(values, s.settings.checks)
    r["value"] = r["drs"]
    return r


def _same(a: Any, b: Any) -> bool:
    return R.plain(a) == R.plain(b)


def test_drs_reads_what_it_read_before_and_comes_after_the_others(steel_project):
    checks = {
        **steel_project.benchmark.checks,
        "ece": {"metric": "ece", "op": "<=", "threshold": 0.3},  # a named metric, not a need
        "credit": {"metric": "credit", "op": ">=", "threshold": 0.5},  # neither: fails
    }
    p = steel_project.model_copy(
        update={"benchmark": steel_project.benchmark.model_copy(update={"checks": checks})}
    )
    s = _steel_scored(p)
    alone = compute_metrics(s, ["drs"])
    assert list(alone) == ["drs"] and _same(alone["drs"], _drs_before_needs(s, ["drs"]))
    by_check = {r["check"]: r for r in alone["drs"]["checks"]}
    assert by_check["crg"]["value"] == pytest.approx(1 / 4)  # perceived 4, safety wrong on 1
    assert by_check["safety_recall"]["value"] == pytest.approx(2 / 3)
    assert np.isnan(by_check["ece"]["value"]) and np.isnan(by_check["credit"]["value"])
    named = ["drs", "ece", "accuracy", "routing_oracle"]
    out = compute_metrics(s, named)
    assert list(out) == ["ece", "accuracy", "drs"]
    assert _same(out["drs"], _drs_before_needs(s, named))
    # the steel-safety template's own list: same names, same order as it lists them
    listed = list(steel_project.benchmark.metrics)
    full = compute_metrics(_steel_scored(steel_project), listed)
    assert list(full) == [n for n in listed if not is_across(n)]
    assert _same(full["drs"], _drs_before_needs(_steel_scored(steel_project), listed))


def test_steelbench_metrics_load_lazily_when_a_project_names_them():
    code = (
        "import sys\n"
        "from truthline.benchmark import registered_metrics\n"
        "from truthline.benchmark._registry import metric_needs\n"
        "from truthline.benchmark._runner import check_metric_names\n"
        "from truthline.project import load_project\n"
        "from truthline.workspace import templates_dir\n"
        "names = registered_metrics()\n"
        "assert {'safety_recall', 'false_alarm_share', 'crg', 'dwa', 'drs'} <= set(names)\n"
        "before = [m for m in sys.modules if m.startswith('truthline.systems')]\n"
        "check_metric_names(load_project(templates_dir() / 'dori-visibility'))\n"
        "mid = [m for m in sys.modules if m.startswith('truthline.systems')]\n"
        "check_metric_names(load_project(templates_dir() / 'steel-safety'))\n"
        "print(before, mid, 'truthline.systems.steelbench._metrics' in sys.modules)\n"
        "print(metric_needs('drs'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first == "[] [] True"
    assert second == str(
        ("naudc", "crg", "safety_recall", "dwa", "accuracy", "macro_f1", "f2_detect")
    )
