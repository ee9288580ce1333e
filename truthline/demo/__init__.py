"""The demo: SIMULATED SteelBench-like data and the loop run on embedded defaults."""

from truthline.demo._scene import make_specs, truth_of, write_dataset

__all__ = ["make_specs", "truth_of", "write_dataset"]
