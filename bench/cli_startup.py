"""CLI start-up time: ``truthline --version``, ``--help`` and a stage's ``--help``.

Each command runs as a fresh subprocess (what a user waits for), several times; the
median is printed next to ``python -c pass`` measured the same way in the same run, so the
figures and ratios are comparable across machines. Target: ``--version`` and ``--help``
under 0.3 s (issue 13).

    .venv/bin/python bench/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "truthline --version": [sys.executable, "-m", "truthline", "--version"],
    "truthline --help": [sys.executable, "-m", "truthline", "--help"],
    "truthline audit --help": [sys.executable, "-m", "truthline", "audit", "--help"],
    "truthline benchmark --help": [sys.executable, "-m", "truthline", "benchmark", "--help"],
}


def median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    median_seconds(CASES["truthline --help"], 1)  # warm the bytecode cache
    base = None
    print(f"{'command':32} {'median s':>9} {'- baseline':>11} {'x baseline':>11}")
    for name, cmd in CASES.items():
        t = median_seconds(cmd, args.runs)
        base = t if base is None else base
        print(f"{name:32} {t:9.3f} {t - base:11.3f} {t / base:11.1f}")


if __name__ == "__main__":
    main()
