"""Rankings of models (METRICS.md §6): how far two rankings of the same models agree, and
choosing the best-ranked model per environment (the routing oracle), both with intervals
that hold when the models are close.

* ``rank_agreement``: simultaneous rank confidence sets (Mogstad, Romano, Shaikh & Wilhelm,
  Rev. Econ. Stud. 2024; R ``csranks``). One studentized max-|t| critical value covers all
  pairwise paired differences of both tasks at once, so every order it resolves is right in
  95 % of samples; the tau and rho intervals follow from the resolved pairs alone. A
  percentile bootstrap of tau is never the interval: with models 2 pp apart it covered the
  truth a third of the time.
* ``routing_crossfit``: the best model per environment chosen on one random half of the
  clusters and scored on the other, both ways; the in-sample oracle scores its choice on
  the data that made it and is optimistic by construction.
* ``cluster_sums`` / ``boot_scores``: a ratio-of-sums score per model (accuracy, F1) on the
  clusters of a design, and its bootstrap replicates.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from truthline.stats._bootstrap import CI, design, draw, percentile_ci

RESOLVED = "rankings resolved"
PARTLY = "rankings partly resolved"
NOT_RESOLVED = "rankings not resolved"
METHOD = "simultaneous rank confidence sets (max-|t|)"
IN_SAMPLE = "in-sample (optimistic)"


# -- scores on a design ------------------------------------------------------------------------
def cluster_sums(
    num: np.ndarray, den: np.ndarray, clusters: Sequence[Any] | None, strata: Sequence[Any] | None
) -> tuple[np.ndarray, np.ndarray, list[str] | None]:
    """Per-decision numerators/denominators (n x K) summed per cluster (items when none):
    ``(num_g, den_g, strata_g)``; a cluster's stratum is that of its first decision."""
    n = num.shape[0]
    labels = np.asarray([str(c) for c in clusters] if clusters is not None else np.arange(n))
    _, first, codes = np.unique(labels, return_index=True, return_inverse=True)
    g = len(first)
    num_g = np.zeros((g, num.shape[1]))
    den_g = np.zeros((g, den.shape[1]))
    np.add.at(num_g, codes, num)
    np.add.at(den_g, codes, den)
    strata_g = [str(strata[i]) for i in first] if strata is not None else None
    return num_g, den_g, strata_g


def boot_scores(
    num_g: np.ndarray,
    den_g: np.ndarray,
    strata_g: Sequence[str] | None,
    resamples: int,
    seed: int,
) -> np.ndarray:
    """Bootstrap replicates (resamples x K) of each model's ratio-of-sums score, clusters
    drawn within strata (strata dropped when too thin, as ``design`` decides)."""
    g = num_g.shape[0]
    _, st = design(g, None, strata_g).resampling(None, strata_g)
    W = draw(g, resamples, seed, strata=st).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (W @ num_g) / (W @ den_g)


# -- rank agreement ----------------------------------------------------------------------------
@dataclass(frozen=True)
class PairOrder:
    """One pair of models in both tasks: the paired difference ``first - second`` with its
    simultaneous interval, the order it resolves (+1 first ahead, -1 behind, 0 not resolved),
    the share of resamples keeping the observed order, and ``status``: concordant,
    discordant or unresolved."""

    first: str
    second: str
    diff: tuple[float, float]
    low: tuple[float, float]
    high: tuple[float, float]
    order: tuple[int, int]
    kept: tuple[float, float]
    status: str


def _status(order: tuple[int, int]) -> str:
    a, b = order
    if a == 0 or b == 0:
        return "unresolved"
    return "concordant" if a == b else "discordant"


@dataclass(frozen=True)
class RankAgreement:
    """Agreement of two rankings of the same K models (METRICS.md §6, "Rank agreement").

    Points: tau-b and Spearman rho of the observed scores, Pearson r; p-values take the
    scores as exact (the paper's convention), the intervals do not. ``tau_interval`` /
    ``rho_interval`` come from the simultaneous rank confidence sets; ``rank_intervals``:
    model -> ((low, high) in task A, (low, high) in task B), rank 1 the best."""

    tasks: tuple[str, str]
    models: list[str]
    scores: dict[str, tuple[float, float]]
    tau: float
    tau_p: float
    tau_interval: tuple[float, float]
    rho: float
    rho_p: float
    rho_interval: tuple[float, float]
    pearson_r: float
    pearson_p: float
    concordant: int
    discordant: int
    unresolved: int
    verdict: str
    rank_intervals: dict[str, tuple[tuple[int, int], tuple[int, int]]]
    pairs: list[PairOrder]
    critical_value: float
    resamples: int
    seed: int
    level: float = 0.95
    n: tuple[int, int] = (0, 0)
    unresolved_pairs: list[tuple[str, str]] = field(default_factory=list)
    method: str = METHOD

    def tau_ci(self, scheme: str = "cluster") -> CI:
        """tau-b with its rank-confidence-set interval, as a ``CI`` (what tables format)."""
        lo, hi = self.tau_interval
        return CI(
            self.tau, lo, hi, self.resamples, self.seed, method=METHOD, scheme=scheme,
            level=self.level, n=min(self.n) if any(self.n) else 0,
        )  # fmt: skip

    def rho_ci(self, scheme: str = "cluster") -> CI:
        lo, hi = self.rho_interval
        return CI(
            self.rho, lo, hi, self.resamples, self.seed, method=METHOD, scheme=scheme,
            level=self.level, n=min(self.n) if any(self.n) else 0,
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _simultaneous(
    point: np.ndarray, boots: Sequence[np.ndarray], level: float
) -> tuple[list[np.ndarray], list[np.ndarray], float]:
    """Paired differences of every pair in every task, their bootstrap standard errors and
    the one max-|t| critical value over all of them."""
    iu = np.triu_indices(point.shape[1], 1)
    diffs, ses, tmax = [], [], None
    for t, boot in enumerate(boots):
        d = point[t][iu[0]] - point[t][iu[1]]
        bd = boot[:, iu[0]] - boot[:, iu[1]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # undefined replicates: NaN rows
            se = np.nanstd(bd, axis=0, ddof=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                z = np.where(se > 0, np.abs(bd - d) / se, 0.0)
            m = np.nanmax(np.where(np.isfinite(z), z, np.nan), axis=1)
        tmax = m if tmax is None else np.fmax(tmax, m)
        diffs.append(d)
        ses.append(se)
    finite = tmax[np.isfinite(tmax)] if tmax is not None else np.array([])
    crit = float(np.quantile(finite, level)) if finite.size else float("inf")
    return diffs, ses, crit


def _rank_bounds(order: np.ndarray, k: int) -> list[tuple[int, int]]:
    """[1 + resolved above, K - resolved below] per model from the pair orders (upper
    triangle, +1 = first ahead)."""
    above = np.zeros(k, dtype=int)
    below = np.zeros(k, dtype=int)
    for (i, j), o in zip(zip(*np.triu_indices(k, 1), strict=True), order, strict=True):
        if o > 0:
            above[j] += 1
            below[i] += 1
        elif o < 0:
            above[i] += 1
            below[j] += 1
    return [(1 + int(a), k - int(b)) for a, b in zip(above, below, strict=True)]


def _rho_interval(
    ra: list[tuple[int, int]], rb: list[tuple[int, int]], k: int
) -> tuple[float, float]:
    dmin = [max(0, a[0] - b[1], b[0] - a[1]) for a, b in zip(ra, rb, strict=True)]
    dmax = [max(a[1] - b[0], b[1] - a[0]) for a, b in zip(ra, rb, strict=True)]
    scale = 6 / (k**3 - k)
    lo = 1 - scale * sum(x * x for x in dmax)
    hi = 1 - scale * sum(x * x for x in dmin)
    return max(-1.0, lo), min(1.0, hi)


def _points(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float, float, float]:
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: NaN, said by the value itself
        kt = stats.kendalltau(a, b)
        sp = stats.spearmanr(a, b)
        pe = stats.pearsonr(a, b)
    return tuple(  # type: ignore[return-value]
        float(x)
        for x in (kt.statistic, kt.pvalue, sp.statistic, sp.pvalue, pe.statistic, pe.pvalue)
    )


def rank_agreement(
    models: Sequence[str],
    scores_a: Sequence[float] | np.ndarray,
    scores_b: Sequence[float] | np.ndarray,
    boot_a: np.ndarray | None,
    boot_b: np.ndarray | None,
    *,
    tasks: tuple[str, str] = ("A", "B"),
    level: float = 0.95,
    seed: int = 0,
    n: tuple[int, int] = (0, 0),
) -> RankAgreement:
    """Rank agreement of two rankings of ``models`` (at least 3).

    ``boot_a`` / ``boot_b``: bootstrap replicates (resamples x K) of the scores, each on its
    task's design; rows are paired when both tasks are computed on one draw (same items),
    independent draws otherwise. Without replicates nothing is resolved: [-1, 1]."""
    k = len(models)
    if k < 3:
        raise ValueError(f"rank agreement needs at least 3 models, got {k}")
    a = np.asarray(scores_a, dtype=float)
    b = np.asarray(scores_b, dtype=float)
    tau, tau_p, rho, rho_p, r, r_p = _points(a, b)
    p_total = k * (k - 1) // 2
    iu = np.triu_indices(k, 1)
    if boot_a is None or boot_b is None or not len(boot_a) or not len(boot_b):
        diffs = [a[iu[0]] - a[iu[1]], b[iu[0]] - b[iu[1]]]
        nan = np.full(p_total, np.nan)
        lows, highs, orders, kept = [nan, nan], [nan, nan], [np.zeros(p_total, int)] * 2, [nan] * 2
        crit, resamples = float("nan"), 0
    else:
        m = min(len(boot_a), len(boot_b))
        boots = [np.asarray(boot_a, float)[:m], np.asarray(boot_b, float)[:m]]
        diffs, ses, crit = _simultaneous(np.vstack([a, b]), boots, level)
        lows = [d - crit * s for d, s in zip(diffs, ses, strict=True)]
        highs = [d + crit * s for d, s in zip(diffs, ses, strict=True)]
        orders = [
            np.where((s > 0) & (lo > 0), 1, np.where((s > 0) & (hi < 0), -1, 0))
            for s, lo, hi in zip(ses, lows, highs, strict=True)
        ]
        kept = []
        for boot, d in zip(boots, diffs, strict=True):
            bd = boot[:, iu[0]] - boot[:, iu[1]]
            same = np.where(np.isfinite(bd), np.sign(bd) == np.sign(d)[None, :], np.nan)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                kept.append(np.nanmean(same, axis=0))
        resamples = m
    pairs = []
    for p, (i, j) in enumerate(zip(iu[0].tolist(), iu[1].tolist(), strict=True)):
        order = (int(orders[0][p]), int(orders[1][p]))
        pairs.append(
            PairOrder(
                models[i],
                models[j],
                (float(diffs[0][p]), float(diffs[1][p])),
                (float(lows[0][p]), float(lows[1][p])),
                (float(highs[0][p]), float(highs[1][p])),
                order,
                (float(kept[0][p]), float(kept[1][p])),
                _status(order),
            )
        )
    c = sum(p.status == "concordant" for p in pairs)
    dd = sum(p.status == "discordant" for p in pairs)
    u = p_total - c - dd
    ra, rb = _rank_bounds(orders[0], k), _rank_bounds(orders[1], k)
    if u == p_total:
        verdict, tau_iv, rho_iv = NOT_RESOLVED, (-1.0, 1.0), (-1.0, 1.0)
    else:
        verdict = RESOLVED if u == 0 else PARTLY
        tau_iv = ((c - dd - u) / p_total, (c - dd + u) / p_total)
        rho_iv = _rho_interval(ra, rb, k)
    return RankAgreement(
        tasks=tasks,
        models=list(models),
        scores={m: (float(x), float(y)) for m, x, y in zip(models, a, b, strict=True)},
        tau=tau, tau_p=tau_p, tau_interval=tau_iv,
        rho=rho, rho_p=rho_p, rho_interval=rho_iv,
        pearson_r=r, pearson_p=r_p,
        concordant=c, discordant=dd, unresolved=u, verdict=verdict,
        rank_intervals={m: (ra[i], rb[i]) for i, m in enumerate(models)},
        pairs=pairs, critical_value=crit, resamples=resamples, seed=seed, level=level, n=n,
        unresolved_pairs=[(p.first, p.second) for p in pairs if p.status == "unresolved"],
    )  # fmt: skip


# -- routing oracle, cross-fitted ---------------------------------------------------------------
@dataclass(frozen=True)
class Routing:
    """The routing oracle cross-fitted (METRICS.md §6): ``routed`` / ``best_single`` with
    intervals that resample the whole procedure, ``gain`` (their paired difference),
    ``choices``: half -> environment -> the model chosen on that half; ``in_sample``: the
    choice scored on the data that made it, labelled optimistic."""

    models: list[str]
    environments: list[str]
    routed: CI
    best_single: CI
    gain: CI
    choices: dict[str, dict[str, str]]
    single_choices: dict[str, str]
    in_sample_choice: dict[str, str]
    in_sample_single: str
    in_sample: CI
    in_sample_best_single: CI
    clusters: int
    split_seed: int
    in_sample_label: str = IN_SAMPLE

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _halves(env_g: np.ndarray, present: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Half 0/1 per cluster (rows: replicates): within each environment the present clusters
    in random order, the first half (an odd one out to a random side) in half 0."""
    b, g = present.shape
    h = np.ones((b, g), dtype=np.int8)
    for e in np.unique(env_g):
        cols = np.flatnonzero(env_g == e)
        u = rng.random((b, len(cols)))
        u[~present[:, cols]] = np.inf
        ranks = np.argsort(np.argsort(u, axis=1), axis=1)
        m = present[:, cols].sum(1)
        cut = (m + rng.integers(0, 2, size=b)) // 2
        h[:, cols] = np.where(ranks < cut[:, None], 0, 1)
    return h


def _half_sums(
    w: np.ndarray, h: np.ndarray, cell_g: np.ndarray, cell_e: np.ndarray, x: np.ndarray, n_env: int
) -> np.ndarray:
    """Per half, replicate, environment and model: the weighted sum of ``x`` (cells x K)."""
    out = np.zeros((2, w.shape[0], n_env, x.shape[1]))
    for s in (0, 1):
        cw = (w * (h == s))[:, cell_g]
        for e in range(n_env):
            m = cell_e == e
            out[s, :, e] = cw[:, m] @ x[m]
    return out


def _choose(num: np.ndarray, den: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best model per (replicate, environment), ties to the first listed, and the best single
    model per replicate; an environment with no decisions takes the best single model."""
    with np.errstate(invalid="ignore", divide="ignore"):
        single = num.sum(1) / den.sum(1)
        per = num / den
    single_k = np.argmax(np.where(np.isfinite(single), single, -np.inf), axis=1)
    env_k = np.argmax(np.where(np.isfinite(per), per, -np.inf), axis=2)
    missing = den.sum(2) == 0
    env_k = np.where(missing, single_k[:, None], env_k)
    return env_k, single_k


def _crossfit(
    w: np.ndarray,
    h: np.ndarray,
    cells: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    n_env: int,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray]]:
    cell_g, cell_e, num, den = cells
    N = _half_sums(w, h, cell_g, cell_e, num, n_env)
    D = _half_sums(w, h, cell_g, cell_e, den, n_env)
    b = w.shape[0]
    rn, rd, sn, sd = (np.zeros(b) for _ in range(4))
    env_choices, single_choices = [], []
    rows = np.arange(w.shape[0])[:, None]
    envs = np.arange(n_env)[None, :]
    for s, t in ((0, 1), (1, 0)):
        env_k, single_k = _choose(N[s], D[s])
        env_choices.append(env_k)
        single_choices.append(single_k)
        rn = rn + N[t][rows, envs, env_k].sum(1)
        rd = rd + D[t][rows, envs, env_k].sum(1)
        sn = sn + N[t][rows[:, 0], :, single_k].sum(1)
        sd = sd + D[t][rows[:, 0], :, single_k].sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return rn / rd, sn / sd, env_choices, single_choices


def routing_crossfit(
    models: Sequence[str],
    num: np.ndarray,
    den: np.ndarray,
    environment: Sequence[Any],
    *,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    scheme: str | None = None,
) -> Routing:
    """The routing oracle cross-fitted. ``num`` / ``den`` (decisions x models): the routed
    metric as a ratio of sums (accuracy: correct / 1; F1: 2TP / (2TP + FP + FN)), so routed
    decisions pool into one score. Clusters (decisions when none) are split at random into
    halves within their environment (a cluster's first decision names it); replicates draw
    clusters within strata, then re-split, re-choose and re-score. ``scheme``: the design's
    name on the intervals (default from ``clusters`` and the strata used)."""
    env = np.asarray([str(e) for e in environment], dtype=object)
    env_names, env_code = np.unique(env, return_inverse=True)
    n = len(env)
    labels = np.asarray([str(c) for c in clusters] if clusters is not None else np.arange(n))
    cl_names, first, cl_code = np.unique(labels, return_index=True, return_inverse=True)
    g = len(cl_names)
    cell_key = cl_code * len(env_names) + env_code
    keys, cell_idx = np.unique(cell_key, return_inverse=True)
    cell_num = np.zeros((len(keys), num.shape[1]))
    cell_den = np.zeros((len(keys), num.shape[1]))
    np.add.at(cell_num, cell_idx, num)
    np.add.at(cell_den, cell_idx, den)
    cells = (keys // len(env_names), keys % len(env_names), cell_num, cell_den)
    env_g = env_code[first]
    rng = np.random.default_rng(seed)
    ones = np.ones((1, g))
    h0 = _halves(env_g, ones.astype(bool), rng)
    routed, single, env_ch, single_ch = _crossfit(ones, h0, cells, len(env_names))
    strata_g = [str(strata[i]) for i in first] if strata is not None else None
    _, st = design(g, None, strata_g).resampling(None, strata_g)
    W = draw(g, resamples, seed, strata=st).astype(float)
    if resamples:
        hb = _halves(env_g, W > 0, rng)
        br, bs, _, _ = _crossfit(W, hb, cells, len(env_names))
    else:
        br = bs = np.array([])
    scheme = (scheme or ("cluster" if clusters is not None else "item")) + (
        "+stratified" if st else ""
    )

    def ci(point: float, boot: np.ndarray) -> CI:
        return percentile_ci(point, boot, level=level, seed=seed, scheme=scheme, n=n)

    # in sample: chosen and scored on every decision (the paper's 0.86)
    full_w = np.ones((1, g))
    all_h = np.zeros((1, g), dtype=np.int8)
    Nf = _half_sums(full_w, all_h, cells[0], cells[1], cell_num, len(env_names))[0]
    Df = _half_sums(full_w, all_h, cells[0], cells[1], cell_den, len(env_names))[0]
    fk, fs = _choose(Nf, Df)

    def in_sample(wb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hz = np.zeros(wb.shape, dtype=np.int8)
        Nb = _half_sums(wb, hz, cells[0], cells[1], cell_num, len(env_names))[0]
        Db = _half_sums(wb, hz, cells[0], cells[1], cell_den, len(env_names))[0]
        kb, sb = _choose(Nb, Db)
        rows = np.arange(wb.shape[0])[:, None]
        e = np.arange(len(env_names))[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            r_ = Nb[rows, e, kb].sum(1) / Db[rows, e, kb].sum(1)
            s_ = Nb[rows[:, 0], :, sb].sum(1) / Db[rows[:, 0], :, sb].sum(1)
        return r_, s_

    ir, isg = in_sample(full_w)
    bir, bis = in_sample(W) if resamples else (np.array([]), np.array([]))
    names = list(models)
    return Routing(
        models=names,
        environments=[str(e) for e in env_names],
        routed=ci(float(routed[0]), br),
        best_single=ci(float(single[0]), bs),
        gain=ci(float(routed[0] - single[0]), br - bs),
        choices={
            f"half {s + 1}": {str(e): names[int(k)] for e, k in zip(env_names, ch[0], strict=True)}
            for s, ch in enumerate(env_ch)
        },
        single_choices={f"half {s + 1}": names[int(k[0])] for s, k in enumerate(single_ch)},
        in_sample_choice={str(e): names[int(k)] for e, k in zip(env_names, fk[0], strict=True)},
        in_sample_single=names[int(fs[0])],
        in_sample=ci(float(ir[0]), bir),
        in_sample_best_single=ci(float(isg[0]), bis),
        clusters=g,
        split_seed=seed,
    )
