"""Writer of ``bench/SCALE.md``: each bench script rewrites its own section (issue 28).

A section is one markdown table: figure, value, baseline, ratio, the machine's load when it
was measured (``os.getloadavg``: on a shared machine a ratio to a baseline measured in the
same run means more than a seconds figure), n, and the cost exponent k (cost ∝ n^k, fitted
over the sizes the script ran). Other sections are kept as they are, so scripts run at
different times share the file.

    from _scale import fit_exponent, record, row
    record("audit", [row("audit, 2000 resamples", "12.3 s", "4.1 s", ratio=3.0, n=19211)])
"""

from __future__ import annotations

import fcntl
import math
import os
import platform
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SCALE_MD = Path(__file__).with_name("SCALE.md")
COLUMNS = ("figure", "value", "baseline", "ratio", "machine load", "n", "cost exponent k")
HEADER = (
    "# Scale figures\n\n"
    "Rewritten by the bench scripts (``bench/_scale.py``), one section per script; each "
    "figure beside the baseline measured in the same process, their ratio, the machine's "
    "1-minute load average at the time (`os.getloadavg`, out of the cores shown) and the "
    "cost exponent k of cost ∝ n^k fitted over the sizes run. Performance lives here and in "
    "the bench scripts, not in timed tests.\n"
)


def machine_load() -> str:
    """The 1-minute load average out of the machine's cores, e.g. ``1.9/2``."""
    try:
        one = os.getloadavg()[0]
    except OSError:  # not available on this platform
        return "n/a"
    return f"{one:.1f}/{os.cpu_count() or 1}"


def fit_exponent(ns: Sequence[float], costs: Sequence[float]) -> float:
    """Least-squares slope of log(cost) on log(n): k in cost ∝ n^k (NaN under two sizes)."""
    pts = [(math.log(n), math.log(c)) for n, c in zip(ns, costs, strict=True) if n > 0 and c > 0]
    if len({x for x, _ in pts}) < 2:
        return float("nan")
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def row(
    figure: str,
    value: str,
    baseline: str = "",
    *,
    ratio: float | None = None,
    n: int | None = None,
    k: float | None = None,
) -> dict[str, Any]:
    """One table row; the machine load is read now (call it right after measuring)."""
    return {
        "figure": figure,
        "value": value,
        "baseline": baseline,
        "ratio": "" if ratio is None or not math.isfinite(ratio) else f"{ratio:.2f}x",
        "machine load": machine_load(),
        "n": "" if n is None else f"{n:,}",
        "cost exponent k": "" if k is None or not math.isfinite(k) else f"{k:.2f}",
    }


def _table(rows: list[dict[str, Any]]) -> str:
    def cell(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _markers(section: str) -> tuple[str, str]:
    return f"<!-- section: {section} -->", f"<!-- end: {section} -->"


def render(section: str, rows: list[dict[str, Any]], note: str = "") -> str:
    """The section's markdown, between the markers ``record`` finds it by."""
    start, end = _markers(section)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    where = f"{platform.node() or 'this machine'}, {os.cpu_count() or 1} cores"
    body = f"## {section}\n\n_{when} on {where}._" + (f" {note}" if note else "") + "\n\n"
    return f"{start}\n{body}{_table(rows)}{end}\n"


def record(
    section: str, rows: list[dict[str, Any]], note: str = "", path: Path | None = None
) -> Path:
    """Rewrite ``section`` of SCALE.md with ``rows`` (added at the end when new); the rest
    of the file is kept. A lock file keeps two scripts finishing at once from interleaving."""
    if not re.fullmatch(r"[\w .:/()-]+", section):
        raise ValueError(f"section name {section!r}: use letters, digits, spaces and .:/()-")
    target = path or SCALE_MD
    new = render(section, rows, note)
    with open(Path(tempfile.gettempdir()) / "truthline-scale-md.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = target.read_text() if target.exists() else HEADER
        start, end = _markers(section)
        pat = re.compile(re.escape(start) + r".*?" + re.escape(end) + r"\n?", re.S)
        if pat.search(text):
            text = pat.sub(lambda _: new, text, count=1)
        else:
            text = text.rstrip("\n") + "\n\n" + new
        target.write_text(text)
    return target
