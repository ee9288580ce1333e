"""One bootstrap for the whole audit: a single multiplicity matrix over items (or clusters).

Why one matrix: every audit number is a ratio of per-item sums (or a kappa built from
per-item category counts), so with the resample matrix ``W`` (from ``stats.draw``) all
2,000 resamples of any statistic are one matrix product. Sharing ``W`` across statistics
also makes differences (blind vs anchored, before vs after exclusion) properly paired.
A statistic over a subset of items is resampled as part of the whole data set, so the
subset's size varies across resamples as it would in a new study.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from truthline.stats import (
    CI,
    draw,
    kappa_codes,
    kappa_from_sums,
    kappa_unit_sums,
    percentile_ci,
)


class Est:
    """A point estimate with its bootstrap replicates (kept so differences can be formed).

    Replicates may be computed lazily: ``Boot.ratio`` queues its sums and the first
    ``.boot`` access evaluates every queued ratio in one matrix product.
    """

    __slots__ = ("_boot", "_thunk", "n", "point")

    def __init__(
        self,
        point: float,
        boot: np.ndarray | None,
        n: int,
        thunk: Callable[[], np.ndarray] | None = None,
    ):
        self.point = point
        self.n = n
        self._boot = boot
        self._thunk = thunk

    @property
    def boot(self) -> np.ndarray:
        if self._boot is None:
            assert self._thunk is not None
            out = self._thunk()
            if self._boot is None:  # a flush may already have filled it
                self._boot = out
        return self._boot

    def __sub__(self, other: Est) -> Est:
        return Est(
            self.point - other.point, None, min(self.n, other.n), lambda: self.boot - other.boot
        )

    def scale(self, k: float) -> Est:
        return Est(self.point * k, None, self.n, lambda: self.boot * k)


class Boot:
    """Resample matrix over the project's items plus helpers that turn sums into CIs."""

    def __init__(self, clusters: Sequence[Any], resamples: int, seed: int):
        self.n = len(clusters)
        self.resamples = resamples
        self.seed = seed
        labels = np.asarray(clusters, dtype=object).astype(str)
        _, codes = np.unique(labels, return_inverse=True)
        self.cluster_of = codes.astype(np.int64)
        self.nc = int(codes.max()) + 1 if len(codes) else 0
        self.clustered = self.nc < self.n
        # Resampling clusters as units draws the same matrix ``stats.draw`` would with
        # ``clusters=`` (same codes, same random stream), but sums are taken per cluster
        # first, so every product is (resamples x clusters) instead of (resamples x items).
        self.W = draw(self.nc, resamples, seed).astype(np.float64)
        self.scheme = "cluster" if self.clustered else "item"
        self._queue: list[tuple[np.ndarray, np.ndarray, Est]] = []

    def _flush(self) -> np.ndarray:
        """Evaluate every queued ratio: one (resamples x clusters) @ (clusters x 2q) product
        per chunk instead of one product per statistic."""
        queue, self._queue = self._queue, []
        for start in range(0, len(queue), 512):
            chunk = queue[start : start + 512]
            M = np.empty((self.nc, 2 * len(chunk)))
            for j, (num, den, _) in enumerate(chunk):
                M[:, 2 * j] = num
                M[:, 2 * j + 1] = den
            R = self.W @ M
            with np.errstate(invalid="ignore", divide="ignore"):
                ratios = R[:, 0::2] / R[:, 1::2]
            for j, (_, _, est) in enumerate(chunk):
                est._boot = ratios[:, j].copy()
        return np.empty(0)

    def _agg(self, vec: np.ndarray) -> np.ndarray:
        return np.bincount(self.cluster_of, weights=vec, minlength=self.nc)

    def per_unit(self, units: np.ndarray, values: np.ndarray | float = 1.0) -> np.ndarray:
        """Sum of ``values`` per item (``units`` are item indices)."""
        w = np.broadcast_to(np.asarray(values, dtype=float), units.shape)
        return np.bincount(units, weights=w, minlength=self.n)

    def ratio(self, num: np.ndarray, den: np.ndarray) -> Est:
        """sum(num) / sum(den) over items; resamples are evaluated lazily, in batches."""
        d = float(den.sum())
        point = float(num.sum()) / d if d > 0 else float("nan")
        n = int(np.count_nonzero(den))
        if not self.resamples:
            return Est(point, np.empty(0), n)
        est = Est(point, None, n, self._flush)
        self._queue.append((self._agg(num), self._agg(den), est))
        return est

    def rate(self, units: np.ndarray, hits: np.ndarray, weights: np.ndarray | None = None) -> Est:
        """Share of decisions that are hits (optionally item-weighted, e.g. IPW)."""
        w = np.ones(len(units)) if weights is None else weights
        return self.ratio(self.per_unit(units, hits * w), self.per_unit(units, w))

    def kappa(
        self, units: np.ndarray, agree: np.ndarray, a: Sequence[Any], b: Sequence[Any]
    ) -> Est:
        """Cohen's kappa: observed agreement from the field type's ``agree``, chance
        agreement from the two positions' category margins (values as categories).
        ``a``/``b`` are category codes (ints) or hashable-able values. The kernel and its
        per-cluster sums are ``truthline.stats``'s; resamples are one ``W @ F``."""
        if len(units) == 0:
            return Est(float("nan"), np.full(self.resamples, np.nan), 0)
        ca, cb, k = kappa_codes(a, b)
        F = kappa_unit_sums(self.cluster_of[units], agree, ca, cb, k, self.nc)
        point = float(kappa_from_sums(F.sum(axis=0), k)[0])
        boot = kappa_from_sums(self.W @ F, k) if self.resamples else np.empty(0)
        return Est(point, np.asarray(boot, dtype=float), len(set(units.tolist())))

    def ci(self, est: Est) -> CI:
        return (
            percentile_ci(est.point, est.boot, seed=self.seed, scheme=self.scheme, n=est.n)
            if self.resamples
            else CI(
                est.point, float("nan"), float("nan"), 0, self.seed, scheme=self.scheme, n=est.n
            )
        )
