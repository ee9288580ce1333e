"""Prefill (a model pre-annotates every item) and video mining (videos -> 8-frame clips)."""

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
