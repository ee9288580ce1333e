"""Benchmark-metric CIs: vectorized multiplicity-matrix bootstrap vs a per-resample loop.

Prints wall time of both on the same data and seed and the speed-up ratio, and checks
the two give the same interval (same resample draws). Run:
    .venv/bin/python bench/benchmark_metrics.py [n_items] [resamples]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from truthline.benchmark import metrics as M
from truthline.stats import draw


def naive_macro_f1_ci(gold, pred, units, resamples, seed):
    """Baseline: rebuild the resampled decision list and recompute macro-F1 per resample."""
    units = np.asarray(units)
    uniq, inv = np.unique(units, return_inverse=True)
    W = draw(len(uniq), resamples, seed)
    g, p = np.asarray(gold, dtype=object), np.asarray(pred, dtype=object)
    classes = sorted(set(g))
    by_unit = [np.flatnonzero(inv == k) for k in range(len(uniq))]
    boot = []
    for b in range(resamples):
        idx = np.concatenate([np.repeat(by_unit[k], W[b, k]) for k in range(len(uniq)) if W[b, k]])
        gb, pb = g[idx], p[idx]
        f1s = []
        for c in classes:
            tp = np.sum((gb == c) & (pb == c))
            fp = np.sum((gb != c) & (pb == c))
            fn = np.sum((gb == c) & (pb != c))
            if tp + fn:
                f1s.append(2 * tp / (2 * tp + fp + fn))
        boot.append(np.mean(f1s))
    return np.quantile(boot, [0.025, 0.975])


def main() -> None:
    n_items = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    resamples = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    rng = np.random.default_rng(0)
    per_item = rng.integers(1, 4, n_items)
    units = np.repeat(np.arange(n_items), per_item)
    classes = [f"C{k}" for k in range(12)]
    gold = rng.choice(classes, len(units))
    pred = np.where(rng.random(len(units)) < 0.6, gold, rng.choice(classes, len(units)))
    t0 = time.perf_counter()
    ci = M.macro_f1(
        gold.tolist(), pred.tolist(), units=units.tolist(), rs=M.Resampling(resamples, 1)
    )
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    lo, hi = naive_macro_f1_ci(gold, pred, units, resamples, 1)
    t_loop = time.perf_counter() - t0
    print(f"macro-F1 CI, {n_items} items / {len(units)} decisions / {resamples} resamples")
    print(f"  vectorized: {t_vec:.3f} s  [{ci.low:.4f}, {ci.high:.4f}]")
    print(f"  loop (baseline): {t_loop:.3f} s  [{lo:.4f}, {hi:.4f}]")
    print(
        f"  speed-up: {t_loop / t_vec:.1f}x; same interval: {np.allclose([ci.low, ci.high], [lo, hi])}"
    )


if __name__ == "__main__":
    main()
