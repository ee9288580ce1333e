"""SteelBench Table 22 (CRG by action group) on planted decisions whose CRG per group is
known: per gold action group, among the perception-correct decisions, the share with a
wrong safety judgment; cells under the minimum show "—" with their n; the pooled cell is
the loop's ``crg`` metric; the report section on a SIMULATED run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.benchmark.test_steel_tables import dec
from truthline.benchmark import _metrics as M
from truthline.project import load_project
from truthline.systems.steelbench import _tables as T
from truthline.systems.steelbench._metrics import _crg

ROOT = Path(__file__).resolve().parents[2] / "projects"
RS = M.Resampling(200, 0)

# (gold action, action right?, safety right?) per worker; one clip per worker.
PLAN: dict[str, list[tuple[str, bool, bool]]] = {
    # A: 4 perceived, 1 safety wrong -> 0.25; one misperceived (not counted, safety wrong)
    # B: 5 perceived, 3 safety wrong -> 0.60; D: 2 perceived, 0 wrong (under the minimum 3)
    "m1": [("A1", True, True)] * 3
    + [("A2", True, False), ("A3", False, False)]
    + [("B1", True, False)] * 3
    + [("B2", True, True)] * 2
    + [("D1", True, True)] * 2,
    # m2: A 3 perceived, 3 wrong -> 1.0; B 1 perceived (under), D 3 perceived, 0 wrong -> 0.0
    "m2": [("A1", True, False)] * 3 + [("B1", True, True)] + [("D1", True, True)] * 3,
}
WANT = {
    ("m1", "A"): (4, 0.25),
    ("m1", "B"): (5, 0.6),
    ("m1", "D"): (2, None),
    ("m1", "all"): (11, 4 / 11),
    ("m2", "A"): (3, 1.0),
    ("m2", "B"): (1, None),
    ("m2", "D"): (3, 0.0),
    ("m2", "all"): (7, 3 / 7),
}


@pytest.fixture(scope="module")
def project():
    return load_project(ROOT / "steel-safety")


def planted(project: Any) -> pd.DataFrame:
    rows = []
    for model, plan in PLAN.items():
        for k, (code, act_ok, saf_ok) in enumerate(plan):
            wrong = "F1" if code[0] != "F" else "A1"
            item = f"{model}_{k}"
            rows.append(dec(project, model, item, "P1", code, code if act_ok else wrong))
            truth = k % 2 == 0  # both directions of safety error occur
            rows.append(
                dec(project, model, item, "P1", truth, truth if saf_ok else not truth,
                    field="workers.safety_violation")
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_crg_per_group_matches_the_planted_counts(project):
    d = planted(project)
    got = {(r.model, r.group): r for r in T.crg_by_group(project, d, RS, min_perceived=3)}
    for key, (n, value) in WANT.items():
        assert got[key].perceived == n, key
        if value is None:
            assert got[key].crg is None, key
        else:
            assert got[key].crg.point == pytest.approx(value), key
            assert got[key].crg.low <= got[key].crg.point <= got[key].crg.high
    # every declared group has a cell, named from the taxonomy; empty groups show n=0
    assert {g for m, g in got if m == "m1"} == {"A", "B", "C", "D", "E", "F", "all"}
    assert got[("m1", "C")].perceived == 0 and got[("m1", "C")].crg is None
    assert got[("m1", "B")].name == "stationary work"
    # the pooled cell is the loop's crg metric on the same entry (same rows, same CI)
    for model, rows in T.entries(d).items():
        metric = _crg(T.scored(project, rows, RS))["value"]
        pooled = got[(model, "all")].crg
        assert (pooled.point, pooled.low, pooled.high) == pytest.approx(
            (metric.point, metric.low, metric.high)
        )


def test_crg_cells_show_dash_under_the_minimum(project):
    rows = T.crg_by_group(project, planted(project), RS, min_perceived=3)
    table = {r["model"]: r for r in T._crg_group_rows(rows)}
    assert table["m1"]["D material handling"] == "— (n=2)"
    assert table["m1"]["B stationary work"].startswith("0.60 [")
    assert table["m1"]["B stationary work"].endswith("(n=5)")
    assert table["m2"]["D material handling"].startswith("0.00")
    assert table["m1"]["n"] == 11
    (sec,) = T.crg_group_sections({"crg_groups": rows})
    assert "Table 22" in sec.title
    assert "under 3" in sec.blocks[0].text


def test_cluster_design_widens_the_interval(project):
    """Two workers per clip with the same outcome: the clip bootstrap resamples 3 clusters,
    so its interval is no narrower than the item-free decision bootstrap's."""
    rows = []
    outcomes = [True, False, True]
    for k, ok in enumerate(outcomes):
        for w in ("P1", "P2"):
            rows.append(dec(project, "m", f"c{k}", w, "B1", "B1"))
            rows.append(dec(project, "m", f"c{k}", w, True, ok, field="workers.safety_violation"))
    d = pd.DataFrame(rows)
    (b,) = [r for r in T.crg_by_group(project, d, RS, min_perceived=1) if r.group == "B"]
    assert b.perceived == 6 and b.crg.point == pytest.approx(1 / 3)
    assert b.crg.clusters == 3


def test_table22_in_the_report_of_a_simulated_run(bench_ws, tmp_path):
    from truthline.benchmark import RunConfig, leaderboard, run_benchmark
    from truthline.benchmark._report import ReportContext

    ws, project, _, _ = bench_ws
    man = run_benchmark(
        ws.store, project, RunConfig(models=["simulated:steel-weak"]), progress=False
    )
    board = leaderboard(ws.store, project, [man["run_id"]], resamples=0)
    ctx = ReportContext(ws.store, project, [man["run_id"]], {"leaderboard": board}, tmp_path,
                        resamples=50)  # fmt: skip
    secs = {s.title: s for s in T.report_sections(ctx)}
    assert "SteelBench: CRG by action group (Table 22)" in secs
    cells = ctx.data["steelbench"]["crg_groups"]
    pooled = next(c for c in cells if c["group"] == "all")
    assert pooled["perceived"] == sum(c["perceived"] for c in cells if c["group"] != "all")
    (entry,) = board
    assert pooled["crg"]["point"] == pytest.approx(M_point(entry.metrics["crg"]))


def M_point(v: Any) -> float:
    v = v.get("value") if isinstance(v, dict) else v
    return float(v["point"] if isinstance(v, dict) else v.point)
