"""Audit at SteelBench scale: 1,345 clips, 6 annotators, 363 expert-reviewed clips, 102
blind double-annotated pairs (SIMULATED store), full ``run_audit`` with 2,000-resample CIs.

Prints the time of each stage and ratios against baselines run in the same process:
loading the decision table alone, and the audit with point estimates only (0 resamples).
Goal: the full audit in <= 10 s on 2 cores.

Memory (issue 13): the tracemalloc peak of ``run_audit`` at two sizes (after a warm-up
run, so imports are not counted), as bytes per tier-1 decision, and the marginal bytes
per decision between the sizes (what a 1.9 M-decision project pays; the fixed part is
the bootstrap replicates of a few thousand estimates). Before: ~3.5 KB per decision
(6.8 GB at 1.9 M decisions). Goal: under 1 KB per decision.

    .venv/bin/python bench/audit_scale.py [--items 1345] [--resamples 2000] [--profile]
        [--memory 1345 4035] [--memory-resamples 200]
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
    ap.add_argument(
        "--memory", type=int, nargs="*", default=[1345, 4035], help="item counts (none: skip)"
    )
    ap.add_argument("--memory-resamples", type=int, default=200)
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
    if args.memory:
        memory(project, sorted(args.memory), args.memory_resamples)


OLD_BYTES_PER_DECISION = 3500
"""Issue 13's measurement before the change: ~3.5 KB per decision (6.8 GB at 1.9 M)."""


def memory(project, sizes: list[int], resamples: int) -> None:
    """tracemalloc peak of ``run_audit`` per tier-1 decision at each size, and the slope."""
    import gc
    import tracemalloc

    from truthline.audit import run_audit
    from truthline.simulate import build_scenario
    from truthline.store import Store

    def peak(n: int) -> tuple[int, int]:
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(f"sqlite:///{Path(tmp) / 'mem.db'}")
            sc = build_scenario(store, project, n_items=n, seed=0)
            gc.collect()
            tracemalloc.start()
            res = run_audit(
                store, project, resamples=resamples, gradient_model=sc.benchmark_version
            )
            _, top = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            store.close()
        return int(res.counts["decisions"]), top

    peak(60)  # warm-up: first-use imports are not the audit's memory
    rows = [(n, *peak(n)) for n in sizes]
    print(f"memory: tracemalloc peak of run_audit ({resamples} resamples)")
    for n, dec, top in rows:
        print(
            f"  {n:6d} items {dec:8d} decisions  peak {top / 1e6:7.1f} MB  "
            f"{top / dec:6.0f} B/decision  ({OLD_BYTES_PER_DECISION / (top / dec):.1f}x less "
            f"than the old {OLD_BYTES_PER_DECISION} B)"
        )
    if len(rows) >= 2:
        (_, d0, p0), (_, d1, p1) = rows[0], rows[-1]
        slope = (p1 - p0) / max(d1 - d0, 1)
        print(
            f"  marginal {slope:6.0f} B/decision between the sizes "
            f"(~{slope * 1.9e6 / 1e9:.1f} GB at 1.9 M decisions); goal < 1 KB: "
            f"{'met' if slope < 1000 and p1 / d1 < 1000 else 'NOT met'}"
        )


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
