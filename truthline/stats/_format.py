"""How an interval is shown, in every report, CLI table and dashboard: ``fmt_ci`` and the
design beside it.

A CI over 2 clusters is not one over 28 items: each interval carries the number of
clusters (and strata) it resampled, and a table whose intervals came from a thin design
gets one visible note with the warning (``design`` decides what is thin). Works on
``CI.as_dict()``-style plain dicts (what results hold across packages) and on ``CI``
objects; a missing estimate is ``None`` or NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from truthline.stats._bootstrap import CI, design_words

__all__ = ["design_label", "design_note", "fmt_ci", "is_ci", "warnings_in", "with_design"]


def is_ci(obj: Any) -> bool:
    return isinstance(obj, dict) and "point" in obj and "low" in obj and "high" in obj


def design_label(ci: Mapping[str, Any] | None) -> str:
    """``"4 clusters in 2 strata"``; ``""`` for an interval over independent items."""
    if not ci:
        return ""
    return design_words(ci.get("clusters"), ci.get("strata"), ci.get("n", 0))


def with_design(text: str, ci: Mapping[str, Any] | None) -> str:
    """``text`` plus the design in parentheses, with a ⚠ when the design is thin."""
    label = design_label(ci)
    if not label or ci is None or ci.get("low") is None:
        return text
    return f"{text} ({label}{' ⚠' if ci.get('warning') else ''})"


def _number(x: Any) -> float | None:
    """``x`` as a float; ``None`` when it is missing (``None`` or NaN)."""
    if x is None:
        return None
    f = float(x)
    return None if math.isnan(f) else f


def fmt_ci(
    ci: Mapping[str, Any] | CI | float | None,
    *,
    digits: int = 3,
    scale: float = 1.0,
    unit: str = "",
    sign: bool = False,
    design: bool = True,
    point: bool = True,
    missing: str = "—",
) -> str:
    """An estimate with its interval: ``"0.750 [0.700, 0.800] (4 clusters in 2 strata ⚠)"``.

    ``ci`` is a ``CI.as_dict()``-style dict, a ``CI`` or a bare number (no interval).
    ``scale`` multiplies point and bounds (100: a share in percent), ``digits`` are the
    decimals, ``unit`` follows the point (``"%"``, ``" pp"``), ``sign`` always shows the
    sign (differences). ``design``: the resampling design beside the interval (see
    ``with_design``); ``point=False`` shows the interval alone (``"[0.700, 0.800]"``).
    Without an estimate: ``missing``; without an interval: the point alone (or
    ``missing`` when ``point=False``).
    """
    if ci is None:
        return missing
    if isinstance(ci, CI):
        d: Mapping[str, Any] = {
            k: getattr(ci, k)
            for k in ("point", "low", "high", "n", "clusters", "strata", "warning")
        }
    elif isinstance(ci, Mapping):
        d = ci
    else:
        d = {"point": ci, "low": None, "high": None}
    if not d:
        return missing
    p, lo, hi = _number(d.get("point")), _number(d.get("low")), _number(d.get("high"))
    spec = f"{'+' if sign else ''}.{digits}f"
    if lo is None or hi is None:
        if not point or p is None:
            return missing
        return f"{p * scale:{spec}}{unit}"
    interval = f"[{lo * scale:{spec}}, {hi * scale:{spec}}]"
    if point:
        if p is None:
            return missing
        interval = f"{p * scale:{spec}}{unit} {interval}"
    return with_design(interval, d) if design else interval


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
