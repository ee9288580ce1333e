"""SIMULATED models and annotators for demos and tests; everything here is labelled simulated."""

from truthline.simulate._annotators import (
    AnnotatorBehaviour,
    AnnotatorDecision,
    annotator_behaviour,
    decide_annotation,
    get_behaviour,
    registered_behaviours,
)
from truthline.simulate._loop import build_simulated_loop
from truthline.simulate._scenario import DEFAULT_TEAM, Scenario, TeamMember, build_scenario
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
    "AnnotatorBehaviour",
    "AnnotatorDecision",
    "Scenario",
    "SimProfile",
    "TeamMember",
    "annotator_behaviour",
    "build_scenario",
    "build_simulated_loop",
    "decide_annotation",
    "get_behaviour",
    "get_profile",
    "registered_behaviours",
    "registered_profiles",
    "seeded_rng",
    "simulated_answer",
    "simulated_profile",
    "simulated_raw",
]
