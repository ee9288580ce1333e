"""Property tests (hypothesis): invariances every coefficient must have."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from truthline.stats import AgreementError, get_coefficient
from truthline.stats._ratings import as_ratings

COEFS = [
    ("alpha", "nominal"),
    ("alpha", "ordinal"),
    ("alpha", "interval"),
    ("alpha", "ratio"),
    ("fleiss", "nominal"),
    ("ac1", "nominal"),
    ("pairwise", "nominal"),
    ("pairwise_pooled", "nominal"),
    ("bp", "nominal"),
]


@st.composite
def tables(draw, min_units=3, max_units=15):
    units = draw(st.integers(min_units, max_units))
    raters = draw(st.integers(2, 5))
    cell = st.one_of(st.none(), st.integers(1, 4))
    rows = draw(
        st.lists(st.lists(cell, min_size=raters, max_size=raters), min_size=units, max_size=units)
    )
    return rows


def value(name, level, rows):
    try:
        return get_coefficient(name)(as_ratings(rows, level=level), level=level).point()
    except AgreementError:
        return None


@settings(max_examples=60, deadline=None)
@given(rows=tables(), data=st.data())
@pytest.mark.parametrize(("name", "level"), COEFS)
def test_invariant_to_permuting_units_and_raters(name, level, rows, data):
    base = value(name, level, rows)
    assume(base is not None)
    perm_u = data.draw(st.permutations(range(len(rows))))
    perm_r = data.draw(st.permutations(range(len(rows[0]))))
    shuffled = [[rows[u][r] for r in perm_r] for u in perm_u]
    assert value(name, level, shuffled) == pytest.approx(base, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    labels=st.lists(st.integers(1, 4), min_size=2, max_size=12),
    raters=st.integers(2, 5),
)
@pytest.mark.parametrize(("name", "level"), COEFS)
def test_perfect_agreement_is_one(name, level, labels, raters):
    assume(len(set(labels)) >= 2)
    rows = [[v] * raters for v in labels]
    assert value(name, level, rows) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(rows=tables(), extra=st.integers(1, 4), data=st.data())
@pytest.mark.parametrize(
    ("name", "level"),
    # AC1's pi_k counts single ratings, and so does Fleiss' in Gwet's missing-data form
    [c for c in COEFS if c[0] not in ("ac1", "fleiss")],
)
def test_a_unit_with_one_rating_changes_nothing(name, level, rows, extra, data):
    base = value(name, level, rows)
    assume(base is not None)
    width = len(rows[0])
    slot = data.draw(st.integers(0, width - 1))
    lone = [extra if j == slot else None for j in range(width)]
    assume(any(extra == v for row in rows for v in row))  # no new category appears
    assert value(name, level, [*rows, lone]) == pytest.approx(base, abs=1e-9)


def test_vectorized_bootstrap_equals_explicit_resamples():
    # every coefficient: the batched W @ F value equals recomputing on the expanded resample
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 4, size=40)
    x = np.where(rng.random((40, 3)) < 0.7, truth[:, None], rng.integers(1, 4, (40, 3)))
    x = x.astype(float)
    x[rng.random(x.shape) < 0.15] = np.nan
    from truthline.stats import multiplicity_blocks

    W = next(multiplicity_blocks(40, 5, seed=1))
    for name, level in [*COEFS, ("scott", "nominal")]:
        c = get_coefficient(name)(as_ratings(x, level=level), level=level)
        batched = c.values(W.astype(float))
        for b in range(5):
            rep = np.repeat(x, W[b], axis=0)
            again = get_coefficient(name)(as_ratings(rep, level=level), level=level)
            assert batched[b] == pytest.approx(again.point(), abs=1e-10), (name, level)
    two = x[:, :2]
    c = get_coefficient("cohen")(as_ratings(two), weights="quadratic")
    batched = c.values(W.astype(float))
    for b in range(5):
        rep = as_ratings(np.repeat(two, W[b], axis=0), categories=c.r.values)
        again = get_coefficient("cohen")(rep, weights="quadratic").point()
        assert batched[b] == pytest.approx(again, abs=1e-10)
