"""Rater-level analyses: each rater vs the majority of the others, a scorer vs the rater
majority on a held-out split (RealityBench), and where disagreements fall in a taxonomy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from truthline.stats._bootstrap import CI, DEFAULT_RESAMPLES, mean_ci
from truthline.stats._ratings import AgreementError, Ratings, as_ratings, is_missing


def majority(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: the majority category index and whether it is unique (no tie, >=1 rating)."""
    top = counts.max(axis=1)
    winners = (counts == top[:, None]).sum(axis=1)
    return counts.argmax(axis=1), (top > 0) & (winners == 1)


@dataclass
class RaterVsMajority:
    rater: Any
    units: int
    ties_excluded: int
    agreement: CI

    def as_dict(self) -> dict[str, Any]:
        return {
            "rater": self.rater,
            "units": self.units,
            "ties_excluded": self.ties_excluded,
            **{
                k: self.agreement.as_dict()[k]
                for k in (
                    "point",
                    "low",
                    "high",
                    "resamples",
                    "seed",
                    "scheme",
                    "method",
                    "clusters",
                    "warning",
                )
            },
        }


def leave_one_out(
    data: Any,
    *,
    min_others: int = 1,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
    categories: Sequence[Any] | None = None,
) -> list[RaterVsMajority]:
    """Each rater against the majority of the OTHER raters (ties excluded), with CI.

    A unit counts for rater r when r rated it, at least ``min_others`` others did, and
    the others' majority is unique. Agreement is exact category equality.
    """
    r = data if isinstance(data, Ratings) else as_ratings(data, categories=categories)
    clusters = clusters if clusters is not None else r.clusters
    N = r.counts()
    out = []
    for j, rater in enumerate(r.raters):
        own = r.codes[:, j]
        has = own >= 0
        others = N.copy()
        others[np.flatnonzero(has), own[has]] -= 1
        maj, unique = majority(others)
        enough = others.sum(axis=1) >= min_others
        base = has & enough
        use = base & unique
        hits = (own[use] == maj[use]).astype(float)
        cl = None if clusters is None else [clusters[int(i)] for i in np.flatnonzero(use)]
        ci = mean_ci(hits, resamples=resamples, seed=seed, clusters=cl)
        out.append(RaterVsMajority(rater, int(use.sum()), int((base & ~unique).sum()), ci))
    return out


@dataclass
class ScorerReport:
    """Scorer vs rater majority on the held-out split (RealityBench protocol)."""

    agreement: CI
    held_out: int
    tuned: int
    ties_excluded: int
    gray_excluded: int
    no_majority_or_score: int
    confusion: dict[str, dict[str, int]]
    positive: Any = None
    tune_units: list[Any] | None = None

    def summary(self) -> str | None:
        """ "accepts 4 of 62 the majority rejects, rejects 13 of 33 it accepts" (binary only)."""
        if self.positive is None or len(self.confusion) > 2:
            return None
        pos = str(self.positive)
        neg = next((k for k in self.confusion if k != pos), None)
        if neg is None:
            return None
        row_neg = self.confusion.get(neg, {})
        row_pos = self.confusion.get(pos, {})
        acc_rej = row_neg.get(pos, 0)
        n_rej = sum(row_neg.values())
        rej_acc = row_pos.get(neg, 0)
        n_acc = sum(row_pos.values())
        return (
            f"accepts {acc_rej} of {n_rej} the majority rejects, "
            f"rejects {rej_acc} of {n_acc} it accepts"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "agreement": self.agreement.as_dict(),
            "held_out": self.held_out,
            "tuned": self.tuned,
            "ties_excluded": self.ties_excluded,
            "gray_excluded": self.gray_excluded,
            "no_majority_or_score": self.no_majority_or_score,
            "confusion_majority_x_scorer": self.confusion,
            "positive": self.positive,
            "summary": self.summary(),
        }


def scorer_vs_majority(
    data: Any,
    scorer: Sequence[Any],
    *,
    tune_frac: float = 0.6,
    seed: int = 0,
    gray: Sequence[bool] | None = None,
    positive: Any = None,
    resamples: int = DEFAULT_RESAMPLES,
    clusters: Sequence[Any] | None = None,
    categories: Sequence[Any] | None = None,
) -> ScorerReport:
    """A scorer column against the rater majority on the held-out ``1 - tune_frac`` split.

    Ties in the majority and ``gray`` units are excluded and counted; the split is a seeded
    permutation of the remaining units (the first ``tune_frac`` are for tuning). The
    confusion is majority (rows) x scorer (columns).
    """
    if not 0 <= tune_frac < 1:
        raise AgreementError(f"--tune-frac must be in [0, 1), got {tune_frac}")
    rows = (
        data.to_numpy(dtype=object).tolist()
        if hasattr(data, "to_numpy")
        else [list(x) for x in data]
    )
    if len(rows) != len(scorer):
        raise AgreementError(f"scorer has {len(scorer)} values for {len(rows)} units")
    r = as_ratings([[*row, s] for row, s in zip(rows, scorer, strict=True)], categories=categories)
    raters = r.subset(raters=list(range(r.codes.shape[1] - 1)))
    score = r.codes[:, -1]
    maj, unique = majority(raters.counts())
    g = np.zeros(r.n_units, dtype=bool) if gray is None else np.asarray(gray, dtype=bool)
    rated = raters.m > 0
    ties = rated & ~unique & ~g
    usable = unique & ~g & (score >= 0)
    idx = np.flatnonzero(usable)
    perm = np.random.default_rng(seed).permutation(idx)
    n_tune = round(tune_frac * len(perm))
    tune, held = perm[:n_tune], np.sort(perm[n_tune:])
    hits = (score[held] == maj[held]).astype(float)
    cl = None if clusters is None else [clusters[i] for i in held]
    ci = mean_ci(hits, resamples=resamples, seed=seed, clusters=cl)
    conf: dict[str, dict[str, int]] = {}
    for i in held:
        a, b = str(r.values[maj[i]]), str(r.values[score[i]])
        conf.setdefault(a, {}).setdefault(b, 0)
        conf[a][b] += 1
    return ScorerReport(
        ci,
        len(held),
        len(tune),
        int(ties.sum()),
        int(g.sum()),
        int((~usable & ~g & ~ties).sum()),
        conf,
        positive,
        [r.units[i] for i in np.sort(tune)],
    )


def disagreement_structure(
    data: Any,
    group_of: Mapping[Any, Any] | Callable[[Any], Any],
    *,
    categories: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Rater-vs-rater confusion over all within-unit rater pairs, aggregated by group.

    Only categories that occur need a group. Returns the category and group confusions (unordered pairs, symmetric), the number of
    disagreeing pairs, the share of them inside one group, and each group's share of the
    within-group disagreements (SteelBench: group B holds 64%).
    """
    r = data if isinstance(data, Ratings) else as_ratings(data, categories=categories)
    grp = group_of.get if isinstance(group_of, Mapping) else group_of
    N = r.counts()
    used = np.flatnonzero(N.sum(axis=0) > 0)  # declared but unused categories need no group
    N = N[:, used]
    values = [r.values[i] for i in used]
    # C[i, j] (i != j): unordered rater pairs within units that gave categories i and j
    C = N.T @ N - np.diag(N.sum(axis=0))
    labels = [str(v) for v in values]
    groups = [grp(v) for v in values]
    if any(g is None or is_missing(g) for g in groups):
        bad = [labels[i] for i, g in enumerate(groups) if g is None or is_missing(g)]
        raise AgreementError(f"no taxonomy group for categories {bad}")
    names = list(dict.fromkeys(str(g) for g in groups))
    gi = np.array([names.index(str(g)) for g in groups])
    upper = np.triu(np.ones_like(C, dtype=bool), 1)
    dis = np.where(upper, C, 0.0)  # each disagreeing unordered pair counted once
    same = gi[:, None] == gi[None, :]
    total = float(dis.sum())
    within = float((dis * same).sum())
    gconf = {a: {b: 0.0 for b in names} for a in names}
    for i, j in zip(*np.nonzero(dis), strict=True):
        a, b = sorted((names[gi[i]], names[gi[j]]), key=names.index)
        gconf[a][b] += float(dis[i, j])
    by_group = {n: float((dis * same * (gi[:, None] == k)).sum()) for k, n in enumerate(names)}
    return {
        "categories": labels,
        "disagreement_pairs": {
            f"{labels[i]}|{labels[j]}": float(dis[i, j])
            for i, j in zip(*np.nonzero(dis), strict=True)
        },
        "groups": names,
        "group_disagreements": gconf,
        "pairs": float(np.triu(C, 1).sum() + np.diag(C).sum() / 2),
        "disagreements": total,
        "within_group": within,
        "share_within_group": within / total if total else float("nan"),
        "within_group_share_by_group": {
            n: (v / within if within else float("nan")) for n, v in by_group.items()
        },
    }
