"""Reliability data from the store's ``annotations`` table, compared with the field's type.

Top-level fields: one unit per item, one column per annotator. Entity subfields
(``workers.action``): entities are aligned with ``EntityList.align`` (by key, or box IoU)
against the first annotator's list, so each aligned worker decision is one unit
(``item:entity``) — the same alignment ``EntityList.decisions`` uses.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select

from truthline.fields import EntityList, FieldType
from truthline.project import Project
from truthline.stats._ratings import AgreementError, Ratings, as_ratings
from truthline.store import Store, tables
from truthline.vocab import Arm


def _rows(store: Store, project: str, head: str, arm: str | None, tier: int | None):
    a, it = tables.annotations, tables.items
    q = (
        select(a.c.id, a.c.item_id, a.c.annotator, a.c.value, it.c.key, it.c.parent)
        .join(it, it.c.id == a.c.item_id)
        .where(a.c.project == project, a.c.field_path == head, a.c.skipped.is_(False))
        .where(a.c.deleted_at.is_(None))  # deleted at the source: history, not a rating
        .order_by(a.c.item_id, a.c.annotator, a.c.id)
    )
    if arm:
        q = q.where(a.c.arm == arm)
    if tier is not None:
        q = q.where(a.c.tier == tier)
    with store.begin() as conn:
        return conn.execute(q).mappings().all()


def ratings_from_store(
    store: Store,
    project: Project,
    field_path: str,
    *,
    arm: str | None = None,
    tier: int | None = None,
) -> tuple[Ratings, FieldType]:
    """Units x annotators for one field (``scene_type``, ``workers.action``) of a project."""
    clean = re.sub(r"\[[^\]]*\]", "", field_path)
    try:
        ft = project.field(clean)
    except KeyError as exc:
        known = ", ".join(project.leaf_fields())
        raise AgreementError(f"{exc.args[0]}; fields: {known}") from None
    if ft.level is None:
        raise AgreementError(
            f"field {clean!r} ({ft.name}) has no agreement level; pick one of its subfields"
        )
    if arm is not None and arm not in {a.value for a in Arm}:
        # checked before the query: a typo (``blnd``) matched no rows and read as "pull first"
        known = ", ".join(a.value for a in Arm)
        raise AgreementError(f"unknown arm {arm!r}; arms: {known}")
    head, _, sub = clean.partition(".")
    rows = _rows(store, project.name, head, arm, tier)
    if not rows:
        where = ", ".join(
            x
            for x in (f"arm {arm}" if arm else "", f"tier {tier}" if tier is not None else "")
            if x
        )
        raise AgreementError(
            f"no annotations of {head!r} in project {project.name!r}"
            + (f" ({where})" if where else "")
            + "; pull annotations first (truthline annotate pull)"
        )
    latest: dict[tuple[int, str], Any] = {}
    keys: dict[int, tuple[str, Any]] = {}
    for r in rows:
        latest[(r["item_id"], r["annotator"])] = r["value"]
        keys[r["item_id"]] = (r["key"], r["parent"])
    annotators = sorted({a for _, a in latest})
    cells: dict[tuple[Any, str], Any] = {}
    unit_parent: dict[Any, Any] = {}
    if not sub:
        for (item, ann), v in latest.items():
            cells[(keys[item][0], ann)] = v
            unit_parent[keys[item][0]] = keys[item][1]
    else:
        el = project.field_types[head]
        assert isinstance(el, EntityList)
        by_item: dict[int, dict[str, list]] = {}
        for (item, ann), v in latest.items():
            by_item.setdefault(item, {})[ann] = v or []
        for item, per in by_item.items():
            ikey, parent = keys[item]
            anns = sorted(per)
            anchor = per[anns[0]]
            for k, first in enumerate(anchor):
                u = f"{ikey}[{el.entity_id(first, k)}]"
                cells[(u, anns[0])] = first.get(sub)
                unit_parent[u] = parent
            for ann in anns[1:]:
                for i, j in el.align(anchor, per[ann]):
                    if j is None:
                        continue
                    ent = per[ann][j]
                    u = (
                        f"{ikey}[{el.entity_id(anchor[i], i)}]"
                        if i is not None
                        else f"{ikey}[{ann}:{el.entity_id(ent, j)}]"
                    )
                    cells[(u, ann)] = ent.get(sub)
                    unit_parent[u] = parent
    units = list(dict.fromkeys(u for u, _ in cells))
    grid = [[cells.get((u, a)) for a in annotators] for u in units]
    level = ft.level
    cats = ft.categories() if level in ("nominal", "ordinal") else None
    r = as_ratings(grid, categories=cats, units=units, raters=annotators, level=level)
    r.meta.update(
        {
            "project": project.name,
            "field": clean,
            "arm": arm,
            "tier": tier,
            "level": level,
            "parents": [unit_parent.get(u) for u in units],
        }
    )
    tol = getattr(getattr(ft, "spec", None), "tolerance", None)
    if level in ("interval", "ratio") and tol:
        r.meta["tolerance"] = float(tol)  # the kappa family agrees within it (METRICS §1)
    return r, ft
