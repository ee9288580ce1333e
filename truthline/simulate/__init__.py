"""SIMULATED data, models and annotators for demos and tests; everything here is labelled
simulated. Core packages never import this one: the ``simulated:`` backend is found through
the ``truthline.backends`` entry point, and reads its items' known truth itself."""

from truthline.simulate._annotators import (
    AnnotatorBehaviour,
    AnnotatorDecision,
    annotator_behaviour,
    decide_annotation,
    get_behaviour,
    registered_behaviours,
)
from truthline.simulate._scenario import (
    DEFAULT_TEAM,
    DIFFICULTY,
    Scenario,
    TeamMember,
    build_scenario,
)
from truthline.simulate._scene import make_specs, truth_of, write_dataset
from truthline.simulate._vlm import (
    SimProfile,
    get_profile,
    registered_profiles,
    seeded_rng,
    simulated_answer,
    simulated_profile,
    simulated_raw,
)

__all__ = [
    "DEFAULT_TEAM",
    "DIFFICULTY",
    "AnnotatorBehaviour",
    "AnnotatorDecision",
    "Scenario",
    "SimProfile",
    "TeamMember",
    "annotator_behaviour",
    "build_scenario",
    "decide_annotation",
    "get_behaviour",
    "get_profile",
    "make_specs",
    "registered_behaviours",
    "registered_profiles",
    "seeded_rng",
    "simulated_answer",
    "simulated_profile",
    "simulated_raw",
    "truth_of",
    "write_dataset",
]
