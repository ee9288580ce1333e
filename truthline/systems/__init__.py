"""Paper systems: each package here reproduces one paper on top of the generic loop.

A system may import the loop (``truthline.benchmark``, ``truthline.annotate``,
``truthline.scenes``, ...); nothing in the loop imports a system (an import-linter contract
in CI says so). A system plugs in through the loop's registries — metrics, rule baselines,
model backends, scene environments, report and dashboard sections, CLI command groups,
demos and Label Studio project kinds — declared as entry points in ``pyproject.toml`` so
the loop finds it by name and imports it only when that name is used. A third-party system
is a package of its own that declares the same entry points (README: "Add a system").

* ``physalign`` — PhysAlign probes (seeds/002): generated diagrams, passes, compiler,
  verification, the probe protocol.
* ``realitybench`` — RealityBench proof-of-work frames (seeds/000): environments, the
  acceptability scorer's validation, conditional scoring.
* ``steelbench`` — SteelBench (seeds/001): its diagnostic metrics (safety recall,
  false-alarm share, CRG, DWA, DRS); the rest of SteelBench is the generic loop.
* ``syndorbench`` — SynDORBench (seeds/003): the DORI environment, night-vision variants,
  discernibility labels, the paper's tables.
"""
