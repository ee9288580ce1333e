"""Agreement coefficients as (per-unit features, finish) pairs — one code path for point and CI.

Every coefficient here is a function of SUMS over units of a few per-unit features
(counts per category, within-unit pair agreement, coincidences). A bootstrap resample
is a vector of unit multiplicities ``w``, so its sums are ``w @ F``; a batch of
resamples is one matrix product ``W @ F``. The point estimate is the same ``finish``
applied to ``ones @ F``. No Python loop over resamples, no per-resample coincidence
matrix built from raw data.

Krippendorff's alpha without the units x values² blow-up: at the nominal level the
observed disagreement needs only ``sum_c n_uc²`` per unit and the expected one only the
category totals (``n² - sum_c n_c²``), kept as sparse counts; at the interval level the
observed and expected disagreements reduce to sums of x and x² (``sum (x_i - x_j)² =
2 n sum x² - 2 (sum x)²``), so memory is O(units), whatever the number of distinct values.
Ordinal alpha is interval alpha on mid-ranks of the (resample's) value marginals.

A new coefficient is one class decorated with ``@coefficient("name")``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from scipy import sparse

from truthline._registry import Registry
from truthline.fields import masi_distance
from truthline.stats._kappa import (
    ToleranceWeights,
    Weights,
    kappa_from_sums,
)
from truthline.stats._ratings import AgreementError, Ratings

LEVELS = ("nominal", "ordinal", "interval", "ratio", "masi")
WEIGHTS = ("none", "linear", "quadratic", "tolerance")

COEFFICIENTS: Registry[type[Coefficient]] = Registry("coefficient")


def coefficient(name: str) -> Callable[[type[Coefficient]], type[Coefficient]]:
    """Register a Coefficient subclass under ``name`` (used by ``agreement`` and the CLI)."""

    def deco(cls: type[Coefficient]) -> type[Coefficient]:
        cls.name = name
        return COEFFICIENTS.register(name)(cls)

    return deco


def registered_coefficients() -> dict[str, type[Coefficient]]:
    """Coefficients in definition order (the order ``--coef all`` reports them in)."""
    return COEFFICIENTS.as_dict()


def get_coefficient(name: str) -> type[Coefficient]:
    if name not in COEFFICIENTS:
        known = ", ".join(COEFFICIENTS.as_dict())
        raise AgreementError(f"unknown coefficient {name!r} (known: {known})")
    return COEFFICIENTS.get(name)


def agreement_weights(q: int, weights: str | None) -> np.ndarray:
    """Agreement weights on category indices: identity, linear or quadratic (Cohen 1968)."""
    if weights in (None, "none", "identity"):
        return np.eye(q)
    if q < 2:
        return np.ones((q, q))
    d = np.abs(np.subtract.outer(np.arange(q), np.arange(q))) / (q - 1)
    if weights == "linear":
        return 1.0 - d
    if weights == "quadratic":
        return 1.0 - d**2
    raise AgreementError(
        f"unknown weights {weights!r}; use none, linear or quadratic (tolerance: numbers with "
        "a declared tolerance)"
    )


def default_weights(ratings: Ratings, weights: str | None) -> str:
    """Ratings of a number field with a tolerance (``meta["tolerance"]``) agree within it:
    the kappa family then uses tolerance weights for observed AND chance agreement."""
    if weights in (None, "none") and ratings.meta.get("tolerance"):
        return "tolerance"
    return weights or "none"


def ratings_weights(ratings: Ratings, weights: str) -> np.ndarray:
    """The q x q agreement weights of these ratings (``tolerance`` needs numeric values)."""
    if weights == "tolerance":
        tol = float(ratings.meta.get("tolerance") or 0.0)
        try:
            return ToleranceWeights(ratings.numeric(), tol).matrix()
        except ValueError as exc:
            raise AgreementError(f"tolerance weights: {exc}") from None
    return agreement_weights(ratings.q, weights)


def _pair_form(N: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Per unit, sum over ordered pairs of distinct raters of ``A[c_r, c_s]``."""
    return np.einsum("uc,ck,uk->u", N, A, N) - N @ np.diag(A)


def _sum(W: np.ndarray, F: Any) -> np.ndarray:
    """``W @ F`` for dense or sparse per-unit features (B x k)."""
    if sparse.issparse(F):
        return np.asarray((F.T @ W.T).T)
    return W @ F


class Coefficient:
    """One agreement coefficient prepared on one ratings table.

    ``features`` is units x k (dense or sparse); ``finish`` maps sums ``W @ features``
    (B x k) to B coefficient values. ``check`` raises a clear error when the point
    estimate is undefined for these data.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    uses_level: ClassVar[bool] = False
    uses_weights: ClassVar[bool] = False

    def __init__(self, ratings: Ratings, *, level: str = "nominal", weights: str | None = None):
        if level not in LEVELS:
            raise AgreementError(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
        self.r = ratings
        self.level = level
        self.weights = default_weights(ratings, weights)
        self.m = ratings.m
        self.pairable = self.m >= 2
        if not self.pairable.any():
            raise AgreementError(
                f"no unit has ratings from two or more raters (raters: "
                f"{', '.join(map(str, ratings.raters))}); agreement needs units rated twice"
            )
        self.features = self._features()

    # -- to implement ----------------------------------------------------------------
    def _features(self) -> Any:
        raise NotImplementedError

    def finish(self, S: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------
    def proportion(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-unit (successes, trials) if this coefficient is a count proportion."""
        return None

    def values(self, W: np.ndarray) -> np.ndarray:
        """Coefficient values for unit multiplicities ``W`` (B x units)."""
        return self.from_sums(_sum(np.asarray(W, dtype=float), self.features))

    def from_sums(self, S: np.ndarray) -> np.ndarray:
        """Coefficient values from feature sums ``S`` (B x k); undefined -> NaN."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.finish(S)

    def point(self) -> float:
        v = float(self.values(np.ones((1, self.r.n_units)))[0])
        if not np.isfinite(v):
            self.undefined()
        return v

    def undefined(self) -> None:
        """Raise the reason the coefficient is undefined here (single category, ...)."""
        codes = self.r.codes[self.pairable]
        used = np.unique(codes[codes >= 0])
        if len(used) == 1:
            raise AgreementError(
                f"{self.title}: every pairable rating is {self.r.values[used[0]]!r}; with a "
                "single category everywhere the expected disagreement is 0 and the coefficient "
                "is undefined (0/0) — observed agreement is 100%, but the data cannot show "
                "raters distinguishing categories"
            )
        raise AgreementError(f"{self.title}: undefined for these data (0/0)")

    @property
    def units_used(self) -> int:
        return int(self.pairable.sum())

    @property
    def pairable_values(self) -> int:
        return int(self.m[self.pairable].sum())

    @property
    def raters_used(self) -> int:
        return int(self.r.present[self.pairable].any(axis=0).sum())


# -- Krippendorff's alpha ---------------------------------------------------------------
@coefficient("alpha")
class KrippendorffAlpha(Coefficient):
    """Krippendorff's alpha (Krippendorff 2011): any raters, missing values, five levels."""

    title = "Krippendorff's alpha"
    uses_level = True

    def _features(self) -> Any:
        r, level = self.r, self.level
        p = self.pairable
        mp = np.where(p, self.m, 0).astype(float)
        den = np.where(p, self.m - 1, 1).astype(float)
        if level == "ordinal":
            return self._coincidences(den)
        if level == "interval":
            x = r.numeric()
            x = x - (x.mean() if len(x) else 0.0)  # centering: no cancellation in sum(x²)
            vals = np.where(r.present, x[np.clip(r.codes, 0, None)], 0.0)
            s1 = np.where(p, vals.sum(axis=1), 0.0)
            s2 = np.where(p, (vals**2).sum(axis=1), 0.0)
            d = np.where(p, (2 * mp * s2 - 2 * s1**2) / den, 0.0)
            return np.column_stack([mp, d, s1, s2])
        if level == "nominal":
            # count form: D_o from sum_c n_uc² per unit, D_e from category totals; sparse
            # features, no q x q matrix (memory O(pairable values) for any number of values)
            N = sparse.diags(p.astype(float)) @ r.sparse_counts()
            sq = np.asarray(N.multiply(N).sum(axis=1)).ravel()
            d = np.where(p, (mp**2 - sq) / den, 0.0)
            self._gram_form(N, mp, d)
            return sparse.hstack(
                [sparse.csr_matrix(mp[:, None]), sparse.csr_matrix(d[:, None]), N], format="csr"
            )
        # static metric over categories: ratio, masi
        N = r.counts() * p[:, None]
        self.delta = self._delta()
        d = np.where(p, _pair_form(N, self.delta) / den, 0.0)
        return np.column_stack([mp, d, N])

    _gram: Any = None

    def _gram_form(self, N: Any, mp: np.ndarray, d: np.ndarray) -> None:
        """Many distinct values (plates): ``sum_c n_c(w)²`` is ``w' G w`` with the sparse
        unit x unit Gram matrix ``G = N N'`` (units sharing a value), cheaper than the
        resamples x values sums when few units share each value. ``G`` is kept as its
        diagonal and its upper-triangle pairs: ``w' G w = sum_u G_uu w_u² + 2 sum_{u<v}
        G_uv w_u w_v`` costs one pass over ``w`` plus one gather per pair of units sharing
        a value, with no transposed copy of the resamples (O(units + pairs) per resample)."""
        shared = np.bincount(N.indices, minlength=N.shape[1]).astype(float)
        if float((shared**2).sum()) > 4.0 * (N.nnz + N.shape[1]):
            return
        G = (N @ N.T).tocoo()
        upper = G.row < G.col
        self._gram = (G.diagonal(), G.row[upper], G.col[upper], 2.0 * G.data[upper])
        self._mp, self._d = mp, d

    def values(self, W: np.ndarray) -> np.ndarray:
        if self._gram is None:
            return super().values(W)
        W = np.asarray(W, dtype=float)
        diag, pu, pv, twice = self._gram
        n, do = W @ self._mp, W @ self._d
        cross = (np.take(W, pu, axis=1) * np.take(W, pv, axis=1)) @ twice
        e = n**2 - np.einsum("bu,bu,u->b", W, W, diag) - cross
        with np.errstate(invalid="ignore", divide="ignore"):
            out = 1.0 - (n - 1) * do / e
            return np.where(e > 1e-12 * np.maximum(n, 1) ** 2, out, np.nan)

    def _delta(self) -> np.ndarray:
        q, level = self.r.q, self.level
        if level == "nominal":
            return 1.0 - np.eye(q)
        if level == "ratio":
            x = self.r.numeric()
            if np.any(x < 0):
                raise AgreementError("ratio level needs non-negative values (a true zero)")
            s = np.add.outer(x, x)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(s > 0, (np.subtract.outer(x, x) / s) ** 2, 0.0)
        # masi: set-valued ratings; a single label counts as a one-element set
        sets = [v if isinstance(v, frozenset) else frozenset([v]) for v in self.r.values]
        return np.array([[masi_distance(set(a), set(b)) for b in sets] for a in sets])

    def _coincidences(self, den: np.ndarray) -> Any:
        """Per-unit coincidence contributions, sparse units x q² (ordinal level)."""
        r, q = self.r, self.r.q
        rows, cols, vals = [], [], []
        n_r = r.codes.shape[1]
        for a in range(n_r):
            for b in range(n_r):
                if a == b:
                    continue
                ok = self.pairable & r.present[:, a] & r.present[:, b]
                u = np.flatnonzero(ok)
                rows.append(u)
                cols.append(r.codes[u, a] * q + r.codes[u, b])
                vals.append(1.0 / den[u])
        P = sparse.coo_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(r.n_units, q * q),
        ).tocsr()
        return P

    def finish(self, S: np.ndarray) -> np.ndarray:
        if self.level == "ordinal":
            q = self.r.q
            coinc = S.reshape(-1, q, q)
            nc = coinc.sum(axis=2)
            n = nc.sum(axis=1)
            rank = np.cumsum(nc, axis=1) - nc / 2  # mid-ranks: ordinal = interval on ranks
            do = 2 * (nc * rank**2).sum(1) - 2 * np.einsum("bc,bck,bk->b", rank, coinc, rank)
            e = 2 * n * (nc * rank**2).sum(1) - 2 * (nc * rank).sum(1) ** 2
        elif self.level == "interval":
            n, do, s1, s2 = S.T
            e = 2 * n * s2 - 2 * s1**2
        elif self.level == "nominal":
            n, do, nc = S[:, 0], S[:, 1], S[:, 2:]
            e = n**2 - (nc**2).sum(axis=1)
        else:
            n, do, nc = S[:, 0], S[:, 1], S[:, 2:]
            e = np.einsum("bc,ck,bk->b", nc, self.delta, nc)
        out = 1.0 - (n - 1) * do / e
        return np.where(e > 1e-12 * np.maximum(n, 1) ** 2, out, np.nan)


# -- the Gwet family: percent agreement, Fleiss/Scott, AC1/AC2, Brennan-Prediger ----------
class _PairFamily(Coefficient):
    """Coefficients of the form (p_a - p_e) / (1 - p_e) with weighted pair agreement.

    Unweighted (identity) agreement keeps ``wt = None`` and sparse per-unit counts, so a
    field with tens of thousands of distinct values (plates) needs no values x values
    matrix and no dense units x values table."""

    uses_weights = True
    wt: np.ndarray | None

    def _features(self) -> Any:
        r, p = self.r, self.pairable
        N = r.sparse_counts()
        if self.weights == "none":
            self.wt = None
            a = np.asarray(N.multiply(N).sum(axis=1)).ravel() - self.m  # sum_c n(n-1)
        else:
            self.wt = ratings_weights(r, self.weights)
            a = _pair_form(N.toarray(), self.wt)
        a = np.where(p, a, 0.0)
        pr = np.where(p, self.m * (self.m - 1), 0).astype(float)
        ratio = np.where(p, a / np.where(p, pr, 1), 0.0)
        rated = self.m >= 1
        share = sparse.diags(1.0 / np.where(rated, self.m, 1)) @ N
        Np = sparse.diags(p.astype(float)) @ N
        head = np.column_stack([p.astype(float), ratio, a, pr, rated.astype(float)])
        return sparse.hstack([sparse.csr_matrix(head), Np, share], format="csr")

    def _total_weight(self) -> float:
        """Sum of the agreement weights (q for identity)."""
        return float(self.r.q if self.wt is None else self.wt.sum())

    def _quad(self, x: np.ndarray) -> np.ndarray:
        """Per row, ``x W x'`` (``sum x²`` for identity)."""
        if self.wt is None:
            return (x * x).sum(axis=1)
        return np.einsum("bc,ck,bk->b", x, self.wt, x)

    def _parts(self, S: np.ndarray) -> dict[str, Any]:
        q = self.r.q
        return {
            "units": S[:, 0],
            "pa": S[:, 1] / S[:, 0],
            "pooled": S[:, 2] / S[:, 3],
            "rated": S[:, 4],
            "N": S[:, 5 : 5 + q],
            "pi": S[:, 5 + q : 5 + 2 * q] / S[:, 4:5],
        }

    @staticmethod
    def _chance(pa: np.ndarray, pe: np.ndarray) -> np.ndarray:
        return np.where(np.abs(1 - pe) > 1e-12, (pa - pe) / (1 - pe), np.nan)


@coefficient("pairwise")
class PairwiseAgreement(_PairFamily):
    """Raw agreement as Gwet and irrCAC publish it (``pa.coeff.raw``): per unit, the share
    of its rater pairs that agree, averaged over units rated at least twice."""

    title = "Pairwise agreement (per-unit mean)"

    def finish(self, S: np.ndarray) -> np.ndarray:
        return self._parts(S)["pa"]

    def proportion(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-unit (successes, trials) when the coefficient is a proportion of counts:
        its interval is then at least the Wilson one (a 100 % cannot collapse)."""
        if self.weights != "none":
            return None
        F = self.features[:, :2].toarray()
        return F[:, 1], F[:, 0]


@coefficient("pairwise_pooled")
class PooledPairwiseAgreement(_PairFamily):
    """Raw agreement pooled over pairs: agreeing rater pairs / all rater pairs (units with
    more raters weigh more)."""

    title = "Pairwise agreement (pooled pairs)"

    def finish(self, S: np.ndarray) -> np.ndarray:
        return self._parts(S)["pooled"]

    def proportion(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.weights != "none":
            return None
        F = self.features[:, 2:4].toarray()
        # pairs within a unit are not independent trials: rescale so the trials sum to the
        # number of pairable units (the ratio, hence the point, is unchanged)
        scale = float(F[:, 1][F[:, 1] > 0].mean())
        return F[:, 0] / scale, F[:, 1] / scale


@coefficient("fleiss")
class FleissKappa(_PairFamily):
    """Fleiss (1971) kappa; with missing ratings, Gwet's form (2014; irrCAC
    ``fleiss.kappa.raw``): p_a is the mean per-unit pair agreement over units rated at least
    twice, chance agreement uses pi_k, the mean over units rated at least once of each
    unit's share of category k. Equals Fleiss' own formula when every unit has the same
    number of raters."""

    title = "Fleiss' kappa (Gwet's missing-data form)"

    def finish(self, S: np.ndarray) -> np.ndarray:
        p = self._parts(S)
        pe = self._quad(p["pi"])
        return self._chance(p["pa"], pe)


@coefficient("scott")
class ScottPi(FleissKappa):
    """Scott's (1955) pi; with more than two raters it is Fleiss' kappa (its generalization)."""

    title = "Scott's pi"


@coefficient("ac1")
class GwetAC1(_PairFamily):
    """Gwet's AC1 (AC2 with weights), Gwet (2008, 2014): robust when one category dominates."""

    title = "Gwet's AC1"

    def finish(self, S: np.ndarray) -> np.ndarray:
        p = self._parts(S)
        q = self.r.q
        if q < 2:
            return np.full(S.shape[0], np.nan)
        tw = self._total_weight()
        pe = tw / (q * (q - 1)) * (p["pi"] * (1 - p["pi"])).sum(axis=1)
        return self._chance(p["pa"], pe)


@coefficient("bp")
class BrennanPrediger(_PairFamily):
    """Brennan & Prediger (1981): chance agreement 1/q (T_w/q² weighted)."""

    title = "Brennan-Prediger"

    def finish(self, S: np.ndarray) -> np.ndarray:
        q = self.r.q
        pe = np.full(S.shape[0], self._total_weight() / q**2)
        return self._chance(self._parts(S)["pa"], pe)


@coefficient("cohen")
class CohenKappa(Coefficient):
    """Cohen's kappa (1960), linear/quadratic weighted (1968): exactly two raters."""

    title = "Cohen's kappa"
    uses_weights = True

    def _features(self) -> Any:
        r = self.r
        if r.codes.shape[1] != 2:
            raise AgreementError(
                f"Cohen's kappa compares exactly two raters; got {r.codes.shape[1]} "
                f"({', '.join(map(str, r.raters))}); use fleiss, alpha or ac1"
            )
        q = r.q
        self.wt: Weights | None = None
        both = np.flatnonzero(self.pairable)
        ca, cb = r.codes[both, 0], r.codes[both, 1]
        if self.weights == "none":
            agree = (ca == cb).astype(float)
        elif self.weights == "tolerance":
            self.wt = ToleranceWeights(r.numeric(), float(r.meta.get("tolerance") or 0.0))
            agree = self.wt.pair(ca, cb)
        else:
            dense = agreement_weights(q, self.weights)
            self.wt, agree = dense, dense[ca, cb]
        # the kernel's layout (``kappa_unit_sums``), sparse: per unit [agreement, decisions,
        # margin_a (q), margin_b (q)]; one decision per unit
        k = len(both)
        rows = np.tile(both, 4)
        cols = np.concatenate([np.zeros(k, int), np.ones(k, int), 2 + ca, 2 + q + cb])
        vals = np.concatenate([agree, np.ones(3 * k)])
        return sparse.csr_matrix((vals, (rows, cols)), shape=(r.n_units, 2 + 2 * q))

    def finish(self, S: np.ndarray) -> np.ndarray:
        return kappa_from_sums(S, self.r.q, self.wt)
