"""One bootstrap for the whole audit: a single multiplicity matrix over items (or clusters).

Why one matrix: every audit number is a ratio of per-item sums (or a kappa built from
per-item category counts), so with the resample matrix ``W`` (from ``stats.draw``) all
2,000 resamples of any statistic are one matrix product. Sharing ``W`` across statistics
also makes differences (blind vs anchored, before vs after exclusion) properly paired.
A statistic over a subset of items is resampled as part of the whole data set, so the
subset's size varies across resamples as it would in a new study.

Every ``CI`` records the design it stands on: the clusters (and items) the statistic
actually covers. With fewer than 20 clusters the interval is ``stats.design_ci``'s
cluster jackknife-t (never narrower than the item bootstrap), so each estimate keeps a
``stat`` it can re-evaluate on other multiplicities. Count proportions (override, keep,
flag, skip, correct-label rates) are widened to at least the cluster-adjusted Wilson
interval (``stats.proportion_ci``): a rate of 0 or 1 never gets a zero-width interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from truthline.stats import (
    CI,
    MIN_CLUSTERS_TOTAL,
    design,
    design_ci,
    draw,
    kappa_codes,
    kappa_from_sums,
    kappa_unit_sums,
    percentile_ci,
    proportion_ci,
)

Stat = Callable[[np.ndarray], np.ndarray]
"""Statistic of item multiplicities over an estimate's covered items (B x len(cov))."""


class Est:
    """A point estimate with its bootstrap replicates (kept so differences can be formed).

    Replicates may be computed lazily: ``Boot.ratio`` queues its sums and the first
    ``.boot`` access evaluates every queued ratio in one matrix product. ``cov``: the item
    indices the statistic covers (its design); ``stat``: the statistic as a function of
    multiplicities over ``cov`` (kept only for thin clustered designs, for the jackknife);
    ``share``: per covered item (successes, trials) of a count proportion.
    """

    __slots__ = ("_boot", "_thunk", "bounds", "cov", "n", "point", "share", "stat")

    def __init__(
        self,
        point: float,
        boot: np.ndarray | None,
        n: int,
        thunk: Callable[[], np.ndarray] | None = None,
        cov: np.ndarray | None = None,
        stat: Stat | None = None,
        share: tuple[np.ndarray, np.ndarray] | None = None,
    ):
        self.point = point
        self.n = n
        self._boot = boot
        self._thunk = thunk
        self.cov = np.zeros(0, dtype=np.int64) if cov is None else cov
        self.stat = stat
        self.share = share
        self.bounds: tuple[float, float] | None = (0.0, 1.0) if share is not None else None
        """Where the statistic lives (a jackknife-t interval is clipped to it)."""

    @property
    def boot(self) -> np.ndarray:
        if self._boot is None:
            assert self._thunk is not None
            out = self._thunk()
            if self._boot is None:  # a flush may already have filled it
                self._boot = out
        return self._boot

    def __sub__(self, other: Est) -> Est:
        cov = np.union1d(self.cov, other.cov)
        stat = None
        if self.stat is not None and other.stat is not None:
            pa, pb = np.searchsorted(cov, self.cov), np.searchsorted(cov, other.cov)
            sa, sb = self.stat, other.stat

            def stat(V: np.ndarray) -> np.ndarray:
                return sa(V[:, pa]) - sb(V[:, pb])

        return Est(
            self.point - other.point,
            None,
            min(self.n, other.n),
            lambda: self.boot - other.boot,
            cov,
            stat,
        )

    def scale(self, k: float) -> Est:
        s = self.stat
        return Est(
            self.point * k,
            None,
            self.n,
            lambda: self.boot * k,
            self.cov,
            None if s is None else (lambda V: s(V) * k),
        )


class Boot:
    """Resample matrix over the project's items plus helpers that turn sums into CIs."""

    def __init__(self, clusters: Sequence[Any], resamples: int, seed: int):
        self.n = len(clusters)
        self.resamples = resamples
        self.seed = seed
        labels = np.asarray(clusters, dtype=object).astype(str)
        _, codes = np.unique(labels, return_inverse=True)
        self.labels = labels
        self.cluster_of = codes.astype(np.int64).ravel()
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

    def _thin(self, cov: np.ndarray) -> bool:
        """Whether the statistic over items ``cov`` sits on too few clusters to bootstrap."""
        return self.clustered and len(np.unique(self.cluster_of[cov])) < MIN_CLUSTERS_TOTAL

    def ratio(self, num: np.ndarray, den: np.ndarray, *, share: bool = False) -> Est:
        """sum(num) / sum(den) over items; resamples are evaluated lazily, in batches.
        ``share``: a count proportion (whole successes of whole trials per item)."""
        d = float(den.sum())
        point = float(num.sum()) / d if d > 0 else float("nan")
        cov = np.flatnonzero(den)
        n = len(cov)
        a, b = num[cov], den[cov]
        sh = (a, b) if share and _counts(a, b) else None
        stat = None
        if self._thin(cov):

            def stat(V: np.ndarray) -> np.ndarray:
                with np.errstate(invalid="ignore", divide="ignore"):
                    return np.asarray((V @ a) / (V @ b))

        if not self.resamples:
            return Est(point, np.empty(0), n, cov=cov, stat=stat, share=sh)
        est = Est(point, None, n, self._flush, cov, stat, sh)
        self._queue.append((self._agg(num), self._agg(den), est))
        return est

    def rate(self, units: np.ndarray, hits: np.ndarray, weights: np.ndarray | None = None) -> Est:
        """Share of decisions that are hits (optionally item-weighted, e.g. IPW); unweighted,
        it is a count proportion."""
        w = np.ones(len(units)) if weights is None else weights
        return self.ratio(
            self.per_unit(units, hits * w), self.per_unit(units, w), share=weights is None
        )

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
        cov = np.unique(units)
        stat = None
        if self._thin(cov):
            pos = np.searchsorted(cov, units)
            Fi = kappa_unit_sums(pos, agree, ca, cb, k, len(cov))

            def stat(V: np.ndarray) -> np.ndarray:
                return np.asarray(kappa_from_sums(V @ Fi, k), dtype=float)

        est = Est(point, np.asarray(boot, dtype=float), len(cov), cov=cov, stat=stat)
        est.bounds = (-1.0, 1.0)
        return est

    def ci(self, est: Est) -> CI:
        """The estimate's CI on its own design: the clusters it covers, the thin-design
        warning and fallback (``stats.design_ci``), Wilson at least for count proportions."""
        cov = est.cov
        labels = list(self.labels[cov]) if self.clustered else None
        d = design(len(cov), labels)
        nan = float("nan")
        thin_one = d.n_clusters is not None and d.n_clusters < 2
        if not self.resamples or thin_one or not len(cov):
            return CI(est.point, nan, nan, 0, self.seed, scheme=self.scheme, n=est.n, **d.fields())
        if d.jackknife and est.stat is not None:
            ci = design_ci(
                est.point,
                est.stat,
                len(cov),
                clusters=labels,
                resamples=self.resamples,
                seed=self.seed,
                boot=est.boot,
                bounds=est.bounds,
            )
            ci = replace(ci, n=est.n)
        else:
            ci = percentile_ci(
                est.point, est.boot, seed=self.seed, scheme=self.scheme, n=est.n, design=d
            )
        if est.share is None or not np.isfinite(ci.low) or not np.isfinite(est.point):
            return ci
        succ, trials = est.share
        w = proportion_ci(
            succ, trials, clusters=labels if labels is not None else list(cov.tolist())
        )
        if not np.isfinite(w.low) and labels is None:
            # a single item: nothing to adjust for, but the rate still must not collapse
            w = proportion_ci(float(succ.sum()), float(trials.sum()))
        if not np.isfinite(w.low):
            return ci
        return replace(
            ci, low=min(ci.low, w.low), high=max(ci.high, w.high), method=f"{ci.method}+wilson"
        )


def _counts(a: np.ndarray, b: np.ndarray) -> bool:
    """Whole successes out of whole trials (a count proportion, not a mean or a weight)."""
    return bool(
        len(a)
        and np.all(a >= 0)
        and np.all(a <= b)
        and np.all(a == np.round(a))
        and np.all(b == np.round(b))
    )
