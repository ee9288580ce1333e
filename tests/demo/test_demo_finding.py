"""Issue 24: the SIMULATED benchmark models share the prefill VLM's error tendencies (one
model family), so gold that kept the prefill's values flatters them, as in SteelBench.

Fast: a store-only SIMULATED scenario with the demo's arm design (half the clips blind and
double-annotated, 30 % expert-reviewed, the rubber-stamper excluded) instead of the full
demo with Label Studio. The same run scores the declared models and twins of them whose
share is 0, so the planted share is the only difference between them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from truthline.audit import exclude_annotator, finalize
from truthline.benchmark import RunConfig, compare_gold, compare_labels, run_benchmark
from truthline.benchmark._types import GoldComparison, SliceScores
from truthline.project import load_project
from truthline.simulate import DEFAULT_TEAM, build_scenario, make_specs, truth_of
from truthline.simulate._vlm import (
    FAMILY_SHARE,
    PROFILES,
    get_profile,
    simulated_answer,
    simulated_profile,
)
from truthline.store import Store
from truthline.workspace import templates_dir

DECLARED = ("steel-strong", "steel-weak")
N_ITEMS = 400


def _twin(name: str, share: float) -> str:
    """Register a SIMULATED copy of profile ``name`` with another family share."""
    twin = f"test-{name}-share-{share:g}"
    if twin not in PROFILES:
        prof = dataclasses.replace(get_profile(name), share=share)
        simulated_profile(twin)(lambda: prof)
    return twin


@pytest.fixture(scope="module")
def steel():
    return load_project(templates_dir() / "steel-safety")


@pytest.fixture(scope="module")
def finding_store(tmp_path_factory: pytest.TempPathFactory, steel):
    store = Store(f"sqlite:///{Path(tmp_path_factory.mktemp('finding')) / 'store.db'}")
    build_scenario(
        store,
        steel,
        n_items=N_ITEMS,
        seed=0,
        blind_pairs=N_ITEMS // 2,
        anchored_pairs=N_ITEMS // 4,
        expert_items=round(0.3 * N_ITEMS),
    )
    stamper = next(m.name for m in DEFAULT_TEAM if m.behaviour == "rubber_stamper")
    exclude_annotator(store, steel, stamper, "planted rubber-stamper (as the demo's audit does)")
    finalize(store, steel)
    models = [*DECLARED, *(_twin(m, 0.0) for m in DECLARED)]
    cfg = RunConfig(models=[f"simulated:{m}" for m in models], run_id="finding")
    run_benchmark(store, steel, cfg, progress=False)
    yield store
    store.close()


@pytest.fixture(scope="module")
def slices(finding_store, steel) -> dict[str, SliceScores]:
    cg = compare_gold(finding_store, steel, "finding", resamples=400)
    return {m.key.model.removeprefix("simulated:"): m for m in cg.models}


@pytest.fixture(scope="module")
def by_labels(finding_store, steel) -> GoldComparison:
    return compare_labels(finding_store, steel, "finding", resamples=400)


def _vlm_infl(s: SliceScores) -> dict[str, Any]:
    assert s.inflation_vlm_sourced_pp is not None
    return s.inflation_vlm_sourced_pp


def test_declared_models_copy_the_prefill_errors_at_the_declared_share(steel):
    """Planted: on decisions where the prefill VLM's shared-stream answer is wrong, a
    share-1 model repeats it whenever its own draw comes from that stream too (80 %); a
    share-0 model only by the accident of drawing the same wrong value."""
    copies = {0.0: [0, 0], 1.0: [0, 0]}
    for spec in make_specs(150, 3):
        truth, key = truth_of(spec), f"simulated/{spec.key}"
        # the stream the family copies: the prefill's answer on an item-only key
        prefill = simulated_answer("steel-v1", truth, steel, key)
        for share in copies:
            ans = simulated_answer(_twin("steel-strong", share), truth, steel, key)
            # entities can be left out by either model: match workers by id
            got = {w["worker_id"]: w.get("action") for w in ans["workers"]}
            for pw in prefill["workers"]:
                tw = next(w for w in truth["workers"] if w["worker_id"] == pw["worker_id"])
                theirs = got.get(pw["worker_id"])
                if pw.get("action") not in (None, tw["action"]) and theirs is not None:
                    copies[share][0] += theirs == pw["action"]
                    copies[share][1] += 1
    rate = {s: c / n for s, (c, n) in copies.items()}
    assert copies[1.0][1] > 50
    assert rate[1.0] > 0.7 and rate[0.0] < 0.3, rate


def test_vlm_sourced_gold_flatters_every_declared_model(slices):
    assert FAMILY_SHARE > 0
    for name in DECLARED:
        s = slices[name]
        assert s.vlm_sourced is not None and s.blind is not None
        assert s.vlm_sourced["point"] > s.blind["point"], name
        assert _vlm_infl(s)["low"] > 0, (name, _vlm_infl(s))  # the CI excludes zero
    mean = sum(_vlm_infl(slices[m])["point"] for m in DECLARED) / len(DECLARED)
    assert mean > 5


def test_without_the_share_the_strong_model_is_not_flattered(slices):
    """Share 0: the strong model errs on the prefill's hard items but mostly with another
    wrong value, so VLM-sourced gold does not score it clearly higher. (The weak model's
    twin still gains: it errs so often that the shared draws alone land on the prefill's
    wrong values; hence only the family's mean is compared.)"""
    off = _vlm_infl(slices[_twin("steel-strong", 0.0)])
    assert off["low"] <= 0 <= off["high"], off
    assert _vlm_infl(slices["steel-strong"])["point"] - off["point"] > 5
    declared = sum(_vlm_infl(slices[m])["point"] for m in DECLARED)
    without = sum(_vlm_infl(slices[_twin(m, 0.0)])["point"] for m in DECLARED)
    assert (declared - without) / len(DECLARED) > 2


def test_anchored_labels_flatter_every_declared_model(by_labels):
    """The paper's Fig. 13 design (every retained annotator's labels a reference of their
    arm): each declared model scores higher against anchored labels than against blind
    ones, with the CI above zero, and so does the mean over the run's models."""
    by = {m.key.model.removeprefix("simulated:"): m for m in by_labels.models}
    assert by_labels.reference == "labels"
    for name in DECLARED:
        infl = by[name].inflation_anchored_pp
        assert infl is not None and infl["low"] > 0, (name, infl)
    mean = by_labels.mean_inflation_anchored_ci
    assert mean is not None and mean["low"] > 0, mean
    # the share is what flatters: the declared models gain more than their share-0 twins
    for name in DECLARED:
        twin = by[_twin(name, 0.0)].inflation_anchored_pp
        mine = by[name].inflation_anchored_pp
        assert twin is not None and mine is not None
        assert mine["point"] - twin["point"] > 2, (name, mine["point"], twin["point"])
