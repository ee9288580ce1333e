"""How a CI's design is shown beside it, in every report, CLI table and dashboard.

A CI over 2 clusters is not one over 28 items: each interval carries the number of
clusters (and strata) it resampled, and a table whose intervals came from a thin design
gets one visible note with the warning (``stats.design`` decides what is thin).
Works on ``CI.as_dict()``-style plain dicts, which is what reports and pages hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from truthline.stats import design_words


def is_ci(obj: Any) -> bool:
    return isinstance(obj, dict) and "point" in obj and "low" in obj and "high" in obj


def design_label(ci: dict[str, Any] | None) -> str:
    """``"4 clusters in 2 strata"``; ``""`` for an interval over independent items."""
    if not ci:
        return ""
    return design_words(ci.get("clusters"), ci.get("strata"), ci.get("n", 0))


def with_design(text: str, ci: dict[str, Any] | None) -> str:
    """``text`` plus the design in parentheses, with a ⚠ when the design is thin."""
    label = design_label(ci)
    if not label or ci is None or ci.get("low") is None:
        return text
    return f"{text} ({label}{' ⚠' if ci.get('warning') else ''})"


def _thin(objs: Iterable[Any]) -> list[dict[str, Any]]:
    """Every CI (recursively) in ``objs`` that carries a design warning."""
    found: list[dict[str, Any]] = []

    def walk(x: Any) -> None:
        if is_ci(x):
            if x.get("warning"):
                found.append(x)
            return
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list | tuple):
            for v in x:
                walk(v)

    for o in objs:
        walk(o)
    return found


def warnings_in(objs: Iterable[Any]) -> list[str]:
    """Distinct design warnings of every CI found (recursively) in ``objs``, each with the
    design it is about, e.g. ``"4 clusters in 2 strata: few clusters (4 < 20)"``."""
    seen: dict[str, None] = {}
    for x in _thin(objs):
        label = design_label(x)
        seen.setdefault(f"{label}: {x['warning']}" if label else str(x["warning"]))
    return list(seen)


def design_note(objs: Iterable[Any]) -> str:
    """One sentence for under a table: what is thin about its intervals' designs, or ``""``."""
    thin = _thin(objs)
    if not thin:
        return ""
    few = sorted({int(x["clusters"]) for x in thin if (x.get("clusters") or 0) >= 2})
    n_few = sum(1 for x in thin if (x.get("clusters") or 0) >= 2 and "few clusters" in x["warning"])
    none = sum(1 for x in thin if x.get("clusters") is not None and x["clusters"] < 2)
    dropped = [x for x in thin if "strata dropped" in x["warning"]]
    parts = []
    if n_few:
        span = f"{few[0]}" if few[0] == few[-1] else f"{few[0]}-{few[-1]}"
        strata = {int(x["strata"]) for x in thin if x.get("strata")}
        where = f" in {min(strata)} strata" if len(strata) == 1 else ""
        parts.append(
            f"{n_few} interval{'s' if n_few != 1 else ''} over {span} clusters{where} "
            "(fewer than 20: cluster jackknife-t)"
        )
    if dropped:
        fewest = min(int(x.get("min_per_stratum") or 0) for x in dropped)
        parts.append(f"strata dropped ({fewest} < 10 clusters in a stratum)")
    if none:
        parts.append(f"{none} over a single cluster: no interval")
    if not parts:
        parts = warnings_in(objs)
    return (
        "⚠ Thin resampling design — "
        + "; ".join(parts)
        + ". Read these intervals as rough, not as intervals over that many independent items."
    )
