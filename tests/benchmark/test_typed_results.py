"""Typed benchmark results: ``EntryKey`` writes an entry one way (with the parameters where
the CLI, report, dashboards and across-model ids differ), and the results' ``as_dict()`` is
exactly the dict the JSON edge printed before they were typed (same keys, same order)."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError

import pytest

from truthline.benchmark import (
    BoardEntry,
    EntryKey,
    FieldBalanced,
    GoldComparison,
    PairedCell,
    PairedMatrix,
    SliceScores,
    compare_gold,
    leaderboard,
    list_runs,
    paired_matrix,
)
from truthline.benchmark._types import as_plain

PLAIN = EntryKey("m")
GT = EntryKey("m", "", "gt", "")
V3 = EntryKey("m", "v3", "base", "")
FULL = EntryKey("m", "v3", "gt", "no-image")
CTRL = EntryKey("m", "", "base", "reorder")


def _old_report_label(m: dict) -> str:  # benchmark/_report.py before the types
    extra = [
        x
        for x in (m["variant"], m["condition"] if m["condition"] != "base" else "", m["control"])
        if x
    ]
    return (
        m["model"]
        + (f" ({', '.join(extra)})" if extra else "")
        + (" [SIMULATED]" if m.get("simulated") else "")
    )


def _old_cli_label(r: dict) -> str:  # `benchmark show` before the types
    label = r["model"] + (" [SIMULATED]" if r["simulated"] else "")
    extra = "/".join(
        x
        for x in (r["variant"], r["condition"] if r["condition"] != "base" else "", r["control"])
        if x
    )
    return label + (f" ({extra})" if extra else "")


def _old_entry_label(e: tuple) -> str:  # benchmark/_across.py and paired_matrix
    return "|".join(x for x in e if x) if e[1:] != ("", "base", "") else e[0]


def _old_dashboard_label(row: dict) -> str:  # dashboards' Benchmark page
    extra = [x for x in (row.get("variant"), row.get("control")) if x]
    if row.get("condition") not in (None, "", "base"):
        extra.append(str(row["condition"]))
    return row["model"] + (f" [{', '.join(extra)}]" if extra else "")


def _old_samples_label(r: dict) -> str:  # dashboards' Samples page (after the item)
    label = r["model"] + "".join(f" · {x}" for x in (r["variant"], r["control"]) if x)
    if r["condition"] not in ("base", ""):
        label += f" · {r['condition']}"
    return label


KEYS = [
    PLAIN,
    GT,
    V3,
    FULL,
    CTRL,
    EntryKey("m", "", "", ""),
    EntryKey("m", "v", "", ""),
    EntryKey("m", "", "prefill", ""),
]


@pytest.mark.parametrize("key", KEYS, ids=[k.manifest_key for k in KEYS])
@pytest.mark.parametrize("simulated", [False, True])
def test_one_label_method_gives_every_place_its_old_form(key, simulated):
    row = {**key.as_dict(), "simulated": simulated}
    assert key.label(simulated=simulated) == _old_report_label(row)
    assert key.label("/", simulated=simulated, marker_first=True) == _old_cli_label(row)
    assert key.id == _old_entry_label(tuple(key))
    assert key.label(wrap=(" [", "]"), condition_last=True) == _old_dashboard_label(row)
    assert key.label(" · ", wrap=(" · ", ""), condition_last=True) == _old_samples_label(row)
    assert key.label(parts=False, simulated=simulated) == key.model + (
        " [SIMULATED]" if simulated else ""
    )


def test_the_label_differences_spelled_out():
    assert FULL.label(simulated=True) == "m (v3, gt, no-image) [SIMULATED]"
    assert FULL.label("/", simulated=True, marker_first=True) == "m [SIMULATED] (v3/gt/no-image)"
    assert FULL.label(wrap=(" [", "]"), condition_last=True) == "m [v3, no-image, gt]"
    # the id names the base condition once anything else is set, never for a plain entry
    assert (PLAIN.id, V3.id, CTRL.id, GT.id) == ("m", "m|v3|base", "m|base|reorder", "m|gt")
    assert (V3.label(), CTRL.label()) == ("m (v3)", "m (reorder)")


def test_entry_key_is_a_frozen_tuple():
    model, variant, condition, control = FULL
    assert (model, variant, condition, control) == ("m", "v3", "gt", "no-image")
    assert FULL == ("m", "v3", "gt", "no-image") and FULL[2:] == ("gt", "no-image")
    assert EntryKey("m") == PLAIN and PLAIN.is_plain and not V3.is_plain
    assert FULL.manifest_key == "m|v3|gt|no-image" and PLAIN.manifest_key == "m||base|"
    assert EntryKey.of({"model": "m", "variant": None, "condition": "gt"}) == GT
    with pytest.raises(AttributeError):
        FULL.model = "x"  # type: ignore[misc]


def _ci(point: float) -> dict:
    return {"point": point, "low": point - 0.1, "high": point + 0.1, "n": 10}


def test_as_dict_keeps_the_json_shape_and_order():
    acc = _ci(0.8)
    b = BoardEntry(
        run_id="r",
        key=V3,
        slice="all",
        decisions=20,
        requests=10,
        parsed=9,
        model_failure=1,
        error=0,
        infra_missing=0,
        coverage=1.0,
        format_rate=0.9,
        failure_reasons={"refused": 1},
        cost_usd=0.0,
        simulated=True,
        metrics={"accuracy": {"value": acc}, "macro_f1": {"value": 0.5}},
    )
    d = b.as_dict()
    assert list(d) == [
        *("run_id", "model", "variant", "condition", "control", "slice", "decisions"),
        *("requests", "parsed", "model_failure", "error", "infra_missing", "coverage"),
        *("format_rate", "failure_reasons", "cost_usd", "simulated", "metrics", "accuracy"),
    ]
    assert d["accuracy"] == acc and b.accuracy is acc and b.headline("macro_f1") == 0.5
    with pytest.raises(FrozenInstanceError):
        b.decisions = 3  # type: ignore[misc]
    fb = FieldBalanced(("f",), _ci(0.7), _ci(0.8), _ci(0.9), _ci(10.0), _ci(20.0))
    row = SliceScores(V3, _ci(0.8), _ci(0.7), _ci(0.8), None, _ci(10.0), None, fb)
    assert list(row.as_dict()) == [
        *("model", "variant", "condition", "control", "all", "blind", "anchored"),
        *("vlm-sourced", "inflation_anchored_pp", "inflation_vlm-sourced_pp", "paired"),
        "field_balanced",
    ]
    assert list(row.as_dict()["field_balanced"]) == [
        *("fields", "blind", "anchored", "vlm-sourced", "inflation_anchored_pp"),
        "inflation_vlm-sourced_pp",
    ]
    assert FieldBalanced(()).as_dict() == {"fields": []}
    g = GoldComparison("r", "abc", (row,), 100, 0)
    assert g.as_dict()["mean_inflation_pp"] == 10.0 and g.higher_on_anchored == "1 of 1"
    assert g.mean_inflation_field_balanced_pp == 10.0
    p = PairedMatrix("r", (PLAIN, V3), (PairedCell(PLAIN, V3, 5, _ci(0.1), False),))
    assert p.as_dict() == {
        "run_id": "r",
        "entries": ["m", "m|v3|base"],
        "pairs": [
            {"a": "m", "b": "m|v3|base", "n": 5, "difference": _ci(0.1), "distinguishable": False}
        ],
    }
    assert as_plain({"leaderboard": [b], "x": [1]}) == {"leaderboard": [d], "x": [1]}


def test_results_on_a_simulated_run_are_typed_and_round_trip_to_json(sim_ws):
    project = sim_ws.project()
    run_id = list_runs(sim_ws.store, project.name)[0]["run_id"]
    board = leaderboard(sim_ws.store, project, [run_id], resamples=50)
    assert board and all(isinstance(m, BoardEntry) for m in board)
    points = [m.accuracy["point"] for m in board]
    assert points == sorted(points, reverse=True)
    cg = compare_gold(sim_ws.store, project, run_id, resamples=50)
    assert sorted(m.key for m in cg.models) == sorted(m.key for m in board)
    pm = paired_matrix(sim_ws.store, project, run_id, resamples=50)
    assert {c.a for c in pm.pairs} <= set(pm.entries)
    for obj in (*board, cg, pm):
        d = obj.as_dict()
        assert json.loads(json.dumps(d, default=str)) == json.loads(json.dumps(d))


@pytest.fixture(scope="module")
def sim_ws(tmp_path_factory):
    from truthline.demo import build_simulated_loop

    ws = build_simulated_loop(tmp_path_factory.mktemp("typed") / "ws", n_items=20, seed=1)
    yield ws
    ws.store.close()
