"""Statistics: vectorized bootstrap CIs (and, from Audit I, rater-agreement coefficients)."""

from truthline.stats._bootstrap import (
    CI,
    DEFAULT_RESAMPLES,
    draw,
    mean_ci,
    paired_diff_ci,
    percentile_ci,
    ratio_ci,
)

__all__ = [
    "CI",
    "DEFAULT_RESAMPLES",
    "draw",
    "mean_ci",
    "paired_diff_ci",
    "percentile_ci",
    "ratio_ci",
]
