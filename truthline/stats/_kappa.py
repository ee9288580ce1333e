"""Cohen's kappa as a function of per-unit sums: the one kappa kernel.

Kappa needs only four sums over decisions: observed agreements, decisions, and the two
raters' category margins. Kept per unit (or per cluster) as a feature row, any batch of
bootstrap resamples is one product ``W @ F`` and ``kappa_from_counts`` finishes all of
them at once. ``CohenKappa`` (stats) and the provenance audit (VLM vs annotator, blind vs
anchored pairs, where "agree" is the field type's comparison) both use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

MAX_DENSE_WEIGHTS = 4096
"""``ToleranceWeights.matrix`` refuses more categories than this (q² memory)."""


class ToleranceWeights:
    """Agreement weights ``w_ij = 1[g_i == g_j and |x_i - x_j| <= tol]`` without a q x q matrix.

    One definition of "agree" for observed AND chance agreement (METRICS.md §1: a number
    agrees within its field's tolerance). Exact categories are the special case
    ``tol = 0`` with distinct ``x``. ``groups`` keeps categories of different fields apart
    (a pooled kappa over field-qualified codes). ``apply`` is ``p @ W`` by prefix sums over
    the values sorted within each group: O(q) per row, whatever the number of values.
    """

    def __init__(
        self,
        values: Sequence[float] | np.ndarray,
        tolerance: float | Sequence[float] | np.ndarray,
        groups: Sequence[int] | np.ndarray | None = None,
    ):
        x = np.asarray(values, dtype=float)
        q = len(x)
        tol = np.broadcast_to(np.asarray(tolerance, dtype=float), (q,)) + 1e-12
        g = np.zeros(q, dtype=np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
        self.q, self.x, self.tol, self.g = q, x, tol, g
        self.order = np.lexsort((x, g))  # by group, then value
        xs, gs, ts = x[self.order], g[self.order], tol[self.order]
        lo = np.empty(q, dtype=np.int64)
        hi = np.empty(q, dtype=np.int64)
        bounds = np.flatnonzero(np.diff(gs)) + 1
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, q], strict=True):
            seg = xs[a:b]
            lo[a:b] = a + np.searchsorted(seg, seg - ts[a:b], side="left")
            hi[a:b] = a + np.searchsorted(seg, seg + ts[a:b], side="right")
        self.lo, self.hi = lo, hi

    def apply(self, p: np.ndarray) -> np.ndarray:
        """``p @ W`` over the last axis (W is symmetric when the tolerance is per group)."""
        p = np.asarray(p, dtype=float)
        ps = p[..., self.order]
        cs = np.concatenate([np.zeros((*ps.shape[:-1], 1)), np.cumsum(ps, axis=-1)], axis=-1)
        out = np.empty_like(p)
        out[..., self.order] = cs[..., self.hi] - cs[..., self.lo]
        return out

    def pair(self, code_a: np.ndarray, code_b: np.ndarray) -> np.ndarray:
        """``W[code_a, code_b]`` per decision: the observed agreement of each pair."""
        same = self.g[code_a] == self.g[code_b]
        return (same & (np.abs(self.x[code_a] - self.x[code_b]) <= self.tol[code_a])).astype(float)

    def matrix(self) -> np.ndarray:
        """Dense W (small q only: tests and the kappa family of ``stats``)."""
        if self.q > MAX_DENSE_WEIGHTS:
            raise ValueError(f"{self.q} categories: too many for a dense weight matrix")
        i = np.arange(self.q)
        return self.pair(np.repeat(i, self.q), np.tile(i, self.q)).reshape(self.q, self.q)


Weights = np.ndarray | ToleranceWeights

UNDEFINED_TOL = 1e-12
"""Kappa is undefined (NaN) when chance agreement is within this of 1 (one category)."""


def kappa_from_counts(
    observed: Any,
    n: Any,
    margin_a: np.ndarray,
    margin_b: np.ndarray,
    weights: Weights | None = None,
) -> np.ndarray:
    """Kappa from sums, batched over leading axes: ``(p_o - p_e) / (1 - p_e)``.

    ``observed``: (weighted) agreeing decisions; ``n``: decisions; ``margin_a``/``margin_b``
    (..., q): category counts of each rater. ``weights`` (q x q agreement weights, or a
    ``ToleranceWeights``) gives weighted chance agreement (Cohen 1968); without it
    ``p_e = sum_c p_a(c) p_b(c)``. ``observed`` must use the same weights: with
    ``ToleranceWeights`` take it from ``weights.pair`` (``kappa_weights`` does).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        n_arr = np.asarray(n, dtype=float)
        po = np.asarray(observed, dtype=float) / n_arr
        pa = np.asarray(margin_a, dtype=float) / n_arr[..., None]
        pb = np.asarray(margin_b, dtype=float) / n_arr[..., None]
        if weights is None:
            pe = (pa * pb).sum(-1)
        elif isinstance(weights, ToleranceWeights):
            pe = (pa * weights.apply(pb)).sum(-1)
        else:
            pe = np.einsum("...c,ck,...k->...", pa, weights, pb)
        out = (po - pe) / (1 - pe)
    return np.where(np.abs(1 - pe) > UNDEFINED_TOL, out, np.nan)


def kappa_unit_sums(
    units: np.ndarray,
    agree: np.ndarray,
    code_a: np.ndarray,
    code_b: np.ndarray,
    q: int,
    n_units: int,
) -> np.ndarray:
    """Per-unit sums for ``kappa_from_counts``: columns [agree, n, margin_a (q), margin_b (q)].

    ``units[i]`` is the unit (or cluster) of decision i; ``agree[i]`` its agreement (0/1 or
    a weight), ``code_a``/``code_b`` the two raters' category codes in ``range(q)``.
    """
    units = np.asarray(units, dtype=np.int64)
    A = np.bincount(units * q + code_a, minlength=n_units * q).reshape(n_units, q)
    B = np.bincount(units * q + code_b, minlength=n_units * q).reshape(n_units, q)
    n_u = np.bincount(units, minlength=n_units).astype(float)
    o_u = np.bincount(units, weights=np.asarray(agree, dtype=float), minlength=n_units)
    return np.column_stack([o_u, n_u, A, B])


def kappa_from_sums(S: np.ndarray, q: int, weights: Weights | None = None) -> np.ndarray:
    """Kappa of rows of summed ``kappa_unit_sums`` features (B x (2 + 2q))."""
    S = np.atleast_2d(S)
    return kappa_from_counts(S[:, 0], S[:, 1], S[:, 2 : 2 + q], S[:, 2 + q :], weights)


def kappa_codes(a: Sequence[Any], b: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, int]:
    """Shared dense category codes for two rating vectors (integer arrays are codes already;
    lists and dicts are compared by value)."""
    if isinstance(a, np.ndarray) and a.dtype.kind == "i":
        both = np.concatenate([a, np.asarray(b)])
        _, inv = np.unique(both, return_inverse=True)
        inv = inv.ravel()
        return inv[: len(a)], inv[len(a) :], int(inv.max()) + 1 if len(inv) else 0
    cats: dict[Any, int] = {}
    ca = np.array([cats.setdefault(_key(x), len(cats)) for x in a], dtype=np.int64)
    cb = np.array([cats.setdefault(_key(x), len(cats)) for x in b], dtype=np.int64)
    return ca, cb, len(cats)


def _key(x: Any) -> Any:
    if isinstance(x, list | tuple):
        return tuple(_key(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _key(v)) for k, v in x.items()))
    return x


def kappa_weights(
    a: Sequence[Any], b: Sequence[Any], tolerance: float
) -> tuple[np.ndarray, np.ndarray, int, ToleranceWeights, np.ndarray]:
    """Codes, weights and per-decision agreement for two raters' NUMBERS with a tolerance:
    ``(code_a, code_b, q, weights, agree)``; pass ``agree`` to ``kappa_unit_sums`` and
    ``weights`` to ``kappa_from_sums`` so observed and chance agreement use one definition
    (|x - y| <= tolerance), as the field type's ``agree`` does."""
    x = np.concatenate([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    values, inv = np.unique(x, return_inverse=True)
    inv = inv.ravel()
    ca, cb = inv[: len(a)], inv[len(a) :]
    w = ToleranceWeights(values, tolerance)
    return ca, cb, len(values), w, w.pair(ca, cb)
