"""Vectorized percentile bootstrap: resamples as a (B, n) matrix of unit multiplicities.

A resample is represented by how many times each unit is drawn, so any statistic that is
a weighted sum over units (a mean, a rate, a coincidence matrix) is computed for all B
resamples at once with one matrix product, never a Python loop over resamples.

Item-level, cluster-level (all units of a parent drawn together) and stratified
(resampled within each stratum) schemes share one entry point: ``draw``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 2000


@dataclass(frozen=True)
class CI:
    """A point estimate with its percentile interval and how it was obtained."""

    point: float
    low: float
    high: float
    resamples: int
    seed: int | None
    method: str = "percentile"
    scheme: str = "item"
    level: float = 0.95
    n: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def excludes_zero(self) -> bool:
        return bool(self.low > 0 or self.high < 0)

    def __str__(self) -> str:
        if self.resamples == 0 or np.isnan(self.low):
            return f"{self.point:.3f}"
        return f"{self.point:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _group_codes(labels: Sequence[Any]) -> tuple[np.ndarray, int]:
    _, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    return codes.astype(np.int64), int(codes.max()) + 1 if len(codes) else 0


def draw(
    n: int,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    *,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    batch: int | None = None,
) -> np.ndarray:
    """Multiplicity matrix ``W`` of shape (resamples, n): ``W[b, i]`` = times unit i is drawn.

    ``clusters``: units sharing a label are drawn together (cluster bootstrap).
    ``strata``: clusters (or units) are resampled within each stratum, keeping its size.
    ``batch``: draws per block (default 4M; bounds memory, keeps bincount cache-friendly).
    The same ``seed`` always gives the same matrix.
    """
    rng = np.random.default_rng(seed)
    if n == 0 or resamples == 0:
        return np.zeros((resamples, n), dtype=np.int32)
    if clusters is None:
        unit_cluster = np.arange(n)
        n_clusters = n
    else:
        if len(clusters) != n:
            raise ValueError(f"clusters has {len(clusters)} labels for {n} units")
        unit_cluster, n_clusters = _group_codes(clusters)
    if strata is None:
        cluster_stratum = np.zeros(n_clusters, dtype=np.int64)
    else:
        if len(strata) != n:
            raise ValueError(f"strata has {len(strata)} labels for {n} units")
        s_codes, _ = _group_codes(strata)
        cluster_stratum = np.zeros(n_clusters, dtype=np.int64)
        cluster_stratum[unit_cluster] = s_codes  # a cluster must sit in one stratum
        if np.any(cluster_stratum[unit_cluster] != s_codes):
            raise ValueError(
                "a cluster spans several strata; strata must be constant within a cluster"
            )
    counts = np.zeros((resamples, n_clusters), dtype=np.int32)
    step = max(1, (batch or 2**22) // max(1, n_clusters))  # cache-sized blocks of rows
    for s in np.unique(cluster_stratum):
        members = np.flatnonzero(cluster_stratum == s)
        k = len(members)
        for lo in range(0, resamples, step):
            hi = min(resamples, lo + step)
            picks = rng.integers(0, k, size=(hi - lo, k), dtype=np.int32)
            picks += (np.arange(hi - lo, dtype=np.int32) * k)[:, None]  # one bincount for the block
            block = np.bincount(picks.ravel(), minlength=(hi - lo) * k).reshape(hi - lo, k)
            if k == n_clusters:
                counts[lo:hi] = block
            else:
                counts[lo:hi, members] = block
    return counts if clusters is None else counts[:, unit_cluster]


def percentile_ci(
    point: float,
    boot: np.ndarray,
    *,
    level: float = 0.95,
    seed: int | None = None,
    scheme: str = "item",
    n: int = 0,
) -> CI:
    """Percentile interval of bootstrap values (NaNs from undefined resamples are dropped)."""
    boot = np.asarray(boot, dtype=float)
    finite = boot[np.isfinite(boot)]
    if finite.size == 0:
        return CI(
            float(point),
            float("nan"),
            float("nan"),
            int(boot.size),
            seed,
            scheme=scheme,
            level=level,
            n=n,
        )
    alpha = (1 - level) / 2
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return CI(
        float(point), float(lo), float(hi), int(boot.size), seed, scheme=scheme, level=level, n=n
    )


def _scheme(clusters: Sequence[Any] | None, strata: Sequence[Any] | None) -> str:
    parts = (["cluster"] if clusters is not None else ["item"]) + (
        ["stratified"] if strata is not None else []
    )
    return "+".join(parts)


def mean_ci(
    values: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    weights: Sequence[float] | np.ndarray | None = None,
    level: float = 0.95,
) -> CI:
    """Mean (or weighted mean, e.g. inverse-probability weights) of per-unit values, with CI:
    the ratio of sums of ``w * x`` over ``w``."""
    x = np.asarray(values, dtype=float)
    w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=float)
    return ratio_ci(
        w * x, w, resamples=resamples, seed=seed, clusters=clusters, strata=strata, level=level
    )


def ratio_ci(
    numer: Sequence[float] | np.ndarray,
    denom: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    level: float = 0.95,
) -> CI:
    """Ratio of sums over units (e.g. overridden decisions / decisions per item), with CI."""
    a = np.asarray(numer, dtype=float)
    b = np.asarray(denom, dtype=float)
    n = len(a)
    point = float(a.sum() / b.sum()) if n and b.sum() > 0 else float("nan")
    if resamples == 0 or n == 0:
        return CI(
            point,
            float("nan"),
            float("nan"),
            0,
            seed,
            scheme=_scheme(clusters, strata),
            level=level,
            n=n,
        )
    W = draw(n, resamples, seed, clusters=clusters, strata=strata)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (W @ a) / (W @ b)
    return percentile_ci(point, boot, level=level, seed=seed, scheme=_scheme(clusters, strata), n=n)


def paired_diff_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    level: float = 0.95,
) -> CI:
    """Mean of ``a - b`` over the same units (paired), resampling units together."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return mean_ci(d, resamples=resamples, seed=seed, clusters=clusters, strata=strata, level=level)
