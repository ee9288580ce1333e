"""The O(n) forms of issue 28 give the same numbers as the direct ones.

Chunked multiplicities are the same resamples as a seeded block drawn whole (so a CI does
not depend on how much memory the bootstrap may hold), and nominal alpha's pair form of
the Gram matrix equals the generic feature sums exactly (integer sums in float64).
"""

from __future__ import annotations

import numpy as np
import pytest

from truthline.stats import _resample, agreement, as_ratings, get_coefficient


def _reference_blocks(n: int, resamples: int, seed: int) -> np.ndarray:
    """The unit bootstrap as it was drawn before chunking: one bincount per seeded block."""
    size = _resample.block_size(n, resamples)
    out = []
    children = np.random.SeedSequence(seed).spawn(-(-resamples // size))
    for j, child in enumerate(children):
        b = min(size, resamples - j * size)
        picks = np.random.default_rng(child).integers(0, n, size=(b, n), dtype=np.int32)
        flat = picks + (np.arange(b, dtype=np.int64) * n)[:, None]
        out.append(np.bincount(flat.ravel(), minlength=b * n).reshape(b, n))
    return np.vstack(out)


@pytest.mark.parametrize(("n", "resamples", "chunk", "block"), [(37, 50, 100, 400), (8, 9, 3, 10)])
def test_chunked_multiplicities_are_the_whole_block_stream(monkeypatch, n, resamples, chunk, block):
    monkeypatch.setattr(_resample, "BLOCK_CELLS", block)  # several seeded blocks
    ref = _reference_blocks(n, resamples, seed=11)
    monkeypatch.setattr(_resample, "CHUNK_CELLS", chunk)  # several chunks per block
    blocks = list(_resample.multiplicity_blocks(n, resamples, 11))
    assert max(b.shape[0] for b in blocks) <= max(1, chunk // n)
    got = np.vstack(blocks)
    assert got.shape == (resamples, n)
    assert np.array_equal(got, ref)
    assert (got.sum(axis=1) == n).all()


def _plates(units: int, raters: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.permutation(units * 3)[:units].astype(float)
    wrong = rng.integers(0, units * 3, size=(units, raters)).astype(float)
    x = np.where(rng.random((units, raters)) < 0.7, truth[:, None], wrong)
    x[rng.random(x.shape) < 0.15] = np.nan
    return x


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pair_form_equals_generic_sums_exactly(seed):
    x = _plates(300, 3, seed)
    c = get_coefficient("alpha")(as_ratings(x), level="nominal")
    assert c._gram is not None  # the pair form is what is tested
    W = np.random.default_rng(seed).integers(0, 4, size=(25, 300)).astype(float)
    fast = c.values(W)
    generic = c.from_sums(np.asarray((c.features.T @ W.T).T))
    assert np.array_equal(fast, generic)


def test_ci_does_not_depend_on_the_chunk_size(monkeypatch):
    r = as_ratings(_plates(400, 2, 5))
    whole = agreement(r, "alpha", resamples=120, seed=3)[0].ci
    monkeypatch.setattr(_resample, "CHUNK_CELLS", 400 * 7)  # 7 resamples at a time
    chunked = agreement(r, "alpha", resamples=120, seed=3)[0].ci
    assert (chunked.point, chunked.low, chunked.high) == (whole.point, whole.low, whole.high)
    assert chunked.low < chunked.point < chunked.high


def test_integer_cluster_codes_group_as_their_text_does():
    from truthline.stats._bootstrap import _group_codes

    codes = np.random.default_rng(0).integers(0, 40, size=500)
    fast, g = _group_codes(codes)
    slow, h = _group_codes(list(codes))  # the text path every caller had before
    assert g == h and np.array_equal(fast, slow)


def test_byte_multiplicities_are_the_int32_draw():
    from truthline.stats import draw

    wide = draw(300, 40, 5)
    small = draw(300, 40, 5, dtype=np.uint8)
    assert small.dtype == np.uint8 and np.array_equal(small, wide)
    assert np.array_equal(draw(1, 3, 0, dtype=np.uint8), np.ones((3, 1)))
