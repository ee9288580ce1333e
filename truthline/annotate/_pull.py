"""Pull: Label Studio snapshot exports -> the ``annotations`` table (idempotent, with history).

One row per (annotation, top-level field) with the normalized value. "Kept vs changed" is
decided by comparing the value with the prediction that was shown, using the field type's
``agree`` — Label Studio's per-result ``origin`` is stored too, but not trusted. An
annotation edited after a pull is updated and its earlier value goes to
``annotation_history``; pulling twice changes nothing. A malformed result is reported with
its project, task and annotation ids and skipped; the rest is stored.

Deletions: an annotation stored earlier that is missing from its project's export was
deleted in Label Studio. Its rows (one per field) stay in the store with ``deleted_at`` set
to the time of the pull that first found it missing (value, revision and history untouched);
readers exclude ``deleted_at IS NOT NULL`` from statistics and gold. Should it re-appear, a
later pull clears ``deleted_at``. Tasks truthline did not push (no known item of the
project) are skipped and listed; a Label Studio project that no longer exists is reported
and skipped, and the others are still pulled (its annotations stay as last pulled).

Annotations are read back by the project's kind (``_kinds``; the loop's: ``field-schema``).
``pull_units`` is the same pull for a system's kind: one row per value the kind reads, the
same history, deletions and foreign-task report, and an exposure per annotator with what
the task showed (``ls_tasks.shown``: e.g. the earlier annotation PhysAlign's pass 4 shows).

Every blind task is checked for what breaks blindness (``_violations``: a prediction on the
task, a label made from one, an annotator who saw the item in another arm); each breach is
reported as an exposure violation and kept in ``exposure_violations``. Blind projects are
pulled last, so the other arms' exposures of the same pull are known by then.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select

from truthline._names import annotator_problem
from truthline.annotate._client import LabelStudioError, LSClient, item_id_of
from truthline.annotate._kinds import FIELD_SCHEMA, ProjectKind, ReadBack, Scope, get_kind
from truthline.annotate._push import _upsert_exposures, ls_project_row
from truthline.annotate._regions import with_placed_boxes
from truthline.annotate._violations import (
    Violation,
    record_violations,
    seen_in_other_arms,
    task_violations,
)
from truthline.errors import TruthlineError
from truthline.project import ItemLayer, item_layer, layer_check
from truthline.store import Store, mark_registered, now, tables


@dataclass
class PullReport:
    projects: list[dict[str, Any]] = field(default_factory=list)
    annotations: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped_annotations: int = 0
    deleted: int = 0
    """Annotations found deleted in Label Studio by this pull (``deleted_at`` set)."""
    restored: int = 0
    """Annotations marked deleted earlier that are back in Label Studio (``deleted_at`` cleared)."""
    foreign_tasks: list[dict[str, Any]] = field(default_factory=list)
    """Tasks not pushed by truthline (no known item of the project): skipped."""
    missing_projects: list[dict[str, Any]] = field(default_factory=list)
    """Label Studio projects that no longer exist on the server: skipped."""
    problems: list[str] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    """Annotations not stored (empty, boxes without values), one per annotation with its
    task and the reason; each is in ``problems`` too."""
    layer_issues: list[dict[str, Any]] = field(default_factory=list)
    exposure_violations: list[dict[str, Any]] = field(default_factory=list)
    """Breaches of blindness found on blind tasks (``_violations``): a prediction on the
    task, an annotation made from one, an annotator who saw the item in another arm; each
    is in ``problems`` too and kept in the store's ``exposure_violations``."""
    """Annotations at odds with their item's layer (``[layers]``), one per annotation:
    out-of-layer values (kept, left out of gold and agreement) and missing required
    per-entity values; each is in ``problems`` too."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def source_id(server_url: str, ls_project_id: int, annotation_id: int) -> str:
    return f"ls:{ls_project_id}:{annotation_id}@{urlsplit(server_url).netloc}"


def _ts(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _same_time(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if a.tzinfo is None:
        a = a.replace(tzinfo=b.tzinfo)
    if b.tzinfo is None:
        b = b.replace(tzinfo=a.tzinfo)
    return a == b


def kept_flag(ft: Any, value: Any, shown: Any) -> bool:
    """Whether the annotator kept the shown value: both missing, or the type's agree."""
    if value is None and shown is None:
        return True
    if value is None or shown is None:
        return False
    return bool(ft.agree(value, shown))


def pull(store: Store, project: Any, client: LSClient, *, progress: bool = True) -> PullReport:
    """Pull every Label Studio project of ``project`` on this server into the store."""
    rep = PullReport()
    lp = tables.ls_projects
    with store.begin() as conn:
        lsp = conn.execute(
            select(lp)
            .where(lp.c.project == project.name, lp.c.server_url == client.url)
            .order_by(lp.c.id)
        ).all()
    if not lsp:
        raise TruthlineError(
            f"nothing pushed for project {project.name!r} to {client.url}; run `truthline annotate push`"
        )
    users: dict[int, str] | None = None
    from rich.progress import Progress

    with Progress(disable=not progress, transient=True) as bar:
        ptask = bar.add_task("pulling", total=len(lsp))
        # blind projects last: the other arms' exposures of this pull are known by then
        for row in sorted(lsp, key=lambda r: r.arm == "blind"):
            t0 = time.perf_counter()
            try:
                tasks = client.snapshot_export(row.ls_project_id)
            except LabelStudioError as exc:
                if exc.status != 404:
                    raise
                rep.missing_projects.append(
                    {"ls_project_id": row.ls_project_id, "arm": row.arm, "title": row.title}
                )
                rep.problems.append(
                    f"Label Studio project {row.ls_project_id} ({row.title!r}, {row.arm} arm) "
                    f"no longer exists on {client.url}; skipped, and the annotations pulled "
                    "from it earlier stay in the store as they were (not marked deleted). "
                    "To get it back, restore Label Studio's data dir from a backup"
                )
                bar.advance(ptask)
                continue
            export_s = time.perf_counter() - t0
            if users is None and any(
                isinstance(a.get("completed_by"), int)
                for t in tasks
                for a in t.get("annotations", [])
            ):
                users = client.users()
            stats = _pull_project(store, project, client, row, tasks, users or {}, rep)
            rep.projects.append(
                {"ls_project_id": row.ls_project_id, "arm": row.arm, "cohort": row.cohort}
                | stats
                | {"export_seconds": round(export_s, 2)}
            )
            bar.advance(ptask)
    return rep


def _pull_project(
    store: Store,
    project: Any,
    client: LSClient,
    lsrow: Any,
    tasks: list[dict],
    users: dict[int, str],
    rep: PullReport,
) -> dict[str, int]:
    """Pull one Label Studio project's export into the store; its counts."""
    return _ProjectPull(store, project.name, project, client, lsrow, users, rep).run(tasks)


class _ProjectPull:
    """One Label Studio project's export against what the store holds: new annotations are
    inserted, changed ones updated (a changed value keeps its old revision in the history),
    annotations gone from the export marked deleted and ones back restored.

    The project's kind reads each annotation back (``kind.read``) and names its values; the
    loop's projects are the ``field-schema`` kind with the ``Project`` as context. A system's
    projects (``trust_task_data=False``) count only the tasks the store recorded as theirs:
    any other task is foreign, whatever its data says."""

    def __init__(
        self,
        store: Store,
        scope: str,
        context: Any,
        client: LSClient,
        lsrow: Any,
        users: dict[int, str],
        rep: PullReport,
        *,
        kind: ProjectKind | None = None,
        trust_task_data: bool = True,
    ):
        self.store, self.context, self.client, self.users, self.rep = (
            store,
            context,
            client,
            users,
            rep,
        )
        self.scope = scope
        self.kind = kind or get_kind(FIELD_SCHEMA)
        self.trust_task_data = trust_task_data
        self.pid = int(lsrow.ls_project_id)
        self.arm = str(lsrow.arm)
        self.tier = self.kind.tier_of(self.arm)
        self.fields = self.kind.field_names(context)
        self.inserts: list[dict] = []
        self.updates: list[tuple[int, dict, dict]] = []  # (row id, new values, history)
        self.exposures: list[dict] = []
        self.stats = {
            "annotations": 0,
            "new": 0,
            "updated": 0,
            "unchanged": 0,
            "deleted": 0,
            "restored": 0,
            "foreign_tasks": 0,
        }
        self.stored_at = now()
        self.present: set[str] = set()  # source ids of every annotation in the export
        self.restored_sids: list[str] = []
        self.violations: list[Violation] = []

    def run(self, tasks: list[dict]) -> dict[str, int]:
        self._read_state()
        for task in tasks:
            self._task(task)
        self._write()
        if self.stats["new"] or self.stats["restored"]:  # accounts declared SIMULATED
            mark_registered(self.store, self.scope)
        rep, stats = self.rep, self.stats
        rep.annotations += stats["annotations"]
        rep.new += stats["new"]
        rep.updated += stats["updated"]
        rep.unchanged += stats["unchanged"]
        rep.deleted += stats["deleted"]
        rep.restored += stats["restored"]
        return stats

    def _read_state(self) -> None:
        """The project's tasks, the predictions they showed, the annotations already pulled
        from this project on this server, the project's items and the prompts' hashes."""
        a, lt, pr = tables.annotations, tables.ls_tasks, tables.predictions
        pid, name = self.pid, self.scope
        with self.store.begin() as conn:
            self.task_map = {
                r.ls_task_id: r
                for r in conn.execute(
                    select(lt.c.ls_task_id, lt.c.item_id, lt.c.prediction_id, lt.c.shown).where(
                        lt.c.ls_project_id == pid, lt.c.server_url == self.client.url
                    )
                )
            }
            pred_ids = {
                r.prediction_id for r in self.task_map.values() if r.prediction_id is not None
            }
            self.preds = (
                {
                    r.id: r
                    for r in conn.execute(
                        select(pr.c.id, pr.c["values"], pr.c.model_version, pr.c.response_id).where(
                            pr.c.id.in_(pred_ids)
                        )
                    )
                }
                if pred_ids
                else {}
            )
            prefix = f"ls:{pid}:"
            suffix = f"@{urlsplit(self.client.url).netloc}"
            self.existing = {
                (r.source_id, r.field_path): r
                for r in conn.execute(
                    select(a).where(a.c.project == name, a.c.source_id.like(f"{prefix}%{suffix}"))
                )
                # LIKE's '_' is a wildcard: keep exactly this project on this server
                if r.source_id.startswith(prefix) and r.source_id.endswith(suffix)
            }
            self.known_items = {
                r.id: r.key
                for r in conn.execute(
                    select(tables.items.c.id, tables.items.c.key).where(
                        tables.items.c.project == name
                    )
                )
            }
            self.layers = self._item_layers(conn)
            self.prompt_hashes = {}
            resp_ids = {p.response_id for p in self.preds.values() if p.response_id is not None}
            if resp_ids:
                r_t = tables.responses
                self.prompt_hashes = {
                    r.id: r.prompt_hash
                    for r in conn.execute(
                        select(r_t.c.id, r_t.c.prompt_hash).where(r_t.c.id.in_(resp_ids))
                    )
                }

        # the loop's blind arm is checked for breaches of blindness (``_violations``)
        self.check_blind = self.arm == "blind" and self.kind.name == FIELD_SCHEMA
        self.seen_elsewhere = seen_in_other_arms(self.store, name) if self.check_blind else {}

    def _item_layers(self, conn: Any) -> dict[int, ItemLayer]:
        """Item -> its layer, for a loop project declaring ``[layers]`` (else empty)."""
        if self.kind.name != FIELD_SCHEMA or getattr(self.context, "layers", None) is None:
            return {}
        it = tables.items
        rows = conn.execute(select(it.c.id, it.c.meta).where(it.c.project == self.scope))
        layers = {r.id: item_layer(self.context, r.meta) for r in rows}
        return {i: lay for i, lay in layers.items() if lay is not None}

    def _check_layer(self, tid: int, item_id: int, aid: int, values: dict[str, Any]) -> None:
        """Report an annotation at odds with its item's layer (kept as read)."""
        lay = self.layers.get(item_id)
        chk = layer_check(self.context, lay, values)
        if lay is None or chk.ok:
            return
        self.rep.problems.append(
            f"Label Studio project {self.pid}, task {tid}, annotation {aid}: {chk.describe(lay)}"
        )
        self.rep.layer_issues.append(
            {
                "ls_project_id": self.pid,
                "ls_task_id": tid,
                "ls_annotation_id": aid,
                "item": self.known_items.get(item_id),
                "layer": lay.layer,
                "count": lay.count,
                "out_of_layer": list(chk.out_of_layer),
                "missing": list(chk.missing),
            }
        )

    def _task(self, task: dict) -> None:
        pid = self.pid
        try:
            tid = int(task["id"])
        except (KeyError, TypeError, ValueError):
            self.rep.problems.append(f"Label Studio project {pid}: a task without an id; skipped")
            return
        for ann in task.get("annotations") or []:
            if isinstance(ann, dict) and ann.get("id") is not None:
                self.present.add(source_id(self.client.url, pid, int(ann["id"])))
        tm = self.task_map.get(tid)
        item_id = tm.item_id if tm else item_id_of((task.get("data") or {}).get("item_id"))
        if tm is None and not self.trust_task_data:
            item_id = None
        if item_id is None or item_id not in self.known_items:
            self.stats["foreign_tasks"] += 1
            self.rep.foreign_tasks.append(
                {
                    "ls_project_id": pid,
                    "ls_task_id": tid,
                    "item_id": (task.get("data") or {}).get("item_id"),
                    "annotations": len(task.get("annotations") or []),
                }
            )
            return
        shown = self.preds.get(tm.prediction_id) if tm and tm.prediction_id else None
        also = tm.shown if tm is not None else None
        if self.check_blind:
            self._check_blind(task, int(item_id))
        for ann in task.get("annotations", []):
            self._annotation(tid, int(item_id), shown, ann, also)

    def _check_blind(self, task: dict, item_id: int) -> None:
        """Report what breaks blindness on a blind task (kept in ``exposure_violations``)."""
        found = task_violations(
            task,
            ls_project_id=self.pid,
            item_id=item_id,
            source_of=lambda aid: source_id(self.client.url, self.pid, aid),
            annotator_of=self._annotator,
            seen_elsewhere=self.seen_elsewhere.get(item_id, {}),
        )
        for v in found:
            self.violations.append(v)
            self.rep.exposure_violations.append(v.as_dict())
            self.rep.problems.append(v.describe())

    def _annotator(self, ann: dict) -> str:
        who = ann.get("completed_by")
        if isinstance(who, dict):
            return who.get("email") or str(who.get("id"))
        return self.users.get(int(who), str(who)) if who is not None else "unknown"

    def _read(self, tid: int, item_id: int, aid: int, ann: dict) -> ReadBack:
        """The kind's reading of a submitted annotation; one that cannot be read is a
        problem (reported with its ids) and stored without values."""
        try:
            return self.kind.read(self.context, self.known_items[item_id], ann)
        except (KeyError, IndexError, TypeError, ValueError, TruthlineError) as exc:
            what = str(exc) if isinstance(exc, TruthlineError) else f"{type(exc).__name__}: {exc}"
            return ReadBack({}, problems=[f"cannot be read as {self.kind.name}: {what}"])

    def _annotation(self, tid: int, item_id: int, shown: Any, ann: dict, also: Any = None) -> None:
        pid, fields = self.pid, self.fields
        aid = int(ann["id"])
        annotator = self._annotator(ann)
        bad_who = annotator_problem(annotator)
        if bad_who is not None:  # an account name too long or with control characters
            self._refuse(tid, item_id, aid, f"{annotator[:40]!r}", bad_who)
            return
        cancelled = bool(ann.get("was_cancelled"))
        if cancelled:
            values: dict[str, Any] = dict.fromkeys(fields)
            origins: dict[str, str] = {}
            self.rep.skipped_annotations += 1
        else:
            conv = self._read(tid, item_id, aid, ann)
            if conv.refused:  # none of it stored: an earlier version is marked deleted
                self._refuse(tid, item_id, aid, annotator, conv.refused)
                return
            for p in conv.problems:
                self.rep.problems.append(
                    f"Label Studio project {pid}, task {tid}, annotation {aid}: {p} (skipped)"
                )
            values, origins = conv.values, conv.origins
            self._check_layer(tid, item_id, aid, values)
        sid = source_id(self.client.url, pid, aid)
        self.stats["annotations"] += 1
        base = {
            "project": self.scope,
            "item_id": item_id,
            "annotator": annotator,
            "arm": self.arm,
            "tier": self.tier,
            "lead_time": ann.get("lead_time"),
            "source": "label_studio",
            "source_id": sid,
            "ls_project_id": pid,
            "ls_task_id": tid,
            "ls_annotation_id": aid,
            "shown_prediction_id": shown.id if shown is not None else None,
            "model_version": shown.model_version if shown is not None else None,
            "ground_truth": bool(ann.get("ground_truth")),
            "parent_prediction": ann.get("parent_prediction"),
            "annotated_at": _ts(ann.get("created_at")),
            "source_updated_at": _ts(ann.get("updated_at")),
        }
        changed_any = restored = False
        # the prediction as the task showed it: with the detector boxes push placed
        as_shown = (
            with_placed_boxes(self.context, shown.values or {}, also) if shown is not None else {}
        )
        lay = self.layers.get(item_id)
        out_of_layer = lay.out_of_layer if lay is not None else ()  # the task did not show them
        for name in fields:
            val = values.get(name)
            kept = None
            if shown is not None and not cancelled and name not in out_of_layer:
                kept = self.kind.kept(self.context, name, val, as_shown.get(name))
            row = base | {
                "field_path": name,
                "value": val,
                "skipped": cancelled,
                "origin": origins.get(name),
                "kept": kept,
            }
            old = self.existing.get((sid, name))
            if old is None:
                self.inserts.append(row | {"revision": 1, "stored_at": self.stored_at})
                changed_any = True
                continue
            if old.deleted_at is not None:  # back in Label Studio
                restored = True
            changed_any = self._field_update(old, row) or changed_any
        if restored:
            self.stats["restored"] += 1
            self.restored_sids.append(sid)
        if all((sid, n) not in self.existing for n in fields):
            self.stats["new"] += 1
        elif changed_any:
            self.stats["updated"] += 1
        else:
            self.stats["unchanged"] += 1
        self.exposures.append(
            {
                "project": self.scope,
                "item_id": item_id,
                "annotator": annotator,
                "arm": self.arm,
                "prediction_id": shown.id if shown is not None else None,
                "model_version": shown.model_version if shown is not None else None,
                "prompt_hash": self.prompt_hashes.get(shown.response_id)
                if shown is not None
                else None,
                "ls_project_id": pid,
                "shown": also,
            }
        )

    def _refuse(self, tid: int, item_id: int, aid: int, annotator: str, why: str) -> None:
        """An annotation that cannot count (empty, boxes without values): reported per task,
        none of it stored; an earlier stored version is marked deleted (not in the export's
        current annotations), so it leaves statistics and gold too."""
        self.present.discard(source_id(self.client.url, self.pid, aid))
        self.rep.refused.append(
            {
                "ls_project_id": self.pid,
                "ls_task_id": tid,
                "ls_annotation_id": aid,
                "item_id": item_id,
                "annotator": annotator,
                "reason": why,
            }
        )
        self.rep.problems.append(
            f"Label Studio project {self.pid}, task {tid}, annotation {aid} by {annotator}: "
            f"refused, {why}; not stored (kept out of statistics and gold)"
        )

    def _field_update(self, old: Any, row: dict[str, Any]) -> bool:
        """Queue the update of a stored field row that changed; whether it did. A changed
        value bumps the revision and keeps the old one in the history."""
        val, cancelled = row["value"], row["skipped"]
        value_changed = old.value != val or bool(old.skipped) != cancelled
        meta_changed = (
            old.lead_time != row["lead_time"]
            or not _same_time(old.source_updated_at, row["source_updated_at"])
            or old.origin != row["origin"]
            or old.kept != row["kept"]
            or old.annotator != row["annotator"]
            or bool(old.ground_truth) != row["ground_truth"]
            or old.parent_prediction != row["parent_prediction"]
            or old.deleted_at is not None
        )
        if not (value_changed or meta_changed):
            return False
        new = {k: v for k, v in row.items() if k not in ("project", "source_id", "field_path")}
        hist = {}
        if value_changed:
            new["revision"] = int(old.revision) + 1
            new["stored_at"] = self.stored_at
            hist = {
                "annotation_id": old.id,
                "revision": old.revision,
                "value": old.value,
                "skipped": old.skipped,
                "source_updated_at": old.source_updated_at,
                "replaced_at": self.stored_at,
            }
        self.updates.append((old.id, new, hist))
        return True

    def _write(self) -> None:
        """Every change in one transaction; annotations missing from the export (every
        field row of them) are marked deleted in Label Studio."""
        a, h = tables.annotations, tables.annotation_history
        gone = [
            (sid, r.id)
            for (sid, _), r in self.existing.items()
            if sid not in self.present and r.deleted_at is None
        ]
        newly_gone = [rid for _, rid in gone]
        self.stats["deleted"] = len({sid for sid, _ in gone})
        stored_at = self.stored_at
        with self.store.begin() as conn:
            if self.inserts:
                conn.execute(a.insert(), self.inserts)
            for k in range(0, len(newly_gone), 5000):
                conn.execute(
                    a.update()
                    .where(a.c.id.in_(newly_gone[k : k + 5000]))
                    .values(deleted_at=stored_at)
                )
            for k in range(0, len(self.restored_sids), 5000):
                conn.execute(
                    a.update()
                    .where(
                        a.c.project == self.scope,
                        a.c.source_id.in_(self.restored_sids[k : k + 5000]),
                    )
                    .values(deleted_at=None)
                )
            for rid, new, hist in self.updates:
                if hist:
                    conn.execute(h.insert().values(**hist))
                conn.execute(a.update().where(a.c.id == rid).values(**new))
            record_violations(conn, self.scope, self.client.url, self.violations, stored_at)
            if self.exposures:
                _upsert_exposures(conn, self.exposures, stored_at)


# -- a system's units: the same store-backed pull for every project kind ----------------------
@dataclass(frozen=True)
class UnitAnnotation:
    """One annotation of a unit as the store holds it after a pull (deleted ones left out)."""

    key: str
    item_id: int
    annotator: str
    values: dict[str, Any]
    skipped: bool
    source_id: str
    ls_task_id: int | None
    ls_annotation_id: int | None
    annotated_at: datetime | None


@dataclass
class UnitPull:
    """``pull_units``: the reconciliation report and every current annotation of the project
    (oldest first: by ``annotated_at``, then annotation id)."""

    report: PullReport
    annotations: list[UnitAnnotation]

    def of(self, key: str, *, submitted: bool = True) -> list[UnitAnnotation]:
        """A unit's annotations, oldest first (``submitted``: skips left out)."""
        return [a for a in self.annotations if a.key == key and not (submitted and a.skipped)]

    def changes(self) -> dict[str, Any]:
        """What the reconciliation found that a caller should report (empty when nothing):
        annotations marked deleted or restored, foreign tasks, missing projects, problems."""
        r = self.report
        out: dict[str, Any] = {}
        if r.deleted:
            out["deleted"] = r.deleted
        if r.restored:
            out["restored"] = r.restored
        if r.foreign_tasks:
            out["foreign_tasks"] = r.foreign_tasks
        if r.missing_projects:
            out["missing_projects"] = r.missing_projects
        if r.problems:
            out["problems"] = r.problems
        return out


def pull_units(
    store: Store,
    client: LSClient,
    kind: str | ProjectKind,
    context: Any,
    *,
    scope: Scope,
    slot: str,
    cohort: str = "",
) -> UnitPull:
    """Pull the kind's project in (scope, slot, cohort) on this server into the store, as
    the loop pulls its own: annotations read back by the kind, one row per value, history of
    edits, deletions marked, foreign tasks skipped and listed, exposures recorded with what
    each task showed. A project deleted in Label Studio is reported; what was pulled from it
    earlier is returned as it was."""
    row = ls_project_row(store, client.url, scope.name, slot, cohort)
    if row is None:
        raise TruthlineError(
            f"nothing was pushed for {slot!r}{f' [{cohort}]' if cohort else ''} of "
            f"{scope.source} to {client.url}; push it first"
        )
    k = get_kind(kind)
    rep = PullReport()
    try:
        tasks: list[dict] | None = client.snapshot_export(int(row.ls_project_id))
    except LabelStudioError as exc:
        if exc.status != 404:
            raise
        tasks = None
        rep.missing_projects.append(
            {"ls_project_id": row.ls_project_id, "arm": row.arm, "title": row.title}
        )
        rep.problems.append(
            f"Label Studio project {row.ls_project_id} ({row.title!r}) no longer exists on "
            f"{client.url}; its annotations stay in the store as last pulled"
        )
    if tasks is not None:
        users: dict[int, str] = {}
        if any(
            isinstance(a.get("completed_by"), int) for t in tasks for a in t.get("annotations", [])
        ):
            users = client.users()
        stats = _ProjectPull(
            store, scope.name, context, client, row, users, rep, kind=k, trust_task_data=False
        ).run(tasks)
        rep.projects.append(
            {"ls_project_id": row.ls_project_id, "arm": row.arm, "cohort": row.cohort} | stats
        )
    return UnitPull(rep, stored_annotations(store, client.url, scope, int(row.ls_project_id)))


def stored_annotations(
    store: Store, server_url: str, scope: Scope, ls_project_id: int
) -> list[UnitAnnotation]:
    """Every annotation of one pushed project of ``scope`` in the store (deleted ones left
    out), its values gathered from its rows, oldest first."""
    a, it = tables.annotations, tables.items
    prefix = f"ls:{ls_project_id}:"
    suffix = f"@{urlsplit(server_url).netloc}"
    with store.begin() as conn:
        rows = conn.execute(
            select(a, it.c.key)
            .select_from(a.join(it, a.c.item_id == it.c.id))
            .where(
                a.c.project == scope.name,
                a.c.ls_project_id == ls_project_id,
                a.c.deleted_at.is_(None),
                a.c.source_id.like(f"{prefix}%{suffix}"),
            )
        ).all()
    by: dict[str, dict[str, Any]] = {}
    for r in rows:
        if not (r.source_id.startswith(prefix) and r.source_id.endswith(suffix)):
            continue
        rec = by.setdefault(
            r.source_id,
            {
                "key": r.key,
                "item_id": int(r.item_id),
                "annotator": r.annotator,
                "values": {},
                "skipped": bool(r.skipped),
                "source_id": r.source_id,
                "ls_task_id": r.ls_task_id,
                "ls_annotation_id": r.ls_annotation_id,
                "annotated_at": r.annotated_at,
            },
        )
        rec["values"][r.field_path] = r.value
    out = [UnitAnnotation(**v) for v in by.values()]

    def order(x: UnitAnnotation) -> tuple[str, int]:
        return (x.annotated_at.isoformat() if x.annotated_at else "", x.ls_annotation_id or 0)

    return sorted(out, key=order)
