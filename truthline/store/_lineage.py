"""One value's lineage: everything the store knows about one item's field, in one result.

The pieces live in separate tables (predictions, exposures, annotations and their history,
the audit queue, gold per snapshot, benchmark run results); ``lineage`` joins them for one
item and, optionally, one field path, so a reader can follow a value from the model's
prefill through who saw it, each edit, the review and gold to each model's score on it.
It reads rows only and computes no metric, so it lives with the store (every stage may
import it).

Field paths: ``worker_count`` (a top-level field), ``workers.action`` (a subfield of every
entity) or ``workers[P1].action`` (one entity's, as gold and benchmark decisions name it).
Annotations and predictions are stored per top-level field; the value shown for a finer
path is read out of the top-level value.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from truthline.errors import TruthlineError
from truthline.store import _tables as t

_PATH = re.compile(r"^(?P<head>[^.\[]+)(?:\[(?P<eid>[^\]]*)\])?(?:\.(?P<sub>.+))?$")


@dataclass(frozen=True)
class PredictionStep:
    """A prefill prediction of the item (the value an anchored annotator may be shown)."""

    prediction_id: int
    model_version: str
    response_id: int | None
    status: str
    value: Any
    simulated: bool
    created_at: datetime | None


@dataclass(frozen=True)
class ExposureStep:
    """What one annotator was shown for the item: a prediction (anchored) or none (blind)."""

    annotator: str
    arm: str
    prediction_id: int | None
    model_version: str | None
    ls_project_id: int | None
    task_url: str | None
    shown: Any
    at: datetime | None


@dataclass(frozen=True)
class Edit:
    """An earlier value of an annotation, replaced by a later pull (oldest first)."""

    revision: int
    value: Any
    skipped: bool
    source_updated_at: datetime | None
    replaced_at: datetime | None


@dataclass(frozen=True)
class AnnotationStep:
    """One annotation of the field (tier 1 annotator or tier 2 expert), its current value and
    the values it had before (``edits``); ``deleted_at`` set: deleted at its source."""

    annotation_id: int
    annotator: str
    arm: str
    tier: int
    field_path: str
    value: Any
    skipped: bool
    kept: bool | None
    origin: str | None
    source: str
    source_id: str
    revision: int
    shown_prediction_id: int | None
    task_url: str | None
    annotated_at: datetime | None
    stored_at: datetime | None
    deleted_at: datetime | None
    edits: tuple[Edit, ...] = ()


@dataclass(frozen=True)
class ReviewStep:
    """Work the audit handed back for the field: adjudication, requeue or expert review."""

    kind: str
    field_path: str
    status: str
    reason: str
    priority: float
    snapshot: str | None
    created_at: datetime | None


@dataclass(frozen=True)
class GoldStep:
    """The gold value of one path in one snapshot, with how it was decided and from whom."""

    snapshot: str
    snapshot_at: datetime | None
    latest: bool
    field_path: str
    value: Any
    provenance: str
    sources: tuple[Any, ...]


@dataclass(frozen=True)
class ScoreStep:
    """One benchmark run entry's answer on one gold decision and its score."""

    run_id: str
    model: str
    variant: str
    condition: str
    status: str
    path: str
    gold: Any
    pred: Any
    correct: bool | None
    credit: float | None
    response_id: int | None


@dataclass(frozen=True)
class Lineage:
    """Everything the store holds about one item's field (all fields when ``field`` is None)."""

    project: str
    item_id: int
    key: str
    field: str | None
    predictions: tuple[PredictionStep, ...] = ()
    exposures: tuple[ExposureStep, ...] = ()
    annotations: tuple[AnnotationStep, ...] = ()
    reviews: tuple[ReviewStep, ...] = ()
    gold: tuple[GoldStep, ...] = ()
    scores: tuple[ScoreStep, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (times as ISO strings)."""
        return _plain(asdict(self))


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, datetime):
        return obj.isoformat()
    return obj


def task_url(server_url: str, ls_project_id: int, ls_task_id: int) -> str:
    """The Label Studio address that opens one task in its project's data manager."""
    return f"{server_url.rstrip('/')}/projects/{ls_project_id}/data?task={ls_task_id}"


def _generic(path: str) -> str:
    """``workers[P1].action`` -> ``workers.action``: the path without entity ids."""
    return re.sub(r"\[[^\]]*\]", "", path)


def path_matches(asked: str | None, path: str) -> bool:
    """Whether the stored ``path`` (gold, decision, queue) belongs to the ``asked`` one: the
    same path, the same path without entity ids, or anywhere under an asked top-level field."""
    if asked is None or path == asked or _generic(path) == asked:
        return True
    if "." in asked or "[" in asked:
        return False
    return re.split(r"[.\[]", path, maxsplit=1)[0] == asked


def _entity(ents: list[dict[str, Any]], eid: str) -> dict[str, Any] | None:
    """The entity whose id (a key ending in "id", e.g. ``worker_id``) is ``eid``; failing
    that, the first with any value equal to it."""
    by_id = [e for e in ents if any(str(v) == eid for k, v in e.items() if str(k).endswith("id"))]
    found = by_id or [e for e in ents if eid in {str(v) for v in e.values()}]
    return found[0] if found else None


def value_at(value: Any, path: str | None) -> Any:
    """The part of a top-level field's ``value`` that ``path`` names (the whole value for a
    top-level path; a list of every entity's subfield for ``list.sub``)."""
    m = _PATH.match(path or "")
    if m is None or (m["eid"] is None and m["sub"] is None):
        return value
    if m["eid"] is not None:
        ents = [e for e in value or [] if isinstance(e, dict)] if isinstance(value, list) else []
        ent = _entity(ents, m["eid"])
        if ent is None:
            return None
        return ent.get(m["sub"]) if m["sub"] else ent
    if isinstance(value, list):
        return [e.get(m["sub"]) for e in value if isinstance(e, dict)]
    if isinstance(value, dict):
        return value.get(m["sub"])
    return None


def _item(conn: Any, project: str, key: str) -> Any:
    row = conn.execute(
        select(t.items.c.id, t.items.c.key).where(
            t.items.c.project == project, t.items.c.key == key
        )
    ).first()
    if row is not None:
        return row
    keys = [r[0] for r in conn.execute(select(t.items.c.key).where(t.items.c.project == project))]
    close = difflib.get_close_matches(key, keys, n=5, cutoff=0.5)
    close += [k for k in keys if key in k and k not in close][: 5 - len(close)]
    hint = f"; close matches: {', '.join(close)}" if close else ""
    raise TruthlineError(f"no item {key!r} in project {project!r}{hint}")


def _servers(conn: Any, project: str) -> dict[int, str]:
    """Label Studio project id -> its server (the project's own LS projects)."""
    lp = t.ls_projects
    return {
        int(pid): str(url)
        for pid, url in conn.execute(
            select(lp.c.ls_project_id, lp.c.server_url).where(lp.c.project == project)
        )
    }


def _tasks(conn: Any, item_id: int, servers: dict[int, str]) -> dict[int, str]:
    """Label Studio project id -> the URL of this item's task in it."""
    lt = t.ls_tasks
    out: dict[int, str] = {}
    for pid, url, task in conn.execute(
        select(lt.c.ls_project_id, lt.c.server_url, lt.c.ls_task_id).where(lt.c.item_id == item_id)
    ):
        if servers.get(int(pid)) == url:
            out[int(pid)] = task_url(url, int(pid), int(task))
    return out


def _predictions(conn: Any, project: str, item_id: int, path: str | None) -> list[PredictionStep]:
    p = t.predictions
    rows = conn.execute(
        select(p).where(p.c.project == project, p.c.item_id == item_id).order_by(p.c.id)
    )
    head = path.split(".")[0].split("[")[0] if path else None
    return [
        PredictionStep(
            prediction_id=int(r.id),
            model_version=str(r.model_version),
            response_id=r.response_id,
            status=str(r.status),
            value=(r.values or {}) if head is None else value_at((r.values or {}).get(head), path),
            simulated=bool(r.simulated),
            created_at=r.created_at,
        )
        for r in rows
    ]


def _exposures(conn: Any, project: str, item_id: int, tasks: dict[int, str]) -> list[ExposureStep]:
    e = t.exposures
    rows = conn.execute(
        select(e)
        .where(e.c.project == project, e.c.item_id == item_id)
        .order_by(e.c.created_at, e.c.id)
    )
    return [
        ExposureStep(
            annotator=str(r.annotator),
            arm=str(r.arm),
            prediction_id=r.prediction_id,
            model_version=r.model_version,
            ls_project_id=r.ls_project_id,
            task_url=tasks.get(int(r.ls_project_id)) if r.ls_project_id is not None else None,
            shown=r.shown,
            at=r.created_at,
        )
        for r in rows
    ]


def _annotations(
    conn: Any, project: str, item_id: int, path: str | None, tasks: dict[int, str]
) -> list[AnnotationStep]:
    a, h = t.annotations, t.annotation_history
    head = path.split(".")[0].split("[")[0] if path else None
    stmt = select(a).where(a.c.project == project, a.c.item_id == item_id)
    if head is not None:
        stmt = stmt.where(a.c.field_path == head)
    rows = conn.execute(stmt.order_by(a.c.tier, a.c.annotator, a.c.field_path, a.c.id)).all()
    history: dict[int, list[Edit]] = {}
    ids = [int(r.id) for r in rows]
    for k in range(0, len(ids), 5000):
        for r in conn.execute(
            select(h).where(h.c.annotation_id.in_(ids[k : k + 5000])).order_by(h.c.revision)
        ):
            history.setdefault(int(r.annotation_id), []).append(
                Edit(
                    revision=int(r.revision),
                    value=value_at(r.value, path),
                    skipped=bool(r.skipped),
                    source_updated_at=r.source_updated_at,
                    replaced_at=r.replaced_at,
                )
            )
    return [
        AnnotationStep(
            annotation_id=int(r.id),
            annotator=str(r.annotator),
            arm=str(r.arm),
            tier=int(r.tier),
            field_path=str(r.field_path) if path is None else path,
            value=value_at(r.value, path),
            skipped=bool(r.skipped),
            kept=r.kept,
            origin=r.origin,
            source=str(r.source),
            source_id=str(r.source_id),
            revision=int(r.revision),
            shown_prediction_id=r.shown_prediction_id,
            task_url=tasks.get(int(r.ls_project_id)) if r.ls_project_id is not None else None,
            annotated_at=r.annotated_at,
            stored_at=r.stored_at,
            deleted_at=r.deleted_at,
            edits=tuple(history.get(int(r.id), ())),
        )
        for r in rows
    ]


def _reviews(conn: Any, project: str, item_id: int, path: str | None) -> list[ReviewStep]:
    q = t.audit_queue
    rows = conn.execute(
        select(q).where(q.c.project == project, q.c.item_id == item_id).order_by(q.c.id)
    )
    return [
        ReviewStep(
            kind=str(r.kind),
            field_path=str(r.field_path),
            status=str(r.status),
            reason=str(r.reason),
            priority=float(r.priority),
            snapshot=r.snapshot,
            created_at=r.created_at,
        )
        for r in rows
        if not r.field_path or path_matches(path, str(r.field_path))
    ]


def _gold(conn: Any, project: str, item_id: int, path: str | None) -> list[GoldStep]:
    g, s = t.gold, t.gold_snapshots
    rows = conn.execute(
        select(g, s.c.created_at)
        .select_from(g.join(s, g.c.snapshot == s.c.hash))
        .where(g.c.project == project, g.c.item_id == item_id)
        .order_by(s.c.created_at.desc(), s.c.hash, g.c.field_path)
    ).all()
    from truthline.store._snapshots import resolve_snapshot

    latest = resolve_snapshot(conn, project, None)
    return [
        GoldStep(
            snapshot=str(r.snapshot),
            snapshot_at=r.created_at,
            latest=r.snapshot == latest,
            field_path=str(r.field_path),
            value=r.value,
            provenance=str(r.provenance),
            sources=tuple(r.sources or ()),
        )
        for r in rows
        if path_matches(path, str(r.field_path))
    ]


def _scores(conn: Any, project: str, item_id: int, path: str | None) -> list[ScoreStep]:
    rr, runs = t.run_results, t.runs
    rows = conn.execute(
        select(rr, runs.c.created_at)
        .select_from(rr.join(runs, rr.c.run_id == runs.c.id))
        .where(runs.c.project == project, rr.c.item_id == item_id)
        .order_by(runs.c.created_at, rr.c.run_id, rr.c.model, rr.c.variant, rr.c.condition)
    ).all()
    out: list[ScoreStep] = []
    for r in rows:
        for d in (r.scores or {}).get("decisions", []):
            if not path_matches(path, str(d.get("path", ""))):
                continue
            out.append(
                ScoreStep(
                    run_id=str(r.run_id),
                    model=str(r.model),
                    variant=str(r.variant),
                    condition=str(r.condition),
                    status=str(r.status),
                    path=str(d.get("path", "")),
                    gold=d.get("gold"),
                    pred=d.get("pred"),
                    correct=d.get("correct"),
                    credit=d.get("credit"),
                    response_id=r.response_id,
                )
            )
    return out


def lineage(store: Any, project: str, key: str, field_path: str | None = None) -> Lineage:
    """The lineage of item ``key``'s ``field_path`` (every field when None) in ``project``.
    An unknown key raises ``TruthlineError`` naming the closest keys."""
    with store.begin() as conn:
        item = _item(conn, project, key)
        iid = int(item.id)
        tasks = _tasks(conn, iid, _servers(conn, project))
        return Lineage(
            project=project,
            item_id=iid,
            key=str(item.key),
            field=field_path,
            predictions=tuple(_predictions(conn, project, iid, field_path)),
            exposures=tuple(_exposures(conn, project, iid, tasks)),
            annotations=tuple(_annotations(conn, project, iid, field_path, tasks)),
            reviews=tuple(_reviews(conn, project, iid, field_path)),
            gold=tuple(_gold(conn, project, iid, field_path)),
            scores=tuple(_scores(conn, project, iid, field_path)),
        )


def last_pull(store: Any, project: str) -> datetime | None:
    """When a Label Studio pull last stored a change for ``project`` (a new or edited
    annotation, or one found deleted); None when nothing was ever pulled. A pull that
    changed nothing leaves the data as of this time, so agreement computed now is the
    agreement as of the last pull."""
    from sqlalchemy import func

    a, h = t.annotations, t.annotation_history
    mine = (a.c.project == project) & (a.c.source == "label_studio")
    with store.begin() as conn:
        times = [
            conn.execute(select(func.max(a.c.stored_at)).where(mine)).scalar_one(),
            conn.execute(select(func.max(a.c.deleted_at)).where(mine)).scalar_one(),
            conn.execute(
                select(func.max(h.c.replaced_at))
                .select_from(h.join(a, h.c.annotation_id == a.c.id))
                .where(mine)
            ).scalar_one(),
        ]
    got = [x for x in times if x is not None]
    return max(got) if got else None


def item_task_urls(store: Any, project: str) -> dict[tuple[int, str], str]:
    """(item id, arm) -> the URL of the item's Label Studio task in that arm's project."""
    lp, lt = t.ls_projects, t.ls_tasks
    with store.begin() as conn:
        rows = conn.execute(
            select(lt.c.item_id, lp.c.arm, lt.c.server_url, lt.c.ls_project_id, lt.c.ls_task_id)
            .select_from(
                lt.join(
                    lp,
                    (lt.c.ls_project_id == lp.c.ls_project_id)
                    & (lt.c.server_url == lp.c.server_url),
                )
            )
            .where(lp.c.project == project)
            .order_by(lt.c.id)
        ).all()
    out: dict[tuple[int, str], str] = {}
    for item, arm, url, pid, task in rows:
        out.setdefault((int(item), str(arm)), task_url(str(url), int(pid), int(task)))
    return out
