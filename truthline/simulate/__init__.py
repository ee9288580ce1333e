"""SIMULATED models and annotators for demos and tests; everything here is labelled simulated."""

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
    "SimProfile",
    "get_profile",
    "registered_profiles",
    "seeded_rng",
    "simulated_answer",
    "simulated_profile",
    "simulated_raw",
]
