"""Arm assignment (blind vs anchored): random, counterbalanced within strata, seed recorded.

Items are grouped by the project's strata columns; each group is shuffled with the seed and
the first ``round(n * split)`` (with the rounding remainder carried across groups, so the
overall share is exact) go to the anchored arm. Assignments are permanent: a rerun only
assigns items that have none yet.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sqlalchemy import select

from truthline.store import Store, now, tables


def assign_arms(
    store: Store, project: Any, *, split: float | None = None, seed: int | None = None
) -> dict[int, str]:
    """Item id -> arm for every item of the project, assigning new items."""
    split = project.audit.arm_split if split is None else split
    seed = project.audit.seed if seed is None else seed
    if not 0 <= split <= 1:
        from truthline.errors import TruthlineError

        raise TruthlineError(f"--split must be between 0 and 1, got {split}")
    t = tables.arm_assignments
    with store.begin() as conn:
        have = {
            r.item_id: r.arm
            for r in conn.execute(select(t.c.item_id, t.c.arm).where(t.c.project == project.name))
        }
    it = tables.items
    with store.begin() as conn:  # id and strata only: not every item's every column
        rows = conn.execute(select(it.c.id, it.c.meta).where(it.c.project == project.name))
        items = [{"id": r.id, "meta": r.meta} for r in rows if r.id not in have]
    if not items:
        return have
    groups: dict[tuple, list[int]] = {}
    for r in items:
        key = tuple(str((r["meta"] or {}).get(s, "")) for s in project.strata)
        groups.setdefault(key, []).append(r["id"])
    rng = np.random.default_rng(seed)
    carry = 0.0
    new: dict[int, str] = {}
    for key in sorted(groups):
        ids = sorted(groups[key])
        order = rng.permutation(len(ids))
        exact = len(ids) * split + carry
        k = min(len(ids), max(0, math.floor(exact + 0.5)))
        carry = exact - k
        for rank, idx in enumerate(order):
            new[ids[idx]] = "anchored" if rank < k else "blind"
    ts = now()
    with store.begin() as conn:
        conn.execute(
            t.insert(),
            [
                {
                    "project": project.name,
                    "item_id": i,
                    "arm": arm,
                    "seed": seed,
                    "weight": 1.0,
                    "created_at": ts,
                }
                for i, arm in new.items()
            ],
        )
    return have | new
