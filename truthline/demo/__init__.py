"""The demo: the loop run unattended on SIMULATED data (``truthline demo``), and a smaller
SIMULATED workspace loop for the dashboard tests and benches. The generators it runs on
(scenes, videos, models, annotators) live in ``truthline.simulate``."""

from truthline.demo._simulated_loop import build_simulated_loop

__all__ = ["build_simulated_loop"]
