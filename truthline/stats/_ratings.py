"""Reliability data: a units x raters table of values, encoded once as integer codes.

Every coefficient starts from the same encoding: ``codes[u, r]`` indexes ``values``
(-1 = missing). Missing is ``None``, NaN or an empty string — never a category.
Set-valued ratings (multi choice) become frozensets so they can be compared (MASI).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from truthline.errors import TruthlineError

NUMERIC_LEVELS = ("interval", "ratio")


class AgreementError(TruthlineError, ValueError):
    """Reliability data cannot give the requested coefficient; says which column/unit and why."""


def is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    if isinstance(v, np.floating) and np.isnan(v):
        return True
    return isinstance(v, str) and not v.strip()


def _hashable(v: Any) -> Any:
    if isinstance(v, list | set | tuple | frozenset):
        return frozenset(_hashable(x) for x in v)
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, str):
        return v.strip()
    return v


def _sort_key(v: Any) -> tuple:
    if isinstance(v, bool):
        return (0, int(v), "")
    if isinstance(v, int | float):
        return (0, float(v), "")
    if isinstance(v, frozenset):
        return (2, len(v), ",".join(sorted(map(str, v))))
    return (1, 0.0, str(v))


@dataclass
class Ratings:
    """Encoded reliability data (units x raters).

    ``values`` holds the distinct values in category order (declared order, else sorted);
    ``codes[u, r]`` is the index into ``values`` or -1 when rater ``r`` did not rate unit ``u``.
    """

    codes: np.ndarray
    values: list[Any]
    units: list[Any]
    raters: list[Any]
    clusters: list[Any] | None = None
    strata: list[Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_units(self) -> int:
        return int(self.codes.shape[0])

    @property
    def q(self) -> int:
        return len(self.values)

    @property
    def present(self) -> np.ndarray:
        return self.codes >= 0

    @property
    def m(self) -> np.ndarray:
        """Number of ratings per unit."""
        return self.present.sum(axis=1)

    def counts(self) -> np.ndarray:
        """``N[u, c]``: how many raters gave unit ``u`` the value ``c`` (units x q)."""
        n_u = self.codes.shape[0]
        flat = (np.arange(n_u)[:, None] * self.q + self.codes)[self.present]
        return np.bincount(flat, minlength=n_u * self.q).reshape(n_u, self.q).astype(float)

    def sparse_counts(self) -> Any:
        """``counts()`` as a sparse CSR matrix: memory O(ratings), not O(units x values)
        (plates, VINs: tens of thousands of distinct values)."""
        from scipy import sparse

        rows, cols = np.nonzero(self.present)
        return sparse.csr_matrix(
            (np.ones(len(rows)), (rows, self.codes[rows, cols])),
            shape=(self.codes.shape[0], self.q),
        )

    def numeric(self) -> np.ndarray:
        """Values as floats (for interval/ratio levels); names the first non-number."""
        out = np.empty(self.q)
        for i, v in enumerate(self.values):
            if isinstance(v, bool) or not isinstance(v, int | float):
                try:
                    out[i] = float(v)
                    continue
                except (TypeError, ValueError):
                    pass
                u, r = np.argwhere(self.codes == i)[0]
                raise AgreementError(
                    f"unit {self.units[u]!r}, rater {self.raters[r]!r}: value {v!r} is not a "
                    "number; interval and ratio levels need numbers (use --level nominal or "
                    "ordinal for labels)"
                )
            out[i] = float(v)
        return out

    def subset(self, units: np.ndarray | None = None, raters: Sequence[int] | None = None):
        """A view on some units and/or raters (codes shared, values unchanged)."""
        uidx = np.arange(self.n_units) if units is None else np.asarray(units)
        ridx = np.arange(len(self.raters)) if raters is None else np.asarray(raters, dtype=int)
        return Ratings(
            self.codes[np.ix_(uidx, ridx)],
            self.values,
            [self.units[i] for i in uidx],
            [self.raters[j] for j in ridx],
            None if self.clusters is None else [self.clusters[i] for i in uidx],
            None if self.strata is None else [self.strata[i] for i in uidx],
            dict(self.meta),
        )


def as_ratings(
    data: Any,
    *,
    categories: Sequence[Any] | None = None,
    units: Sequence[Any] | None = None,
    raters: Sequence[Any] | None = None,
    level: str | None = None,
) -> Ratings:
    """Encode units x raters data (nested lists, numpy array, DataFrame or ``Ratings``).

    ``categories`` fixes the value order (needed for ordinal data and weighted kappa when
    some category is unused); a value outside it is an error naming its unit and rater.
    """
    if isinstance(data, Ratings):
        return data
    if isinstance(data, np.ndarray) and data.ndim == 2 and data.dtype.kind in "fiub":
        return _from_numeric(data, categories, units, raters, level)
    unit_ids: list[Any]
    rater_ids: list[Any]
    try:
        import pandas as pd

        if isinstance(data, pd.DataFrame):
            unit_ids = list(data.index) if units is None else list(units)
            rater_ids = [str(c) for c in data.columns] if raters is None else list(raters)
            rows = data.to_numpy(dtype=object).tolist()
        else:
            rows = [list(r) for r in data]
            unit_ids = list(units) if units is not None else list(range(len(rows)))
            rater_ids = (
                list(raters)
                if raters is not None
                else list(range(max((len(r) for r in rows), default=0)))
            )
    except TypeError:
        raise AgreementError(
            "reliability data must be a table: one row per unit, one column per rater"
        ) from None
    width = len(rater_ids)
    if any(len(r) != width for r in rows):
        raise AgreementError(f"every unit needs one entry per rater ({width} raters)")
    numeric = level in NUMERIC_LEVELS
    cells: list[list[Any]] = [
        [
            None if is_missing(v) else _num(v, unit_ids[i], rater_ids[j], numeric)
            for j, v in enumerate(r)
        ]
        for i, r in enumerate(rows)
    ]
    seen = {v for r in cells for v in r if v is not None}
    if categories is not None:
        cats = [_hashable(c) for c in categories]
        index = {c: i for i, c in enumerate(cats)}
        extra = seen - set(index)
        if extra:
            bad = next(iter(sorted(extra, key=_sort_key)))
            i, j = next((i, j) for i, r in enumerate(cells) for j, v in enumerate(r) if v == bad)
            raise AgreementError(
                f"unit {unit_ids[i]!r}, rater {rater_ids[j]!r}: value {bad!r} is not one of "
                f"the declared categories {cats}"
            )
        values = cats
    else:
        values = sorted(seen, key=_sort_key)
        index = {c: i for i, c in enumerate(values)}
    codes = np.full((len(cells), width), -1, dtype=np.int64)
    for i, r in enumerate(cells):
        for j, v in enumerate(r):
            if v is not None:
                codes[i, j] = index[v]
    return Ratings(codes, values, unit_ids, rater_ids)


def _from_numeric(
    data: np.ndarray,
    categories: Sequence[Any] | None,
    units: Sequence[Any] | None,
    raters: Sequence[Any] | None,
    level: str | None,
) -> Ratings:
    """Vectorized encoding of a numeric array (NaN = missing): no Python loop over cells."""
    x = data.astype(float)
    present = ~np.isnan(x)
    uniq = np.unique(x[present])
    codes = np.full(x.shape, -1, dtype=np.int64)
    codes[present] = np.searchsorted(uniq, x[present])
    values: list[Any] = [
        float(v) if level in NUMERIC_LEVELS or not float(v).is_integer() else int(v) for v in uniq
    ]
    unit_ids = list(units) if units is not None else list(range(x.shape[0]))
    rater_ids = list(raters) if raters is not None else list(range(x.shape[1]))
    r = Ratings(codes, values, unit_ids, rater_ids)
    if categories is None:
        return r
    cats = [_hashable(c) for c in categories]
    index = {c: i for i, c in enumerate(cats)}
    remap = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if v not in index:
            u, j = np.argwhere(codes == i)[0]
            raise AgreementError(
                f"unit {unit_ids[u]!r}, rater {rater_ids[j]!r}: value {v!r} is not one of "
                f"the declared categories {cats}"
            )
        remap[i] = index[v]
    r.codes = np.where(present, remap[np.clip(codes, 0, None)], -1)
    r.values = cats
    return r


def _num(v: Any, unit: Any, rater: Any, numeric: bool) -> Any:
    v = _hashable(v)
    if not numeric:
        if isinstance(v, float) and v.is_integer():
            return int(v)  # 1.0 and 1 are the same label (CSV columns with blanks are floats)
        return v
    if isinstance(v, bool):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        raise AgreementError(
            f"unit {unit!r}, rater {rater!r}: value {v!r} is not a number; interval and ratio "
            "levels need numbers (use --level nominal or ordinal for labels)"
        ) from None


def from_counts(table: Any, categories: Sequence[Any] | None = None) -> Ratings:
    """Ratings from a units x categories count table (Fleiss' layout), raters anonymous."""
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or np.any(t < 0) or np.any(t != np.round(t)):
        raise AgreementError("a count table needs non-negative whole counts, units x categories")
    t = t.astype(np.int64)
    width = int(t.sum(axis=1).max()) if t.size else 0
    codes = np.full((t.shape[0], width), -1, dtype=np.int64)
    for u, row in enumerate(t):
        seq = np.repeat(np.arange(t.shape[1]), row)
        codes[u, : len(seq)] = seq
    values = list(categories) if categories is not None else list(range(t.shape[1]))
    return Ratings(codes, values, list(range(t.shape[0])), [f"r{j}" for j in range(width)])


def from_long(
    unit: Sequence[Any],
    rater: Sequence[Any],
    value: Sequence[Any],
    *,
    cluster: Sequence[Any] | None = None,
    stratum: Sequence[Any] | None = None,
    categories: Sequence[Any] | None = None,
    level: str | None = None,
) -> Ratings:
    """Ratings from long rows (unit, rater, value); a rater rating a unit twice is an error."""
    u_ids = list(dict.fromkeys(unit))
    r_ids = list(dict.fromkeys(rater))
    ui = {u: i for i, u in enumerate(u_ids)}
    ri = {r: j for j, r in enumerate(r_ids)}
    grid: list[list[Any]] = [[None] * len(r_ids) for _ in u_ids]
    seen: set[tuple[int, int]] = set()
    unit_cluster: dict[int, Any] = {}
    unit_stratum: dict[int, Any] = {}
    for k, (u, r, v) in enumerate(zip(unit, rater, value, strict=True)):
        i, j = ui[u], ri[r]
        if (i, j) in seen and not is_missing(v):
            raise AgreementError(f"unit {u!r}: rater {r!r} rated it twice (row {k + 1})")
        if not is_missing(v):
            seen.add((i, j))
            grid[i][j] = v
        for labels, store, what in (
            (cluster, unit_cluster, "cluster"),
            (stratum, unit_stratum, "stratum"),
        ):
            if labels is not None:
                lab = labels[k]
                if i in store and store[i] != lab:
                    raise AgreementError(
                        f"unit {u!r} has two {what} labels: {store[i]!r} and {lab!r}"
                    )
                store[i] = lab
    r = as_ratings(grid, categories=categories, units=u_ids, raters=r_ids, level=level)
    if cluster is not None:
        r.clusters = [unit_cluster[i] for i in range(len(u_ids))]
    if stratum is not None:
        r.strata = [unit_stratum[i] for i in range(len(u_ids))]
    return r
