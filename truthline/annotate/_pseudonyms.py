"""Pseudonyms for tier-1 annotators on review tasks ("annotator A", "annotator B", ...).

A review task shows every tier-1 annotation of its item to the adjudicator. Labelled with
the annotators' emails, the adjudicator would know whose work they judge (and could favour
a colleague, or remember who is usually right); a neutral, stable name per annotator keeps
adjudication blind to identity while still telling the annotations apart. The mapping is
kept in the store (``annotator_pseudonyms``), never in Label Studio, so results stay
attributable. A name, once given, never changes: later pushes reuse it and new annotators
get the next free letter.
"""

from __future__ import annotations

from collections.abc import Iterable
from string import ascii_uppercase

from sqlalchemy import select

from truthline.store import Store, now, tables

PREFIX = "annotator "


def pseudonym_name(index: int) -> str:
    """The ``index``-th pseudonym: A..Z, then AA, AB, ... (spreadsheet columns)."""
    letters = ""
    n = index + 1
    while n:
        n, r = divmod(n - 1, 26)
        letters = ascii_uppercase[r] + letters
    return PREFIX + letters


def pseudonyms(store: Store, project: str, annotators: Iterable[str]) -> dict[str, str]:
    """Annotator -> pseudonym for ``annotators`` in ``project``; new ones are given the next
    free names (in sorted order, so a push is reproducible) and recorded."""
    ps = tables.annotator_pseudonyms
    wanted = sorted(set(annotators))
    with store.begin() as conn:
        have = {
            r.annotator: r.pseudonym
            for r in conn.execute(
                select(ps.c.annotator, ps.c.pseudonym).where(ps.c.project == project)
            )
        }
        taken = set(have.values())
        rows = []
        k = 0
        for who in wanted:
            if who in have:
                continue
            while pseudonym_name(k) in taken:
                k += 1
            name = pseudonym_name(k)
            taken.add(name)
            have[who] = name
            rows.append(
                {"project": project, "annotator": who, "pseudonym": name, "created_at": now()}
            )
        if rows:
            conn.execute(ps.insert(), rows)
    return {w: have[w] for w in wanted}


def real_names(store: Store, project: str) -> dict[str, str]:
    """Pseudonym -> annotator for ``project`` (what the store keeps, for the lead)."""
    ps = tables.annotator_pseudonyms
    with store.begin() as conn:
        return {
            r.pseudonym: r.annotator
            for r in conn.execute(
                select(ps.c.annotator, ps.c.pseudonym).where(ps.c.project == project)
            )
        }
