"""Each tier-1 annotator's accuracy on gold-standard items (known answers, ``[audit]
gold_standard_rate``): reported beside the exclusion signals, with a Wilson interval.

Agreement says how consistent annotators are, not whether they are right; the known
answers of the store's ``gold_standard`` (recorded and mixed into the queues by
``truthline annotate``) say that directly. Not an exclusion signal: a low accuracy is a
reason to look, and the lead decides.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select

from truthline.store import Store, tables


@dataclass(frozen=True)
class GoldStandardAccuracy:
    """One annotator's answers on gold-standard items: field answers right out of scored."""

    annotator: str
    items: int
    scored: int
    correct: int
    accuracy: float
    low: float
    high: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _known(store: Store, project: str) -> dict[int, dict[str, Any]]:
    g = tables.gold_standard
    out: dict[int, dict[str, Any]] = {}
    with store.begin() as conn:
        for r in conn.execute(
            select(g.c.item_id, g.c.field_path, g.c.value).where(g.c.project == project)
        ):
            out.setdefault(int(r.item_id), {})[r.field_path] = r.value
    return out


def accuracy(store: Store, project: Any) -> dict[str, GoldStandardAccuracy]:
    """Each tier-1 annotator's accuracy on the gold-standard items they answered: every
    known field answer scored with the field type's ``agree`` (skips and deleted
    annotations left out), with a Wilson 95% interval."""
    from truthline.stats import proportion_ci

    known = _known(store, project.name)
    if not known:
        return {}
    a = tables.annotations
    with store.begin() as conn:
        rows = conn.execute(
            select(a.c.annotator, a.c.item_id, a.c.field_path, a.c.value).where(
                a.c.project == project.name,
                a.c.tier == 1,
                a.c.skipped.is_(False),
                a.c.deleted_at.is_(None),
                a.c.item_id.in_(list(known)),
            )
        ).all()
    tally: dict[str, list[int]] = {}
    items: dict[str, set[int]] = {}
    for r in rows:
        want = known[int(r.item_id)]
        if r.field_path not in want:
            continue
        ft = project.field_types[r.field_path]
        truth = want[r.field_path]
        ok = (r.value is None and truth is None) or (
            r.value is not None and truth is not None and bool(ft.agree(r.value, truth))
        )
        t = tally.setdefault(r.annotator, [0, 0])
        t[0] += int(ok)
        t[1] += 1
        items.setdefault(r.annotator, set()).add(int(r.item_id))
    out = {}
    for who in sorted(tally):
        correct, scored = tally[who]
        ci = proportion_ci(correct, scored)
        out[who] = GoldStandardAccuracy(
            who, len(items[who]), scored, correct, ci.point, ci.low, ci.high
        )
    return out


def exposure_violations(store: Store, project: str) -> int:
    """Blind labels that pull found exposed (``exposure_violations``): a warning, since
    their blindness is what the blind arm's numbers rest on."""
    v = tables.exposure_violations
    with store.begin() as conn:
        rows = conn.execute(
            select(v.c.source_id).where(v.c.project == project, v.c.source_id != "").distinct()
        ).all()
    return len(rows)
