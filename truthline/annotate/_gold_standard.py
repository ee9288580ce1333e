"""Gold-standard items: known answers mixed into tier-1 queues to score each annotator.

Agreement between annotators says how consistent a team is, not whether it is right; items
whose answers are known (an expert's review, or a table of reference answers) measure that
directly, as CVAT's honeypots do. ``[audit] gold_standard_rate`` declares the share of each
blind and anchored queue made of them; push mixes them in like any other task (annotators
are not told which they are: the marking lives only in the store's ``gold_standard``), and
each annotator's accuracy on them is reported beside the audit's exclusion signals, with a
Wilson interval (``truthline.audit._gold_standard``). It is a per-annotator figure, not an
exclusion signal.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import select

from truthline.errors import TruthlineError
from truthline.store import Store, now, tables


def set_known_answers(
    store: Store, project: Any, answers: Mapping[int, Mapping[str, Any]], source: str
) -> int:
    """Record known answers (item id -> {field: value}, normalized by the field's type);
    an answer given again replaces the earlier one. How many were written."""
    g = tables.gold_standard
    rows = []
    for item_id, vals in answers.items():
        for name, value in vals.items():
            ft = project.field_types.get(name)
            if ft is None:
                raise TruthlineError(
                    f"gold-standard answer for field {name!r}: project {project.name!r} has "
                    f"no such field (fields: {', '.join(project.field_types)})"
                )
            rows.append(
                {
                    "project": project.name,
                    "item_id": int(item_id),
                    "field_path": name,
                    "value": ft.normalize(value),
                    "source": source,
                    "created_at": now(),
                }
            )
    with store.begin() as conn:
        for r in rows:
            conn.execute(
                g.delete().where(
                    g.c.project == r["project"],
                    g.c.item_id == r["item_id"],
                    g.c.field_path == r["field_path"],
                )
            )
        if rows:
            conn.execute(g.insert(), rows)
    return len(rows)


def answers_from_table(store: Store, project: Any, path: Path) -> int:
    """Known answers from a CSV with columns ``item`` (the item key), ``field`` and
    ``value`` (JSON, or plain text); every row checked before any is written."""
    keys = {r["key"]: int(r["id"]) for r in store.items(project.name)}
    answers: dict[int, dict[str, Any]] = {}
    with Path(path).open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = {"item", "field", "value"} - set(reader.fieldnames or [])
        if missing:
            raise TruthlineError(
                f"{path}: a gold-standard table needs the columns item, field, value "
                f"(missing: {', '.join(sorted(missing))})"
            )
        for line, row in enumerate(reader, start=2):
            item = keys.get(row["item"])
            if item is None:
                raise TruthlineError(
                    f"{path} line {line}: item {row['item']!r} is not an item of project "
                    f"{project.name!r}; no answer was recorded"
                )
            text = (row["value"] or "").strip()
            try:
                value = json.loads(text) if text else None
            except json.JSONDecodeError:
                value = text
            answers.setdefault(item, {})[row["field"]] = value
    return set_known_answers(store, project, answers, "table")


def answers_from_experts(store: Store, project: Any) -> int:
    """Known answers from tier-2 (expert) annotations: each item an expert answered, every
    field the expert gave (the latest annotation of a field wins). How many were written."""
    a = tables.annotations
    with store.begin() as conn:
        rows = conn.execute(
            select(a.c.item_id, a.c.field_path, a.c.value)
            .where(
                a.c.project == project.name,
                a.c.tier == 2,
                a.c.skipped.is_(False),
                a.c.deleted_at.is_(None),
                a.c.value.is_not(None),
            )
            .order_by(a.c.annotated_at, a.c.id)
        ).all()
    answers: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r.value is not None:
            answers.setdefault(int(r.item_id), {})[r.field_path] = r.value
    return set_known_answers(store, project, answers, "expert")


def known_answers(store: Store, project: str) -> dict[int, dict[str, Any]]:
    g = tables.gold_standard
    out: dict[int, dict[str, Any]] = {}
    with store.begin() as conn:
        for r in conn.execute(
            select(g.c.item_id, g.c.field_path, g.c.value).where(g.c.project == project)
        ):
            out.setdefault(int(r.item_id), {})[r.field_path] = r.value
    return out


def mix_in(queue: list[int], gold: set[int], rate: float, seed: int) -> list[int]:
    """``queue`` with gold-standard items added so they make up ``rate`` of it (rounded,
    at most every gold item); the added ones are drawn with ``seed``, the result sorted."""
    if rate <= 0 or not gold:
        return sorted(queue)
    have = set(queue)
    regular = len(have - gold)
    want = round(rate * regular / (1 - rate))
    need = max(0, want - len(have & gold))
    pool = sorted(gold - have)
    rng = np.random.default_rng(seed)
    add = [pool[k] for k in rng.permutation(len(pool))[:need]] if pool and need else []
    return sorted(have | set(add))
