"""SIMULATED annotators, marked in the store (``annotations.simulated``).

The demo's annotators label through Label Studio as their own users, so their annotations
arrive with the same ``source`` as a real person's; without a mark of their own they were
shown beside real people as if they were people. Whoever plants them marks them here:
after a pull (``mark_simulated``, the demo), or before their annotations exist
(``register_simulated``, PhysAlign's simulate commands), and then every pull marks them as it
stores them (``mark_registered``). Every per-annotator table reads ``simulated_annotators``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import or_, select

from truthline.store import _tables as t
from truthline.store._store import now

MARK = "SIMULATED"
"""The word shown beside a SIMULATED annotator's name."""


def mark_simulated(store: Any, project: str, annotators: Iterable[str]) -> int:
    """Mark every annotation of ``annotators`` in ``project`` as made by a SIMULATED
    annotator; returns the rows newly marked. Idempotent: call it after each pull (pull
    inserts new annotations unmarked)."""
    who = sorted(set(annotators))
    if not who:
        return 0
    a = t.annotations
    with store.begin() as conn:
        res = conn.execute(
            a.update()
            .where(a.c.project == project, a.c.annotator.in_(who), a.c.simulated.is_(False))
            .values(simulated=True)
        )
    return int(res.rowcount or 0)


def register_simulated(store: Any, project: str, annotators: Iterable[str]) -> int:
    """Declare ``annotators`` of ``project`` SIMULATED before they annotate: every later
    pull marks what they submit, and what is already stored is marked now. Idempotent;
    returns the annotation rows newly marked."""
    who = sorted(set(annotators))
    if not who:
        return 0
    s = t.simulated_accounts
    with store.begin() as conn:
        have = {
            r[0]
            for r in conn.execute(
                select(s.c.annotator).where(s.c.project == project, s.c.annotator.in_(who))
            )
        }
        new = [w for w in who if w not in have]
        if new:
            ts = now()
            conn.execute(
                s.insert(), [{"project": project, "annotator": w, "created_at": ts} for w in new]
            )
    return mark_simulated(store, project, who)


def mark_registered(store: Any, project: str) -> int:
    """Mark the annotations of ``project``'s registered SIMULATED accounts (a pull calls it
    after storing what it read)."""
    s = t.simulated_accounts
    with store.begin() as conn:
        who = [r[0] for r in conn.execute(select(s.c.annotator).where(s.c.project == project))]
    return mark_simulated(store, project, who)


def simulated_annotators(store: Any, project: str) -> list[str]:
    """The annotators of ``project`` with any SIMULATED annotation (marked, or stored with
    source ``simulated``), sorted."""
    a = t.annotations
    with store.begin() as conn:
        rows = conn.execute(
            select(a.c.annotator)
            .where(a.c.project == project, or_(a.c.simulated.is_(True), a.c.source == "simulated"))
            .distinct()
        ).all()
    return sorted(r[0] for r in rows)


def shown_name(annotator: str, simulated: Iterable[str]) -> str:
    """``annotator`` as a table shows it: with `` (SIMULATED)`` when it is one."""
    return f"{annotator} ({MARK})" if annotator in set(simulated) else annotator
