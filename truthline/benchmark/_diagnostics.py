"""Per-model metrics beyond accuracy (METRICS.md §6): tolerance scoring for numbers, set
matching for lists, the four-way read/ground decomposition, balanced aggregation.

Each is one ``@metric`` function over a ``Scored``; correctness itself always comes from
the field types (``agree``/``credit``, applied at scoring time), never re-derived here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import Scored, _targets, metric
from truthline.fields import EntityList, MultiChoice, Number


@metric("tolerance")
def _tolerance(s: Scored) -> dict[str, Any]:
    """Share of number decisions within the field's declared tolerance, per field with its
    tolerance, unit and mean absolute error over the answers given (missing = wrong)."""
    fields = _targets(s, (Number,))
    rows = s.decisions[s.decisions["field"].isin(fields)]
    if not len(rows):
        return {"value": None, "note": "no number target fields"}
    by_field: dict[str, Any] = {}
    for f in fields:
        r = s.field_rows(f)
        if not len(r):
            continue
        ft = s.project.field(f)
        given = [(float(p), float(g)) for p, g in zip(r["pred"], r["gold"], strict=True) if _num(p)]
        by_field[f] = {
            "accuracy": M.accuracy(r["correct"].astype(float), **s.boot_args(r)),
            "tolerance": float(getattr(ft.spec, "tolerance", 0.0)),
            "unit": getattr(ft.spec, "unit", None),
            "mae": float(np.mean([abs(p - g) for p, g in given])) if given else None,
            "answered": len(given),
            "n": len(r),
        }
    return {
        "value": M.accuracy(rows["correct"].astype(float), **s.boot_args(rows)),
        "by_field": by_field,
    }


def _num(v: Any) -> bool:
    """A given number (pandas turns a missing prediction into NaN in numeric columns)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and not np.isnan(v)


@metric("set_match")
def _set_match(s: Scored) -> dict[str, Any]:
    """Set matching for lists. Multi-choice fields: exact set match (with mean Jaccard
    credit). Entity lists (e.g. a breaker directory): a gold row matches when every target
    subfield of its aligned predicted row agrees; rows align by key in any order, and extra
    predicted rows are not penalized. ``value``: share of matched sets and rows."""
    units: list[pd.DataFrame] = []
    by_field: dict[str, Any] = {}
    for f in _targets(s, (MultiChoice,)):
        if "." in f:  # a multi-choice subfield of an entity list: its rows cover it
            continue
        r = s.field_rows(f)
        if len(r):
            units.append(r[["item_id", "parent", "stratum", "correct"]])
            by_field[f] = {
                "exact": M.accuracy(r["correct"].astype(float), **s.boot_args(r)),
                "jaccard": float(r["credit"].mean()),
                "n": len(r),
            }
    lists = sorted(
        {
            t.split(".", 1)[0]
            for t in _targets(s)
            if "." in t and isinstance(s.project.field_types.get(t.split(".", 1)[0]), EntityList)
        }
    )
    d = s.decisions
    for name in lists:
        r = d[d["field"].astype(str).str.startswith(f"{name}.") & d["entity"].notna()]
        if not len(r):
            continue
        rowwise = (
            r.groupby(["item_id", "entity"], sort=False)
            .agg(
                correct=("correct", "all"),
                parent=("parent", "first"),
                stratum=("stratum", "first"),
            )
            .reset_index()
        )
        units.append(rowwise[["item_id", "parent", "stratum", "correct"]])
        ents = s.entities
        ents = ents[ents["list"] == name] if len(ents) and "list" in ents else ents.iloc[0:0]
        by_field[name] = {
            "rows_matched": M.accuracy(rowwise["correct"].astype(float), **s.boot_args(rowwise)),
            "gold_rows": len(rowwise),
            "extra_rows": int(ents["fp"].sum()) if len(ents) else 0,
            "unaligned_rows": int(ents["fn"].sum()) if len(ents) else 0,
        }
    if not units:
        return {"value": None, "note": "no list target fields", "by_field": {}}
    u = pd.concat(units, ignore_index=True)
    return {"value": M.accuracy(u["correct"].astype(float), **s.boot_args(u)), "by_field": by_field}


@metric("four_way")
def _four_way(s: Scored) -> dict[str, Any]:
    """Read+ground decomposition (C+G+, C+G-, C-G+, C-G-) over items answered on both the
    declared ``read_field`` and ``ground_field``; ``value`` is grounding accuracy given a
    correct reading, with a bootstrap CI."""
    rf, gf = s.settings.read_field, s.settings.ground_field
    if not rf or not gf:
        return {"value": None, "note": "needs [benchmark] read_field and ground_field"}
    cols = ["item_id", "entity", "correct", "parent", "stratum"]
    a = s.field_rows(rf)[cols].assign(entity=lambda x: x["entity"].fillna(""))
    b = s.field_rows(gf)[["item_id", "entity", "correct"]].assign(
        entity=lambda x: x["entity"].fillna("")
    )
    j = a.merge(b, on=["item_id", "entity"], suffixes=("_r", "_g"))
    if not len(j):
        return {"value": None, "note": "no item has both a reading and a grounding decision"}
    read, ground = j["correct_r"].astype(bool), j["correct_g"].astype(bool)
    out = M.four_way(read, ground)
    args = s.boot_args(j)
    out["value"] = M.ratio(read & ground, read, **args)
    out["read_accuracy"] = M.accuracy(read.astype(float), **args)
    out["ground_accuracy"] = M.accuracy(ground.astype(float), **args)
    out["both"] = M.accuracy((read & ground).astype(float), **args)
    return out


def balance_columns(s: Scored, rows: pd.DataFrame) -> tuple[list[Any] | None, list[Any] | None]:
    """Parents and item types of ``rows`` as the project's ``balance`` declares them."""
    decl = list(s.settings.balance)
    parents = None
    if "parent" in decl:
        parents = rows["parent"].fillna(rows["item_id"].astype(str)).astype(str).tolist()
    type_cols = [c for c in decl if c != "parent"]
    if len(type_cols) > 1:
        raise ValueError(
            f"[benchmark] balance takes 'parent' and at most one type column, got {decl}"
        )
    types = None
    if type_cols:
        col = type_cols[0]
        types = [str((m or {}).get(col, "")) for m in rows.get("meta", [None] * len(rows))]
    return parents, types


@metric("balanced")
def _balanced(s: Scored) -> dict[str, Any]:
    """Accuracy with balanced aggregation weights: each parent counts equally within its
    type and each type equally overall, as ``[benchmark] balance`` declares; beside it the
    plain (decision-weighted) accuracy on the same decisions."""
    if not s.settings.balance:
        return {"value": None, "note": 'declare [benchmark] balance = ["parent", "<type column>"]'}
    d = s.decisions
    if not len(d):
        return {"value": None}
    parents, types = balance_columns(s, d)
    w = M.balanced_weights(parents, types)
    args = s.boot_args(d)
    return {
        "value": M.accuracy(d["correct"].astype(float), weights=w, **args),
        "unweighted": M.accuracy(d["correct"].astype(float), **args),
        "balance": list(s.settings.balance),
        "parents": len(set(parents)) if parents else None,
        "types": sorted(set(types)) if types else None,
    }
