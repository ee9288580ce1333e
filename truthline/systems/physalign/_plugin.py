"""What PhysAlign plugs into the loop (entry points in pyproject.toml point here and to the
modules named below). Imports nothing heavy: ``truthline --help`` reads ``cli``."""

from __future__ import annotations

from truthline.plugins import CommandGroup

cli = CommandGroup(
    "truthline.systems.physalign._cli:app",
    "PhysAlign probes: generated diagrams, annotation passes in Label Studio, probe compiler "
    "with a leak check, blind double verification and adjudication.",
)
