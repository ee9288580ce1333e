"""Audit actions that write: exclusion decisions, gold snapshots, the expert-review queue;
and two read-only guards: self-reference and the sample-size planner."""

from __future__ import annotations

import getpass
import math
import random
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import func, select

from truthline.audit._data import load
from truthline.audit._gold import GoldPolicy, GoldResult, decide, resolve_snapshot, write
from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.store import Store, now, tables


# -- exclusion ---------------------------------------------------------------------------------
def exclude_annotator(
    store: Store,
    project: Project,
    annotator: str,
    reason: str,
    *,
    decided_by: str | None = None,
    undo: bool = False,
) -> dict[str, Any]:
    """Record (or withdraw) the decision to exclude an annotator: who, when, why."""
    t = tables
    if not reason.strip() and not undo:
        raise TruthlineError("an exclusion needs a reason (--reason TEXT)")
    with store.begin() as conn:
        known = {
            r[0]
            for r in conn.execute(
                select(t.annotations.c.annotator)
                .where(
                    t.annotations.c.project == project.name,
                    t.annotations.c.deleted_at.is_(None),
                )
                .distinct()
            )
        }
        if annotator not in known:
            raise TruthlineError(
                f"no annotator {annotator!r} in project {project.name!r} "
                f"(have: {', '.join(sorted(known)) or 'none'})"
            )
        who = decided_by or getpass.getuser()
        ts = now()
        if undo:
            n = conn.execute(
                t.exclusions.update()
                .where(
                    t.exclusions.c.project == project.name,
                    t.exclusions.c.annotator == annotator,
                    t.exclusions.c.active.is_(True),
                )
                .values(active=False)
            ).rowcount
            return {"annotator": annotator, "withdrawn": int(n or 0), "by": who}
        items = conn.execute(
            select(func.count(func.distinct(t.annotations.c.item_id))).where(
                t.annotations.c.project == project.name,
                t.annotations.c.annotator == annotator,
                t.annotations.c.deleted_at.is_(None),
            )
        ).scalar_one()
        conn.execute(
            t.exclusions.insert().values(
                project=project.name,
                annotator=annotator,
                reason=reason,
                decided_by=who,
                active=True,
                decided_at=ts,
            )
        )
    return {
        "annotator": annotator,
        "reason": reason,
        "decided_by": who,
        "decided_at": ts.isoformat(),
        "items": int(items),
    }


def exclusions(store: Store, project: str) -> list[dict[str, Any]]:
    t = tables
    with store.begin() as conn:
        rows = conn.execute(
            select(t.exclusions)
            .where(t.exclusions.c.project == project)
            .order_by(t.exclusions.c.decided_at)
        )
        return [dict(r._mapping) for r in rows]


# -- finalize ---------------------------------------------------------------------------------
def finalize(
    store: Store,
    project: Project,
    *,
    policy: GoldPolicy | None = None,
    model_version: str | None = None,
) -> GoldResult:
    """Write a gold snapshot with provenance; rerunning on unchanged data gives the same hash."""
    data = load(store, project, model_version=model_version)
    if not data.annotations:
        raise TruthlineError(f"project {project.name!r} has no annotations to finalize")
    res = decide(data, dict(data.exclusions), policy)
    write(store, data, res)
    return res


def self_reference(
    store: Store, project: str, model_version: str, snapshot: str | None = None
) -> dict[str, Any]:
    """Warn when ``model_version`` is evaluated on gold it prefilled: the share of the
    snapshot's values that are its own retained prefills (``anchored_kept``)."""
    t = tables
    with store.begin() as conn:
        snapshot = resolve_snapshot(conn, project, snapshot)
        if snapshot is None:
            return {"snapshot": None, "model_version": model_version, "warning": None}
        rows = conn.execute(
            select(t.gold.c.provenance, t.gold.c.sources).where(t.gold.c.snapshot == snapshot)
        ).all()
    total = len(rows)
    own = sum(1 for p, s in rows if p == "anchored_kept" and f"vlm:{model_version}" in (s or []))
    share = own / total if total else 0.0
    warning = (
        f"model {model_version!r} is evaluated on gold it prefilled: {own} of {total} gold "
        f"values ({share:.1%}) are its own retained prefills; score it on the blind slice"
        if own
        else None
    )
    return {
        "snapshot": snapshot,
        "model_version": model_version,
        "own_values": own,
        "values": total,
        "share": share,
        "warning": warning,
    }


# -- risk-ordered expert review ------------------------------------------------------------------
@dataclass
class QueueItem:
    item: int
    key: str
    risk: float
    probability: float
    weight: float
    selected: bool


def review_queue(
    store: Store,
    project: Project,
    *,
    budget: int,
    seed: int = 0,
    floor: float = 0.05,
    write_queue: bool = True,
) -> list[QueueItem]:
    """Sample anchored items for expert review with probability proportional to their
    harmful-anchoring risk (kept prefills x the annotator/field's estimated chance that a
    kept prefill is wrong), never below ``floor`` x the uniform rate. Each sampled item
    carries weight 1/probability, which the audit uses so reported rates stay unbiased."""
    data = load(store, project)
    d = data.d
    # P(VLM wrong | kept) per (annotator, field), Beta(1, 1)-smoothed, from reviewed items
    kept_wrong: dict[tuple[str, str], list[float]] = defaultdict(lambda: [1.0, 2.0])
    for k in range(len(d["unit"])):
        if d["arm"][k] != "anchored" or d["hv"][k] != 1 or d["ve"][k] != d["ve"][k]:
            continue
        s = kept_wrong[(str(d["annotator"][k]), str(d["field"][k]))]
        s[0] += d["ve"][k] == 0
        s[1] += 1
    risk: dict[int, float] = defaultdict(float)
    for k in range(len(d["unit"])):
        item = int(d["item"][k])
        if d["arm"][k] != "anchored" or d["hv"][k] != 1 or item in data.expert:
            continue
        a, b = kept_wrong[(str(d["annotator"][k]), str(d["field"][k]))]
        risk[item] += a / b
    items = sorted(risk, key=lambda i: (-risk[i], data.item_keys[i]))
    if not items:
        return []
    total = sum(risk.values())
    uniform = min(1.0, budget / len(items))
    probs = {i: min(1.0, max(floor * uniform, budget * risk[i] / total)) for i in items}
    rng = random.Random(seed)
    out = []
    for i in items:
        sel = rng.random() < probs[i]
        out.append(QueueItem(i, data.item_keys[i], risk[i], probs[i], 1.0 / probs[i], sel))
    if write_queue:
        t = tables
        ts = now()
        with store.begin() as conn:
            conn.execute(
                t.audit_queue.delete().where(
                    t.audit_queue.c.project == project.name,
                    t.audit_queue.c.kind == "expert_review",
                    t.audit_queue.c.status == "open",
                )
            )
            rows = [
                dict(
                    project=project.name,
                    item_id=q.item,
                    kind="expert_review",
                    field_path="",
                    reason="risk-ordered expert review sample",
                    priority=q.risk,
                    probability=q.probability,
                    weight=q.weight,
                    selected=q.selected,
                    status="open",
                    created_at=ts,
                )
                for q in out
            ]
            conn.execute(t.audit_queue.insert(), rows)
    return out


def queue_rows(store: Store, project: str, kind: str | None = None) -> list[dict[str, Any]]:
    t = tables
    with store.begin() as conn:
        q = select(t.audit_queue).where(t.audit_queue.c.project == project)
        if kind:
            q = q.where(t.audit_queue.c.kind == kind)
        return [dict(r._mapping) for r in conn.execute(q.order_by(t.audit_queue.c.priority.desc()))]


# -- sample-size planner ---------------------------------------------------------------------------
@dataclass
class Plan:
    target: str
    rate: float
    half_width: float
    level: float
    decisions: int
    items: int
    design_effect: float
    note: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))


def plan_sample_size(
    *,
    rate: float,
    half_width: float,
    level: float = 0.95,
    decisions_per_item: float = 1.0,
    icc: float = 0.0,
    kappa_chance: float | None = None,
    target: str = "rate",
) -> Plan:
    """Items needed for a CI of +/- ``half_width`` on a rate (Wald, with a design effect
    1 + (m - 1) x ICC for m decisions per item). With ``kappa_chance`` (p_e) the target is a
    kappa whose observed agreement is ``rate``: SE(kappa) ~ SE(p_o) / (1 - p_e)."""
    if not 0 < rate < 1:
        raise TruthlineError(f"rate must be between 0 and 1, got {rate}")
    if not 0 < half_width < 1:
        raise TruthlineError(f"half-width must be between 0 and 1, got {half_width}")
    if not 0 < level < 1:
        raise TruthlineError(f"--level must be between 0 and 1 (e.g. 0.95), got {level}")
    if icc < 0 or icc > 1:
        raise TruthlineError(f"--icc must be between 0 and 1, got {icc}")
    z = _z(level)
    h = half_width * (1 - kappa_chance) if kappa_chance is not None else half_width
    n_dec = z * z * rate * (1 - rate) / (h * h)
    m = max(1.0, decisions_per_item)
    deff = 1 + (m - 1) * icc
    items = math.ceil(n_dec * deff / m)
    note = (
        f"{'kappa' if kappa_chance is not None else 'rate'} {rate:g} +/- {half_width:g} at "
        f"{level:.0%}: {math.ceil(n_dec)} decisions, {items} items "
        f"({m:g} decisions/item, design effect {deff:.2f})"
    )
    return Plan(target, rate, half_width, level, math.ceil(n_dec), items, deff, note)
