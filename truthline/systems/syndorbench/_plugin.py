"""What SynDORBench plugs into the loop (entry points in pyproject.toml point here and to
the modules named below). Imports nothing heavy: ``truthline --help`` reads ``cli``."""

from __future__ import annotations

from truthline.plugins import CommandGroup

cli = CommandGroup(
    "truthline.systems.syndorbench._cli:app",
    "SynDORBench on rendered DORI frames: night-vision variants, discernibility labels "
    "(Cochran sample, RF/XGBoost propagation), gold, the paper's tables.",
)
