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

import contextlib
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
"""Cells of the byte resample matrix widened to floats at a time (16 MB as float64)."""

QUEUE_BYTES = 16_000_000
"""Queued per-cluster sums (ratios' and dense kappas') evaluated in one product: one pass
over the resample matrix per ~16 MB of sums (at least 128 columns, past which a wider
product saves little) instead of one pass per statistic (issue 28)."""

REPLICATE_BYTES = 8_000_000
"""Bound on one product's replicates (resamples x queued columns): with few clusters the
queue would otherwise hold every statistic of the audit at once."""

EXACT32 = 2**24
"""Integer sums below this are exact in float32: such products run in single precision
(twice the speed, half the widened matrix) and give the float64 result bit for bit."""

BLAS_THREADS = 1
"""Threads of the resample products. Why one: the audit runs on 2 shared cores, where
OpenBLAS's threads contend; at 14k clusters one (142 x 14,000) @ (14,000 x 142) product
took 12x the CPU of a single thread, and the audit's CPU grew as n^1.3 from 100k to 400k
decisions (issue 28). Only the exact float32 products (``_exact32``: whole numbers, every
partial sum exact) run on it: their numbers do not depend on the order of the sums; a
float64 product's last bits do, so those keep BLAS's default."""


def _blas_threads() -> contextlib.AbstractContextManager[object]:
    """``BLAS_THREADS`` for the products, through threadpoolctl where it is installed
    (without it, BLAS keeps its own default)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - an install without threadpoolctl
        return contextlib.nullcontext()
    return threadpool_limits(limits=BLAS_THREADS, user_api="blas")


DENSE_KAPPA_COLUMNS = 64
"""A kappa's per-cluster sums with at most this many columns (2 + 2 x categories) are
multiplied dense; a pooled kappa over many field-qualified codes stays sparse."""


def _kappa_sums(
    rows: np.ndarray, agree: np.ndarray, ca: np.ndarray, cb: np.ndarray, k: int, n: int
) -> Any:
    """``kappa_unit_sums`` as a sparse (n x 2+2k) matrix: [agree, n, margin_a, margin_b].

    Each block is summed by its own pass (``np.bincount`` per row, ``np.unique`` of the
    (row, code) keys for the margins): the temporaries are a few arrays of one number per
    decision, where one coordinate matrix of all four blocks held 4 x 3 per decision (at
    1M decisions, the audit's memory peak)."""
    from scipy import sparse

    rows = np.asarray(rows, dtype=np.int64)
    agree_r = np.bincount(rows, weights=np.asarray(agree, dtype=float), minlength=n)
    n_r = np.bincount(rows, minlength=n).astype(float)
    parts_r, parts_c, parts_v = [], [], []
    for col, vals in ((0, agree_r), (1, n_r)):
        nz = np.flatnonzero(vals)
        parts_r.append(nz)
        parts_c.append(np.full(len(nz), col, dtype=np.int64))
        parts_v.append(vals[nz])
    for first, codes in ((2, ca), (2 + k, cb)):
        keys, counts = np.unique(rows * k + np.asarray(codes, dtype=np.int64), return_counts=True)
        parts_r.append(keys // k)
        parts_c.append(first + keys % k)
        parts_v.append(counts.astype(float))
    r, c, v = (np.concatenate(x) for x in (parts_r, parts_c, parts_v))
    return sparse.csr_matrix((v, (r, c)), shape=(n, 2 + 2 * k))


def _compact(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for integer codes in ``range(size)``, in
    O(n + size) with one lookup table instead of a sort of ``codes``."""
    if len(codes) and (codes.min() < 0 or codes.max() >= size):
        raise ValueError(f"codes outside range({size})")
    seen = np.zeros(size, dtype=bool)
    seen[codes] = True
    present = np.flatnonzero(seen)
    lookup = np.empty(size, dtype=np.int64)
    lookup[present] = np.arange(len(present))
    return present, lookup[codes]


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
        self._wmax = int(self.W.max()) if self.W.size else 0
        # queued per-cluster sums: columns of one buffer, each block with what to do with
        # its replicates; bounded to ~QUEUE_BYTES whatever the number of clusters
        fit = min(QUEUE_BYTES // max(self.nc, 1), REPLICATE_BYTES // max(resamples, 1)) // 8
        self._width = int(max(2 * DENSE_KAPPA_COLUMNS, fit))
        self._buf: np.ndarray | None = None
        self._used = 0
        self._done: list[tuple[int, int, Callable[[np.ndarray], None]]] = []

    def _enqueue(self, sums: np.ndarray, done: Callable[[np.ndarray], None]) -> None:
        """Queue per-cluster sums (clusters x c); ``done`` gets their replicates (B x c)."""
        c = sums.shape[1]
        if self._used + c > self._width:
            self._flush()
        if self._buf is None:
            self._buf = np.empty((self.nc, self._width))
        self._buf[:, self._used : self._used + c] = sums
        self._done.append((self._used, self._used + c, done))
        self._used += c

    def _flush(self) -> np.ndarray:
        """Evaluate every queued statistic: one (resamples x clusters) @ (clusters x q)
        product instead of one product per statistic."""
        if not self._done:
            return np.empty(0)
        assert self._buf is not None
        done, used = self._done, self._used
        self._done, self._used = [], 0
        R = self._times(self._buf[:, :used])
        for lo, hi, fn in done:
            fn(R[:, lo:hi])
        return np.empty(0)

    def _exact32(self, M: np.ndarray) -> np.ndarray:
        """Per column, whether ``W @ M`` is exact in float32 there: whole numbers whose
        largest possible weighted column sum stays below 2**24 (every partial sum is then
        exact, so the float64 product gives the same numbers)."""
        small = np.abs(M).sum(axis=0) * max(self._wmax, 1) < EXACT32
        return small & np.all(np.rint(M) == M, axis=0)

    def _times(self, M: Any, cols: np.ndarray | None = None) -> np.ndarray:
        """``W @ M`` (``W[:, cols] @ M`` with ``cols``), dense or sparse ``M``. Dense
        columns of whole numbers that fit (``_exact32``) run in float32, the rest in
        float64: the same numbers, exactly, at twice the speed."""
        if not isinstance(M, np.ndarray) or not M.size:
            return self._product(M, cols, np.float64)
        f32 = self._exact32(M)
        if f32.all():
            return self._product(M.astype(np.float32), cols, np.float32)
        if not f32.any():
            return self._product(M, cols, np.float64)
        out = np.empty((self.resamples, M.shape[1]))
        out[:, f32] = self._product(M[:, f32].astype(np.float32), cols, np.float32)
        out[:, ~f32] = self._product(M[:, ~f32], cols, np.float64)
        return out

    def _product(self, M: Any, cols: np.ndarray | None, dtype: Any) -> np.ndarray:
        """``W @ M`` in ``dtype``, widening W in row chunks of ~2 M cells: memory stays at
        one byte per cell of W. Exact float32 products run on ``BLAS_THREADS``."""
        width = self.nc if cols is None else len(cols)
        out = np.empty((self.resamples, M.shape[1]))
        step = max(1, WIDEN_CELLS // max(width, 1))
        with _blas_threads() if dtype is np.float32 else contextlib.nullcontext():
            for lo in range(0, self.resamples, step):
                rows = self.W[lo : lo + step]
                Wf = (rows if cols is None else rows[:, cols]).astype(dtype)
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

        def done(R: np.ndarray) -> None:
            with np.errstate(invalid="ignore", divide="ignore"):
                est._boot = R[:, 0] / R[:, 1]

        self._enqueue(np.column_stack([self._agg(num), self._agg(den)]), done)
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
            present, inv = _compact(both, len(codes.x))
            ca, cb, k = inv[: len(a)], inv[len(a) :], len(present)
            w = codes.weights(present)
        else:
            ca, cb, k = kappa_codes(a, b)
        # per covered cluster, sparse: memory and work O(decisions), not clusters x codes
        ucl, pos = _compact(self.cluster_of[units], self.nc)
        F = _kappa_sums(pos, agree, ca, cb, k, len(ucl))
        dense = F.shape[1] <= DENSE_KAPPA_COLUMNS  # few categories: a dense product is faster
        if dense:
            F = F.toarray()
        point = float(kappa_from_sums(np.asarray(F.sum(axis=0)), k, w)[0])
        cols = None if len(ucl) == self.nc else ucl
        boot: np.ndarray | None = np.empty(0)
        if self.resamples and not dense:
            boot = np.asarray(kappa_from_sums(self._times(F, cols), k, w), dtype=float)
        elif self.resamples:  # queued with the ratios: zero sums on uncovered clusters
            boot = None
        cov = _compact(units, self.n)[0]
        ccov, thin = self._cover(cov)
        stat = None
        if thin:
            pos = np.searchsorted(cov, units)
            Fi = kappa_unit_sums(pos, agree, ca, cb, k, len(cov))

            def stat(V: np.ndarray) -> np.ndarray:
                return np.asarray(kappa_from_sums(V @ Fi, k, w), dtype=float)

        est = Est(
            point,
            boot,
            len(cov),
            self._flush if boot is None else None,
            ccov,
            cov if thin else None,
            stat,
            None,
            (-1.0, 1.0),
        )
        if boot is None:
            full = np.zeros((self.nc, F.shape[1]))
            full[ucl] = F

            def done(R: np.ndarray) -> None:
                est._boot = np.asarray(kappa_from_sums(R, k, w), dtype=float)

            self._enqueue(full, done)
        return est

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
