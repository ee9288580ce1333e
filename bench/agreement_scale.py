"""Benchmark: nominal Krippendorff's alpha on a high-cardinality field (plates, VINs).

Units x 2 raters of mostly distinct plates at 1k / 10k / 100k decisions (1M with
``--million``; issue 28's goal there: alpha with a CI in under 30 s on one core, memory
under 1 KB per decision). At each size: the point estimate and point + bootstrap CI, CPU
seconds on one core (BLAS threads pinned to 1) and the tracemalloc peak per decision. The
baseline, measured in the same process at the same size and resamples, is the floor of any
unit bootstrap: drawing the multiplicities and one weighted sum per resample (the mean of
the per-unit disagreements). The cost exponent k (CPU ∝ n^k) is fitted over the sizes.

The ``krippendorff`` package is checked equal to ours at a small size (it builds a units x
values x values array: 3,000 units with 3,767 values asks for 317 GiB). The figures are
written to bench/SCALE.md (section "alpha").

    .venv/bin/python bench/agreement_scale.py [--million] [--resamples 2000]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core, as the goal is stated

import argparse  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import krippendorff  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _scale import fit_exponent, record, row  # noqa: E402

from truthline.stats import (  # noqa: E402
    DEFAULT_RESAMPLES,
    agreement,
    as_ratings,
    get_coefficient,
    multiplicity_blocks,
)

GOAL_SECONDS = 30.0
GOAL_BYTES = 1000.0


def plates(units: int, raters: int, seed: int) -> np.ndarray:
    """Mostly distinct plates read right 80 % of the time, else a random plate."""
    rng = np.random.default_rng(seed)
    truth = rng.permutation(units * 4)[:units].astype(float)
    wrong = rng.integers(0, units * 4, size=(units, raters)).astype(float)
    return np.where(rng.random((units, raters)) < 0.8, truth[:, None], wrong)


def measure(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, CPU seconds, peak traced bytes)."""
    tracemalloc.start()
    t0 = time.process_time()
    out = fn()
    dt = time.process_time() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, dt, float(peak)


def floor(n: int, resamples: int, x: np.ndarray) -> float:
    """The bare unit bootstrap: multiplicities and one weighted sum per resample."""
    out = [W @ x for W in multiplicity_blocks(n, resamples, 0)]
    return float(np.concatenate(out).mean())


def one_size(decisions: int, resamples: int, seed: int) -> dict[str, Any]:
    units = decisions // 2
    x = plates(units, 2, seed)
    r = as_ratings(x)
    point, t_pt, _ = measure(lambda: get_coefficient("alpha")(r, level="nominal").point())
    res, t_ci, m_ci = measure(lambda: agreement(r, "alpha", resamples=resamples, seed=0)[0])
    d = (x[:, 0] != x[:, 1]).astype(float)
    _, t_floor, _ = measure(lambda: floor(units, resamples, d))
    return {
        "n": x.size,
        "q": r.q,
        "point": point,
        "ci": res.ci,
        "t_pt": t_pt,
        "t_ci": t_ci,
        "t_floor": t_floor,
        "bytes": m_ci / x.size,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    ap.add_argument("--million", action="store_true", help="also 1,000,000 decisions")
    ap.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    ap.add_argument("--baseline-units", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-record", action="store_true", help="do not rewrite bench/SCALE.md")
    a = ap.parse_args()
    sizes = sorted(set(a.sizes) | ({1_000_000} if a.million else set()))
    B = a.resamples

    print(f"nominal alpha on plates, 2 raters, {B} resamples, one core (CPU seconds)")
    print(
        f"{'decisions':>10} {'values':>8} {'point s':>8} {'CI s':>8} {'floor s':>8} "
        f"{'CI/floor':>8} {'B/dec':>7}  alpha [95% CI]"
    )
    runs = []
    for n in sizes:
        s = one_size(n, B, a.seed)
        runs.append(s)
        print(
            f"{s['n']:>10,} {s['q']:>8,} {s['t_pt']:8.3f} {s['t_ci']:8.2f} {s['t_floor']:8.2f} "
            f"{s['t_ci'] / max(s['t_floor'], 1e-9):7.2f}x {s['bytes']:7.0f}  {s['ci']}"
        )
    k_ci = fit_exponent([s["n"] for s in runs], [s["t_ci"] for s in runs])
    k_floor = fit_exponent([s["n"] for s in runs], [s["t_floor"] for s in runs])
    print(
        f"cost exponent (CPU ∝ n^k): alpha with CI k = {k_ci:.2f}, bare bootstrap k = {k_floor:.2f}"
    )
    big = runs[-1]
    print(
        f"at {big['n']:,} decisions: {big['t_ci']:.1f} s (goal < {GOAL_SECONDS:.0f} s at 1M: "
        f"~{big['t_ci'] * 1e6 / big['n']:.0f} s projected linearly), {big['bytes']:.0f} B per "
        f"decision (goal < {GOAL_BYTES:.0f})"
    )

    xs = plates(a.baseline_units, 2, a.seed + 1)
    rs = as_ratings(xs)
    ref, t_ref, m_ref = measure(
        lambda: krippendorff.alpha(reliability_data=xs.T, level_of_measurement="nominal")
    )
    ours, t_small, m_small = measure(lambda: get_coefficient("alpha")(rs, level="nominal").point())
    assert abs(ours - ref) < 1e-12, (ours, ref)
    print(
        f"krippendorff package at {xs.size} decisions, {rs.q} values: {t_ref:.2f} s, peak "
        f"{m_ref / 1e6:.0f} MB; ours {t_small:.3f} s, peak {m_small / 1e6:.1f} MB; equal to 1e-12"
    )
    print(
        f"max RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:.0f} MB"
    )
    if a.no_record:
        return
    rows = []
    for s in runs:
        rows.append(
            row(
                f"alpha + CI ({B} resamples), CPU",
                f"{s['t_ci']:.2f} s",
                f"{s['t_floor']:.2f} s bare bootstrap",
                ratio=s["t_ci"] / max(s["t_floor"], 1e-9),
                n=s["n"],
                k=k_ci if s is big else None,
            )
        )
        rows.append(
            row("alpha + CI, peak traced memory", f"{s['bytes']:.0f} B/decision", "", n=s["n"])
        )
    rows.append(
        row(
            "alpha point vs krippendorff package",
            f"{t_small:.3f} s",
            f"{t_ref:.2f} s package",
            ratio=t_small / max(t_ref, 1e-9),
            n=xs.size,
        )
    )
    record(
        "alpha",
        rows,
        note=f"bench/agreement_scale.py; goal at 1M decisions: < {GOAL_SECONDS:.0f} s, < 1 KB/decision.",
    )


if __name__ == "__main__":
    main()
