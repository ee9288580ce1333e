"""Krippendorff's pair bootstrap: the compatibility mode, documented as narrower."""

from __future__ import annotations

import numpy as np
import pytest

from tests.stats.conftest import KRIPPENDORFF_2011
from truthline.stats import AgreementError, agreement, krippendorff_alpha
from truthline.stats._kboot import coincidences, krippendorff_pair_bootstrap
from truthline.stats._ratings import as_ratings


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_point_is_alpha_and_interval_is_recorded(level):
    ci = krippendorff_pair_bootstrap(KRIPPENDORFF_2011, level, resamples=500, seed=3)
    assert ci.point == pytest.approx(krippendorff_alpha(KRIPPENDORFF_2011, level), abs=1e-12)
    assert ci.scheme == "krippendorff-pairs" and ci.resamples == 500 and ci.seed == 3
    assert ci.low < ci.point < ci.high
    assert ci.n == 3 + 8 * 6 + 3 + 1  # m(m-1)/2 over the 11 pairable units (m = 3, 4 x8, 3, 2)


def test_coincidences_match_krippendorff_2011_table():
    # Krippendorff (2011) section C: n.. = 40 pairable values; row totals n_c are the
    # pairable values of each value (1: 9, 2: 13, 3: 10, 4: 5, 5: 3), o_11 = 3 + 2 + 2 and
    # o_12 = 1/3 (unit 6) + 3/3 (unit 8)
    o = coincidences(as_ratings(KRIPPENDORFF_2011))
    assert np.allclose(o, o.T)
    assert o.sum(axis=1) == pytest.approx([9, 13, 10, 5, 3])
    assert o[0, 0] == pytest.approx(7) and o[0, 1] == pytest.approx(4 / 3)


def test_narrower_than_the_unit_bootstrap_on_heterogeneous_units():
    # half the units are easy (raters agree), half are coin flips: units differ, and
    # resampling pairs as if independent understates that variation
    rng = np.random.default_rng(0)
    easy = np.repeat(rng.integers(0, 3, size=(150, 1)), 5, axis=1)
    hard = rng.integers(0, 3, size=(150, 5))
    x = np.vstack([easy, hard]).astype(float)
    unit = agreement(x, "alpha", resamples=1000, seed=0)[0].ci
    kr = agreement(x, "alpha", ci="krippendorff", resamples=1000, seed=0)
    pairs = kr[0].ci
    assert pairs.point == pytest.approx(unit.point)
    assert (pairs.high - pairs.low) < 0.7 * (unit.high - unit.low)
    assert "narrower" in (kr[0].note or "")


def test_alpha_only_and_no_cluster_scheme():
    res = agreement(KRIPPENDORFF_2011, ["alpha", "fleiss"], ci="krippendorff", resamples=50)
    fleiss = res[1]
    assert np.isnan(fleiss.ci.low) and "alpha only" in (fleiss.note or "")
    with pytest.raises(AgreementError, match="no cluster or strata"):
        agreement(KRIPPENDORFF_2011, "alpha", ci="krippendorff", clusters=list(range(12)))
    with pytest.raises(AgreementError, match="single value everywhere"):
        krippendorff_pair_bootstrap([[1, 1], [1, 1]], resamples=10)
