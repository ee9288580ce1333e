"""SteelBench's diagnostic metrics (seeds/001, METRICS.md §6): safety recall and the
false-alarm share of safety errors, the conditional reasoning gap (CRG), distance-weighted
accuracy (DWA) and the diagnostic readiness score (DRS) over a project's declared checks.

Each is one ``@metric`` over the loop's ``Scored``; the statistics underneath (ratios with a
bootstrap CI, ``safety`` on binary answers) are the loop's generic ones in
``truthline.benchmark.metrics``. ``crg`` and ``drs`` here are the pure functions on arrays
and headline values. DRS declares the metrics it reads (``needs``), so the loop computes
them first, even when the project does not list them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import Scored, headline, metric
from truthline.stats import CI

DRS_NEEDS = ("naudc", "crg", "safety_recall", "dwa", "accuracy", "macro_f1", "f2_detect")
"""What DRS computes even when a project does not list it: the metrics its checks name
(METRICS.md §6: nAUDC, CRG, safety recall, DWA) and the headline scores a check may use."""


# -- pure functions ------------------------------------------------------------------------
def crg(
    perceived: ArrayLike,
    judged: ArrayLike,
    *,
    units: Sequence[Any] | None = None,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
    rs: M.Resampling = M.Resampling(),
) -> CI:
    """Conditional reasoning gap: among decisions with the action perceived correctly, the
    share whose safety judgment is wrong (lower is better)."""
    p = np.asarray(perceived, dtype=bool)
    j = np.asarray(judged, dtype=bool)
    return M.ratio(p & ~j, p, units=units, clusters=clusters, strata=strata, rs=rs)


def _passes(value: float, op: str, threshold: float) -> bool:
    if value is None or np.isnan(value):
        return False
    return {
        ">=": value >= threshold,
        "<=": value <= threshold,
        ">": value > threshold,
        "<": value < threshold,
    }[op]


def drs(
    values: Mapping[str, float], checks: Mapping[str, Any], *, relax: float = 0.10
) -> dict[str, Any]:
    """Diagnostic readiness: the share of declared checks passed, plus the same under a
    ``relax`` relaxation (thresholds moved 10% in the model's favour) and tightening.

    ``checks``: name -> object with ``metric``, ``op`` (>=, <=, >, <) and ``threshold``."""
    rows = []
    for name, chk in checks.items():
        metric, op, thr = _check_parts(chk)
        val = values.get(metric, float("nan"))
        easier = 1 - relax if op in (">=", ">") else 1 + relax
        harder = 1 + relax if op in (">=", ">") else 1 - relax
        rows.append(
            {
                "check": name,
                "metric": metric,
                "op": op,
                "threshold": thr,
                "value": val,
                "pass": _passes(val, op, thr),
                "relaxed_threshold": thr * easier,
                "pass_relaxed": _passes(val, op, thr * easier),
                "strict_threshold": thr * harder,
                "pass_strict": _passes(val, op, thr * harder),
            }
        )
    n = len(rows)

    def share(key: str) -> float:
        return sum(bool(r[key]) for r in rows) / n if n else float("nan")

    return {
        "drs": share("pass"),
        "drs_relaxed": share("pass_relaxed"),
        "drs_strict": share("pass_strict"),
        "checks": rows,
    }


def _check_parts(chk: Any) -> tuple[str, str, float]:
    if isinstance(chk, Mapping):
        return str(chk["metric"]), str(chk["op"]), float(chk["threshold"])
    return str(chk.metric), str(chk.op), float(chk.threshold)


# -- the metrics a project names -----------------------------------------------------------
def _safety(s: Scored) -> dict[str, Any] | None:
    f = s.settings.safety_field
    if not f:
        return None
    rows = s.field_rows(f)
    if not len(rows):
        return None
    return M.safety(rows["gold"].tolist(), rows["pred"].tolist(), **s.boot_args(rows))


@metric("safety_recall")
def _safety_recall(s: Scored) -> dict[str, Any]:
    r = _safety(s)
    return {"value": r["safety_recall"] if r else None, **({"counts": r["counts"]} if r else {})}


@metric("false_alarm_share")
def _false_alarm_share(s: Scored) -> dict[str, Any]:
    r = _safety(s)
    if r is None:
        return {"value": None}
    return {"value": r["false_alarm_share"], "regime": r["regime"], "counts": r["counts"]}


def perception_pairs(s: Scored) -> pd.DataFrame | None:
    """CRG's rows: each entity's action decision beside its safety decision (columns
    ``correct_a``, ``correct_s``, the action's ``gold``, the design columns); ``None``
    without ``benchmark.action_field`` and ``safety_field``. Table 22 reads the same rows."""
    a, sf = s.settings.action_field, s.settings.safety_field
    if not a or not sf:
        return None
    act = s.field_rows(a)[["item_id", "entity", "gold", "correct", "parent", "stratum"]]
    saf = s.field_rows(sf)[["item_id", "entity", "correct"]]
    return act.merge(saf, on=["item_id", "entity"], suffixes=("_a", "_s"))


@metric("crg")
def _crg(s: Scored) -> dict[str, Any]:
    j = perception_pairs(s)
    if j is None:
        return {"value": None, "note": "needs benchmark.action_field and safety_field"}
    if not len(j):
        return {"value": None}
    ci = crg(j["correct_a"].astype(bool), j["correct_s"].astype(bool), **s.boot_args(j))
    return {"value": ci, "perceived": int(j["correct_a"].sum())}


@metric("dwa")
def _dwa(s: Scored) -> dict[str, Any]:
    rows = s.primary_rows()
    return {"value": M.accuracy(rows["credit"], **s.boot_args(rows)) if len(rows) else None}


@metric("drs", needs=DRS_NEEDS)
def _drs(s: Scored, results: Mapping[str, Any]) -> dict[str, Any]:
    """The project's ``[benchmark.checks]`` on the headline values computed before it (its
    needs and the other listed metrics); a check naming a metric absent there fails."""
    out = drs({k: headline(v) for k, v in results.items()}, s.settings.checks)
    out["value"] = out["drs"]
    return out
