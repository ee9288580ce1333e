"""Statistics: vectorized bootstrap CIs and rater-agreement coefficients (METRICS.md §2).

Point functions take units x raters data (missing = None/NaN): ``krippendorff_alpha``,
``cohen_kappa``, ``fleiss_kappa``, ``gwet_ac1``, ``scott_pi``, ``brennan_prediger``,
``pairwise_agreement``. CI versions resample units (or clusters, within strata) in
batches with one matrix product per batch.
"""

from truthline.stats._bootstrap import (
    CI,
    DEFAULT_RESAMPLES,
    draw,
    mean_ci,
    paired_diff_ci,
    percentile_ci,
    ratio_ci,
)
from truthline.stats._coef import (
    Coefficient,
    agreement_weights,
    coefficient,
    get_coefficient,
    registered_coefficients,
)
from truthline.stats._point import (
    brennan_prediger,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    pairwise_agreement,
    scott_pi,
)
from truthline.stats._ratings import AgreementError, Ratings, as_ratings, from_counts, from_long

__all__ = [
    "CI",
    "DEFAULT_RESAMPLES",
    "AgreementError",
    "Coefficient",
    "Ratings",
    "agreement_weights",
    "as_ratings",
    "brennan_prediger",
    "coefficient",
    "cohen_kappa",
    "draw",
    "fleiss_kappa",
    "from_counts",
    "from_long",
    "get_coefficient",
    "gwet_ac1",
    "krippendorff_alpha",
    "mean_ci",
    "paired_diff_ci",
    "pairwise_agreement",
    "percentile_ci",
    "ratio_ci",
    "registered_coefficients",
    "scott_pi",
]
