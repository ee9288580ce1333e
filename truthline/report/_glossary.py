"""One registry of the metric names the reports show, with a definition each.

Every name in the benchmark's ``@metric`` registry and every audit metric has an entry
(tests check both), so a report's glossary can define whatever it shows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    name: str
    label: str
    definition: str


_ENTRIES: list[tuple[str, str, str]] = [
    # --- audit (METRICS.md §3) ---
    (
        "override_rate",
        "override rate",
        "Share of an annotator's anchored-arm items in which at "
        "least one prefilled field was changed.",
    ),
    ("edit_depth", "edit depth", "Mean number of overridden fields per anchored-arm item."),
    (
        "decision_override_rate",
        "decision override rate",
        "Share of anchored-arm field decisions whose prefill was changed.",
    ),
    (
        "correct_label_rate",
        "correct-label rate",
        "Share of an annotator's decisions that match the expert reference.",
    ),
    (
        "productive_anchoring",
        "productive anchoring",
        "The VLM was right and the annotator "
        "kept it; share of anchored-arm decisions with an expert reference.",
    ),
    (
        "harmful_anchoring",
        "harmful anchoring",
        "The VLM was wrong and the annotator kept "
        "it; share of anchored-arm decisions with an expert reference.",
    ),
    (
        "harmful_override",
        "harmful override",
        "The VLM was right and the annotator changed "
        "it; share of anchored-arm decisions with an expert reference.",
    ),
    (
        "productive_override",
        "productive override",
        "The VLM was wrong and the annotator changed it to the expert's value.",
    ),
    (
        "wrong_override",
        "wrong override",
        "The VLM was wrong and the annotator changed it, but not to the expert's value.",
    ),
    (
        "vlm_kappa",
        "VLM κ",
        "Cohen's kappa between the VLM prefill and an annotator's label; "
        "the team ceiling is the maximum over retained annotators.",
    ),
    ("flag_rate", "flag rate", "Share of an annotator's tasks they flagged as unclear."),
    ("skip_rate", "skip rate", "Share of an annotator's tasks they skipped."),
    (
        "anchoring_bias",
        "anchoring bias",
        "Agreement with the VLM in the anchored arm minus "
        "agreement with the VLM in the blind arm, in percentage points: how far annotators "
        "move toward the VLM when they see its answer (an audit of the annotators).",
    ),
    (
        "iaa_kappa",
        "inter-annotator κ",
        "Chance-corrected agreement between two annotators "
        "of the same item, over blind pairs and over anchored pairs.",
    ),
    (
        "override_low",
        "override rate below team range",
        "Exclusion signal: the annotator's "
        "override rate is below the team range by the configured factor.",
    ),
    (
        "vlm_kappa_high",
        "VLM κ above team ceiling",
        "Exclusion signal: the annotator's agreement with the VLM is above the team ceiling.",
    ),
    (
        "gold_standard_accuracy",
        "gold-standard accuracy",
        "Share of an annotator's answers on gold-standard items (known answers mixed "
        "unmarked into tier-1 queues at the declared rate) that agree with the known answer, "
        "with a Wilson 95% interval. Reported per annotator; not an exclusion signal.",
    ),
    (
        "zero_productive",
        "zero productive overrides",
        "Exclusion signal: no productive "
        "override over at least the configured number of evaluated VLM errors.",
    ),
    (
        "lead_time",
        "lead time",
        "Mean annotation time per item, when every prefill was kept "
        "vs when at least one was overridden.",
    ),
    (
        "vlm_false_alarm",
        "VLM false alarm",
        "Safety field: the VLM reported a violation the expert did not.",
    ),
    ("vlm_miss", "VLM miss", "Safety field: the VLM missed a violation the expert found."),
    (
        "expert_only_catch",
        "caught only by expert",
        "Safety field: both the VLM and the "
        "annotator missed the violation; only the expert caught it.",
    ),
    (
        "residual_risk",
        "residual risk",
        "Items finalized without expert review expected to "
        "carry an uncorrected harmful anchor: per-item harmful rate × unreviewed items, with "
        "a one-sided 95% upper prediction bound (BetaBinomial: the rate's uncertainty and the "
        "unreviewed items' own spread).",
    ),
    (
        "provenance_gradient",
        "provenance gradient",
        "One set of predictions scored against "
        "blind-arm labels, anchored-arm labels and VLM-sourced gold; the gap blind → "
        "VLM-sourced is the inflation model-assisted labeling introduces.",
    ),
    (
        "before_after",
        "before / after exclusion",
        "Each aggregate recomputed without the "
        "excluded (or flagged) annotators, with the change and its CI.",
    ),
    (
        "gold_values",
        "gold values",
        "Finalized labels by provenance (expert, blind "
        "consensus, anchored kept/corrected) that a snapshot would contain.",
    ),
    # the before/after rows name these aggregates
    (
        "harmful_anchoring_rate",
        "harmful anchoring rate",
        "Team harmful anchoring: share of "
        "anchored-arm decisions with an expert reference where a wrong VLM value was kept.",
    ),
    (
        "productive_override_rate",
        "productive override rate",
        "Team productive overrides: "
        "share of anchored-arm decisions with an expert reference where a wrong VLM value was "
        "corrected to the expert's.",
    ),
    (
        "vlm_kappa_team",
        "team VLM κ",
        "Cohen's kappa between the VLM prefill and the team's anchored-arm labels.",
    ),
    (
        "gradient_anchored",
        "prediction accuracy on anchored labels",
        "The provenance gradient's predictions scored against anchored-arm labels.",
    ),
    (
        "kappa_anchored",
        "anchored inter-annotator κ",
        "Inter-annotator kappa over anchored pairs, per field (kappa_anchored[field]).",
    ),
    # --- benchmark (METRICS.md §5-6 and the @metric registry) ---
    (
        "accuracy",
        "accuracy",
        "Share of target decisions scored correct; model failures "
        "count as wrong, infrastructure-missing answers are excluded.",
    ),
    (
        "credit",
        "credit",
        "Mean partial credit per decision (tolerance, set match, distance weights).",
    ),
    ("macro_f1", "macro-F1", "Unweighted mean of per-class F1 over the classes of each field."),
    ("per_class", "per-class accuracy", "Accuracy among decisions whose gold is that class."),
    (
        "acceptability",
        "acceptability",
        "Binary accept/reject: precision, recall, F1, false-accept rate and miss rate.",
    ),
    ("safety_recall", "safety recall", "Share of true safety violations the model reports."),
    (
        "false_alarm_share",
        "false-alarm share",
        "Share of a model's safety errors that are "
        "false alarms; above 0.5 it is in the false-alarm regime, below in the false-safe one.",
    ),
    (
        "ece",
        "ECE",
        "Expected calibration error: mean |stated confidence − accuracy| over 10 "
        "equal-width confidence bins, weighted by bin size.",
    ),
    (
        "naudc",
        "nAUDC",
        "Area under accuracy vs condition (by severity) divided by "
        "clear-condition accuracy × width; 1.0 means no degradation.",
    ),
    (
        "crg",
        "CRG",
        "Conditional reasoning gap: among items with the action perceived "
        "correctly, the share with a wrong safety judgment (lower is better).",
    ),
    (
        "dwa",
        "DWA",
        "Distance-weighted accuracy: 1 for the exact class, the declared partial "
        "credit within the same taxonomy group, else 0.",
    ),
    ("f2_detect", "F2-detect", "F-beta (beta = 2) of worker detection / presence."),
    (
        "drs",
        "DRS",
        "Share of the declared diagnostic checks a model passes (also under a "
        "±10% threshold relaxation).",
    ),
    (
        "tolerance",
        "tolerance",
        "Accuracy of numeric answers within the field's declared tolerance.",
    ),
    (
        "set_match",
        "set match",
        "List answers matched row by row in any order (extra rows "
        "not penalized): precision, recall, F1.",
    ),
    (
        "four_way",
        "four-way decomposition",
        "Read (C) and ground (G) correctness per item "
        "(C+G+, C+G−, C−G+, C−G−) and grounding accuracy given a correct reading.",
    ),
    (
        "balanced",
        "balanced accuracy",
        "Accuracy weighted so each parent (problem, video) and each probe type counts equally.",
    ),
    (
        "routing_oracle",
        "routing oracle",
        "Accuracy when each environment is routed to its best model, chosen on one random half "
        "of the clusters and scored on the other (cross-fitted), vs the best single model chosen "
        "the same way; the in-sample oracle is labelled optimistic.",
    ),
    (
        "ensemble",
        "majority-of-models ensemble",
        "Majority vote of the models per decision; ties have no majority and are scored wrong.",
    ),
    (
        "hard_subset",
        "hard subset",
        "Decisions a rule baseline gets wrong; each model's accuracy on them and on the rest.",
    ),
    (
        "rank_transfer",
        "rank transfer",
        "Spearman rho and Pearson r between model scores on two item sets, with a "
        "simultaneous rank-confidence-set interval (pairs of models resolved in both sets).",
    ),
    (
        "paired_conditions",
        "paired conditions",
        "Same items with one input given as truth: "
        "net accuracy change, repairs (wrong → right) and harms (right → wrong).",
    ),
    (
        "probe_protocol",
        "probe protocol (PhysAlign)",
        "Per model on its own supports, balanced over parents within probe type and types "
        "equally, with parent-cluster CIs: grounding (G), read-and-ground cells on L, "
        "Base vs +GT repairs and harms on P_m, model vs nearest-region and random rules on "
        "H and H_hard, and input controls.",
    ),
    (
        "open_similarity",
        "open-answer similarity",
        "Cosine similarity of answer and reference "
        "with a local text embedder; z-score across models.",
    ),
    (
        "coverage",
        "coverage",
        "Share of requests that returned an answer (infrastructure "
        "failures excluded from the denominator).",
    ),
    ("format_rate", "format rate", "Share of returned answers that parse (answer-grammar match)."),
    (
        "model_failure",
        "failures",
        "Answers unparseable, refused or truncated: scored wrong, kept in the denominator.",
    ),
    (
        "infra_missing",
        "infra missing",
        "Transport or service errors after retries: excluded from the denominator.",
    ),
    ("cost_usd", "cost USD", "Tokens × declared list price."),
    (
        "paired_difference",
        "paired difference",
        "Accuracy of a minus b on identical "
        "decisions, paired bootstrap; distinguishable only when the 95% CI excludes zero.",
    ),
    (
        "gold_slice_inflation",
        "gold-slice inflation",
        "A model's accuracy on anchored (or "
        "VLM-sourced) gold minus its accuracy on blind gold, in percentage points: how much "
        "gold that started from a VLM flatters a model (an audit of the gold, not of the "
        "annotators).",
    ),
    (
        "conditional",
        "conditional documentation",
        "RealityBench scoring: documentation answers scored only on frames the acceptability "
        "scorer accepts (tolerances and set matching from the field types; 'any named part "
        "counts' fields right on any overlap), acceptability F1 and false accepts on the rest.",
    ),
    (
        "acceptability_documentation_rank",
        "acceptability vs documentation rank",
        "Kendall's tau between models' acceptability F1 and their documentation score on "
        "accepted frames, with a simultaneous rank-confidence-set interval.",
    ),
    (
        "rendering_transfer",
        "rendering transfer",
        "Kendall's tau between models' documentation scores on two renderings of the same "
        "scenes (item metadata 'rendering'), with a simultaneous rank-confidence-set interval.",
    ),
]

GLOSSARY: dict[str, Term] = {n: Term(n, label, d) for n, label, d in _ENTRIES}
"""Metric name -> its label and definition."""

AUDIT_METRICS: tuple[str, ...] = tuple(
    n for n, *_ in _ENTRIES[: [e[0] for e in _ENTRIES].index("accuracy")]
)
"""The audit's metric names (the benchmark's are its ``@metric`` registry)."""


def term(name: str) -> Term:
    """The entry of ``name``; a KeyError names the missing metric."""
    try:
        return GLOSSARY[name]
    except KeyError:
        raise KeyError(
            f"metric {name!r} has no glossary entry in truthline/report/_glossary.py"
        ) from None
