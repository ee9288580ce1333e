"""Benchmark: Krippendorff's alpha with 1,000 bootstrap resamples, ours vs a loop over
``krippendorff.alpha`` on the SAME resamples (numbers asserted equal).

6 raters x 100,000 units, nominal, 10 % missing. Ours draws per-pattern counts (units
with the same count vector are interchangeable); the loop gets ordinary resample indices
completed from those counts (``_resample.unit_indices``). The loop baseline is timed on
``--loop-resamples`` of the resamples (~0.1-0.5 s each) and extrapolated; pass
``--loop-resamples 1000`` to time it in full. The previous unit-multiplicity path
(``W @ F`` over all units) is timed on ``--unit-resamples`` for the ratio against it.

    .venv/bin/python bench/agreement.py [--units 100000] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import time

import krippendorff
import numpy as np

from truthline.stats import as_ratings, get_coefficient, multiplicity_blocks
from truthline.stats._ci import bootstrap_values
from truthline.stats._resample import compress, pattern_blocks, unit_indices


def simulated_ratings(units: int, raters: int, q: int, missing: float, seed: int) -> np.ndarray:
    """Simulated reliability data: a true class per unit, raters right 70 % of the time."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, q, size=units)
    noise = rng.integers(0, q, size=(units, raters))
    data = np.where(rng.random((units, raters)) < 0.7, truth[:, None], noise).astype(float)
    data[rng.random((units, raters)) < missing] = np.nan
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=100_000)
    ap.add_argument("--raters", type=int, default=6)
    ap.add_argument("--categories", type=int, default=5)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--loop-resamples", type=int, default=10)
    ap.add_argument("--unit-resamples", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    data = simulated_ratings(a.units, a.raters, a.categories, 0.10, a.seed)
    print(
        f"simulated data: {a.units} units x {a.raters} raters, {a.categories} categories, "
        "10% missing, nominal"
    )

    t0 = time.perf_counter()
    r = as_ratings(data)
    coef = get_coefficient("alpha")(r, level="nominal")
    point = coef.point()
    t_prep = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref_point = krippendorff.alpha(reliability_data=data.T, level_of_measurement="nominal")
    t_ref_point = time.perf_counter() - t0
    assert abs(point - ref_point) < 1e-9, (point, ref_point)
    print(
        f"one alpha: ours {t_prep:.3f} s (incl. encoding), krippendorff {t_ref_point:.3f} s, "
        f"alpha = {point:.6f} (equal)"
    )

    t0 = time.perf_counter()
    (boot,) = bootstrap_values([coef], r.n_units, resamples=a.resamples, seed=a.seed)
    t_ours = time.perf_counter() - t0
    lo, hi = np.quantile(boot, [0.025, 0.975])
    print(
        f"ours: {a.resamples} resamples in {t_ours:.2f} s "
        f"({1000 * t_ours / a.resamples:.2f} ms each); 95% CI [{lo:.4f}, {hi:.4f}]"
    )

    # the previous path: unit multiplicities W (resamples x units) @ features
    n_unit = min(a.unit_resamples, a.resamples)
    t0 = time.perf_counter()
    for W in multiplicity_blocks(r.n_units, n_unit, a.seed):
        coef.values(W.astype(float))
    t_unit = (time.perf_counter() - t0) / max(n_unit, 1) * a.resamples
    print(
        f"unit-multiplicity path (before): {t_unit:.2f} s for {a.resamples}"
        + (f" (extrapolated from {n_unit})" if n_unit < a.resamples else "")
        + f" -> pattern path {t_unit / t_ours:.1f}x faster"
    )

    # the same resamples as unit indices (pattern counts completed per pattern)
    pats = compress([coef.features], r.n_units)
    assert pats is not None, "nominal data must compress to patterns"
    print(f"{pats.k} distinct unit patterns among {r.n_units} units")
    n_loop = min(a.loop_resamples, a.resamples)
    counts = next(pattern_blocks(pats, a.resamples, a.seed))
    assert n_loop <= len(counts), "loop resamples must fit in the first block"
    t0 = time.perf_counter()
    loop = []
    for b in range(n_loop):
        rows = unit_indices(pats, counts[b], seed=b)
        loop.append(
            krippendorff.alpha(reliability_data=data[rows].T, level_of_measurement="nominal")
        )
    t_loop = time.perf_counter() - t0
    np.testing.assert_allclose(boot[:n_loop], loop, rtol=0, atol=1e-9)
    per = t_loop / max(n_loop, 1)
    t_loop_all = per * a.resamples
    print(
        f"loop over krippendorff.alpha: {n_loop} resamples in {t_loop:.2f} s "
        f"({1000 * per:.1f} ms each; same numbers, asserted) -> "
        f"{t_loop_all:.1f} s for {a.resamples}"
        + (" (extrapolated)" if n_loop < a.resamples else "")
    )
    ratio = t_loop_all / t_ours
    print(
        f"ratio loop/ours: {ratio:.1f}x   goal: ours <= 5 s ({'met' if t_ours <= 5 else 'MISSED'}"
        f"), >= 40x ({'met' if ratio >= 40 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
