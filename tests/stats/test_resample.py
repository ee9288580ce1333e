"""Pattern-compressed bootstrap: exact first stage of the unit bootstrap, same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.stats import as_ratings, get_coefficient
from truthline.stats._resample import compress, pattern_blocks, unit_indices


def _categorical(units: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 4, size=units)
    x = np.where(rng.random((units, 4)) < 0.7, truth[:, None], rng.integers(1, 4, (units, 4)))
    x = x.astype(float)
    x[rng.random(x.shape) < 0.15] = np.nan
    return x


@pytest.mark.parametrize(
    ("name", "level"),
    [("alpha", "nominal"), ("alpha", "ordinal"), ("fleiss", "nominal"), ("ac1", "nominal")],
)
def test_pattern_counts_complete_to_unit_resamples_with_equal_values(name, level):
    x = _categorical(600, 3)
    c = get_coefficient(name)(as_ratings(x, level=level), level=level)
    pats = compress([c.features], len(x))
    assert pats is not None and pats.k * 8 <= len(x)
    counts = next(pattern_blocks(pats, 6, seed=4))
    assert (counts.sum(axis=1) == len(x)).all()
    batched = c.from_sums(counts.astype(float) @ pats.features[0])
    for b in range(6):
        rows = unit_indices(pats, counts[b], seed=b)
        assert len(rows) == len(x)
        # every drawn unit belongs to the pattern it was counted in
        assert (np.bincount(pats.inverse[rows], minlength=pats.k) == counts[b]).all()
        again = get_coefficient(name)(as_ratings(x[rows], level=level), level=level)
        assert batched[b] == pytest.approx(again.point(), abs=1e-10)


def test_strata_keep_their_size_and_clusters_resample_whole_parents():
    x = _categorical(800, 5)
    c = get_coefficient("alpha")(as_ratings(x), level="nominal")
    strata = ["a"] * 300 + ["b"] * 500
    pats = compress([c.features], len(x), strata=strata)
    assert pats is not None
    per_stratum = {s: pats.sizes[pats.stratum == s].sum() for s in np.unique(pats.stratum)}
    assert sorted(per_stratum.values()) == [300, 500]
    for C in pattern_blocks(pats, 50, seed=0):
        for s, size in per_stratum.items():
            assert (C[:, pats.stratum == s].sum(axis=1) == size).all()
    # 400 parents of two identical units each: patterns of parents, 400 drawn per resample
    pairs = np.repeat(x[:400], 2, axis=0)
    c2 = get_coefficient("alpha")(as_ratings(pairs), level="nominal")
    pc = compress([c2.features], 800, clusters=list(np.repeat(np.arange(400), 2)))
    assert pc is not None and pc.sizes.sum() == 400
    assert pc.features[0][:, 0].max() == 2 * c2.features[:, 0].max()


def test_continuous_features_do_not_compress():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 3))
    c = get_coefficient("alpha")(as_ratings(x, level="interval"), level="interval")
    assert compress([c.features], 500) is None


def test_same_seed_same_stream_and_blocks_are_independent():
    x = _categorical(400, 7)
    c = get_coefficient("alpha")(as_ratings(x), level="nominal")
    pats = compress([c.features], 400)
    assert pats is not None
    a = np.vstack(list(pattern_blocks(pats, 30, seed=9)))
    b = np.vstack(list(pattern_blocks(pats, 30, seed=9)))
    d = np.vstack(list(pattern_blocks(pats, 30, seed=10)))
    assert (a == b).all() and not (a == d).all()
    assert len({row.tobytes() for row in a}) == 30
