"""Time to first full render of each dashboard page, cold and cached, on a SteelBench-scale store.

SteelBench curated 1,345 clips; the store built here has that many SIMULATED clips with a
prefill, blind/anchored/expert annotations, a gold snapshot and a run of two simulated
models. Each page is rendered with Streamlit's AppTest (the real page code, no browser):

* cold   = caches cleared, the page computes everything (the baseline of this process);
* cached = a fresh session right after, the result cache warm (what a second viewer sees).

Prints seconds and the cached/cold ratio per page. Goal: cached <= 2 s.

    .venv/bin/python bench/dashboard_load.py [--items 1345] [--workspace DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("STREAMLIT_LOGGER_LEVEL", "error")

GOAL_CACHED_S = 2.0


def render(page: str, timeout: float = 900) -> float:
    from streamlit.testing.v1 import AppTest

    t0 = time.perf_counter()
    at = AppTest.from_string(
        f"from truthline.dashboards._frame import main\nmain(page={page!r})\n",
        default_timeout=timeout,
    ).run()
    dt = time.perf_counter() - t0
    if at.exception:
        raise RuntimeError(f"page {page} raised: {at.exception[0].message}")
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1345, help="simulated clips (SteelBench: 1345)")
    ap.add_argument("--workspace", type=Path, help="reuse/build the store here (default: temp)")
    args = ap.parse_args()

    import logging

    import streamlit as st

    logging.getLogger("streamlit").setLevel(logging.ERROR)
    from rich.console import Console
    from rich.table import Table

    from truthline.dashboards import pages
    from truthline.demo import build_simulated_loop

    console = Console()
    root = args.workspace or Path(tempfile.mkdtemp(prefix="truthline-dash-bench-")) / "ws"
    if not (root / "truthline.db").is_file():
        with console.status(f"building a SIMULATED store of {args.items} clips in {root} ..."):
            t0 = time.perf_counter()
            build_simulated_loop(root, n_items=args.items, seed=0)
            console.print(f"store built in {time.perf_counter() - t0:.1f} s")
    os.environ["TRUTHLINE_WORKSPACE"] = str(root)
    os.environ.pop("TRUTHLINE_DB", None)

    render("overview")  # warm imports so the first page does not pay for them alone
    table = Table("page", "cold s", "cached s", "cached/cold", f"cached <= {GOAL_CACHED_S:.0f} s")
    worst = 0.0
    for p in pages():
        st.cache_data.clear()
        st.cache_resource.clear()
        cold = render(p.url_path)
        cached = min(render(p.url_path) for _ in range(3))
        worst = max(worst, cached)
        table.add_row(
            p.title,
            f"{cold:.2f}",
            f"{cached:.2f}",
            f"{cached / cold:.3f}",
            "yes" if cached <= GOAL_CACHED_S else "NO",
        )
    console.print(table)
    console.print(f"{args.items} simulated items; worst cached render {worst:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
