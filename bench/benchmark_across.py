"""Metrics across models at SteelBench scale (SIMULATED decisions): routing oracle, majority
ensemble and hard subset vs the per-model accuracy CIs the leaderboard already computes.

Prints the wall time of each and its ratio to the baseline (per-model accuracy with the same
resamples, every entry), both in this process on the same data. Run:
    .venv/bin/python bench/benchmark_across.py [n_decisions] [n_models] [resamples]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from truthline.benchmark import RunScored, Scored, compute_metrics, compute_run_metrics
from truthline.benchmark import metrics as M
from truthline.project import load_project
from truthline.workspace import templates_dir


def simulated_view(n: int, k: int, resamples: int) -> RunScored:
    """``k`` SIMULATED models (+ a majority rule) answering ``n`` single-choice decisions."""
    project = load_project(templates_dir() / "dori-visibility")
    ft = project.field("action")
    rng = np.random.default_rng(0)
    classes = ft.categories() or []
    gold = rng.choice(classes, n)
    items = np.arange(n) // 3
    base = pd.DataFrame(
        {
            "item_id": items,
            "parent": items // 8,
            "stratum": rng.choice(["s1", "s2", "s3", "s4"], n)[items // 8 % n],
            "condition": None,
            "path": [f"p{i % 3}" for i in range(n)],
            "field": "action",
            "entity": None,
            "gold": gold,
            "meta": [{}] * n,
            "provenance": "",
            "confidence": None,
        }
    )
    rs = M.Resampling(resamples, 0)
    entries, kinds, keys = {}, {}, {}
    for m in range(k + 1):
        skill = 0.5 + 0.4 * m / max(k, 1)
        pred = np.where(rng.random(n) < skill, gold, rng.choice(classes, n))
        if m == k:
            pred = np.full(n, classes[0])
        d = base.assign(pred=pred, correct=pred == gold, credit=(pred == gold).astype(float))
        lab = "rule:majority" if m == k else f"simulated:m{m}"
        entries[lab] = Scored(project, d, pd.DataFrame(), rs)
        kinds[lab] = "rule" if m == k else "simulated"
        keys[lab] = (lab, "", "base", "")
    return RunScored(project, entries, kinds, keys, rs)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 25000
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    resamples = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    view = simulated_view(n, k, resamples)
    t0 = time.perf_counter()
    for s in view.entries.values():
        compute_metrics(s, ["accuracy"])
    t_base = time.perf_counter() - t0
    print(f"{n} decisions x {k} SIMULATED models + 1 rule, {resamples} resamples")
    print(f"  baseline, per-model accuracy CIs (all entries): {t_base:.3f} s")
    for name in ("routing_oracle", "ensemble", "hard_subset"):
        t0 = time.perf_counter()
        compute_run_metrics(view, [name])
        t = time.perf_counter() - t0
        print(f"  {name}: {t:.3f} s ({t / t_base:.2f}x baseline)")


if __name__ == "__main__":
    main()
