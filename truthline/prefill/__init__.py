"""Prefill (a model pre-annotates every item) and video mining (videos -> 8-frame clips)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthline._lazy import lazy_exports

# public name -> defining module, imported on first use: importing a submodule (the
# stage's CLI for `--help`) loads none of the others (issue 28)
_EXPORTS = {
    "MineConfig": "truthline.prefill._mine",
    "MineReport": "truthline.prefill._mine",
    "mine_videos": "truthline.prefill._mine",
    "PredictionWriter": "truthline.prefill._run",
    "PrefillReport": "truthline.prefill._run",
    "prefill": "truthline.prefill._run",
    "prefill_status": "truthline.prefill._run",
    "version_name": "truthline.prefill._run",
    "write_prediction": "truthline.prefill._run",
}
_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS)
__getattr__ = _lazy_getattr

if TYPE_CHECKING:
    from truthline.prefill._mine import MineConfig, MineReport, mine_videos
    from truthline.prefill._run import (
        PredictionWriter,
        PrefillReport,
        prefill,
        prefill_status,
        version_name,
        write_prediction,
    )

__all__ = [
    "MineConfig",
    "MineReport",
    "PredictionWriter",
    "PrefillReport",
    "mine_videos",
    "prefill",
    "prefill_status",
    "version_name",
    "write_prediction",
]
