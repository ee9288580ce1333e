"""Items withdrawn from a project's benchmark, each with its recorded reason.

A withdrawn item keeps its data, annotations and gold rows (nothing saved is lost); gold
loading leaves it out, so runs, releases and reports no longer score it, and reports count
what was withdrawn and why. RealityBench withdrew 29 ro_board frames for a board-texture
defect and excludes frames failing render sanity checks (App. D). Undoing a withdrawal marks
it inactive: the history stays.
"""

from __future__ import annotations

import getpass
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from truthline.errors import TruthlineError
from truthline.store import Store, now, tables


@dataclass(frozen=True)
class Withdrawal:
    """One active withdrawal: the item, why, who decided and when."""

    item_id: int
    key: str
    reason: str
    decided_by: str
    decided_at: datetime

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["decided_at"] = self.decided_at.isoformat()
        return d


def withdraw(
    store: Store,
    project: str,
    keys: Iterable[str],
    reason: str,
    *,
    decided_by: str | None = None,
    undo: bool = False,
) -> int:
    """Withdraw (or, with ``undo``, reinstate) the items of ``project`` named by ``keys``;
    returns how many changed. Unknown keys are an error naming them; withdrawing an item
    already withdrawn changes nothing (idempotent)."""
    t = tables
    keys = [str(k) for k in keys]
    if not undo and not reason.strip():
        raise TruthlineError("a withdrawal needs a reason (--reason TEXT)")
    ids = store.item_ids_by_key(project)
    unknown = [k for k in keys if k not in ids]
    if unknown:
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise TruthlineError(
            f"project {project!r} has no item(s) {', '.join(map(repr, unknown[:5]))}{more}; "
            "give item keys as `truthline items list` shows them"
        )
    who = decided_by or getpass.getuser()
    with store.begin() as conn:
        active = active_withdrawals(conn, project)
        if undo:
            gone = [ids[k] for k in keys if ids[k] in active]
            if gone:
                conn.execute(
                    t.withdrawals.update()
                    .where(
                        t.withdrawals.c.project == project,
                        t.withdrawals.c.item_id.in_(gone),
                        t.withdrawals.c.active.is_(True),
                    )
                    .values(active=False)
                )
            return len(gone)
        new = sorted({ids[k] for k in keys} - set(active))
        if new:
            ts = now()
            conn.execute(
                t.withdrawals.insert(),
                [
                    {
                        "project": project,
                        "item_id": i,
                        "reason": reason.strip(),
                        "decided_by": who,
                        "active": True,
                        "decided_at": ts,
                    }
                    for i in new
                ],
            )
        return len(new)


def active_withdrawals(conn: Connection, project: str) -> dict[int, str]:
    """Item id -> reason of every active withdrawal of ``project`` (the gold loader's filter)."""
    w = tables.withdrawals
    rows = conn.execute(
        select(w.c.item_id, w.c.reason)
        .where(w.c.project == project, w.c.active.is_(True))
        .order_by(w.c.decided_at, w.c.id)
    )
    return {int(r.item_id): str(r.reason) for r in rows}


def withdrawals(store: Store, project: str) -> list[Withdrawal]:
    """The active withdrawals of ``project``, oldest first."""
    t = tables
    with store.begin() as conn:
        rows = conn.execute(
            select(t.withdrawals, t.items.c.key)
            .join(t.items, t.items.c.id == t.withdrawals.c.item_id)
            .where(t.withdrawals.c.project == project, t.withdrawals.c.active.is_(True))
            .order_by(t.withdrawals.c.decided_at, t.withdrawals.c.id)
        ).all()
    return [
        Withdrawal(int(r.item_id), str(r.key), str(r.reason), str(r.decided_by), r.decided_at)
        for r in rows
    ]


def reason_counts(rows: Iterable[Withdrawal]) -> dict[str, int]:
    """Reason -> number of withdrawn items, most common first (what reports show)."""
    return dict(Counter(w.reason for w in rows).most_common())
