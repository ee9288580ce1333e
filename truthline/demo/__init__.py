"""The demo: the loop run unattended on SIMULATED data (``truthline demo``), and a smaller
SIMULATED workspace loop for the dashboard tests and benches. The generators it runs on
(scenes, videos, models, annotators) live in ``truthline.simulate``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthline._lazy import lazy_exports

# public name -> defining module, imported on first use: importing a submodule (the
# stage's CLI for `--help`) loads none of the others (issue 28)
_EXPORTS = {
    "build_simulated_loop": "truthline.demo._simulated_loop",
}
_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS)
__getattr__ = _lazy_getattr

if TYPE_CHECKING:
    from truthline.demo._simulated_loop import build_simulated_loop

__all__ = ["build_simulated_loop"]
