"""Point coefficients on plain arrays: the functions the audit and the dashboards call.

``data`` is units x raters (nested lists, numpy array, DataFrame or ``Ratings``); missing
is ``None``/NaN/"" . Each function raises ``AgreementError`` with the reason when the
coefficient is undefined (no unit rated twice, a single category everywhere, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from truthline.stats._coef import get_coefficient
from truthline.stats._ratings import Ratings, as_ratings, from_counts


def _coef(
    name: str,
    data: Any,
    *,
    level: str = "nominal",
    weights: str | None = None,
    categories: Sequence[Any] | None = None,
) -> float:
    r = data if isinstance(data, Ratings) else as_ratings(data, categories=categories, level=level)
    return get_coefficient(name)(r, level=level, weights=weights).point()


def krippendorff_alpha(
    data: Any, level: str = "nominal", *, categories: Sequence[Any] | None = None
) -> float:
    """Krippendorff's alpha, units x raters, missing allowed; levels nominal, ordinal,
    interval, ratio, masi. ``categories`` gives the order for ordinal labels."""
    return _coef("alpha", data, level=level, categories=categories)


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    weights: str | None = None,
    categories: Sequence[Any] | None = None,
) -> float:
    """Cohen's kappa between two raters over the units both rated; ``weights`` None,
    "linear" or "quadratic" (on category order: pass ``categories`` for ordered labels)."""
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"the two raters have {len(a)} and {len(b)} values; need one per unit")
    data = [[x, y] for x, y in zip(a, b, strict=True)]
    return _coef("cohen", data, weights=weights, categories=categories)


def fleiss_kappa(
    data: Any, *, counts: bool = False, categories: Sequence[Any] | None = None
) -> float:
    """Fleiss' kappa. ``counts=True``: ``data`` is Fleiss' units x categories count table."""
    r = from_counts(data, categories) if counts else as_ratings(data, categories=categories)
    return _coef("fleiss", r)


def scott_pi(
    data: Any, weights: str | None = None, categories: Sequence[Any] | None = None
) -> float:
    """Scott's pi (two raters); with more raters this is Fleiss' kappa."""
    return _coef("scott", data, weights=weights, categories=categories)


def gwet_ac1(
    data: Any, weights: str | None = None, categories: Sequence[Any] | None = None
) -> float:
    """Gwet's AC1; with ``weights`` linear/quadratic it is AC2. Pass ``categories`` when
    some possible category is unused: chance agreement depends on how many there are."""
    return _coef("ac1", data, weights=weights, categories=categories)


def brennan_prediger(
    data: Any, weights: str | None = None, categories: Sequence[Any] | None = None
) -> float:
    """Brennan-Prediger coefficient (chance = 1/q over the declared or observed categories)."""
    return _coef("bp", data, weights=weights, categories=categories)


def pairwise_agreement(
    data: Any, weights: str | None = None, categories: Sequence[Any] | None = None
) -> float:
    """Share of rater pairs within units that agree (pooled over all pairs)."""
    return _coef("pairwise", data, weights=weights, categories=categories)
