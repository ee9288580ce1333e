"""Prefill (a model pre-annotates every item) and video mining (videos -> 8-frame clips)."""

from truthline.prefill._mine import MineConfig, MineReport, mine_videos
from truthline.prefill._run import PrefillReport, prefill, prefill_status, write_prediction

__all__ = [
    "MineConfig",
    "MineReport",
    "PrefillReport",
    "mine_videos",
    "prefill",
    "prefill_status",
    "write_prediction",
]
