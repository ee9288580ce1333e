"""Statistics: vectorized bootstrap CIs and rater-agreement coefficients (METRICS.md §2).

Point functions take units x raters data (missing = None/NaN): ``krippendorff_alpha``,
``cohen_kappa``, ``fleiss_kappa``, ``gwet_ac1``, ``scott_pi``, ``brennan_prediger``,
``pairwise_agreement``. CI versions resample units (or clusters, within strata) in
batches with one matrix product per batch; ``design_ci`` records the design on every CI
and falls back to a cluster jackknife (t quantiles) on thin designs; ``proportion_ci`` is
Wilson / Clopper-Pearson for counts; ``krippendorff_pair_bootstrap`` is alpha's
pair bootstrap (KALPHA compatibility only: narrower). ``kappa_from_counts`` and friends
are the one Cohen's kappa kernel (the audit calls it). ``fmt_ci`` is how every report, CLI
table and dashboard shows an interval, with its design (``with_design``) and the
thin-design note under a table (``design_note``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthline._lazy import lazy_exports

# public name -> defining module, imported on first use: importing a submodule (the
# stage's CLI for `--help`) loads none of the others (issue 28)
_EXPORTS = {
    "CI": "truthline.stats._bootstrap",
    "DEFAULT_RESAMPLES": "truthline.stats._bootstrap",
    "MIN_CLUSTERS_PER_STRATUM": "truthline.stats._bootstrap",
    "MIN_CLUSTERS_TOTAL": "truthline.stats._bootstrap",
    "Design": "truthline.stats._bootstrap",
    "at_least_wilson": "truthline.stats._bootstrap",
    "design": "truthline.stats._bootstrap",
    "design_ci": "truthline.stats._bootstrap",
    "design_words": "truthline.stats._bootstrap",
    "draw": "truthline.stats._bootstrap",
    "is_count_share": "truthline.stats._bootstrap",
    "jackknife_t": "truthline.stats._bootstrap",
    "mean_ci": "truthline.stats._bootstrap",
    "paired_diff_ci": "truthline.stats._bootstrap",
    "percentile_ci": "truthline.stats._bootstrap",
    "proportion_ci": "truthline.stats._bootstrap",
    "ratio_ci": "truthline.stats._bootstrap",
    "AgreementResult": "truthline.stats._ci",
    "agreement": "truthline.stats._ci",
    "bootstrap_values": "truthline.stats._ci",
    "coefficient_ci": "truthline.stats._ci",
    "kappa_ci": "truthline.stats._ci",
    "paired_coef_diff": "truthline.stats._ci",
    "Coefficient": "truthline.stats._coef",
    "agreement_weights": "truthline.stats._coef",
    "coefficient": "truthline.stats._coef",
    "get_coefficient": "truthline.stats._coef",
    "registered_coefficients": "truthline.stats._coef",
    "design_label": "truthline.stats._format",
    "design_note": "truthline.stats._format",
    "fmt_ci": "truthline.stats._format",
    "is_ci": "truthline.stats._format",
    "warnings_in": "truthline.stats._format",
    "with_design": "truthline.stats._format",
    "ToleranceWeights": "truthline.stats._kappa",
    "kappa_codes": "truthline.stats._kappa",
    "kappa_from_counts": "truthline.stats._kappa",
    "kappa_from_sums": "truthline.stats._kappa",
    "kappa_unit_sums": "truthline.stats._kappa",
    "kappa_weights": "truthline.stats._kappa",
    "krippendorff_pair_bootstrap": "truthline.stats._kboot",
    "brennan_prediger": "truthline.stats._point",
    "cohen_kappa": "truthline.stats._point",
    "fleiss_kappa": "truthline.stats._point",
    "gwet_ac1": "truthline.stats._point",
    "krippendorff_alpha": "truthline.stats._point",
    "pairwise_agreement": "truthline.stats._point",
    "scott_pi": "truthline.stats._point",
    "PairOrder": "truthline.stats._ranks",
    "RankAgreement": "truthline.stats._ranks",
    "Routing": "truthline.stats._ranks",
    "boot_scores": "truthline.stats._ranks",
    "cluster_sums": "truthline.stats._ranks",
    "rank_agreement": "truthline.stats._ranks",
    "routing_crossfit": "truthline.stats._ranks",
    "AgreementError": "truthline.stats._ratings",
    "Ratings": "truthline.stats._ratings",
    "as_ratings": "truthline.stats._ratings",
    "from_counts": "truthline.stats._ratings",
    "from_long": "truthline.stats._ratings",
    "multiplicity_blocks": "truthline.stats._resample",
    "ratings_from_store": "truthline.stats._store",
    "StoreDesign": "truthline.stats._store_design",
    "declared_design": "truthline.stats._store_design",
    "RaterVsMajority": "truthline.stats._structure",
    "ScorerReport": "truthline.stats._structure",
    "disagreement_structure": "truthline.stats._structure",
    "leave_one_out": "truthline.stats._structure",
    "majority": "truthline.stats._structure",
    "scorer_vs_majority": "truthline.stats._structure",
}
_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS)
__getattr__ = _lazy_getattr

if TYPE_CHECKING:
    from truthline.stats._bootstrap import (
        CI,
        DEFAULT_RESAMPLES,
        MIN_CLUSTERS_PER_STRATUM,
        MIN_CLUSTERS_TOTAL,
        Design,
        at_least_wilson,
        design,
        design_ci,
        design_words,
        draw,
        is_count_share,
        jackknife_t,
        mean_ci,
        paired_diff_ci,
        percentile_ci,
        proportion_ci,
        ratio_ci,
    )
    from truthline.stats._ci import (
        AgreementResult,
        agreement,
        bootstrap_values,
        coefficient_ci,
        kappa_ci,
        paired_coef_diff,
    )
    from truthline.stats._coef import (
        Coefficient,
        agreement_weights,
        coefficient,
        get_coefficient,
        registered_coefficients,
    )
    from truthline.stats._format import (
        design_label,
        design_note,
        fmt_ci,
        is_ci,
        warnings_in,
        with_design,
    )
    from truthline.stats._kappa import (
        ToleranceWeights,
        kappa_codes,
        kappa_from_counts,
        kappa_from_sums,
        kappa_unit_sums,
        kappa_weights,
    )
    from truthline.stats._kboot import krippendorff_pair_bootstrap
    from truthline.stats._point import (
        brennan_prediger,
        cohen_kappa,
        fleiss_kappa,
        gwet_ac1,
        krippendorff_alpha,
        pairwise_agreement,
        scott_pi,
    )
    from truthline.stats._ranks import (
        PairOrder,
        RankAgreement,
        Routing,
        boot_scores,
        cluster_sums,
        rank_agreement,
        routing_crossfit,
    )
    from truthline.stats._ratings import AgreementError, Ratings, as_ratings, from_counts, from_long
    from truthline.stats._resample import multiplicity_blocks
    from truthline.stats._store import ratings_from_store
    from truthline.stats._store_design import StoreDesign, declared_design
    from truthline.stats._structure import (
        RaterVsMajority,
        ScorerReport,
        disagreement_structure,
        leave_one_out,
        majority,
        scorer_vs_majority,
    )

__all__ = [
    "CI",
    "DEFAULT_RESAMPLES",
    "MIN_CLUSTERS_PER_STRATUM",
    "MIN_CLUSTERS_TOTAL",
    "AgreementError",
    "AgreementResult",
    "Coefficient",
    "Design",
    "PairOrder",
    "RankAgreement",
    "RaterVsMajority",
    "Ratings",
    "Routing",
    "ScorerReport",
    "StoreDesign",
    "ToleranceWeights",
    "agreement",
    "agreement_weights",
    "as_ratings",
    "at_least_wilson",
    "boot_scores",
    "bootstrap_values",
    "brennan_prediger",
    "cluster_sums",
    "coefficient",
    "coefficient_ci",
    "cohen_kappa",
    "declared_design",
    "design",
    "design_ci",
    "design_label",
    "design_note",
    "design_words",
    "disagreement_structure",
    "draw",
    "fleiss_kappa",
    "fmt_ci",
    "from_counts",
    "from_long",
    "get_coefficient",
    "gwet_ac1",
    "is_ci",
    "is_count_share",
    "jackknife_t",
    "kappa_ci",
    "kappa_codes",
    "kappa_from_counts",
    "kappa_from_sums",
    "kappa_unit_sums",
    "kappa_weights",
    "krippendorff_alpha",
    "krippendorff_pair_bootstrap",
    "leave_one_out",
    "majority",
    "mean_ci",
    "multiplicity_blocks",
    "paired_coef_diff",
    "paired_diff_ci",
    "pairwise_agreement",
    "percentile_ci",
    "proportion_ci",
    "rank_agreement",
    "ratings_from_store",
    "ratio_ci",
    "registered_coefficients",
    "routing_crossfit",
    "scorer_vs_majority",
    "scott_pi",
    "warnings_in",
    "with_design",
]
