"""Krippendorff's own bootstrap of alpha: resampling pairs of values, a compatibility mode.

After K. Krippendorff, "Algorithm for bootstrapping a distribution of alpha" (2006, rev.
2011; the method of the KALPHA macro, Hayes & Krippendorff 2007): pairs of values are drawn
with replacement from the observed coincidences ``o_ck / n..``, each resample's observed
disagreement is the mean metric difference of its ``M`` drawn pairs, and the expected
disagreement ``D_e`` is held at the data's value. Here ``M`` is the number of pairable
pairs, sum over units of m_u (m_u - 1) / 2, without the macro's practical cap.

It is offered only to compare with published KALPHA intervals. It is NARROWER than the
unit bootstrap (``ci="bootstrap"``, the project's CI): pairs from the same unit are treated
as independent and ``D_e`` does not vary, so between-unit variation is understated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from truthline.stats._bootstrap import CI, DEFAULT_RESAMPLES, percentile_ci
from truthline.stats._ratings import AgreementError, Ratings, as_ratings

MAX_VALUES = 2000
"""The pair bootstrap draws over a values x values table; more distinct values is refused."""

SCHEME = "krippendorff-pairs"


def _metric(r: Ratings, level: str, nc: np.ndarray) -> np.ndarray:
    """Squared metric differences delta²_ck between values (Krippendorff 2011)."""
    q = r.q
    if level == "nominal":
        return 1.0 - np.eye(q)
    if level == "ordinal":
        rank = np.cumsum(nc) - nc / 2  # sum_{g=c}^{k} n_g - (n_c + n_k)/2 = rank_k - rank_c
        return np.subtract.outer(rank, rank) ** 2
    x = r.numeric()
    if level == "interval":
        return np.subtract.outer(x, x) ** 2
    if level == "ratio":
        s = np.add.outer(x, x)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(s > 0, (np.subtract.outer(x, x) / s) ** 2, 0.0)
    raise AgreementError(
        f"the pair bootstrap supports nominal, ordinal, interval and ratio, not {level!r}"
    )


def coincidences(r: Ratings) -> np.ndarray:
    """Observed coincidence matrix o_ck over pairable units (each unit weighted 1/(m_u-1))."""
    N = r.counts()
    m = N.sum(axis=1)
    p = m >= 2
    if not p.any():
        raise AgreementError("no unit has ratings from two or more raters")
    Np = N[p] / np.sqrt(m[p] - 1)[:, None]
    return Np.T @ Np - np.diag((N[p] / (m[p] - 1)[:, None]).sum(axis=0))


def krippendorff_pair_bootstrap(
    data: Any,
    level: str = "nominal",
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    categories: Sequence[Any] | None = None,
    confidence: float = 0.95,
) -> CI:
    """Alpha with Krippendorff's pair-bootstrap interval (compatibility; narrower, see module)."""
    r = data if isinstance(data, Ratings) else as_ratings(data, categories=categories, level=level)
    if r.q > MAX_VALUES:
        raise AgreementError(
            f"the pair bootstrap needs a values x values table; {r.q} distinct values is over "
            f"{MAX_VALUES} (use the unit bootstrap, --ci bootstrap)"
        )
    o = coincidences(r)
    nc = o.sum(axis=1)
    n = float(nc.sum())
    delta = _metric(r, level, nc)
    d_e = float(nc @ delta @ nc) / (n * (n - 1))
    if d_e <= 0:
        raise AgreementError(
            "Krippendorff's alpha: a single value everywhere; expected disagreement is 0 and "
            "alpha is undefined"
        )
    point = 1.0 - float((o * delta).sum()) / n / d_e
    m = r.m
    pairs = int((m * (m - 1) // 2)[m >= 2].sum())
    if resamples <= 0:
        return CI(point, float("nan"), float("nan"), 0, seed, scheme=SCHEME, n=pairs)
    rng = np.random.default_rng(seed)
    prob = (o / n).ravel()
    drawn = rng.multinomial(pairs, prob / prob.sum(), size=resamples)  # pairs per cell
    boot = 1.0 - (drawn @ delta.ravel()) / pairs / d_e
    return percentile_ci(point, boot, level=confidence, seed=seed, scheme=SCHEME, n=pairs)
