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

UNDEFINED_TOL = 1e-12
"""Kappa is undefined (NaN) when chance agreement is within this of 1 (one category)."""


def kappa_from_counts(
    observed: Any,
    n: Any,
    margin_a: np.ndarray,
    margin_b: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Kappa from sums, batched over leading axes: ``(p_o - p_e) / (1 - p_e)``.

    ``observed``: (weighted) agreeing decisions; ``n``: decisions; ``margin_a``/``margin_b``
    (..., q): category counts of each rater. ``weights`` (q x q agreement weights) gives
    weighted chance agreement (Cohen 1968); without it ``p_e = sum_c p_a(c) p_b(c)``.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        n_arr = np.asarray(n, dtype=float)
        po = np.asarray(observed, dtype=float) / n_arr
        pa = np.asarray(margin_a, dtype=float) / n_arr[..., None]
        pb = np.asarray(margin_b, dtype=float) / n_arr[..., None]
        pe = (
            (pa * pb).sum(-1)
            if weights is None
            else np.einsum("...c,ck,...k->...", pa, weights, pb)
        )
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


def kappa_from_sums(S: np.ndarray, q: int, weights: np.ndarray | None = None) -> np.ndarray:
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
