"""Gold with provenance: one value per item and decision, and where it came from.

Order of trust (METRICS.md §4): an expert (tier-2 review) value; an adjudicated value;
the consensus of blind-arm annotators; the anchored-arm value, labelled ``anchored_kept``
(VLM-sourced: the annotator retained the prefill) or ``anchored_corrected``. Annotators
that were excluded are dropped; items left with no retained label are re-queued with the
exclusion's reason. Disagreements go to an adjudication queue — never to a coin flip.
Clips an annotator flagged, abandoned (every task skipped or cancelled) or whose annotation
failed schema validation get no gold (SteelBench §4) and are counted by reason.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from sqlalchemy import select

from truthline.audit._data import REVIEW_ARMS, Annotation, AuditData, leaf_of
from truthline.errors import FieldValueError, TruthlineError
from truthline.fields import EntityList
from truthline.store import Store, now, resolve_snapshot, rows_with_json, tables
from truthline.vocab import Arm, Provenance, Slice

PROVENANCES: tuple[str, ...] = tuple(Provenance)
SLICES: tuple[str, ...] = tuple(Slice)
"""Gold slices by provenance (METRICS.md §4): ``blind`` = blind consensus plus expert values on
blind-arm items; ``anchored`` = anchored_kept + anchored_corrected; ``vlm-sourced`` =
anchored_kept (gold that came from a retained prefill); ``all`` = every gold value."""


def in_slice(name: str, provenance: str, arm: str | None) -> bool:
    """Whether a gold value (its provenance, on an item of ``arm``) belongs to slice ``name``.

    The one definition of the slices; the benchmark and the audit both call it.
    """
    name = name.replace("_", "-")
    if name == Slice.ALL:
        return True
    if name == Slice.BLIND:
        return provenance == Provenance.BLIND_CONSENSUS or (
            provenance == Provenance.EXPERT and arm == Arm.BLIND
        )
    if name == Slice.ANCHORED:
        return provenance in (Provenance.ANCHORED_KEPT, Provenance.ANCHORED_CORRECTED)
    if name == Slice.VLM_SOURCED:
        return provenance == Provenance.ANCHORED_KEPT
    raise TruthlineError(f"unknown gold slice {name!r} (use one of {', '.join(SLICES)})")


@dataclass(frozen=True)
class GoldPolicy:
    """How finalize resolves each decision (recorded in the snapshot)."""

    excluded: Literal["requeue", "drop"] = "requeue"
    """Items left without a retained label after exclusion: re-queue them, or drop them."""
    single_blind: Literal["accept", "adjudicate"] = "accept"
    """One blind annotation: accept it as the blind value, or send it to adjudication."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class GoldValue:
    item: int
    path: str
    value: Any
    provenance: str
    sources: tuple[str, ...]
    """Who the value came from; one shared tuple per distinct set (a tuple: these are
    made for every gold value, and lists would double their size)."""
    arm: str = ""


@dataclass(slots=True)
class Pending:
    item: int
    kind: str  # adjudication | requeue
    path: str
    reason: str


@dataclass
class GoldResult:
    """Finalized gold (in memory until written) plus the work it hands back."""

    values: list[GoldValue]
    pending: list[Pending]
    policy: GoldPolicy
    hash: str = ""
    dropped: dict[int, str] = field(default_factory=dict)
    unusable: dict[int, str] = field(default_factory=dict)
    """Item -> reason (``UNUSABLE``) of the clips left out of gold before any decision: an
    annotator flagged it, its annotation failed schema validation, or it was abandoned.
    Their annotations stay in the store; a later finalize takes them back if the cause is
    gone (a withdrawal would outlive it)."""
    out_of_layer: dict[int, int] = field(default_factory=dict)
    """Item -> annotations whose values outside the item's layer (``[layers]``: per-entity
    values on a Layer 1 clip) were set aside: in the store, not in gold or agreement."""

    def unusable_by_reason(self) -> dict[str, int]:
        """Reason -> clips, in ``UNUSABLE`` order, every reason named (0 when none)."""
        n = {r: 0 for r in UNUSABLE}
        for reason in self.unusable.values():
            n[reason] += 1
        return n

    def counts(self) -> dict[str, Any]:
        prov: dict[str, int] = defaultdict(int)
        for g in self.values:
            prov[g.provenance] += 1
        kinds: dict[str, int] = defaultdict(int)
        for p in self.pending:
            kinds[p.kind] += 1
        return {
            "values": len(self.values),
            "items": len({g.item for g in self.values}),
            "by_provenance": dict(sorted(prov.items())),
            "pending": dict(sorted(kinds.items())),
            "dropped_items": len(self.dropped),
            "unusable_items": len(self.unusable),
            "unusable_by_reason": self.unusable_by_reason(),
            "out_of_layer_annotations": sum(self.out_of_layer.values()),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "hash": self.hash,
            "policy": self.policy.as_dict(),
            "counts": self.counts(),
            "pending": [asdict(p) for p in self.pending],
        }


def _gold_paths(data: AuditData) -> set[str]:
    """Leaf fields that get gold: everything comparable (free text is not finalized)."""
    out = set()
    for path, ft in data.project.leaf_fields().items():
        if ft.name != "text":
            out.add(path)
    for name, ft in data.project.field_types.items():
        if isinstance(ft, EntityList):
            out.add(name)  # membership: the list of entity ids
    return out


def _same(data: AuditData, path: str, x: Any, y: Any) -> bool:
    ft = _field(data, leaf_of(path))
    if isinstance(ft, EntityList):
        return sorted(x or []) == sorted(y or [])
    return bool(ft.agree(x, y))


def _field(data: AuditData, leaf: str) -> Any:
    ft = data.ft_cache.get(leaf)
    if ft is None:
        ft = data.ft_cache[leaf] = data.project.field(leaf)
    return ft


UNUSABLE: tuple[str, ...] = ("flagged", "schema_invalid", "abandoned")
"""Why a clip is left out of gold (SteelBench §4: "Clips flagged, abandoned, or that failed
schema validation are excluded"), in precedence order: one reason per clip."""


def _cancelled(a: Annotation) -> bool:
    """A skipped / cancelled task (Label Studio ``was_cancelled``): fields skipped, none
    answered."""
    return bool(a.skipped) and all(v is None for v in a.values.values())


def _schema_invalid(
    data: AuditData, a: Annotation, memo: dict[tuple[Any, ...], bool] | None = None
) -> bool:
    """A submitted annotation the project's schema rejects: nothing could be read (stored
    without values, nothing skipped), a value its field type refuses, or a required
    field left empty. ``memo``: (leaf, type, value) -> refused, shared across annotations (the
    same labels recur on every item; a field type's verdict on a value never changes)."""
    if not a.skipped and all(v is None for v in a.values.values()):
        return True
    if a.source_id in data.layer_missing:  # its item's layer requires per-entity values
        return True
    memo = {} if memo is None else memo
    for path, v in a.values.items():
        if v is None:
            continue
        try:
            key = (leaf_of(path), type(v), v)
            bad = memo.get(key)
        except TypeError:  # an unhashable value (a list): not memoized
            key, bad = None, None
        if bad is None:
            bad = _refused(data, path, v)
            if key is not None:
                memo[key] = bad
        if bad:
            return True
    return any(
        ft.spec.required and name not in a.skipped and a.values.get(name) is None
        for name, ft in _required(data)
    )


def _refused(data: AuditData, path: str, v: Any) -> bool:
    """Whether the field type of ``path`` refuses ``v`` (entity lists are checked per
    subfield, so the list itself is never refused here)."""
    ft = _field(data, leaf_of(path))
    if isinstance(ft, EntityList):
        return False
    try:
        ft.normalize(v)
    except (FieldValueError, TypeError, ValueError):
        return True
    return False


def _required(data: AuditData) -> list[tuple[str, Any]]:
    """Top-level fields that must be answered (read once: ``field_types`` is a model
    attribute, slow to look up per annotation)."""
    return [(n, ft) for n, ft in data.project.field_types.items() if ft.spec.required]


def _invalid_annotations(data: AuditData) -> frozenset[str]:
    """Source ids of the tier-1 annotations that are submitted and schema-invalid, found
    once per ``AuditData`` (validity does not depend on who is excluded, and the before and
    after of an exclusion both ask)."""
    hit = data.memo.get("schema_invalid")
    if hit is None:
        memo: dict[tuple[Any, ...], bool] = {}
        hit = data.memo["schema_invalid"] = frozenset(
            a.source_id
            for a in data.annotations
            if a.tier == 1
            and a.arm not in REVIEW_ARMS
            and not _cancelled(a)
            and _schema_invalid(data, a, memo)
        )
    return hit


def unusable_items(
    data: AuditData,
    excluded: dict[str, str] | set[str],
    only: Collection[int] | None = None,
) -> dict[int, str]:
    """Item -> reason (``UNUSABLE``) over the retained annotators' tier-1 annotations: any
    flagged it; any submitted one fails schema validation; none completed it (every one
    skipped or cancelled). Excluded annotators' annotations do not count either way.
    ``only``: just these items."""
    per: dict[int, list[Annotation]] = defaultdict(list)
    for a in data.annotations:
        if (
            a.tier == 1
            and a.arm not in REVIEW_ARMS
            and a.annotator not in excluded
            and (only is None or a.item in only)
        ):
            per[a.item].append(a)
    invalid = _invalid_annotations(data)
    out: dict[int, str] = {}
    for item, anns in per.items():
        done = [a for a in anns if not _cancelled(a)]
        if any(a.flagged for a in anns):
            out[item] = "flagged"
        elif any(a.source_id in invalid for a in done):
            out[item] = "schema_invalid"
        elif not done:
            out[item] = "abandoned"
    return out


def decide(
    data: AuditData,
    excluded: dict[str, str],
    policy: GoldPolicy | None = None,
    *,
    hashed: bool = True,
    only: Collection[int] | None = None,
) -> GoldResult:
    """Resolve every item's decisions into gold values with provenance (no writes); the
    unusable clips (``unusable_items``) get none and are counted by reason. ``hashed=False``:
    leave ``hash`` empty (a preview that reads the values only). ``only``: resolve just
    these items (an item's outcome depends on its own annotations alone), in item order."""
    policy = policy or GoldPolicy()
    paths_ok = _gold_paths(data)
    unusable = unusable_items(data, excluded, only)
    by_item: dict[int, list] = defaultdict(list)
    excluded_on: dict[int, list[str]] = defaultdict(list)
    for a in data.annotations:
        if a.tier != 1 or a.arm in REVIEW_ARMS or (only is not None and a.item not in only):
            continue
        if a.annotator in excluded:
            excluded_on[a.item].append(a.annotator)
            continue
        by_item[a.item].append(a)
    values: list[GoldValue] = []
    pending: list[Pending] = []
    dropped: dict[int, str] = {}
    version = data.model_version or "prefill"
    vlm = f"vlm:{version}"
    tuples: dict[tuple[str, ...], tuple[str, ...]] = {}

    def shared(t: tuple[str, ...]) -> tuple[str, ...]:
        return tuples.setdefault(t, t)

    for item in data.item_ids if only is None else [i for i in data.item_ids if i in only]:
        if item in unusable:
            continue
        e = data.expert.get(item, {})
        adj = data.adjudicated.get(item, {})
        anns = by_item.get(item, [])
        if not anns and not e and not adj:
            if excluded_on.get(item):
                gone = sorted(set(excluded_on[item]))
                reason = "; ".join(f"{n} excluded: {excluded[n]}" for n in gone)
                if policy.excluded == "requeue":
                    pending.append(Pending(item, "requeue", "", reason))
                else:
                    dropped[item] = reason
            continue
        done: set[str] = set()
        for path, val in e.items():
            if val is None or leaf_of(path) not in paths_ok:
                continue
            arm = "blind" if any(a.arm == "blind" for a in anns) else ""
            src = shared((data.expert_annotator.get(item, "expert"),))
            values.append(GoldValue(item, path, val, "expert", src, arm))
            done.add(path)
        for path, val in adj.items():
            if val is None or path in done or leaf_of(path) not in paths_ok:
                continue
            values.append(GoldValue(item, path, val, "adjudicated", ("adjudicator",)))
            done.add(path)
        blind = [a for a in anns if a.arm == "blind"]
        anchored = [a for a in anns if a.arm != "blind"]
        group, arm = (blind, "blind") if blind else (anchored, "anchored")
        paths = sorted({p for a in group for p, v in a.values.items() if v is not None})
        v_all = data.pred.get(item, {})
        for path in paths:
            if path in done or leaf_of(path) not in paths_ok:
                continue
            vals = [(a.annotator, x) for a in group if (x := a.values.get(path)) is not None]
            first = vals[0][1]
            if len(vals) > 1 and not all(_same(data, path, first, x) for _, x in vals[1:]):
                shown = ", ".join(f"{n}={x!r}" for n, x in vals)
                pending.append(Pending(item, "adjudication", path, f"{arm} disagreement: {shown}"))
                continue
            names = shared(tuple([n for n, _ in vals]))
            if arm == "blind":
                if len(vals) < 2 and policy.single_blind == "adjudicate":
                    pending.append(Pending(item, "adjudication", path, "single blind annotation"))
                    continue
                values.append(GoldValue(item, path, first, "blind_consensus", names, arm))
                continue
            v = v_all.get(path)
            if v is not None and _same(data, path, first, v):
                values.append(
                    GoldValue(item, path, first, "anchored_kept", shared((*names, vlm)), arm)
                )
            else:
                values.append(GoldValue(item, path, first, "anchored_corrected", names, arm))
    res = GoldResult(values, pending, policy, dropped=dropped, unusable=unusable)
    res.out_of_layer = _out_of_layer_by_item(data)
    if hashed:
        res.hash = _gold_hash(data, policy, values)
    return res


def _out_of_layer_by_item(data: AuditData) -> dict[int, int]:
    """Item -> live annotations that gave values outside its layer."""
    out: dict[int, int] = defaultdict(int)
    for a in data.annotations:
        if a.source_id in data.out_of_layer:
            out[a.item] += 1
    return dict(out)


def _gold_hash(data: AuditData, policy: GoldPolicy, values: list[GoldValue]) -> str:
    """``store.json_hash`` of ``{project, policy, values: sorted rows}``, byte for byte, but
    streamed row by row instead of building the whole list and its JSON text in memory.

    Rows ``[item key, path, value, provenance, sources]`` sort by (item key, path), which
    is unique per gold value, so the order is the one ``sorted`` gave the full rows."""
    import hashlib
    import json

    def dump(x: Any) -> str:
        return json.dumps(x, sort_keys=True, default=str)

    h = hashlib.sha256()
    h.update(
        f'{{"policy": {dump(policy.as_dict())}, "project": {dump(data.project.name)}, '
        '"values": ['.encode()
    )
    keys = data.item_keys
    order = sorted(range(len(values)), key=[(keys[g.item], g.path) for g in values].__getitem__)
    # rows are encoded HASH_CHUNK at a time: a list's JSON is its rows' JSON joined by ", "
    encode = json.JSONEncoder(sort_keys=True, default=str).encode
    srt: dict[tuple[str, ...], list[str]] = {}
    for lo in range(0, len(order), HASH_CHUNK):
        rows = []
        for k in order[lo : lo + HASH_CHUNK]:
            g = values[k]
            src = srt.get(g.sources)
            if src is None:
                src = srt[g.sources] = sorted(g.sources)
            rows.append([keys[g.item], g.path, g.value, g.provenance, src])
        h.update(((", " if lo else "") + encode(rows)[1:-1]).encode())
    h.update(b"]}")
    return h.hexdigest()


HASH_CHUNK = 4096
"""Gold rows JSON-encoded at a time by ``_gold_hash`` (bounded text, few encoder calls)."""


def insert_snapshot(
    conn: Any,
    digest: str,
    project: str,
    policy: dict[str, Any],
    counts: dict[str, int],
    rows: list[tuple[int, str, Any, str, list[str]]],
    ts: Any,
) -> None:
    """Insert a snapshot row and its gold rows ``(item id, path, value, provenance,
    sources)``, in the given order, on an open connection: the one place gold is written,
    whether finalized from annotations (``write``), known by construction
    (``write_known_truth``) or loaded from a release (``benchmark.load_release``). The
    caller has checked that ``digest`` is new; the hash is the caller's, never recomputed."""
    conn.execute(
        tables.gold_snapshots.insert().values(
            hash=digest, project=project, policy=policy, counts=counts, created_at=ts
        )
    )
    gold = [
        dict(
            snapshot=digest,
            project=project,
            item_id=i,
            field_path=f,
            value=v,
            provenance=prov,
            sources=src,
        )
        for i, f, v, prov, src in rows
    ]
    for k in range(0, len(gold), 5000):
        conn.execute(tables.gold.insert(), gold[k : k + 5000])


def write_known_truth(
    store: Store, project: str, values: list[tuple[int, str, Any, str]], policy: dict[str, Any]
) -> str:
    """A gold snapshot whose values are known by construction (a rendered scene's ground
    truth, a scorer's verdict), not finalized from annotations: rows ``(item id, field,
    value, provenance)``. Its hash is sha256 of the sorted rows and the policy, so the same
    values give the same snapshot and a rerun writes nothing. Returns the hash."""
    import hashlib
    import json

    values = sorted(values, key=lambda v: (v[0], v[1]))
    digest = hashlib.sha256(
        json.dumps({"v": values, "p": policy}, sort_keys=True, default=str).encode()
    ).hexdigest()
    counts: dict[str, int] = defaultdict(int)
    for v in values:
        counts[v[3]] += 1
    s = tables.gold_snapshots
    with store.begin() as conn:
        if conn.execute(select(s.c.hash).where(s.c.hash == digest)).first() is None:
            rows: list[tuple[int, str, Any, str, list[str]]] = [
                (i, f, val, prov, []) for i, f, val, prov in values
            ]
            insert_snapshot(conn, digest, project, policy, dict(counts), rows, now())
    return digest


def write(store: Store, data: AuditData, res: GoldResult) -> bool:
    """Store a gold snapshot (idempotent: an existing hash is left as it is) and its queue.

    Returns whether a new snapshot was written.
    """
    t = tables
    name = data.project.name
    ts = now()
    with store.begin() as conn:
        exists = conn.execute(
            select(t.gold_snapshots.c.hash).where(t.gold_snapshots.c.hash == res.hash)
        ).first()
        if not exists:
            insert_snapshot(
                conn,
                res.hash,
                name,
                {**res.policy.as_dict(), "model_version": data.model_version},
                res.counts(),
                [(g.item, g.path, g.value, g.provenance, list(g.sources)) for g in res.values],
                ts,
            )
        have = {
            (r.item_id, r.kind, r.field_path)
            for r in conn.execute(
                select(
                    t.audit_queue.c.item_id, t.audit_queue.c.kind, t.audit_queue.c.field_path
                ).where(t.audit_queue.c.project == name)
            )
        }
        new = [
            dict(
                project=name,
                item_id=p.item,
                kind=p.kind,
                field_path=p.path,
                reason=p.reason,
                priority=1.0,
                selected=True,
                snapshot=res.hash,
                status="open",
                created_at=ts,
            )
            for p in res.pending
            if (p.item, p.kind, p.path) not in have
        ]
        if new:
            conn.execute(t.audit_queue.insert(), new)
    return not exists


# -- reading gold back: the one latest-snapshot rule and the one loader -------------------


@dataclass
class GoldItem:
    """One item's gold decisions (path -> value, path -> provenance) and what a model may
    be shown of the item (media, metadata)."""

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
    """The gold of one snapshot (one slice of it). Iterating yields one flat record per
    decision (``item_id, key, arm, field_path, value, provenance``): a DataFrame's rows."""

    project: str
    snapshot: str
    items: list[GoldItem]
    withdrawn: dict[str, str] = field(default_factory=dict)
    """Key -> reason of the snapshot's items left out because they were withdrawn."""

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for it in self.items:
            for p in it.provenance.values():
                out[p] = out.get(p, 0) + 1
        return out

    def records(self) -> list[dict[str, Any]]:
        return [
            {
                "snapshot": self.snapshot,
                "item_id": it.item_id,
                "key": it.key,
                "arm": it.arm,
                "field_path": path,
                "value": value,
                "provenance": it.provenance[path],
            }
            for it in self.items
            for path, value in it.values.items()
        ]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records())

    def __len__(self) -> int:
        return sum(len(it.values) for it in self.items)


NO_GOLD_HINT = "finalize it with `truthline audit finalize` (or import gold)"


def latest_snapshot(store: Store, project: str) -> str:
    """The newest gold snapshot's hash; a clear error when the project has none."""
    with store.begin() as conn:
        snap = resolve_snapshot(conn, project, None)
    if snap is None:
        raise TruthlineError(
            f"project {project!r} has no gold yet; {NO_GOLD_HINT} before running a benchmark"
        )
    return snap


def load_gold(store: Store, project: str, snapshot: str | None = None, slice_: str = "all") -> Gold:
    """Gold decisions of one snapshot (a hash or unique prefix; default: the latest),
    restricted to a provenance slice; items left without any decision are dropped, and so
    are withdrawn items (``truthline.audit.withdraw``; named in ``Gold.withdrawn``)."""
    from truthline.audit._withdraw import active_withdrawals

    t = tables
    with store.begin() as conn:
        snap = resolve_snapshot(conn, project, snapshot)
        if snap is None:
            raise TruthlineError(
                f"project {project!r} has no gold yet; {NO_GOLD_HINT} before running a benchmark"
            )
        arms = dict(
            conn.execute(
                select(t.arm_assignments.c.item_id, t.arm_assignments.c.arm).where(
                    t.arm_assignments.c.project == project
                )
            ).all()
        )
        # the JSON cells decoded at once (store._json_rows); each item's own cells once,
        # not once per decision (an item has a decision per field)
        g, it = t.gold, t.items
        rows = rows_with_json(
            conn,
            select(g.c.item_id, g.c.field_path, g.c.value, g.c.provenance)
            .where(g.c.snapshot == snap)
            .order_by(g.c.item_id, g.c.field_path),
        )
        of_snapshot = select(g.c.item_id).where(g.c.snapshot == snap)
        about = {
            r.id: r
            for r in rows_with_json(
                conn,
                select(
                    it.c.id,
                    it.c.key,
                    it.c.parent,
                    it.c.meta,
                    it.c.media,
                    it.c.media_root,
                    it.c.sim_truth,
                ).where(it.c.id.in_(of_snapshot)),
            )
        }
        gone = active_withdrawals(conn, project)
    items: dict[int, GoldItem] = {}
    withdrawn: dict[str, str] = {}
    every = slice_.replace("_", "-") == Slice.ALL  # no test per decision
    for r in rows:
        item = items.get(r.item_id)
        if item is None:
            a = about.get(r.item_id)
            if a is None:  # no such item (as the join these two queries replace dropped it)
                continue
            if r.item_id in gone:
                withdrawn[a.key] = gone[r.item_id]
                continue
            arm = arms.get(r.item_id)
            if not every and not in_slice(slice_, r.provenance, arm):
                continue
            item = items[r.item_id] = GoldItem(
                a.id,
                a.key,
                a.parent,
                dict(a.meta or {}),
                arm,
                list(a.media or []),
                a.media_root,
                a.sim_truth,
            )
        elif not every and not in_slice(slice_, r.provenance, item.arm):
            continue
        item.values[r.field_path] = r.value
        item.provenance[r.field_path] = r.provenance
    return Gold(project, snap, list(items.values()), withdrawn)
