"""compare-gold resamples the blind and anchored slices *paired*: one draw over the
videos they share. Checked against a simulation of the design (the difference's true
sampling SD) and against the old independent draws, which ignored the shared videos."""

from __future__ import annotations

import numpy as np
import pandas as pd

from truthline.benchmark import _metrics as M
from truthline.benchmark._results import sliced_accuracies

VIDEOS, PER_ARM = 30, 4


def _dataset(rng: np.random.Generator) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Each video holds PER_ARM blind and PER_ARM anchored clips; a strong video effect makes
    the two slices' accuracies move together (anchored gold is 8 pp easier)."""
    rows = []
    for v in range(VIDEOS):
        p = rng.beta(2, 2)
        for arm in ("blind", "anchored"):
            for k in range(PER_ARM):
                q = min(1.0, p + (0.08 if arm == "anchored" else 0.0))
                rows.append({"item_id": f"{v}-{arm}-{k}", "parent": f"v{v}", "arm": arm,
                             "correct": bool(rng.random() < q)})  # fmt: skip
    d = pd.DataFrame(rows)
    masks = {arm: (d["arm"] == arm).to_numpy() for arm in ("blind", "anchored")}
    return d, masks


def _args(d: pd.DataFrame) -> dict:
    return {"units": d["item_id"].tolist(), "clusters": d["parent"].tolist()}


def _paired_se(d: pd.DataFrame, masks: dict, seed: int) -> float:
    res = sliced_accuracies(d, masks, _args(d), M.Resampling(1000, seed))
    return float(np.std(res["boot"]["anchored"] - res["boot"]["blind"]))


def _independent_se(d: pd.DataFrame, masks: dict, seed: int) -> float:
    """The old scheme: each slice drawn on its own, with its own seed."""
    boots = []
    for k, arm in enumerate(("blind", "anchored")):
        sub = d[masks[arm]].reset_index(drop=True)
        ones = {arm: np.ones(len(sub), dtype=bool)}
        boots.append(
            sliced_accuracies(sub, ones, _args(sub), M.Resampling(1000, seed + k))["boot"][arm]
        )
    return float(np.std(boots[1] - boots[0]))


def test_paired_ci_matches_the_simulated_sampling_sd_and_is_narrower():
    rng = np.random.default_rng(7)
    diffs = []
    for _ in range(600):  # the difference's true sampling distribution under this design
        d, m = _dataset(rng)
        c = d["correct"].astype(float)
        diffs.append(c[m["anchored"]].mean() - c[m["blind"]].mean())
    true_sd = float(np.std(diffs))
    paired, indep = [], []
    for k in range(12):
        d, m = _dataset(rng)
        paired.append(_paired_se(d, m, k))
        indep.append(_independent_se(d, m, k))
    paired_se, indep_se = float(np.mean(paired)), float(np.mean(indep))
    # the paired bootstrap recovers the true SD; independent draws overstate it badly
    assert 0.75 * true_sd < paired_se < 1.3 * true_sd, (paired_se, true_sd)
    assert indep_se > 1.25 * true_sd, (indep_se, true_sd)
    assert all(p < i for p, i in zip(paired, indep, strict=True))


def test_one_draw_serves_every_slice():
    d, m = _dataset(np.random.default_rng(1))
    # the same decisions as two "slices": on one shared draw their difference is exactly 0
    res = sliced_accuracies(
        d, {"a": m["blind"], "b": m["blind"].copy()}, _args(d), M.Resampling(200, 3)
    )
    assert np.array_equal(res["boot"]["a"], res["boot"]["b"])
    # and the draw is the cluster draw over all decisions, one matrix for both slices
    res2 = sliced_accuracies(d, m, _args(d), M.Resampling(200, 3))
    assert res2["W"].shape == (200, d["item_id"].nunique())
    assert np.array_equal(res["W"], res2["W"])
    ci = res2["ci"]["blind"]
    assert ci.scheme == "cluster" and ci.n == VIDEOS * PER_ARM
