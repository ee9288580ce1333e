"""Residual risk's "at most" is a predictive bound (METRICS.md §3, issue 24).

SIMULATED coverage: the true per-item harmful rate q is fixed; n reviewed items show k ~
Binomial(n, q) harmful; N unreviewed items carry X ~ Binomial(N, q). A 95 % bound must
cover X about 95 % of the time. The old bound (the rate's upper confidence limit x N)
leaves X's own spread out and covers it far less often when N is small.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import betabinom
from statsmodels.stats.proportion import proportion_confint

from tests.audit.test_hand import hand  # noqa: F401  (the hand-checked fixture)
from truthline.audit import run_audit
from truthline.audit._metrics import design_effect, residual_bound

# (N unreviewed, n reviewed, q): small N, SteelBench-like sizes, rare and common harm
SETTINGS = [(2, 7, 0.3), (3, 30, 0.1), (5, 40, 0.1), (10, 100, 0.05), (20, 60, 0.2), (5, 363, 0.05)]
SETTINGS += [(200, 363, 0.04), (1, 20, 0.1), (8, 25, 0.01)]
REPS = 20_000


def _coverage(N: int, n: int, q: float, bound_of_k: np.ndarray, seed: int) -> float:
    rng = np.random.default_rng(seed)
    k = rng.binomial(n, q, REPS)
    x = rng.binomial(N, q, REPS)
    return float((x <= bound_of_k[k]).mean())


@pytest.mark.parametrize(("N", "n", "q"), SETTINGS)
def test_bound_covers_the_unreviewed_count_at_its_level(N, n, q):
    ks = np.arange(n + 1)
    bound = np.array([residual_bound(k, n, N) for k in ks])
    cov = _coverage(N, n, q, bound, seed=N * 1000 + n)
    assert cov >= 0.93, (N, n, q, cov)
    assert (bound <= N).all() and (np.diff(bound) >= 0).all()  # a count, monotone in k


def test_the_old_bound_undercovers_with_few_unreviewed_items():
    """The defect measured in the issue: rate's upper limit x N covers ~75-80 %."""
    N, n, q = 5, 40, 0.1
    old = np.array([proportion_confint(k, n, method="wilson")[1] * N for k in range(n + 1)])
    assert _coverage(N, n, q, old, seed=1) < 0.85
    new = np.array([residual_bound(k, n, N) for k in range(n + 1)])
    assert _coverage(N, n, q, new, seed=1) >= 0.95


def test_bound_edges_and_the_design_effect():
    assert residual_bound(3, 30, 0) == 0  # nothing unreviewed
    assert residual_bound(0, 0, 7) == 7  # nothing reviewed: every one may carry one
    assert residual_bound(2, 7, 2) == int(betabinom.ppf(0.95, 2, 2.5, 5.5))
    # fewer effective items (clustered review) widen the bound, never narrow it
    assert residual_bound(10 / 3, 100 / 3, 50) >= residual_bound(10, 100, 50)
    # harm concentrated in whole clusters: deff > 1; spread evenly: deff 1
    clusters = np.repeat(np.arange(10), 10)
    lumpy = (clusters < 2).astype(float)
    even = (np.arange(100) % 10 < 2).astype(float)
    assert design_effect(lumpy, clusters) > 5
    assert design_effect(even, clusters) == 1.0
    assert design_effect(lumpy, np.arange(100)) == 1.0  # items as their own clusters


def test_audit_reports_the_predictive_bound(hand):  # noqa: F811
    """Hand fixture: 2 of the 7 expert-reviewed anchored items carry a harmful anchor,
    2 anchored items were finalized without review, no clusters (deff 1)."""
    store, project, _ = hand
    rr = run_audit(store, project).as_dict()["residual_risk"]
    assert (rr["reviewed_items"], rr["reviewed_items_with_harmful_anchor"]) == (7, 2)
    assert rr["items_without_review"] == 2 and rr["design_effect"] == 1.0
    assert rr["upper_bound_items"] == int(betabinom.ppf(0.95, 2, 2.5, 5.5))
    assert rr["expected_items"] == pytest.approx(4 / 7)
    assert "BetaBinomial" in rr["bound"] and "random share" in rr["bound"]
