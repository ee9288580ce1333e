"""Gold as the benchmark sees it: decision-level values with provenance, sliced by origin.

The slices are defined once, beside finalize, in ``truthline.audit._gold.in_slice``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from truthline.audit._gold import in_slice
from truthline.errors import TruthlineError
from truthline.store import Store, tables


@dataclass
class GoldItem:
    item_id: int
    key: str
    parent: str | None
    meta: dict[str, Any]
    arm: str | None
    media: list[str]
    media_root: str
    sim_truth: Any
    values: dict[str, Any] = field(default_factory=dict)
    """Decision path -> gold value (``workers[P1].action``, ``worker_count``, ``workers``)."""
    provenance: dict[str, str] = field(default_factory=dict)


@dataclass
class Gold:
    project: str
    snapshot: str
    items: list[GoldItem]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for it in self.items:
            for p in it.provenance.values():
                out[p] = out.get(p, 0) + 1
        return out


def latest_snapshot(store: Store, project: str) -> str:
    with store.begin() as conn:
        row = conn.execute(
            select(tables.gold_snapshots.c.hash)
            .where(tables.gold_snapshots.c.project == project)
            .order_by(tables.gold_snapshots.c.created_at.desc())
        ).first()
    if row is None:
        raise TruthlineError(
            f"project {project!r} has no gold yet; finalize it with `truthline audit finalize` "
            "(or import gold) before running a benchmark"
        )
    return str(row[0])


def load_gold(store: Store, project: str, snapshot: str | None = None, slice_: str = "all") -> Gold:
    """Gold decisions of one snapshot (default: the latest), restricted to a provenance slice;
    items left without any decision are dropped."""
    snap = snapshot or latest_snapshot(store, project)
    t = tables
    with store.begin() as conn:
        if snapshot is not None:
            found = conn.execute(
                select(t.gold_snapshots.c.hash).where(
                    t.gold_snapshots.c.hash.like(f"{snapshot}%"),
                    t.gold_snapshots.c.project == project,
                )
            ).all()
            if len(found) != 1:
                raise TruthlineError(
                    f"gold snapshot {snapshot!r} of project {project!r}: "
                    + ("not found" if not found else "ambiguous prefix")
                )
            snap = str(found[0][0])
        arms = dict(
            conn.execute(
                select(t.arm_assignments.c.item_id, t.arm_assignments.c.arm).where(
                    t.arm_assignments.c.project == project
                )
            ).all()
        )
        rows = conn.execute(
            select(
                t.gold.c.item_id,
                t.gold.c.field_path,
                t.gold.c.value,
                t.gold.c.provenance,
                t.items.c.key,
                t.items.c.parent,
                t.items.c.meta,
                t.items.c.media,
                t.items.c.media_root,
                t.items.c.sim_truth,
            )
            .join(t.items, t.items.c.id == t.gold.c.item_id)
            .where(t.gold.c.snapshot == snap)
            .order_by(t.gold.c.item_id, t.gold.c.field_path)
        ).all()
    items: dict[int, GoldItem] = {}
    for r in rows:
        arm = arms.get(r.item_id)
        if not in_slice(slice_, r.provenance, arm):
            continue
        it = items.get(r.item_id)
        if it is None:
            it = items[r.item_id] = GoldItem(
                r.item_id,
                r.key,
                r.parent,
                dict(r.meta or {}),
                arm,
                list(r.media or []),
                r.media_root,
                r.sim_truth,
            )
        it.values[r.field_path] = r.value
        it.provenance[r.field_path] = r.provenance
    return Gold(project, snap, list(items.values()))
