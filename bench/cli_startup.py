"""CLI start-up time: ``truthline --version``, ``--help`` and a stage's ``--help``.

Each command runs as a fresh subprocess (what a user waits for), several times; the
median is printed next to ``python -c pass`` measured the same way in the same run, so the
figures and ratios are comparable across machines. Target: ``--version`` and ``--help``
under 0.3 s (issue 13). Beside each time, the number of modules the command imported and
the heavy libraries among them (issue 28: ``benchmark --help`` imported 1,273 modules; help
loads no stage's heavy libraries). Written to bench/SCALE.md (section "cli start-up").

    .venv/bin/python bench/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _scale import record, row

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


HEAVY = ("numpy", "scipy", "pandas", "sqlalchemy", "pyarrow", "jinja2", "matplotlib", "httpx")

COUNT = """
import json, sys
args = sys.argv[1:]
if args != ["-c", "pass"]:
    from truthline.cli import app
    try:
        app(args=args[2:], standalone_mode=False)
    except SystemExit:
        pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
print("\\n" + json.dumps([len(sys.modules), heavy]))
""".replace("HEAVY", repr(HEAVY))


def modules(cmd: list[str]) -> tuple[int, list[str]]:
    """(modules in sys.modules after the command ran, heavy libraries among them)."""
    out = subprocess.run(
        [sys.executable, "-c", COUNT, *cmd[1:]], capture_output=True, text=True, check=True
    )
    n, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    return int(n), list(heavy)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    median_seconds(CASES["truthline --help"], 1)  # warm the bytecode cache
    base = None
    print(
        f"{'command':32} {'median s':>9} {'- baseline':>11} {'x baseline':>11} {'modules':>8}  heavy"
    )
    rows = []
    for name, cmd in CASES.items():
        t = median_seconds(cmd, args.runs)
        base = t if base is None else base
        n_mod, heavy = modules(cmd)
        print(
            f"{name:32} {t:9.3f} {t - base:11.3f} {t / base:11.1f} {n_mod:8d}  "
            f"{', '.join(heavy) or '-'}"
        )
        if cmd is not CASES["python -c pass (baseline)"]:
            label = f"{name}: {n_mod} modules" + (f", heavy: {', '.join(heavy)}" if heavy else "")
            rows.append(row(label, f"{t:.3f} s", f"{base:.3f} s python -c pass", ratio=t / base))
    record("cli start-up", rows, note="bench/cli_startup.py; median wall time of a fresh process.")


if __name__ == "__main__":
    main()
