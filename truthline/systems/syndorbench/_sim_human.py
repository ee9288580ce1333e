"""A SIMULATED non-expert for demos and tests of the human baseline (never for a study):
fills in ``human_sample.csv`` from the items' known truth with distance-dependent mistakes,
so the Table 6 human row can be shown end to end without a person."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from truthline.errors import TruthlineError
from truthline.systems.syndorbench._syndor import as_float

__all__ = ["SIMULATED_ACCURACY", "simulate_non_expert"]

SIMULATED_ACCURACY = {5.4: 0.95, 10.8: 0.92, 23.0: 0.85}
"""SIMULATED presence accuracy per DORI distance (nearest above for other distances)."""
_WRONG_ACTION = "standing"


def _p(distance: float | None) -> float:
    for d in sorted(SIMULATED_ACCURACY):
        if distance is not None and distance <= d:
            return SIMULATED_ACCURACY[d]
    return min(SIMULATED_ACCURACY.values())


def simulate_non_expert(
    store: Any, project: str, sheet: Path, *, seed: int = 0, out: Path | None = None
) -> Path:
    """SIMULATED answers to ``sheet`` (``syndor human-sample``'s CSV) from the items'
    ``sim_truth``: presence right with :data:`SIMULATED_ACCURACY`; where a person is in the
    scene the action is named right when presence is, else "standing". Writes ``human_answers.SIMULATED.csv`` (column ``simulated``)."""
    if not sheet.is_file():
        raise TruthlineError(f"{sheet}: no sample yet; run `truthline syndor human-sample`")
    df = pd.read_csv(sheet, dtype=str, keep_default_na=False)
    items = {str(r["key"]): r for r in store.items(project)}
    rng = np.random.default_rng(seed)
    present, action = [], []
    for key in df["key"]:
        item = items[key]
        truth = item.get("sim_truth") or {}
        right = bool(rng.random() < _p(as_float((item.get("meta") or {}).get("distance_m"))))
        gold = bool(truth.get("present"))
        present.append("1" if gold == right else "0")
        words = truth.get("action_text")  # a person is in the scene
        action.append("" if not words else words if right else _WRONG_ACTION)
    df["present"], df["action_text"], df["simulated"] = present, action, "SIMULATED"
    path = out or sheet.with_name("human_answers.SIMULATED.csv")
    df.to_csv(path, index=False)
    return path
