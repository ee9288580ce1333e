"""Load predictions, annotations and expert reviews into one decision table.

Why a table of *decisions*: every audit number (override, direction, correct-label rate,
kappa) is a count over single field decisions — a scalar field, or one subfield of one
entity such as ``workers[P1].action``. Entities are aligned with the field type's own
``EntityList.align`` against one frame per item (the prediction, else the expert), so the
prefill ``v``, the annotator ``h`` and the expert ``e`` of a decision talk about the same
worker. All comparisons go through the leaf field type's ``agree``.
"""

from __future__ import annotations

import json
import numbers
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from sqlalchemy import Text, func, select, type_coerce

from truthline.fields import EntityList, FieldType, Number
from truthline.project import ItemLayer, Project, in_layer, item_layer, layer_check
from truthline.stats import ToleranceWeights
from truthline.store import Store, tables
from truthline.vocab import REVIEW_ARMS as REVIEW_ARMS  # the tier-2 arms

_INDEX = re.compile(r"\[[^\]]*\]")


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
        return {ft.path: _small(value)}
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
    key, parent = ft.spec.key, ft.path
    names = [n for n in ft.subfields if n != key]  # looked up once per value, not per entity
    own = bool(key) or ref is ents
    for i, j in pairs:
        if i is None:
            continue
        ent = ents[i]
        if own:
            eid = ft.entity_id(ent, i)
        elif j is None:
            eid = f"+{ft.entity_id(ent, i)}"
        else:
            eid = ft.entity_id(ref[j], j)
        eid = _small(eid)
        ids.append(eid)
        for name in names:
            x = ent.get(name)
            out[_path(parent, eid, name)] = _intern(x) if type(x) is str and len(x) <= 64 else x
    out[parent] = sorted(ids)
    return out


_intern = sys.intern


@lru_cache(maxsize=1 << 16)
def _path(parent: str, eid: str, name: str) -> str:
    """One shared string per decision path (``workers[P1].action`` recurs on every item)."""
    return sys.intern(f"{parent}[{eid}].{name}")


def _small(x: Any) -> Any:
    """Short strings (labels, codes) shared instead of one copy per decision; JSON decoding
    makes a new string object for every occurrence."""
    return sys.intern(x) if isinstance(x, str) and len(x) <= 64 else x


def flatten_values(project: Project, values: dict[str, Any], frame: dict[str, Any]) -> dict:
    """Flatten every top-level field of one annotation/prediction (``frame`` per field)."""
    types = project.field_types  # a model attribute: looked up once, not once per field
    out: dict[str, Any] = {}
    for name, val in values.items():
        ft = types.get(name)
        if ft is None:
            continue
        if isinstance(ft, EntityList):
            out.update(flatten(ft, val, frame.get(name)))
        else:  # a scalar field: one decision, as ``flatten`` gives it
            out[ft.path] = _small(val)
    return out


_NO_SKIPS: frozenset[str] = frozenset()
"""Shared by every annotation that skipped nothing (most of them)."""


@dataclass(slots=True)
class Annotation:
    """One tier-1 or tier-2 annotation (all its fields), flattened to decisions."""

    source_id: str
    item: int
    annotator: str
    arm: str
    tier: int
    lead_time: float | None
    values: dict[str, Any]
    skipped: set[str] | frozenset[str] = field(default_factory=set)
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
    codes: CodeTable | None = None
    """What each kappa category code of ``d["vc"]``/``d["hc"]`` stands for."""
    ft_cache: dict[str, FieldType] = field(default_factory=dict)
    layers: dict[int, ItemLayer] = field(default_factory=dict)
    """Item -> its annotation layer (``[layers]``; items without a count have none)."""
    out_of_layer: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Annotation source id -> the out-of-layer fields it gave values to: set aside before
    flattening, so they enter neither gold nor agreement (counted, never silently lost)."""
    layer_missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Annotation source id -> the required per-entity values it lacks (schema-invalid)."""
    memo: dict[str, Any] = field(default_factory=dict)
    """Per-decision results that do not depend on who is excluded, computed once for the
    before and after of an exclusion (e.g. the gradient's prediction agreement)."""

    @property
    def annotators(self) -> list[str]:
        return sorted({a.annotator for a in self.annotations if a.tier == 1})


def number_tolerance(ft: FieldType) -> float | None:
    """The tolerance a number field agrees within (None: exact categories suffice)."""
    if isinstance(ft, Number) and ft.spec.tolerance > 0:
        return float(ft.spec.tolerance)
    return None


@dataclass(frozen=True)
class CodeTable:
    """Per kappa category code (one per field and value): the number it stands for, the
    tolerance it agrees within and its field. Why: chance agreement must use the field's own
    ``agree`` (METRICS.md §1), so a number within tolerance of another is the same category
    for p_e as it is for p_o; codes of other fields never agree (a pooled kappa)."""

    x: np.ndarray
    tol: np.ndarray
    group: np.ndarray

    def weights(self, codes: np.ndarray) -> ToleranceWeights | None:
        """Agreement weights among ``codes`` (in their order); None when they are exact."""
        if not len(codes) or not np.any(self.tol[codes] > 0):
            return None
        return ToleranceWeights(self.x[codes], self.tol[codes], groups=self.group[codes])


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


_UNSET = object()


class JsonValues:
    """JSON text of stored values -> Python values, as the JSON column decodes them
    (``json.loads``). Why: the same labels and counts recur on every item, so a short text
    of an immutable value (string, number, bool, null) is decoded once; lists and dicts
    are decoded afresh every time, so no two annotations share a mutable value."""

    MAX_TEXT = 64
    MAX_ENTRIES = 1 << 16

    def __init__(self) -> None:
        self.memo: dict[str, Any] = {}

    def __call__(self, text: Any) -> Any:
        if text is None:
            return None
        if not isinstance(text, str):
            # SQLite keeps a JSON number as a number (NUMERIC affinity), as SQLAlchemy's
            # SQLite JSON type lets through
            return text if isinstance(text, numbers.Number) else json.loads(text)
        v = self.memo.get(text, _UNSET)
        if v is not _UNSET:
            return v
        v = json.loads(text)
        if (
            len(text) <= self.MAX_TEXT
            and (v is None or isinstance(v, str | int | float))
            and len(self.memo) < self.MAX_ENTRIES
        ):
            self.memo[text] = v
        return v


def _group(rows: Any, decode: JsonValues | None = None) -> Any:
    """Annotation rows (ordered by source_id, id) -> one dict per annotation, as soon as its
    last row is read, so only one annotation's raw JSON values are alive at a time.
    ``decode``: the rows carry the value's JSON text (``_annotation_rows(raw=True)``)."""
    g: dict[str, Any] | None = None
    for r in rows:
        if g is None or g["sid"] != r.source_id:
            if g is not None:
                yield g
            g = {
                "sid": r.source_id,
                "first": r.id,
                "item": r.item_id,
                "annotator": sys.intern(r.annotator),
                "arm": sys.intern(r.arm),
                "tier": int(r.tier),
                "lead": r.lead_time,
                "values": {},
                "skipped": set(),
                "shown": r.shown_prediction_id,
                "flagged": False,
            }
        g["flagged"] = g["flagged"] or bool(r.flagged)
        if r.skipped:
            g["skipped"].add(r.field_path)
        else:
            g["values"][r.field_path] = r.value if decode is None else decode(r.value)
        if g["lead"] is None and r.lead_time is not None:
            g["lead"] = r.lead_time
    if g is not None:
        yield g


def load(store: Store, project: Project, *, model_version: str | None = None) -> AuditData:
    """Read the project's rows from the store and build the decision table.

    Memory (issue 13: ~3.5 KB per decision before): annotation rows are streamed and
    flattened one annotation at a time, only the chosen prefill version's JSON is read,
    and decision paths and short string values are interned, so a decision costs its
    share of one flat dict plus the decision table's compact columns.
    """
    t = tables
    name = project.name
    with store.begin() as conn:
        items = conn.execute(
            select(t.items.c.id, t.items.c.key, t.items.c.parent)
            .where(t.items.c.project == name)
            .order_by(t.items.c.id)
        ).all()
        layers = _item_layers(conn, project)
        model_version, pred_id, raw_pred = _prefill(conn, name, model_version)
        # SQLite hands JSON over as text: decoded here, each short label once (JsonValues);
        # other drivers decode JSON themselves
        raw = conn.dialect.name == "sqlite"
        decode = JsonValues() if raw else None
        tier2 = list(_group(conn.execute(_annotation_rows(name, tier2=True, raw=raw)), decode))
        tier2.sort(key=lambda g: g["first"])
        frames = _frames(raw_pred, tier2)
        pred = {
            i: flatten_values(project, in_layer(layers.get(i), v), frames[i])
            for i, v in raw_pred.items()
        }
        del raw_pred
        reader = _AnnotationReader(project, frames, layers)
        for g in tier2:
            reader.add_tier2(g)
        del tier2
        rows = conn.execute(
            _annotation_rows(name, tier2=False, raw=raw).execution_options(yield_per=2000)
        )
        for g in _group(rows, decode):
            reader.add(g)
        frames.clear()
        excl, arms, weights = _item_context(conn, name)

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
        expert=reader.expert,
        expert_annotator=reader.expert_annotator,
        adjudicated=reader.adjudicated,
        annotations=reader.in_store_order(),
        exclusions={a: r for a, r in excl},
        arms={int(k): v for k, v in arms.items()},
        review_weights={int(k): float(w) for k, w in weights.items()},
    )
    data.layers = layers
    data.out_of_layer, data.layer_missing = reader.out_of_layer, reader.layer_missing
    data.d, data.codes = _decisions(data)
    return data


def _item_layers(conn: Any, project: Project) -> dict[int, ItemLayer]:
    """Item -> its layer, read once from item metadata (empty without ``[layers]``)."""
    if project.layers is None:
        return {}
    it = tables.items
    rows = conn.execute(select(it.c.id, it.c.meta).where(it.c.project == project.name))
    out = {}
    for r in rows:
        lay = item_layer(project, r.meta)
        if lay is not None:
            out[int(r.id)] = lay
    return out


def _live(name: str) -> tuple[Any, ...]:
    a_t = tables.annotations
    return (a_t.c.project == name, a_t.c.deleted_at.is_(None))


def _annotation_rows(name: str, *, tier2: bool, raw: bool = False) -> Any:
    """Live annotation rows of tier 2 (or of every other tier), grouped-ready: ordered by
    source_id, then row id. ``raw``: the value as its stored JSON text."""
    a_t = tables.annotations
    value = type_coerce(a_t.c.value, Text).label("value") if raw else a_t.c.value
    cols = (
        a_t.c.id,
        a_t.c.source_id,
        a_t.c.item_id,
        a_t.c.field_path,
        a_t.c.annotator,
        a_t.c.arm,
        a_t.c.tier,
        value,
        a_t.c.skipped,
        a_t.c.lead_time,
        a_t.c.shown_prediction_id,
        a_t.c.flagged,
    )
    tier = a_t.c.tier == 2 if tier2 else a_t.c.tier != 2
    return select(*cols).where(*_live(name), tier).order_by(a_t.c.source_id, a_t.c.id)


def _prefill(
    conn: Any, name: str, model_version: str | None
) -> tuple[str | None, dict[int, int], dict[int, Any]]:
    """``(v, item -> prediction id, item -> raw values)`` of the audited prefill version
    ``v``: the one asked for, else the version shown to anchored annotators (rows that
    showed it, first shown first), else the most common version."""
    t = tables
    preds = conn.execute(
        select(t.predictions.c.id, t.predictions.c.item_id, t.predictions.c.model_version).where(
            t.predictions.c.project == name
        )
    ).all()
    if model_version is not None and not any(p.model_version == model_version for p in preds):
        from truthline.errors import TruthlineError

        have = sorted({str(p.model_version) for p in preds})
        raise TruthlineError(
            f"no predictions of model version {model_version!r} in project {name!r} "
            f"(have: {', '.join(have) or 'none'})"
        )
    if model_version is None:
        a_t = t.annotations
        shown = conn.execute(
            select(a_t.c.shown_prediction_id, func.count(), func.min(a_t.c.id))
            .where(*_live(name), a_t.c.shown_prediction_id.is_not(None))
            .group_by(a_t.c.shown_prediction_id)
            .order_by(func.min(a_t.c.id))
        ).all()
        by_id = {p.id: p.model_version for p in preds}
        versions: Counter[str] = Counter()
        for pid, n, _ in shown:
            if pid in by_id:
                versions[by_id[pid]] += int(n)
        if not versions:
            versions = Counter(p.model_version for p in preds)
        model_version = versions.most_common(1)[0][0] if versions else None
    raw_pred = dict(
        conn.execute(
            select(t.predictions.c.item_id, t.predictions.c["values"]).where(
                t.predictions.c.project == name,
                t.predictions.c.model_version == model_version,
            )
        ).all()
    )
    pred_id = {p.item_id: p.id for p in preds if p.model_version == model_version}
    return model_version, pred_id, raw_pred


def _frames(raw_pred: dict[int, Any], tier2: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Frames for entity alignment per item: the prediction, else the first tier-2 value."""
    frames: dict[int, dict[str, Any]] = defaultdict(dict)
    for item, vals in raw_pred.items():
        frames[item].update(vals)
    for g in tier2:
        for k, v in g["values"].items():
            frames[g["item"]].setdefault(k, v)
    return frames


class _AnnotationReader:
    """Flattens grouped annotation rows one at a time; keeps the first expert value and
    the adjudicated values per item, and restores the store's order at the end."""

    def __init__(
        self,
        project: Project,
        frames: dict[int, dict[str, Any]],
        layers: dict[int, ItemLayer] | None = None,
    ):
        self.project = project
        self.frames = frames
        self.layers = layers or {}
        self.out_of_layer: dict[str, tuple[str, ...]] = {}
        self.layer_missing: dict[str, tuple[str, ...]] = {}
        self.annotations: list[Annotation] = []
        self.firsts: list[int] = []
        self.expert: dict[int, dict[str, Any]] = {}
        self.expert_annotator: dict[int, str] = {}
        self.adjudicated: dict[int, dict[str, Any]] = {}

    def _in_layer(self, g: dict[str, Any]) -> dict[str, Any]:
        """The annotation's values in its item's layer; what it gave outside is recorded."""
        lay = self.layers.get(g["item"])
        if lay is None:
            return g["values"]
        chk = layer_check(self.project, lay, g["values"])
        if chk.out_of_layer:
            self.out_of_layer[g["sid"]] = chk.out_of_layer
        if chk.missing and not g["skipped"]:
            self.layer_missing[g["sid"]] = chk.missing
        return in_layer(lay, g["values"])

    def add(self, g: dict[str, Any]) -> Annotation:
        a = Annotation(
            g["sid"],
            g["item"],
            g["annotator"],
            g["arm"],
            g["tier"],
            g["lead"],
            flatten_values(self.project, self._in_layer(g), self.frames.get(g["item"], {})),
            g["skipped"] or _NO_SKIPS,
            g["shown"],
            g["flagged"],
            len(g["values"]),
        )
        self.annotations.append(a)
        self.firsts.append(g["first"])
        return a

    def add_tier2(self, g: dict[str, Any]) -> None:
        a = self.add(g)
        if a.arm == "adjudication":
            self.adjudicated.setdefault(a.item, {}).update(a.values)
        elif a.item not in self.expert:
            self.expert[a.item] = a.values
            self.expert_annotator[a.item] = a.annotator

    def in_store_order(self) -> list[Annotation]:
        """The order of the store (first row id), as every consumer expects."""
        order = sorted(range(len(self.annotations)), key=self.firsts.__getitem__)
        return [self.annotations[k] for k in order]


def _item_context(conn: Any, name: str) -> tuple[list[Any], dict[Any, str], dict[Any, float]]:
    """Active exclusions (oldest decision first), arm per item, expert-review weights."""
    t = tables
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
    return excl, arms, weights


def _decisions(data: AuditData) -> tuple[dict[str, np.ndarray], CodeTable]:
    """Tier-1 decisions on audited fields as column arrays (NaN = not comparable).

    Filled in place into preallocated arrays (a first pass counts the decisions): no
    per-decision Python lists, ints or tuples are built on the way."""
    project = data.project
    audited = set(data.fields)
    fts = {f: project.field(f) for f in audited}
    tier1 = [
        (k, a) for k, a in enumerate(data.annotations) if a.tier == 1 and a.arm not in REVIEW_ARMS
    ]
    n = sum(
        1
        for _, a in tier1
        for path, h in a.values.items()
        if h is not None and leaf_of(path) in audited
    )
    ints = {k: np.empty(n, dtype=np.int64) for k in ("ann", "unit", "item", "vc", "hc")}
    flts = {k: np.empty(n, dtype=float) for k in ("hv", "he", "ve")}
    objs = {k: np.empty(n, dtype=object) for k in ("path", "field", "annotator", "arm")}
    objs |= {k: np.full(n, None, dtype=object) for k in ("h", "v", "e")}
    _fill(data, tier1, audited, fts, ints, flts, objs)
    # category codes per (field, value) for kappa, computed once (prefill values first)
    cats: dict[Any, int] = {}
    xs: list[float] = []
    for src, dst in (("v", "vc"), ("h", "hc")):
        ints[dst][:] = _codes(objs["field"], objs[src], cats, xs)
    return {**ints, **flts, **objs}, _code_table(data.fields, fts, cats, xs)


def _fill(
    data: AuditData,
    tier1: list[tuple[int, Annotation]],
    audited: set[str],
    fts: dict[str, FieldType],
    ints: dict[str, np.ndarray],
    flts: dict[str, np.ndarray],
    objs: dict[str, np.ndarray],
) -> None:
    """Write each decision's columns in place; an annotation's own columns (its index,
    item, annotator, arm) as one slice per annotation, not one cell per decision."""
    path_c, field_c, h_c, v_c, e_c = (objs[k] for k in ("path", "field", "h", "v", "e"))
    hv_c, he_c, ve_c = flts["hv"], flts["he"], flts["ve"]
    nan = np.nan
    i = 0
    for ann_idx, a in tier1:
        v_all = data.pred.get(a.item, {})
        e_all = data.expert.get(a.item, {})
        j = i
        for path, h in a.values.items():
            leaf = leaf_of(path)
            if h is None or leaf not in audited:
                continue
            agree = fts[leaf].agree
            v = v_all.get(path)
            e = e_all.get(path)
            path_c[j], field_c[j] = path, leaf
            hv_c[j] = nan if v is None else (1.0 if agree(h, v) else 0.0)
            he_c[j] = nan if e is None else (1.0 if agree(h, e) else 0.0)
            ve_c[j] = nan if v is None or e is None else (1.0 if agree(v, e) else 0.0)
            h_c[j], v_c[j], e_c[j] = h, v, e
            j += 1
        if j > i:
            ints["ann"][i:j], ints["item"][i:j] = ann_idx, a.item
            ints["unit"][i:j] = data.item_index[a.item]
            objs["annotator"][i:j], objs["arm"][i:j] = a.annotator, a.arm
        i = j


def _codes(fields: np.ndarray, values: np.ndarray, cats: dict[Any, int], xs: list[float]) -> list:
    """Kappa category code per decision (-1 for None), new (field, value) pairs numbered in
    order of first appearance into ``cats`` (their number into ``xs``). Scalars are their
    own key (``_hashable`` of one is itself); only lists and dicts are converted."""
    out = []
    for f, x in zip(fields, values, strict=True):
        if x is None:
            out.append(-1)
            continue
        key = (f, x) if isinstance(x, str | int | float) else (f, _hashable(x))
        code = cats.get(key)
        if code is None:
            code = cats[key] = len(cats)
            xs.append(_number(x))
        out.append(code)
    return out


def _number(x: Any) -> float:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else np.nan


def _code_table(
    fields: list[str], fts: dict[str, FieldType], cats: dict[Any, int], xs: list[float]
) -> CodeTable:
    """Number codes of a field with a tolerance keep their value and tolerance; every other
    code is its own exact category (a group of its own within the field's)."""
    q = len(cats)
    x = np.arange(q, dtype=float)
    tol = np.zeros(q)
    group = np.empty(q, dtype=np.int64)
    fidx = {f: i for i, f in enumerate(fields)}
    tols = {f: number_tolerance(fts[f]) for f in fields}
    for (f, _), code in cats.items():
        group[code] = fidx[f]
        t, v = tols[f], xs[code]
        if t is not None and np.isfinite(v):
            x[code], tol[code] = v, t
        elif t is not None:  # not a number after all: agrees only with itself
            group[code] = len(fields) + code
    return CodeTable(x, tol, group)
