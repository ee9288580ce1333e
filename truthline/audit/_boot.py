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
from typing import TYPE_CHECKING, Any

import numpy as np

from truthline.stats import (
    CI,
    MIN_CLUSTERS_TOTAL,
    ToleranceWeights,
    design,
    design_ci,
    draw,
    is_count_share,
    kappa_codes,
    kappa_from_sums,
    kappa_unit_sums,
    kappa_weights,
    percentile_ci,
    proportion_ci,
)

if TYPE_CHECKING:
    from truthline.audit._data import CodeTable

Stat = Callable[[np.ndarray], np.ndarray]
"""Statistic of item multiplicities over an estimate's covered items (B x len(cov))."""


WIDEN_CELLS = 2_000_000
"""Cells of the byte resample matrix widened to float64 at a time (16 MB)."""

DENSE_KAPPA_COLUMNS = 64
"""A kappa's per-cluster sums with at most this many columns (2 + 2 x categories) are
multiplied dense; a pooled kappa over many field-qualified codes stays sparse."""


def _kappa_sums(
    rows: np.ndarray, agree: np.ndarray, ca: np.ndarray, cb: np.ndarray, k: int, n: int
) -> Any:
    """``kappa_unit_sums`` as a sparse (n x 2+2k) matrix: [agree, n, margin_a, margin_b]."""
    from scipy import sparse

    m = len(rows)
    r = np.concatenate([rows, rows, rows, rows])
    c = np.concatenate([np.zeros(m, np.int64), np.ones(m, np.int64), 2 + ca, 2 + k + cb])
    v = np.concatenate([np.asarray(agree, dtype=float), np.ones(3 * m)])
    return sparse.csr_matrix((v, (r, c)), shape=(n, 2 + 2 * k))


class Est:
    """A point estimate with its bootstrap replicates (kept so differences can be formed).

    Replicates may be computed lazily: ``Boot.ratio`` queues its sums and the first
    ``.boot`` access evaluates every queued ratio in one matrix product.

    What the CI needs beyond the replicates is kept small (an audit makes thousands of
    estimates): ``ccov``, the cluster codes the statistic covers (None for an item
    bootstrap); only for a thin clustered design (< 20 clusters) ``cov`` (covered item
    indices) and ``stat`` (the statistic of multiplicities over ``cov``, for the
    jackknife); ``wilson``, the (low, high) of a count proportion's Wilson interval.
    """

    __slots__ = ("_boot", "_thunk", "bounds", "ccov", "cov", "n", "point", "stat", "wilson")

    def __init__(
        self,
        point: float,
        boot: np.ndarray | None,
        n: int,
        thunk: Callable[[], np.ndarray] | None = None,
        ccov: np.ndarray | None = None,
        cov: np.ndarray | None = None,
        stat: Stat | None = None,
        wilson: tuple[float, float] | None = None,
        bounds: tuple[float, float] | None = None,
    ):
        self.point = point
        self.n = n
        self._boot = boot
        self._thunk = thunk
        self.ccov = ccov
        self.cov = cov
        self.stat = stat
        self.wilson = wilson
        self.bounds = bounds
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
        ccov = (
            None if self.ccov is None or other.ccov is None else np.union1d(self.ccov, other.ccov)
        )
        cov = stat = None
        if self.stat is not None and other.stat is not None:
            assert self.cov is not None and other.cov is not None
            cov = np.union1d(self.cov, other.cov)
            pa, pb = np.searchsorted(cov, self.cov), np.searchsorted(cov, other.cov)
            sa, sb = self.stat, other.stat

            def stat(V: np.ndarray) -> np.ndarray:
                return sa(V[:, pa]) - sb(V[:, pb])

        return Est(
            self.point - other.point,
            None,
            min(self.n, other.n),
            lambda: self.boot - other.boot,
            ccov,
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
            self.ccov,
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
        self.names = np.unique(labels)
        """Cluster label per cluster code."""
        self.cluster_of = codes.astype(np.int64).ravel()
        self.nc = int(codes.max()) + 1 if len(codes) else 0
        self.clustered = self.nc < self.n
        # Resampling clusters as units draws the same matrix ``stats.draw`` would with
        # ``clusters=`` (same codes, same random stream), but sums are taken per cluster
        # first, so every product is (resamples x clusters) instead of (resamples x items).
        # one byte per (resample, cluster); products widen a few rows at a time (``_times``)
        self.W = draw(self.nc, resamples, seed, dtype=np.uint8)
        self.scheme = "cluster" if self.clustered else "item"
        self._queue: list[tuple[np.ndarray, np.ndarray, Est]] = []
        # queued sums are bounded to ~4 MB whatever the number of clusters
        self._batch = int(min(512, max(16, 4_000_000 // (16 * max(self.nc, 1)))))

    def _flush(self) -> np.ndarray:
        """Evaluate every queued ratio: one (resamples x clusters) @ (clusters x 2q) product
        per chunk instead of one product per statistic."""
        queue, self._queue = self._queue, []
        for start in range(0, len(queue), self._batch):
            chunk = queue[start : start + self._batch]
            M = np.empty((self.nc, 2 * len(chunk)))
            for j, (num, den, _) in enumerate(chunk):
                M[:, 2 * j] = num
                M[:, 2 * j + 1] = den
            R = self._times(M)
            with np.errstate(invalid="ignore", divide="ignore"):
                ratios = R[:, 0::2] / R[:, 1::2]
            for j, (_, _, est) in enumerate(chunk):
                est._boot = ratios[:, j].copy()
        return np.empty(0)

    def _times(self, M: Any, cols: np.ndarray | None = None) -> np.ndarray:
        """``W @ M`` (``W[:, cols] @ M`` with ``cols``), dense or sparse ``M``, widening W
        to floats in row chunks of ~2 M cells: memory stays at one byte per cell of W."""
        width = self.nc if cols is None else len(cols)
        out = np.empty((self.resamples, M.shape[1]))
        step = max(1, WIDEN_CELLS // max(width, 1))
        for lo in range(0, self.resamples, step):
            rows = self.W[lo : lo + step]
            Wf = (rows if cols is None else rows[:, cols]).astype(np.float64)
            out[lo : lo + step] = Wf @ M
        return out

    def _agg(self, vec: np.ndarray) -> np.ndarray:
        return np.bincount(self.cluster_of, weights=vec, minlength=self.nc)

    def per_unit(self, units: np.ndarray, values: np.ndarray | float = 1.0) -> np.ndarray:
        """Sum of ``values`` per item (``units`` are item indices)."""
        w = np.broadcast_to(np.asarray(values, dtype=float), units.shape)
        return np.bincount(units, weights=w, minlength=self.n)

    def _cover(self, cov: np.ndarray) -> tuple[np.ndarray | None, bool]:
        """(cluster codes covered, whether that is too few clusters to bootstrap)."""
        if not self.clustered:
            return None, False
        ccov = np.unique(self.cluster_of[cov]).astype(np.int32)
        return ccov, len(ccov) < MIN_CLUSTERS_TOTAL

    def _wilson(self, cov: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
        """Wilson interval of a count proportion, adjusted for its clusters (items when the
        items are the units); a single unit still gets the plain Wilson interval."""
        labels = self.cluster_of[cov] if self.clustered else cov  # int codes: grouped in O(n)
        w = proportion_ci(a, b, clusters=labels)
        if not np.isfinite(w.low) and not self.clustered:
            w = proportion_ci(float(a.sum()), float(b.sum()))
        return float(w.low), float(w.high)

    def ratio(self, num: np.ndarray, den: np.ndarray, *, share: bool = False) -> Est:
        """sum(num) / sum(den) over items; resamples are evaluated lazily, in batches.
        ``share``: a count proportion (whole successes of whole trials per item)."""
        d = float(den.sum())
        point = float(num.sum()) / d if d > 0 else float("nan")
        cov = np.flatnonzero(den)
        n = len(cov)
        ccov, thin = self._cover(cov)
        a, b = num[cov], den[cov]
        wilson = None
        if share and self.resamples and n and is_count_share(a, b):
            wilson = self._wilson(cov, a, b)
        stat = None
        if thin:

            def stat(V: np.ndarray) -> np.ndarray:
                with np.errstate(invalid="ignore", divide="ignore"):
                    return np.asarray((V @ a) / (V @ b))

        bounds = (0.0, 1.0) if wilson is not None else None
        keep = cov if thin else None
        if not self.resamples:
            return Est(point, np.empty(0), n, None, ccov, keep, stat, wilson, bounds)
        est = Est(point, None, n, self._flush, ccov, keep, stat, wilson, bounds)
        self._queue.append((self._agg(num), self._agg(den), est))
        if len(self._queue) >= self._batch:  # each queued ratio holds 2 x clusters sums
            self._flush()
        return est

    def rate(self, units: np.ndarray, hits: np.ndarray, weights: np.ndarray | None = None) -> Est:
        """Share of decisions that are hits (optionally item-weighted, e.g. IPW); unweighted,
        it is a count proportion."""
        w = np.ones(len(units)) if weights is None else weights
        return self.ratio(
            self.per_unit(units, hits * w), self.per_unit(units, w), share=weights is None
        )

    def kappa(
        self,
        units: np.ndarray,
        agree: np.ndarray,
        a: Sequence[Any],
        b: Sequence[Any],
        tolerance: float | None = None,
        codes: CodeTable | None = None,
    ) -> Est:
        """Cohen's kappa: observed agreement from the field type's ``agree``, chance
        agreement from the two positions' category margins under the SAME definition of
        agreement (METRICS.md §1). ``a``/``b`` are category codes (ints) or hashable values.
        ``tolerance``: ``a``/``b`` are numbers that agree within it (observed and chance).
        ``codes``: ``a``/``b`` are the audit's category codes and the table says which of
        them agree (numbers within their field's tolerance; a pooled kappa never pairs two
        fields). The kernel and its per-cluster sums are ``truthline.stats``'s; resamples
        are one ``W @ F``."""
        if len(units) == 0:
            return Est(float("nan"), np.full(self.resamples, np.nan), 0)
        w: ToleranceWeights | None = None
        if tolerance is not None:
            ca, cb, k, w, agree = kappa_weights(a, b, tolerance)
        elif codes is not None:
            both = np.concatenate([np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)])
            present, inv = np.unique(both, return_inverse=True)
            inv = inv.ravel()
            ca, cb, k = inv[: len(a)], inv[len(a) :], len(present)
            w = codes.weights(present)
        else:
            ca, cb, k = kappa_codes(a, b)
        # per covered cluster, sparse: memory and work O(decisions), not clusters x codes
        ucl, pos = np.unique(self.cluster_of[units], return_inverse=True)
        F = _kappa_sums(pos.ravel(), agree, ca, cb, k, len(ucl))
        if F.shape[1] <= DENSE_KAPPA_COLUMNS:  # few categories: a dense product is faster
            F = F.toarray()
        point = float(kappa_from_sums(np.asarray(F.sum(axis=0)), k, w)[0])
        cols = None if len(ucl) == self.nc else ucl
        boot = kappa_from_sums(self._times(F, cols), k, w) if self.resamples else np.empty(0)
        cov = np.unique(units)
        ccov, thin = self._cover(cov)
        stat = None
        if thin:
            pos = np.searchsorted(cov, units)
            Fi = kappa_unit_sums(pos, agree, ca, cb, k, len(cov))

            def stat(V: np.ndarray) -> np.ndarray:
                return np.asarray(kappa_from_sums(V @ Fi, k, w), dtype=float)

        return Est(
            point,
            np.asarray(boot, dtype=float),
            len(cov),
            None,
            ccov,
            cov if thin else None,
            stat,
            None,
            (-1.0, 1.0),
        )

    def ci(self, est: Est) -> CI:
        """The estimate's CI on its own design: the clusters it covers, the thin-design
        warning and fallback (``stats.design_ci``), Wilson at least for count proportions."""
        # the covered clusters are distinct: their codes describe the design as their names
        d = design(len(est.ccov), est.ccov) if est.ccov is not None else design(est.n)
        nan = float("nan")
        thin_one = d.n_clusters is not None and d.n_clusters < 2
        if not est.n:  # nothing to estimate from: no design to describe either
            return CI(est.point, nan, nan, 0, self.seed, scheme=self.scheme, n=0)
        if not self.resamples or thin_one:
            return CI(est.point, nan, nan, 0, self.seed, scheme=self.scheme, n=est.n, **d.fields())
        if d.jackknife and est.stat is not None and est.cov is not None:
            ci = design_ci(
                est.point,
                est.stat,
                len(est.cov),
                clusters=self.cluster_of[est.cov],
                resamples=self.resamples,
                seed=self.seed,
                boot=est.boot,
                bounds=est.bounds,
            )
            ci = replace(ci, n=est.n, **d.fields())
        else:
            ci = percentile_ci(
                est.point, est.boot, seed=self.seed, scheme=self.scheme, n=est.n, design=d
            )
        if est.wilson is None or not np.isfinite(ci.low) or not np.isfinite(est.point):
            return ci
        lo, hi = est.wilson
        if not np.isfinite(lo):
            return ci
        return replace(ci, low=min(ci.low, lo), high=max(ci.high, hi), method=f"{ci.method}+wilson")
