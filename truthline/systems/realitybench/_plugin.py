"""What RealityBench plugs into the loop (entry points in pyproject.toml point here and to
the modules named below). Imports nothing heavy: ``truthline --help`` reads ``cli``."""

from __future__ import annotations

from truthline.plugins import CommandGroup

cli = CommandGroup(
    "truthline.systems.realitybench._cli:app",
    "RealityBench proof-of-work frames: rendered environments, the acceptability scorer "
    "validated against raters, conditional benchmark items.",
)
