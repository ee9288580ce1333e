"""Prefill (a model pre-annotates every item) and video mining (videos -> 8-frame clips)."""

from truthline.prefill._run import PrefillReport, prefill, prefill_status, write_prediction

__all__ = ["PrefillReport", "prefill", "prefill_status", "write_prediction"]
