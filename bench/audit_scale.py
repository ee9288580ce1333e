"""Audit at SteelBench scale: 1,345 clips, 6 annotators, 363 expert-reviewed clips, 102
blind double-annotated pairs (SIMULATED store), full ``run_audit`` with 2,000-resample CIs.

Prints the time of each stage and ratios against baselines run in the same process:
loading the decision table alone, and the audit with point estimates only (0 resamples).
Goal: the full audit in <= 10 s on 2 cores.

    .venv/bin/python bench/audit_scale.py [--items 1345] [--resamples 2000] [--profile]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1345)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--profile", action="store_true", help="cProfile the full audit")
    args = ap.parse_args()

    from truthline.audit import load, run_audit
    from truthline.project import load_project
    from truthline.simulate import build_scenario
    from truthline.store import Store
    from truthline.workspace import templates_dir

    project = load_project(templates_dir() / "steel-safety")
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        t0 = time.perf_counter()
        sc = build_scenario(store, project, n_items=args.items, seed=0)
        t_build = time.perf_counter() - t0

        t0 = time.perf_counter()
        data = load(store, project)
        t_load = time.perf_counter() - t0
        n_dec = len(data.d["unit"])
        n_exp = sum(len(v) for v in data.expert.values())

        t0 = time.perf_counter()
        run_audit(store, project, resamples=0, gradient_model=sc.benchmark_version)
        t_points = time.perf_counter() - t0

        t0 = time.perf_counter()
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
        res = run_audit(
            store, project, resamples=args.resamples, gradient_model=sc.benchmark_version
        )
        t_full = time.perf_counter() - t0
        if args.profile:
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        store.close()

    n_ci = _count_cis(res.as_dict())
    print(
        f"SIMULATED scenario: {sc.items} clips, {len(sc.team)} annotators, "
        f"{sc.expert_items} expert-reviewed, {sc.blind_pairs} blind pairs, "
        f"{n_dec} tier-1 decisions + {n_exp} expert decisions = {n_dec + n_exp}"
    )
    print(f"build scenario           {t_build:7.2f} s")
    print(f"load decision table      {t_load:7.2f} s   (baseline 1)")
    print(f"audit, points only       {t_points:7.2f} s   (baseline 2: resamples=0)")
    print(
        f"audit, {args.resamples} resamples  {t_full:7.2f} s   ({n_ci} CIs, before/after included)"
    )
    print(f"ratio full / load        {t_full / t_load:7.2f}x")
    print(
        f"ratio full / points-only {t_full / t_points:7.2f}x  "
        f"(bootstrap cost {1000 * (t_full - t_points) / max(n_ci, 1):.2f} ms per CI)"
    )
    print(f"goal <= 10 s: {'met' if t_full <= 10 else 'NOT met'}")


def _count_cis(obj) -> int:
    if isinstance(obj, dict):
        if "resamples" in obj and "point" in obj:
            return 1
        return sum(_count_cis(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(_count_cis(v) for v in obj)
    return 0


if __name__ == "__main__":
    main()
