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

Scale (issue 28: ~5 min at 190k decisions; goal 1M decisions audited in under 60 s of CPU,
memory under 1 KB per decision): ``--scale`` runs the audit (``--resamples``) at about
1k / 10k / 100k tier-1 decisions (1M with ``--million``: building that store takes long),
CPU seconds beside the baseline of loading the decision table at the same size, the
tracemalloc peak per decision, and the cost exponent k (CPU ∝ n^k); written to
bench/SCALE.md (section "audit").

    .venv/bin/python bench/audit_scale.py --scale [--million] [--resamples 2000]
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
    ap.add_argument("--scale", action="store_true", help="sweep 1k/10k/100k decisions")
    ap.add_argument("--million", action="store_true", help="with --scale: also 1M decisions")
    args = ap.parse_args()
    if args.scale:
        scale(args.resamples, args.million)
        return

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


DECISIONS_PER_ITEM = 14.3
"""Tier-1 decisions per clip of the SIMULATED steel-safety scenario (19,211 at 1,345)."""


def scale(resamples: int, million: bool) -> None:
    """CPU of the whole audit at growing sizes, beside loading the decision table."""
    import gc
    import sys
    import tracemalloc

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _scale import fit_exponent, record, row

    from truthline.audit import load, run_audit
    from truthline.project import load_project
    from truthline.simulate import build_scenario
    from truthline.store import Store
    from truthline.workspace import templates_dir

    project = load_project(templates_dir() / "steel-safety")
    targets = [1_000, 10_000, 100_000] + ([1_000_000] if million else [])
    with tempfile.TemporaryDirectory() as tmp:  # warm-up: first-use imports (scipy.stats)
        store = Store(f"sqlite:///{Path(tmp) / 'warm.db'}")
        sc = build_scenario(store, project, n_items=60, seed=0)
        run_audit(store, project, resamples=20, gradient_model=sc.benchmark_version)
        store.close()
    runs = []
    print(f"audit, {resamples} resamples, CPU seconds (baseline: loading the decision table)")
    print(f"{'decisions':>10} {'items':>7} {'load s':>8} {'audit s':>8} {'ratio':>7} {'B/dec':>7}")
    for target in targets:
        items = max(8, round(target / DECISIONS_PER_ITEM))
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "scale.db"
            version = _build_elsewhere(db, items)
            store = Store(f"sqlite:///{db}")
            t0 = time.process_time()
            load(store, project)
            t_load = time.process_time() - t0
            t0 = time.process_time()
            res = run_audit(store, project, resamples=resamples, gradient_model=version)
            t_audit = time.process_time() - t0
            gc.collect()  # memory in a second run: tracemalloc slows Python code down
            tracemalloc.start()
            run_audit(store, project, resamples=resamples, gradient_model=version)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            store.close()
        n = int(res.counts["decisions"])
        runs.append((n, items, t_load, t_audit, peak / n))
        print(
            f"{n:>10,} {items:>7,} {t_load:8.2f} {t_audit:8.2f} {t_audit / t_load:6.2f}x "
            f"{peak / n:7.0f}"
        )
        _record_scale(runs, resamples, fit_exponent, record, row)  # a partial sweep counts too
    k = fit_exponent([r[0] for r in runs], [r[3] for r in runs])
    k_load = fit_exponent([r[0] for r in runs], [r[2] for r in runs])
    n, _, _, t_audit, _ = runs[-1]
    print(f"cost exponent (CPU ∝ n^k): audit k = {k:.2f}, load k = {k_load:.2f}")
    print(f"projected at 1M decisions: ~{t_audit * (1e6 / n) ** max(k, 1.0):.0f} s (goal < 60 s)")


def _build_elsewhere(db: Path, items: int) -> str:
    """Build the SIMULATED store in a child process; returns the benchmark model version.
    Why: an audit is run on a store that exists (``truthline audit``), not in the process
    that just wrote a million rows; after an in-process build of 1M decisions the same
    audit took 71 s of CPU, against 49 s in a fresh process on the same store."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from truthline.project import load_project\n"
        "from truthline.simulate import build_scenario\n"
        "from truthline.store import Store\n"
        "from truthline.workspace import templates_dir\n"
        "p = load_project(templates_dir() / 'steel-safety')\n"
        "s = Store('sqlite:///' + sys.argv[1])\n"
        "sc = build_scenario(s, p, n_items=int(sys.argv[2]), seed=0)\n"
        "s.close()\n"
        "print(sc.benchmark_version)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(db), str(items)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().splitlines()[-1]


def _record_scale(runs: list, resamples: int, fit_exponent, record, row) -> None:
    """Write the sizes run so far to bench/SCALE.md (section "audit"): a sweep stopped
    before 1M still leaves its figures."""
    k = fit_exponent([r[0] for r in runs], [r[3] for r in runs])
    rows = []
    for n, items, t_load, t_audit, per in runs:
        last = n == runs[-1][0]
        rows.append(
            row(
                f"audit ({resamples} resamples, {items:,} clips), CPU",
                f"{t_audit:.2f} s",
                f"{t_load:.2f} s loading the decision table",
                ratio=t_audit / max(t_load, 1e-9),
                n=n,
                k=k if last else None,
            )
        )
        rows.append(row("audit, peak traced memory", f"{per:.0f} B/decision", "", n=n))
    record(
        "audit",
        rows,
        note="bench/audit_scale.py --scale; n = tier-1 decisions; goal at 1M: < 60 s CPU, "
        "< 1 KB/decision.",
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
