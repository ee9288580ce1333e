"""Agreement with confidence intervals: percentile bootstrap over units, clusters, strata.

All coefficients requested on one table share the same resamples; each resample block is
one matrix product per coefficient (see ``_coef``). Every CI records resamples and seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from truthline.stats._bootstrap import CI, DEFAULT_RESAMPLES, design, design_ci, proportion_ci
from truthline.stats._coef import (
    Coefficient,
    default_weights,
    get_coefficient,
    registered_coefficients,
)
from truthline.stats._kboot import krippendorff_pair_bootstrap
from truthline.stats._ratings import AgreementError, Ratings, as_ratings
from truthline.stats._resample import compress, multiplicity_blocks, pattern_blocks

CI_METHODS = ("bootstrap", "none", "krippendorff")
"""``krippendorff``: alpha only, Krippendorff's pair bootstrap (``_kboot``), narrower."""


@dataclass
class AgreementResult:
    """One coefficient on one table: point, CI, and what it was computed on."""

    coefficient: str
    title: str
    ci: CI
    units: int
    pairable: int
    raters: int
    level: str | None = None
    weights: str | None = None
    note: str | None = None

    @property
    def point(self) -> float:
        return self.ci.point

    def as_dict(self) -> dict[str, Any]:
        return {
            "coefficient": self.coefficient,
            "title": self.title,
            "point": _num(self.ci.point),
            "low": _num(self.ci.low),
            "high": _num(self.ci.high),
            "level_ci": self.ci.level,
            "resamples": self.ci.resamples,
            "seed": self.ci.seed,
            "scheme": self.ci.scheme,
            "method": self.ci.method,
            "clusters": self.ci.clusters,
            "strata": self.ci.strata,
            "min_per_stratum": self.ci.min_per_stratum,
            "warning": self.ci.warning,
            "units": self.units,
            "pairable_values": self.pairable,
            "raters": self.raters,
            "level": self.level,
            "weights": self.weights,
            "note": self.note,
        }


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _ratings(data: Any, categories: Sequence[Any] | None, level: str) -> Ratings:
    return (
        data if isinstance(data, Ratings) else as_ratings(data, categories=categories, level=level)
    )


def _resolve(coefs: str | Sequence[str]) -> list[str]:
    if isinstance(coefs, str):
        coefs = [coefs]
    names: list[str] = []
    for c in coefs:
        names += list(registered_coefficients()) if c == "all" else [c]
    return list(dict.fromkeys(names))


def bootstrap_values(
    prepared: Sequence[Coefficient],
    n: int,
    *,
    resamples: int,
    seed: int,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
) -> list[np.ndarray]:
    """Bootstrap distributions of several prepared coefficients on the same resamples.

    When many resampling units share a feature row (categorical data: at most a few
    hundred distinct count vectors), draws are counted per pattern with a multinomial,
    the exact first stage of the unit bootstrap (``_resample.Patterns``); otherwise the
    unit multiplicities are drawn. Either way the result is a function of (data, seed).
    """
    out: list[list[np.ndarray]] = [[] for _ in prepared]
    pats = compress([c.features for c in prepared], n, clusters=clusters, strata=strata)
    if pats is not None:
        for C in pattern_blocks(pats, resamples, seed):
            Cf = C.astype(float)
            for k, c in enumerate(prepared):
                out[k].append(c.from_sums(Cf @ pats.features[k]))
    else:
        for W in multiplicity_blocks(n, resamples, seed, clusters=clusters, strata=strata):
            Wf = W.astype(float)
            for k, c in enumerate(prepared):
                out[k].append(c.values(Wf))
    return [np.concatenate(v) if v else np.empty(0) for v in out]


def agreement(
    data: Any,
    coefs: str | Sequence[str] = "alpha",
    *,
    level: str = "nominal",
    weights: str | None = None,
    categories: Sequence[Any] | None = None,
    ci: str = "bootstrap",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    confidence: float = 0.95,
) -> list[AgreementResult]:
    """Coefficients with percentile-bootstrap CIs over units (clusters/strata when given).

    ``ci="krippendorff"`` gives alpha Krippendorff's own pair-bootstrap interval instead,
    for comparison with KALPHA output only: it is narrower (see ``_kboot``).

    A coefficient that is undefined on these data (e.g. Cohen's kappa with three raters,
    a single category everywhere) comes back with a NaN point and the reason in ``note``;
    an unusable table (no unit rated twice) raises ``AgreementError``.
    """
    if ci not in CI_METHODS:
        raise AgreementError(f"unknown --ci {ci!r}; use one of {', '.join(CI_METHODS)}")
    r = _ratings(data, categories, level)
    clusters = clusters if clusters is not None else r.clusters
    strata = strata if strata is not None else r.strata
    d = design(r.n_units, clusters, strata)
    scheme = d.scheme(clusters, strata)
    results: list[AgreementResult] = []
    live: list[tuple[int, Coefficient]] = []
    names = _resolve(coefs)
    for name in names:
        cls = get_coefficient(name)
        lvl = level if cls.uses_level else None
        wts = default_weights(r, weights) if cls.uses_weights else None
        try:
            c = cls(r, level=level, weights=weights)
            point = c.point()
            note = None
        except AgreementError as exc:
            if len(names) == 1 or "no unit has ratings" in str(exc):
                raise
            results.append(
                AgreementResult(
                    name,
                    cls.title,
                    CI(
                        float("nan"),
                        float("nan"),
                        float("nan"),
                        0,
                        seed,
                        scheme=scheme,
                        level=confidence,
                        **d.fields(),
                    ),
                    0,
                    0,
                    0,
                    lvl,
                    wts,
                    note=str(exc),
                )
            )
            continue
        res = AgreementResult(
            name,
            cls.title,
            CI(
                point,
                float("nan"),
                float("nan"),
                0,
                seed,
                scheme=scheme,
                level=confidence,
                n=c.units_used,
                **d.fields(),
            ),
            c.units_used,
            c.pairable_values,
            c.raters_used,
            lvl,
            wts,
            note,
        )
        live.append((len(results), c))
        results.append(res)
    if ci == "krippendorff":
        if clusters is not None or strata is not None:
            raise AgreementError(
                "Krippendorff's pair bootstrap has no cluster or strata scheme; use --ci bootstrap"
            )
        for i, _ in live:
            res = results[i]
            if res.coefficient != "alpha":
                res.note = "Krippendorff's pair bootstrap is defined for alpha only: no CI"
                continue
            res.ci = krippendorff_pair_bootstrap(
                r, level, resamples=resamples, seed=seed, confidence=confidence
            )
            res.note = "Krippendorff's pair bootstrap (compatibility): narrower than units"
    if ci == "bootstrap" and resamples > 0 and live:
        cl, st = d.resampling(clusters, strata)
        boots = bootstrap_values(
            [c for _, c in live],
            r.n_units,
            resamples=resamples,
            seed=seed,
            clusters=cl,
            strata=st,
        )
        for (i, c), b in zip(live, boots, strict=True):
            res = results[i]
            res.ci = design_ci(
                res.ci.point,
                c.values,
                r.n_units,
                clusters=clusters,
                strata=strata,
                resamples=resamples,
                seed=seed,
                level=confidence,
                boot=b,
            )
            res.ci = replace(res.ci, n=c.units_used)
            parts = c.proportion()
            if parts is not None and np.isfinite(res.ci.low):
                w = proportion_ci(*parts, clusters=clusters, confidence=confidence)
                res.ci = replace(
                    res.ci,
                    low=min(res.ci.low, w.low),
                    high=max(res.ci.high, w.high),
                    method=f"{res.ci.method}+wilson",
                )
            undefined = int((~np.isfinite(b)).sum())
            if undefined:
                res.note = f"{undefined} of {resamples} resamples undefined (dropped)"
    return results


def coefficient_ci(
    data: Any,
    coef: str = "alpha",
    **kwargs: Any,
) -> CI:
    """One coefficient's point and CI (see ``agreement`` for the options)."""
    return agreement(data, coef, **kwargs)[0].ci


def kappa_ci(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    weights: str | None = None,
    categories: Sequence[Any] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    confidence: float = 0.95,
) -> CI:
    """Cohen's kappa between two raters with a percentile bootstrap CI over units."""
    data = [[x, y] for x, y in zip(a, b, strict=True)]
    return agreement(
        data,
        "cohen",
        weights=weights,
        categories=categories,
        resamples=resamples,
        seed=seed,
        clusters=clusters,
        strata=strata,
        confidence=confidence,
    )[0].ci


def paired_coef_diff(
    a: Any,
    b: Any,
    coef: str = "alpha",
    *,
    level: str = "nominal",
    weights: str | None = None,
    categories: Sequence[Any] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    confidence: float = 0.95,
) -> CI:
    """CI of coef(a) - coef(b) on the SAME units (e.g. blind vs anchored), resampled together.

    ``a`` and ``b`` are units x raters tables with rows in the same unit order (or
    ``Ratings`` with unit ids: they are aligned on the units both contain).
    """
    ra, rb = _ratings(a, categories, level), _ratings(b, categories, level)
    if isinstance(a, Ratings) and isinstance(b, Ratings):
        common = [u for u in ra.units if u in set(rb.units)]
        ia = {u: i for i, u in enumerate(ra.units)}
        ib = {u: i for i, u in enumerate(rb.units)}
        ra = ra.subset(np.array([ia[u] for u in common], dtype=int))
        rb = rb.subset(np.array([ib[u] for u in common], dtype=int))
    if ra.n_units != rb.n_units:
        raise AgreementError(
            f"paired comparison needs the same units: {ra.n_units} vs {rb.n_units} rows"
        )
    cls = get_coefficient(coef)
    ca = cls(ra, level=level, weights=weights)
    cb = cls(rb, level=level, weights=weights)
    point = ca.point() - cb.point()
    clusters = clusters if clusters is not None else ra.clusters
    strata = strata if strata is not None else ra.strata
    cl, st = design(ra.n_units, clusters, strata).resampling(clusters, strata)
    boot_a, boot_b = bootstrap_values(
        [ca, cb], ra.n_units, resamples=resamples, seed=seed, clusters=cl, strata=st
    )

    def diff(W: np.ndarray) -> np.ndarray:
        return np.asarray(ca.values(W) - cb.values(W))

    return design_ci(
        point,
        diff,
        ra.n_units,
        clusters=clusters,
        strata=strata,
        resamples=resamples,
        seed=seed,
        level=confidence,
        boot=boot_a - boot_b,
    )
