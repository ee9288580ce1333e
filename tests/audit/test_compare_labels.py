"""compare_labels by hand: the same answers scored against each arm's own labels (the
SteelBench Fig. 13 design), on the hand-built example of test_hand.py (every number below
is counted from its tables)."""

from __future__ import annotations

import pytest

from tests.audit.test_hand import EVAL, FIELDS, hand  # noqa: F401  (the fixture)
from truthline.audit import exclude_annotator, finalize
from truthline.benchmark import RunConfig, compare_labels, run_benchmark
from truthline.store import tables


def _p(ci: dict | None) -> float:
    assert ci is not None
    return ci["point"]


@pytest.fixture
def run(hand):  # noqa: F811
    store, project, ids = hand
    finalize(store, project)
    # the SIMULATED oracle answers an item's known truth: plant EVAL as that truth
    with store.begin() as conn:
        for k, vals in EVAL.items():
            conn.execute(
                tables.items.update()
                .where(tables.items.c.id == ids[f"i{k}"])
                .values(sim_truth=dict(zip(FIELDS, vals, strict=True)))
            )
    cfg = RunConfig(models=["simulated:perfect"], run_id="h")
    run_benchmark(store, project, cfg, progress=False)
    return store, project


def test_each_arm_label_is_a_reference(run):
    store, project = run
    cg = compare_labels(store, project, "h", resamples=200)
    assert cg.reference == "labels" and len(cg.models) == 1
    m = cg.models[0]
    # blind labels (A and B on items 10-12): 12 of 18 decisions agree with EVAL; anchored
    # labels (items 1-9): 20 of 27 — the audit's gradient counts the same (test_hand)
    assert _p(m.blind) == pytest.approx(12 / 18)
    assert _p(m.anchored) == pytest.approx(20 / 27)
    # VLM-sourced: anchored decisions whose label agrees with the prefill shown: items 1, 2,
    # 5, 7, 8 whole (15), items 6 and 9 violation+count (4), item 4's count (3 vs 2, within
    # the tolerance of 1) = 20; EVAL misses item 9's count (4 vs 2)
    assert _p(m.vlm_sourced) == pytest.approx(19 / 20)
    assert _p(m.all) == pytest.approx(32 / 45)
    infl = m.inflation_anchored_pp
    assert infl is not None and infl["point"] == pytest.approx(100 * (20 / 27 - 12 / 18))
    mean = cg.mean_inflation_anchored_ci
    assert mean is not None and mean["point"] == pytest.approx(infl["point"])
    assert mean["low"] <= mean["point"] <= mean["high"]
    assert cg.references == {
        "blind_labels": 6,
        "blind_items": 3,
        "anchored_labels": 9,
        "anchored_items": 9,
        "vlm-sourced_decisions": 20,
    }


def test_excluded_annotators_are_no_reference(run):
    store, project = run
    exclude_annotator(store, project, "C", "test: rubber stamping", decided_by="tester")
    m = compare_labels(store, project, "h", resamples=0).models[0]
    # C's items 7-9 leave the anchored slice: A (1-3) and B (4-6) agree on 13 of 18
    assert _p(m.anchored) == pytest.approx(13 / 18)
    # VLM-sourced without C: items 1, 2, 5 (9), item 6 violation+count, item 4's count: all right
    assert _p(m.vlm_sourced) == pytest.approx(1.0)
    assert _p(m.blind) == pytest.approx(12 / 18)
