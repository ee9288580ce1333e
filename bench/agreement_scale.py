"""Benchmark: nominal Krippendorff's alpha on a high-cardinality field (plates, VINs).

100,000 decisions (50,000 units x 2 raters) with ~50,000 distinct values: point estimate
and bootstrap CI, time and peak traced memory (tracemalloc). The baseline is the
``krippendorff`` package in the same process on a smaller size (it builds a units x
values x values array: 3,000 units with 3,767 values asks for 317 GiB); ours
is timed on that size too, for the ratio, and the two points are asserted equal.

    .venv/bin/python bench/agreement_scale.py [--units 50000] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import krippendorff
import numpy as np

from truthline.stats import agreement, as_ratings, get_coefficient


def plates(units: int, raters: int, seed: int) -> np.ndarray:
    """Mostly distinct plates read right 80 % of the time, else a random plate."""
    rng = np.random.default_rng(seed)
    truth = rng.permutation(units * 4)[:units].astype(float)
    wrong = rng.integers(0, units * 4, size=(units, raters)).astype(float)
    return np.where(rng.random((units, raters)) < 0.8, truth[:, None], wrong)


def measure(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, seconds, peak traced MB)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return out, dt, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=50_000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--baseline-units", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    x = plates(a.units, 2, a.seed)
    r, t_enc, m_enc = measure(lambda: as_ratings(x))
    print(f"data: {a.units} units x 2 raters = {x.size} decisions, {r.q} distinct values")
    print(f"encode: {t_enc:.2f} s, peak {m_enc:.0f} MB")
    point, t_pt, m_pt = measure(lambda: get_coefficient("alpha")(r, level="nominal").point())
    print(f"ours, point: alpha {point:.4f} in {t_pt:.2f} s, peak {m_pt:.0f} MB")
    res, t_ci, m_ci = measure(lambda: agreement(r, "alpha", resamples=a.resamples, seed=0)[0])
    print(
        f"ours, point + {a.resamples} bootstrap resamples: {res.ci} in {t_ci:.2f} s, "
        f"peak {m_ci:.0f} MB"
    )

    xs = plates(a.baseline_units, 2, a.seed + 1)
    rs = as_ratings(xs)
    ref, t_ref, m_ref = measure(
        lambda: krippendorff.alpha(reliability_data=xs.T, level_of_measurement="nominal")
    )
    ours, t_small, m_small = measure(lambda: get_coefficient("alpha")(rs, level="nominal").point())
    assert abs(ours - ref) < 1e-12, (ours, ref)
    print(
        f"baseline size {xs.size} decisions, {rs.q} distinct values: krippendorff package "
        f"{t_ref:.2f} s, peak {m_ref:.0f} MB; ours {t_small:.3f} s, peak {m_small:.1f} MB; "
        f"equal to 1e-12"
    )
    print(
        f"ratio (package / ours) at the baseline size: time {t_ref / t_small:.0f}x, "
        f"memory {m_ref / max(m_small, 1e-3):.0f}x; the package's units x values² array at "
        f"the full size would be {a.units * r.q**2 * 8 / 1e12:.0f} TB"
    )
    print(
        f"max RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB"
    )


if __name__ == "__main__":
    main()
