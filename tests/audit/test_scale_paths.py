"""The audit's fast paths at scale (issue 28) give the numbers of the plain ones, exactly:
single-precision bootstrap products, queued kappas and the JSON decoder of annotation
values (the chunked gold hash: test_hand.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from truthline.audit._boot import EXACT32, Boot
from truthline.audit._data import JsonValues


def _boot(n: int = 40, resamples: int = 300) -> Boot:
    return Boot([f"c{i // 2}" for i in range(n)], resamples, seed=3)


def test_float32_products_equal_the_float64_product_bit_for_bit():
    """Whole-number sums run in float32 and fractional ones in float64, column by column;
    either way ``_times`` is exactly ``W @ M`` in float64."""
    boot = _boot()
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 50, size=(boot.nc, 6)).astype(float)
    times = rng.random((boot.nc, 3)) * 17.3  # e.g. lead times: not whole numbers
    for M in (counts, times, np.hstack([counts[:, :2], times, counts[:, 2:]])):
        want = boot.W.astype(np.float64) @ M
        assert np.array_equal(boot._times(M), want)
    cols = np.arange(0, boot.nc, 3)
    want = boot.W[:, cols].astype(np.float64) @ counts[cols]
    assert np.array_equal(boot._times(counts[cols], cols), want)


def test_float32_is_refused_where_a_sum_could_lose_a_unit():
    """A column whose largest weighted sum could reach 2**24 stays in float64."""
    boot = _boot()
    M = np.ones((boot.nc, 3))
    M[:, 1] = EXACT32  # whole numbers, but far too large for float32
    M[:, 2] = 0.5
    assert boot._exact32(M).tolist() == [True, False, False]
    assert np.array_equal(boot._times(M), boot.W.astype(np.float64) @ M)


def test_queued_kappa_equals_the_kappa_of_its_own_product():
    """A dense kappa is queued with the ratios and evaluated in one product over every
    cluster; its replicates equal those of the product over its own clusters."""
    from truthline.stats import kappa_from_sums

    boot = _boot(60)
    rng = np.random.default_rng(1)
    units = np.sort(rng.integers(0, 30, size=200))  # covers only some of the clusters
    a = rng.integers(0, 3, size=200)
    b = np.where(rng.random(200) < 0.7, a, rng.integers(0, 3, size=200))
    agree = (a == b).astype(float)
    est = boot.kappa(units, agree, a, b)
    ratio = boot.rate(units, agree)  # queued beside it
    assert est._boot is None and ratio._boot is None
    # the direct computation: per covered cluster sums, times W on those clusters only
    ucl, pos = np.unique(boot.cluster_of[units], return_inverse=True)
    k = 3
    F = np.zeros((len(ucl), 2 + 2 * k))
    np.add.at(F, (pos, 0), agree)
    np.add.at(F, (pos, 1), 1.0)
    np.add.at(F, (pos, 2 + a), 1.0)
    np.add.at(F, (pos, 2 + k + b), 1.0)
    want = kappa_from_sums(boot.W[:, ucl].astype(np.float64) @ F, k)
    assert np.array_equal(est.boot, np.asarray(want, dtype=float), equal_nan=True)
    assert ratio._boot is not None  # the same flush filled it


@pytest.mark.parametrize(
    "text",
    ['"carry"', "3", "2.5", "true", "null", '["a", "b"]', '{"x": [1]}', '"' + "x" * 100 + '"'],
)
def test_json_values_decode_as_json_loads(text):
    dec = JsonValues()
    assert dec(text) == json.loads(text)
    assert dec(text) == json.loads(text)  # a memoized text too


def test_json_values_never_share_a_mutable_value():
    """Two annotations with the same list get two lists: editing one leaves the other."""
    dec = JsonValues()
    x, y = dec('["a"]'), dec('["a"]')
    assert x == y and x is not y
    assert dec('"carry"') is dec('"carry"')  # immutable labels are decoded once


def test_json_values_pass_numbers_through():
    """SQLite keeps a JSON number in a JSON column as a number (NUMERIC affinity)."""
    dec = JsonValues()
    assert dec(7) == 7 and dec(1.5) == 1.5 and dec(None) is None


def test_the_collector_is_paused_during_an_audit_and_restored_after(tmp_path):
    """run_audit turns the cyclic collector off while it runs and back on after, also when
    it fails, and leaves it off when it was off."""
    import gc

    from truthline.audit import _audit
    from truthline.audit._audit import _collector_paused
    from truthline.errors import TruthlineError
    from truthline.project import load_project
    from truthline.store import Store
    from truthline.workspace import templates_dir

    assert gc.isenabled()
    seen: list[bool] = []
    with _collector_paused():
        with _collector_paused():  # a second audit at the same time
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    assert seen == [False, False] and gc.isenabled()
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    project = load_project(templates_dir() / "steel-safety")
    with pytest.raises(TruthlineError, match="no annotations"):
        _audit.run_audit(store, project)
    assert gc.isenabled()
    gc.disable()
    try:
        with _collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    store.close()


def _gold_rows(values) -> list[tuple]:
    return [(g.item, g.path, repr(g.value), g.provenance, g.sources, g.arm) for g in values]


def test_gold_on_some_items_and_the_other_side_of_an_exclusion_match_a_full_decide(tmp_path):
    """``decide(only=...)`` gives exactly the full result's rows on those items, and the
    other side of an exclusion, resolved again only where the changed annotators worked
    (``_kept_again``), gives the anchored-kept values of a full ``decide``, in its order."""
    from truthline.audit import load
    from truthline.audit._audit import _kept_again, _Pass
    from truthline.audit._gold import GoldPolicy, decide
    from truthline.project import load_project
    from truthline.simulate import build_scenario
    from truthline.store import Store
    from truthline.workspace import templates_dir

    project = load_project(templates_dir() / "steel-safety")
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    build_scenario(store, project, n_items=80, seed=5)
    data = load(store, project)
    store.close()
    people = data.annotators
    assert len(people) >= 3
    policy = GoldPolicy(excluded="requeue")

    def kept(excl: set[str]) -> list:
        res = decide(data, {a: "x" for a in excl}, policy)
        return [g for g in res.values if g.provenance == "anchored_kept"]

    full = decide(data, {people[0]: "x"}, policy)
    some = set(data.item_ids[::3])
    part = decide(data, {people[0]: "x"}, policy, only=some)
    assert _gold_rows(part.values) == _gold_rows(g for g in full.values if g.item in some)
    assert [(p.item, p.kind, p.path, p.reason) for p in part.pending] == [
        (p.item, p.kind, p.path, p.reason) for p in full.pending if p.item in some
    ]
    assert part.unusable == {i: r for i, r in full.unusable.items() if i in some}
    assert part.values and part.pending

    for first, second in [
        (set(), {people[-1]}),
        ({people[0]}, set()),
        ({people[0]}, {people[1], people[2]}),
        (set(people[:-1]), set(people[1:])),
    ]:
        reported = _Pass(first, {}, kept(first))
        again = _kept_again(data, {a: "x" for a in second}, policy, reported)
        want = kept(second)
        assert want and _gold_rows(again) == _gold_rows(want), (first, second)


def test_kappa_sums_and_compact_codes_match_the_dense_and_sorting_forms():
    """``_kappa_sums`` (block by block, sparse) equals ``kappa_unit_sums`` (dense) for
    0/1 and fractional agreement; ``_compact`` equals ``np.unique(return_inverse=True)``
    and refuses codes outside its range."""
    from truthline.audit._boot import _compact, _kappa_sums
    from truthline.stats import kappa_unit_sums

    rng = np.random.default_rng(4)
    m, n, k = 5000, 300, 7
    rows = rng.integers(0, n, m)
    ca, cb = rng.integers(0, k, m), rng.integers(0, k, m)
    for agree in ((ca == cb).astype(float), rng.random(m)):
        want = kappa_unit_sums(rows, agree, ca, cb, k, n)
        assert np.array_equal(_kappa_sums(rows, agree, ca, cb, k, n).toarray(), want)
    codes = rng.choice([3, 9, 10, 41], size=200)
    present, inv = _compact(codes, 50)
    want_p, want_inv = np.unique(codes, return_inverse=True)
    assert np.array_equal(present, want_p) and np.array_equal(inv, want_inv.ravel())
    with pytest.raises(ValueError):
        _compact(np.array([0, -1]), 5)
    with pytest.raises(ValueError):
        _compact(np.array([5]), 5)
