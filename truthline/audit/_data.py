"""Load predictions, annotations and expert reviews into one decision table.

Why a table of *decisions*: every audit number (override, direction, correct-label rate,
kappa) is a count over single field decisions — a scalar field, or one subfield of one
entity such as ``workers[P1].action``. Entities are aligned with the field type's own
``EntityList.align`` against one frame per item (the prediction, else the expert), so the
prefill ``v``, the annotator ``h`` and the expert ``e`` of a decision talk about the same
worker. All comparisons go through the leaf field type's ``agree``.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from sqlalchemy import select

from truthline.fields import EntityList, FieldType
from truthline.project import Project
from truthline.store import Store, tables

_INDEX = re.compile(r"\[[^\]]*\]")

REVIEW_ARMS = ("review", "adjudication")
"""Tier-2 arms: ``review`` = expert review (reference ``e``), ``adjudication`` = resolution."""


@lru_cache(maxsize=65536)
def leaf_of(path: str) -> str:
    """``workers.action`` for ``workers[P1].action``."""
    return _INDEX.sub("", path)


def flatten(ft: FieldType, value: Any, frame: Any = None) -> dict[str, Any]:
    """Decision paths of one top-level value, entities named by the ``frame`` they align to.

    Scalar fields give ``{name: value}``. Entity lists give ``{workers[P1].action: ...}``
    (id = key value, else the index of the aligned frame entity; unmatched entities get
    ``+<own id>``) plus the membership ``{workers: [ids]}``.
    """
    if not isinstance(ft, EntityList):
        return {ft.path: value}
    if value is None:
        return {}
    ents: list[dict[str, Any]] = value
    if ft.spec.key:
        pairs: list[tuple[int | None, int | None]] = [(i, None) for i in range(len(ents))]
        ref: list[dict[str, Any]] = ents
    else:
        ref = frame if isinstance(frame, list) else ents
        pairs = ft.align(ents, ref)
    out: dict[str, Any] = {}
    ids: list[str] = []
    for i, j in pairs:
        if i is None:
            continue
        ent = ents[i]
        if ft.spec.key or ref is ents:
            eid = ft.entity_id(ent, i)
        elif j is None:
            eid = f"+{ft.entity_id(ent, i)}"
        else:
            eid = ft.entity_id(ref[j], j)
        ids.append(eid)
        for name in ft.subfields:
            if name == ft.spec.key:
                continue
            out[f"{ft.path}[{eid}].{name}"] = ent.get(name)
    out[ft.path] = sorted(ids)
    return out


def flatten_values(project: Project, values: dict[str, Any], frame: dict[str, Any]) -> dict:
    """Flatten every top-level field of one annotation/prediction (``frame`` per field)."""
    out: dict[str, Any] = {}
    for name, val in values.items():
        ft = project.field_types.get(name)
        if ft is None:
            continue
        out.update(flatten(ft, val, frame.get(name)))
    return out


@dataclass
class Annotation:
    """One tier-1 or tier-2 annotation (all its fields), flattened to decisions."""

    source_id: str
    item: int
    annotator: str
    arm: str
    tier: int
    lead_time: float | None
    values: dict[str, Any]
    skipped: set[str] = field(default_factory=set)
    shown_prediction: int | None = None
    flagged: bool = False
    n_fields: int = 0
    """Top-level fields answered (skipped ones not counted)."""


@dataclass
class AuditData:
    """Everything the audit reads, flattened: items, ``v``, ``e`` and tier-1 decisions."""

    project: Project
    fields: list[str]
    item_ids: list[int]
    item_index: dict[int, int]
    clusters: list[str]
    item_keys: dict[int, str]
    model_version: str | None
    pred: dict[int, dict[str, Any]]
    pred_id: dict[int, int]
    expert: dict[int, dict[str, Any]]
    expert_annotator: dict[int, str]
    adjudicated: dict[int, dict[str, Any]]
    annotations: list[Annotation]
    exclusions: dict[str, str]
    arms: dict[int, str]
    review_weights: dict[int, float]
    # decision columns (tier-1 only)
    d: dict[str, np.ndarray] = field(default_factory=dict)
    ft_cache: dict[str, FieldType] = field(default_factory=dict)

    @property
    def annotators(self) -> list[str]:
        return sorted({a.annotator for a in self.annotations if a.tier == 1})


def audited_fields(project: Project) -> list[str]:
    """Leaf fields the audit reports on: the project's list, else every comparable leaf."""
    if project.audit.fields:
        for f in project.audit.fields:
            project.field(f)  # raises KeyError naming the field
        return list(project.audit.fields)
    out = []
    for path, ft in project.leaf_fields().items():
        if ft.level is None or ft.name == "text":
            continue
        parent = path.split(".")[0]
        pft = project.field_types[parent]
        if isinstance(pft, EntityList) and path.split(".")[-1] == pft.spec.key:
            continue
        out.append(path)
    return out


def _hashable(x: Any) -> Any:
    if isinstance(x, list | tuple):
        return tuple(_hashable(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in x.items()))
    return x


def _agree(ft: FieldType, x: Any, y: Any) -> float:
    if x is None or y is None:
        return np.nan
    return 1.0 if ft.agree(x, y) else 0.0


def load(store: Store, project: Project, *, model_version: str | None = None) -> AuditData:
    """Read the project's rows from the store and build the decision table."""
    t = tables
    name = project.name
    with store.begin() as conn:
        items = conn.execute(
            select(t.items.c.id, t.items.c.key, t.items.c.parent)
            .where(t.items.c.project == name)
            .order_by(t.items.c.id)
        ).all()
        preds = conn.execute(
            select(
                t.predictions.c.id,
                t.predictions.c.item_id,
                t.predictions.c.model_version,
                t.predictions.c["values"],
            ).where(t.predictions.c.project == name)
        ).all()
        anns = conn.execute(
            select(
                t.annotations.c.source_id,
                t.annotations.c.item_id,
                t.annotations.c.field_path,
                t.annotations.c.annotator,
                t.annotations.c.arm,
                t.annotations.c.tier,
                t.annotations.c.value,
                t.annotations.c.skipped,
                t.annotations.c.lead_time,
                t.annotations.c.shown_prediction_id,
                t.annotations.c.flagged,
            )
            .where(t.annotations.c.project == name, t.annotations.c.deleted_at.is_(None))
            .order_by(t.annotations.c.id)
        ).all()
        excl = conn.execute(
            select(t.exclusions.c.annotator, t.exclusions.c.reason)
            .where(t.exclusions.c.project == name, t.exclusions.c.active.is_(True))
            .order_by(t.exclusions.c.decided_at)
        ).all()
        arms = dict(
            conn.execute(
                select(t.arm_assignments.c.item_id, t.arm_assignments.c.arm).where(
                    t.arm_assignments.c.project == name
                )
            ).all()
        )
        weights = dict(
            conn.execute(
                select(t.audit_queue.c.item_id, t.audit_queue.c.weight).where(
                    t.audit_queue.c.project == name,
                    t.audit_queue.c.kind == "expert_review",
                    t.audit_queue.c.selected.is_(True),
                )
            ).all()
        )

    # which prediction is v: the version shown to anchored annotators, else the most common
    if model_version is not None and not any(p.model_version == model_version for p in preds):
        from truthline.errors import TruthlineError

        have = sorted({str(p.model_version) for p in preds})
        raise TruthlineError(
            f"no predictions of model version {model_version!r} in project {name!r} "
            f"(have: {', '.join(have) or 'none'})"
        )
    if model_version is None:
        shown = Counter(r.shown_prediction_id for r in anns if r.shown_prediction_id)
        by_id = {p.id: p.model_version for p in preds}
        versions = Counter(by_id[i] for i in shown.elements() if i in by_id)
        if not versions:
            versions = Counter(p.model_version for p in preds)
        model_version = versions.most_common(1)[0][0] if versions else None
    raw_pred = {p.item_id: p.values for p in preds if p.model_version == model_version}
    pred_id = {p.item_id: p.id for p in preds if p.model_version == model_version}

    # group annotation rows into annotations
    grouped: dict[str, dict[str, Any]] = {}
    for r in anns:
        g = grouped.setdefault(
            r.source_id,
            {
                "item": r.item_id,
                "annotator": r.annotator,
                "arm": r.arm,
                "tier": int(r.tier),
                "lead": r.lead_time,
                "values": {},
                "skipped": set(),
                "shown": r.shown_prediction_id,
                "flagged": False,
            },
        )
        g["flagged"] = g["flagged"] or bool(r.flagged)
        if r.skipped:
            g["skipped"].add(r.field_path)
        else:
            g["values"][r.field_path] = r.value
        if g["lead"] is None and r.lead_time is not None:
            g["lead"] = r.lead_time

    # frames for entity alignment: the prediction, else the first tier-2 value
    frames: dict[int, dict[str, Any]] = defaultdict(dict)
    for item, vals in raw_pred.items():
        frames[item].update(vals)
    for g in grouped.values():
        if g["tier"] == 2:
            for k, v in g["values"].items():
                frames[g["item"]].setdefault(k, v)

    pred = {i: flatten_values(project, v, frames[i]) for i, v in raw_pred.items()}
    expert: dict[int, dict[str, Any]] = {}
    expert_ann: dict[int, str] = {}
    adjud: dict[int, dict[str, Any]] = {}
    annotations: list[Annotation] = []
    for sid, g in grouped.items():
        flat = flatten_values(project, g["values"], frames[g["item"]])
        a = Annotation(
            sid,
            g["item"],
            g["annotator"],
            g["arm"],
            g["tier"],
            g["lead"],
            flat,
            g["skipped"],
            g["shown"],
            g["flagged"],
            len(g["values"]),
        )
        annotations.append(a)
        if a.tier == 2 and a.arm == "adjudication":
            adjud.setdefault(a.item, {}).update(flat)
        elif a.tier == 2 and a.item not in expert:
            expert[a.item] = flat
            expert_ann[a.item] = a.annotator

    item_ids = [r.id for r in items]
    data = AuditData(
        project=project,
        fields=audited_fields(project),
        item_ids=item_ids,
        item_index={i: k for k, i in enumerate(item_ids)},
        clusters=[str(r.parent) if r.parent else f"item:{r.id}" for r in items],
        item_keys={r.id: r.key for r in items},
        model_version=model_version,
        pred=pred,
        pred_id=pred_id,
        expert=expert,
        expert_annotator=expert_ann,
        adjudicated=adjud,
        annotations=annotations,
        exclusions={a: r for a, r in excl},
        arms={int(k): v for k, v in arms.items()},
        review_weights={int(k): float(w) for k, w in weights.items()},
    )
    data.d = _decisions(data)
    return data


def _decisions(data: AuditData) -> dict[str, np.ndarray]:
    """Tier-1 decisions on audited fields as column arrays (NaN = not comparable)."""
    project = data.project
    audited = set(data.fields)
    fts = {f: project.field(f) for f in audited}
    cols: dict[str, list[Any]] = defaultdict(list)
    for ann_idx, a in enumerate(data.annotations):
        if a.tier != 1 or a.arm in REVIEW_ARMS:
            continue
        v_all = data.pred.get(a.item, {})
        e_all = data.expert.get(a.item, {})
        for path, h in a.values.items():
            leaf = leaf_of(path)
            if leaf not in audited or h is None:
                continue
            ft = fts[leaf]
            v = v_all.get(path)
            e = e_all.get(path)
            cols["ann"].append(ann_idx)
            cols["unit"].append(data.item_index[a.item])
            cols["item"].append(a.item)
            cols["path"].append(path)
            cols["field"].append(leaf)
            cols["annotator"].append(a.annotator)
            cols["arm"].append(a.arm)
            cols["hv"].append(_agree(ft, h, v))
            cols["he"].append(_agree(ft, h, e))
            cols["ve"].append(_agree(ft, v, e))
            cols["h"].append(h)
            cols["v"].append(v)
            cols["e"].append(e)
    # category codes per (field, value) for kappa, computed once
    cats: dict[Any, int] = {}
    for src, dst in (("v", "vc"), ("h", "hc")):
        cols[dst] = [
            -1 if x is None else cats.setdefault((f, _hashable(x)), len(cats))
            for f, x in zip(cols["field"], cols[src], strict=True)
        ]
    out: dict[str, np.ndarray] = {}
    for k in ("ann", "unit", "item", "vc", "hc"):
        out[k] = np.asarray(cols[k], dtype=np.int64)
    for k in ("hv", "he", "ve"):
        out[k] = np.asarray(cols[k], dtype=float)
    for k in ("path", "field", "annotator", "arm", "h", "v", "e"):
        arr = np.empty(len(cols[k]), dtype=object)
        arr[:] = cols[k]
        out[k] = arr
    return out
