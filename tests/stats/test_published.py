"""Published worked examples, reproduced to 3 decimals (each source cited at its test)."""

from __future__ import annotations

import pytest

from tests.stats.conftest import expand_table
from truthline.stats import (
    agreement,
    brennan_prediger,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    pairwise_agreement,
    scott_pi,
)


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_2011_reliability_data(kripp2011, level, published):
    # Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", section C:
    # 4 observers, 12 units, missing values; alpha = .743 / .815 / .849 / .797.
    assert krippendorff_alpha(kripp2011, level) == pytest.approx(published, abs=5e-4)


def test_fleiss_wikipedia_10_subjects_14_raters():
    # Fleiss' kappa worked example reproduced on Wikipedia ("Fleiss' kappa", Worked example):
    # 10 subjects, 14 raters, 5 categories; P-bar = 0.378, P_e = 0.213, kappa = 0.210.
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert fleiss_kappa(table, counts=True) == pytest.approx(0.210, abs=5e-4)


def test_cohen_wikipedia_textbook_table():
    # Cohen's kappa worked example (Wikipedia "Cohen's kappa", Simple example): 50 grant
    # proposals, Yes/Yes 20, Yes/No 5, No/Yes 10, No/No 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    rows = expand_table([[20, 5], [10, 15]])
    a, b = [r[0] for r in rows], [r[1] for r in rows]
    assert cohen_kappa(a, b) == pytest.approx(0.400, abs=5e-4)


def test_sas_proc_freq_simple_and_weighted_kappa():
    # SAS/STAT PROC FREQ agreement example as reproduced in statsmodels'
    # test_inter_rater.py (table10): simple kappa 0.4842, Cicchetti-Allison (linear)
    # weighted kappa 0.4701.
    rows = expand_table([[0, 4, 1], [0, 8, 0], [0, 1, 5]])
    a, b = [r[0] for r in rows], [r[1] for r in rows]
    assert cohen_kappa(a, b) == pytest.approx(0.4842, abs=5e-5)
    assert cohen_kappa(a, b, weights="linear") == pytest.approx(0.4701, abs=5e-5)


def test_gwet_handbook_abstractors_table():
    # Gwet (2014) Handbook of Inter-Rater Reliability, 4th ed., as computed by Gwet's irrCAC
    # package vignette "Calculating Chance-corrected Agreement Coefficients" on
    # cont3x3abstractors (100 pregnancies, 2 abstractors, 3 types):
    # kappa 0.7964094, Scott 0.7962397, AC1 0.8493305, BP 0.835, alpha 0.7972585, PA 0.89.
    rows = expand_table([[13, 0, 0], [0, 20, 7], [0, 4, 56]])
    a, b = [r[0] for r in rows], [r[1] for r in rows]
    assert cohen_kappa(a, b) == pytest.approx(0.7964094, abs=1e-6)
    assert scott_pi(rows) == pytest.approx(0.7962397, abs=1e-6)
    assert gwet_ac1(rows) == pytest.approx(0.8493305, abs=1e-6)
    assert brennan_prediger(rows) == pytest.approx(0.835, abs=1e-6)
    assert krippendorff_alpha(rows) == pytest.approx(0.7972585, abs=1e-6)
    assert pairwise_agreement(rows) == pytest.approx(0.89, abs=1e-9)


def test_gwet_ac1_multi_rater_with_missing(kripp2011):
    # Gwet's irrCAC vignette, gwet.ac1.raw(cac.raw4raters) — the same 4 x 12 data as
    # Krippendorff (2011): AC1 = 0.7754 (units with one rating still count in pi_k).
    assert gwet_ac1(kripp2011) == pytest.approx(0.7754, abs=5e-4)


# Fleiss, J. L. (1971). "Measuring nominal scale agreement among many raters", Psychological
# Bulletin 76(5), 378-382, Table 1: 30 patients, 6 psychiatric diagnoses each (1 depression,
# 2 personality disorder, 3 schizophrenia, 4 neurosis, 5 other); kappa = .430. Raw ratings as
# in the R package irr (dataset `diagnoses`, kappam.fleiss = 0.4302445), also used by
# statsmodels' stats/tests/test_inter_rater.py. The six columns are not the same six raters.
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4],
    [2, 2, 2, 5, 5, 5],
    [2, 3, 3, 3, 3, 5],
    [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3],
    [3, 3, 3, 3, 5, 5],
    [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4],
    [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4],
    [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3],
    [1, 4, 4, 4, 4, 4],
    [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5],
    [1, 1, 1, 1, 1, 2],
    [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5],
    [2, 4, 4, 4, 4, 4],
    [2, 2, 4, 5, 5, 5],
    [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4],
    [1, 1, 1, 1, 5, 5],
    [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3],
    [5, 5, 5, 5, 5, 5],
]


def test_fleiss_1971_30_patients_6_raters():
    assert len(FLEISS_1971) == 30 and {len(r) for r in FLEISS_1971} == {6}
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(0.430, abs=5e-4)
    # Fleiss' (1971) P-bar and P_e: observed .556, chance .220
    pairs = sum(sum(row.count(c) * (row.count(c) - 1) for c in set(row)) for row in FLEISS_1971)
    assert pairs / (30 * 6 * 5) == pytest.approx(0.556, abs=5e-4)


def test_irrcac_raw4raters_pairwise_and_fleiss_with_missing(kripp2011):
    # irrCAC README (Gwet), cac.raw4raters = the 12 x 4 data above with missing ratings:
    # pa.coeff.raw 0.8181818; fleiss.kappa.raw pa 0.8181818, pe 0.2387153, kappa 0.76117;
    # bp.coeff.raw 0.77273.
    res = {
        x.coefficient: x
        for x in agreement(kripp2011, ["pairwise", "pairwise_pooled", "fleiss", "bp"], ci="none")
    }
    assert res["pairwise"].point == pytest.approx(0.8181818, abs=5e-8)
    assert res["pairwise"].title == "Pairwise agreement (per-unit mean)"
    # pooled: 43 agreeing ordered pairs of 55 (units with more raters weigh more)
    assert res["pairwise_pooled"].point == pytest.approx(43 / 55, abs=1e-12)
    assert res["pairwise_pooled"].title == "Pairwise agreement (pooled pairs)"
    assert res["fleiss"].point == pytest.approx(0.76117, abs=5e-6)
    assert "Gwet" in res["fleiss"].title
    assert res["bp"].point == pytest.approx(0.77273, abs=5e-6)
    assert pairwise_agreement(kripp2011) == pytest.approx(0.8181818, abs=5e-8)
