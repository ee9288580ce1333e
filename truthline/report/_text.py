"""Shared reading guidance the audit and benchmark reports print."""

CONTRAST = (
    "**How to read this: anchoring bias vs gold-slice inflation.** Both compare a "
    "VLM-influenced reference with a blind one, but they audit different things. "
    "Anchoring bias (audit) measures the annotators: how much more often they agree "
    "with the VLM when they see its answer than when they label blind; a high bias with "
    "low harmful anchoring means they defer to a VLM that is usually right. Gold-slice "
    "inflation (compare-gold, and the audit's provenance gradient) measures the gold: "
    "how much higher a model scores on anchored or VLM-sourced gold than on blind gold. "
    "Anchoring can inflate a model's score only when the model errs like the prefill VLM, "
    "so a large bias with small inflation is possible, and inflation is largest for the "
    "prefill model itself; report model scores on blind gold when the two differ."
)
