"""One bootstrap for the whole audit: a single multiplicity matrix over items (or clusters).

Why one matrix: every audit number is a ratio of per-item sums (or a kappa built from
per-item category counts), so with the resample matrix ``W`` (from ``stats.draw``) all
2,000 resamples of any statistic are one matrix product. Sharing ``W`` across statistics
also makes differences (blind vs anchored, before vs after exclusion) properly paired.
A statistic over a subset of items is resampled as part of the whole data set, so the
subset's size varies across resamples as it would in a new study.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from truthline.stats import CI, draw, percentile_ci


@dataclass
class Est:
    """A point estimate with its bootstrap replicates (kept so differences can be formed)."""

    point: float
    boot: np.ndarray
    n: int

    def __sub__(self, other: Est) -> Est:
        return Est(self.point - other.point, self.boot - other.boot, min(self.n, other.n))

    def scale(self, k: float) -> Est:
        return Est(self.point * k, self.boot * k, self.n)


class Boot:
    """Resample matrix over the project's items plus helpers that turn sums into CIs."""

    def __init__(self, clusters: Sequence[Any], resamples: int, seed: int):
        self.n = len(clusters)
        self.resamples = resamples
        self.seed = seed
        self.clustered = len(set(clusters)) < self.n
        self.W = draw(
            self.n, resamples, seed, clusters=list(clusters) if self.clustered else None
        ).astype(np.float64)
        self.scheme = "cluster" if self.clustered else "item"

    def per_unit(self, units: np.ndarray, values: np.ndarray | float = 1.0) -> np.ndarray:
        """Sum of ``values`` per item (``units`` are item indices)."""
        w = np.broadcast_to(np.asarray(values, dtype=float), units.shape)
        return np.bincount(units, weights=w, minlength=self.n)

    def ratio(self, num: np.ndarray, den: np.ndarray) -> Est:
        """sum(num) / sum(den) over items, per resample."""
        d = float(den.sum())
        point = float(num.sum()) / d if d > 0 else float("nan")
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = (self.W @ num) / (self.W @ den) if self.resamples else np.empty(0)
        return Est(point, boot, int(np.count_nonzero(den)))

    def rate(self, units: np.ndarray, hits: np.ndarray, weights: np.ndarray | None = None) -> Est:
        """Share of decisions that are hits (optionally item-weighted, e.g. IPW)."""
        w = np.ones(len(units)) if weights is None else weights
        return self.ratio(self.per_unit(units, hits * w), self.per_unit(units, w))

    def kappa(
        self, units: np.ndarray, agree: np.ndarray, a: Sequence[Any], b: Sequence[Any]
    ) -> Est:
        """Cohen's kappa: observed agreement from the field type's ``agree``, chance
        agreement from the two positions' category margins (values as categories)."""
        if len(units) == 0:
            return Est(float("nan"), np.full(self.resamples, np.nan), 0)
        cats: dict[Any, int] = {}
        ca = np.array([cats.setdefault(_key(x), len(cats)) for x in a])
        cb = np.array([cats.setdefault(_key(x), len(cats)) for x in b])
        k = len(cats)
        idx_a = units * k + ca
        idx_b = units * k + cb
        A = np.bincount(idx_a, minlength=self.n * k).reshape(self.n, k).astype(float)
        B = np.bincount(idx_b, minlength=self.n * k).reshape(self.n, k).astype(float)
        n_u = self.per_unit(units)
        o_u = self.per_unit(units, agree)
        point = _kappa(o_u.sum(), n_u.sum(), A.sum(0), B.sum(0))
        if self.resamples:
            boot = _kappa(self.W @ o_u, self.W @ n_u, self.W @ A, self.W @ B)
        else:
            boot = np.empty(0)
        return Est(float(point), np.asarray(boot, dtype=float), len(set(units.tolist())))

    def ci(self, est: Est) -> CI:
        return (
            percentile_ci(est.point, est.boot, seed=self.seed, scheme=self.scheme, n=est.n)
            if self.resamples
            else CI(
                est.point, float("nan"), float("nan"), 0, self.seed, scheme=self.scheme, n=est.n
            )
        )


def _key(x: Any) -> Any:
    if isinstance(x, list | tuple):
        return tuple(_key(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _key(v)) for k, v in x.items()))
    return x


def _kappa(o: Any, n: Any, A: np.ndarray, B: np.ndarray) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        n_arr = np.asarray(n, dtype=float)
        po = np.asarray(o, dtype=float) / n_arr
        pa = A / n_arr[..., None]
        pb = B / n_arr[..., None]
        pe = (pa * pb).sum(-1)
        out = (po - pe) / (1 - pe)
    return np.where(np.isclose(pe, 1.0), np.nan, out)
