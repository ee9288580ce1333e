"""Prefill: one model answer per item through the model layer, one prediction row each.

A prediction holds the normalized top-level values (``predictions.values``), the model
alias as ``model_version``, the outcome status and the simulated flag, linked to its
``responses`` row. Reruns ask nothing twice (the model layer's cache) and rewrite the
same prediction rows, so a crash between the two writes heals on the next run. A
prediction already shown to an annotator is never rewritten: a different answer becomes
version ``alias@v2``, ``alias@v3``, ... (see ``PredictionWriter``). Items another live
run has claimed are left to it (or waited for, ``wait_claimed``): no answer is paid twice.
An answer stored before (by an earlier prefill, or a byte-identical benchmark request) is
reused and counted so; ``fresh`` asks again (``fresh_runs``: a rerun resumes that fresh run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, bindparam, func, select

from truthline.errors import TruthlineError
from truthline.models import (
    INFRA_MISSING,
    NOT_RUN,
    Job,
    ModelResult,
    default_settings,
    frozen_heap,
    item_requests,
    parse_model_spec,
    results_summary,
    run_requests,
)
from truthline.models._claims import Claims
from truthline.models._upsert import BulkInsert, insert_ignore
from truthline.store import Store, json_hash, now, tables


@dataclass
class PrefillReport:
    model: str
    simulated: bool
    summary: dict[str, Any]
    predictions_written: int = 0
    stopped: str | None = None
    items: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "simulated": self.simulated,
            "items": self.items,
            "predictions_written": self.predictions_written,
            "stopped": self.stopped,
            **self.summary,
            **self.extra,
        }


def _version_of(alias: str, model_version: str) -> int:
    """1 for ``alias``, N for ``alias@vN`` (a newer prefill after the first was shown)."""
    if model_version == alias:
        return 1
    tail = model_version[len(alias) + 2 :]
    return int(tail) if tail.isdigit() else 0


def version_name(alias: str, n: int) -> str:
    """The ``model_version`` of version ``n`` of a model's predictions."""
    return alias if n <= 1 else f"{alias}@v{n}"


class PredictionWriter:
    """Writes one prediction per answered item (``persist`` of the runner: in its writer
    thread, right after the answers' commit, one group at a time).

    A prediction an annotator was shown (``exposures.prediction_id`` or
    ``annotations.shown_prediction_id``) is immutable: a different answer for that item
    and model becomes a new version, ``alias@v2`` (the next free number), so every lookup
    by (project, item, model_version) still finds what was shown. An unshown prediction
    is replaced in place. Infra-missing answers write none."""

    def __init__(self, project: str, alias: str):
        self.project = project
        self.alias = alias
        self.written = 0
        self.versions: dict[str, int] = {}
        """New versioned rows written, by model_version."""
        self._known: set[int] | None = None
        self._stmts: dict[str, Any] = {}

    def _prepare(self, conn: Connection) -> None:
        """Statements built once, and the items that already have a prediction of this
        model (any version): only those need a look-up per answer."""
        t = tables.predictions
        like = self.alias.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        family = (t.c.model_version == self.alias) | t.c.model_version.like(
            f"{like}@v%", escape="\\"
        )
        self._stmts = {
            "lookup": select(
                t.c.id, t.c.item_id, t.c.model_version, t.c.response_id, t.c["values"], t.c.status
            ).where(
                t.c.project == self.project,
                t.c.item_id.in_(bindparam("ids", expanding=True)),
                family,
            ),
            "insert": BulkInsert(
                conn.dialect,
                t,
                ["project", "item_id", "model_version"],
                returning=["item_id", "model_version"],
            ),
            "update": t.update().where(t.c.id == bindparam("_id")),
        }
        self._known = {
            int(x[0])
            for x in conn.execute(
                select(t.c.item_id).where(t.c.project == self.project, family).distinct()
            )
        }

    def __call__(self, conn: Connection, jobs: list[Job]) -> None:
        if self._known is None:
            self._prepare(conn)
        known = self._known if self._known is not None else set()
        todo: dict[int, ModelResult] = {}
        for job in jobs:
            if job.result.status in (INFRA_MISSING, NOT_RUN):
                continue
            for req in job.requests:
                if req.item_id is not None:
                    todo[int(req.item_id)] = job.result
        if not todo:
            return
        ts = now()
        fresh = [i for i in todo if i not in known]
        rows = [self._row(i, self.alias, todo[i], ts) for i in fresh]
        stored = self._insert(conn, rows)
        known.update(fresh)
        # a concurrent run stored some first: decide those like any item seen before
        seen = [i for i in todo if i not in fresh or (i, self.alias) not in stored]
        if seen:
            self._revise(conn, {i: todo[i] for i in seen}, ts)

    def _row(self, item_id: int, version: str, res: ModelResult, ts: Any) -> dict[str, Any]:
        return dict(
            project=self.project,
            item_id=item_id,
            model_version=version,
            response_id=res.response_id,
            values=res.values,
            status=res.status,
            simulated=res.simulated,
            created_at=ts,
        )

    def _insert(self, conn: Connection, rows: list[dict[str, Any]]) -> set[tuple[int, str]]:
        if not rows:
            return set()
        got = {(int(r[0]), str(r[1])) for r in self._stmts["insert"](conn, rows)}
        self.written += len(got)
        return got

    def _revise(self, conn: Connection, todo: dict[int, ModelResult], ts: Any) -> None:
        """Items with a prediction already: same answer, nothing; shown, a new version;
        unshown, replaced in place."""
        current: dict[int, Any] = {}
        top: dict[int, int] = {}
        for chunk in _chunks(sorted(todo)):
            for r in conn.execute(self._stmts["lookup"], {"ids": chunk}):
                n = _version_of(self.alias, r.model_version)
                if n and n > top.get(r.item_id, 0):
                    top[r.item_id] = n
                    current[r.item_id] = r
        shown = _shown(conn, [r.id for r in current.values()])
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        for item_id, res in todo.items():
            cur = current.get(item_id)
            if cur is None:
                inserts.append(self._row(item_id, self.alias, res, ts))
            elif (cur.response_id, cur._mapping["values"], cur.status) == (
                res.response_id,
                res.values,
                res.status,
            ):
                continue
            elif cur.id in shown:
                ver = version_name(self.alias, top[item_id] + 1)
                inserts.append(self._row(item_id, ver, res, ts))
                self.versions[ver] = self.versions.get(ver, 0) + 1
            else:
                updates.append(
                    dict(
                        _id=cur.id,
                        response_id=res.response_id,
                        values=res.values,
                        status=res.status,
                        simulated=res.simulated,
                    )
                )
        self._insert(conn, inserts)
        if updates:
            conn.execute(self._stmts["update"], updates)
            self.written += len(updates)


def _chunks(ids: list[int], size: int = 500) -> list[list[int]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def _shown(conn: Connection, prediction_ids: list[int]) -> set[int]:
    """Predictions an annotator saw (an exposure or an annotation points at them)."""
    out: set[int] = set()
    e, a = tables.exposures, tables.annotations
    for chunk in _chunks(sorted(prediction_ids)):
        out.update(
            x[0]
            for x in conn.execute(select(e.c.prediction_id).where(e.c.prediction_id.in_(chunk)))
        )
        out.update(
            x[0]
            for x in conn.execute(
                select(a.c.shown_prediction_id).where(a.c.shown_prediction_id.in_(chunk))
            )
        )
    return out


def write_prediction(
    store: Store, project: str, alias: str, res: ModelResult, item_id: int
) -> bool:
    """Write the prediction of one item for one model (the versioning rule of
    ``PredictionWriter``); True when a row was written."""
    w = PredictionWriter(project, alias)
    with store.begin() as conn:
        w(conn, [Job(res, [_ItemRef(item_id)])])
    return w.written > 0


@dataclass
class _ItemRef:
    item_id: int


@frozen_heap  # the items and requests built here stay out of the collector's walks
def prefill(
    store: Store,
    project: Any,
    model: str,
    *,
    limit: int | None = None,
    concurrency: int = 8,
    max_cost: float | None = None,
    retry_missing: bool = False,
    progress: bool = True,
    variant: str | None = None,
    settings: dict[str, Any] | None = None,
    max_failures: int | None = 5,
    wait_claimed: bool = False,
    journal_dir: Path | None = None,
    fresh: bool = False,
) -> PrefillReport:
    """Pre-annotate the project's items (first ``limit`` by id) with one model.

    Answers stored before are reused (``reused`` in the report); ``fresh`` asks again for
    those stored before this fresh run started (a rerun of an unfinished one resumes it).

    Items another live run claimed are left to it (``claimed_elsewhere`` in the report,
    ``stopped`` ``claimed``), or with ``wait_claimed`` waited for; ``journal_dir``: where
    paid answers are journaled (default: the workspace's ``journal/``)."""
    mapped = project.prompts.mapped.get(variant) if variant else None
    if mapped is not None and mapped.answer != "json":
        raise TruthlineError(
            f"prompt variant {variant!r} of project {project.name!r} asks for a free-form "
            f"({mapped.answer}) answer mapped to the fields before scoring; a prefill must "
            "answer the fields themselves: use a structured variant (or none) for prefill"
        )
    spec = parse_model_spec(model)
    items = store.items(project.name)
    if limit:
        items = items[:limit]
    sent = default_settings(project, **(settings or {}))
    reqs = item_requests(project, items, purpose="prefill", settings=sent, template=variant)
    writer = PredictionWriter(project.name, spec.alias)
    scope = json_hash(["prefill", project.name, spec.cache_identity, variant, sent])
    since = _fresh_start(store, scope, f"prefill {project.name} {spec.alias}") if fresh else None
    claims = Claims(
        mode="wait" if wait_claimed else "skip", label=f"prefill {project.name} {spec.alias}"
    )
    results = run_requests(
        store,
        spec,
        reqs,
        concurrency=concurrency,
        max_cost=max_cost,
        retry_missing=retry_missing,
        progress=progress,
        persist=writer,
        max_failures=max_failures,
        claims=claims,
        journal_dir=journal_dir,
        fresh_since=since,
    )
    reasons = [r.reason for r in results if r.status == NOT_RUN]
    if since is not None and not reasons:
        _fresh_done(store, scope)
    # a stop (budget, Ctrl-C) says more than work left to another run
    stopped = next((r for r in reasons if r != "claimed"), reasons[0] if reasons else None)
    simulated = any(r.simulated for r in results) or spec.kind == "simulated"
    extra: dict[str, Any] = {"new_versions": dict(writer.versions)} if writer.versions else {}
    if claims.left:
        extra["claimed_elsewhere"] = {**claims.as_dict(), "message": claims.message()}
    if claims.taken:
        extra["answered_by_another_run"] = claims.taken
    extra["reused"] = sum(r.cached for r in results)
    extra["fresh"] = sum(not r.cached and r.status != NOT_RUN for r in results)
    extra["reused_from"] = _origins(results)
    if since is not None:
        extra["fresh_since"] = since.isoformat()
    return PrefillReport(
        model=spec.alias,
        simulated=simulated,
        summary=results_summary(results),
        predictions_written=writer.written,
        stopped=stopped,
        items=len(items),
        extra=extra,
    )


def _origins(results: list[ModelResult]) -> dict[str, int]:
    """Reused answers by the purpose that stored them (``prefill``, ``benchmark``)."""
    out: dict[str, int] = {}
    for r in results:
        if r.cached:
            out[r.origin or "unknown"] = out.get(r.origin or "unknown", 0) + 1
    return dict(sorted(out.items()))


def _aware(ts: datetime) -> datetime:
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts


def _fresh_start(store: Store, scope: str, label: str) -> datetime:
    """The start of this fresh run: an unfinished one's (its rerun resumes it), else now."""
    t = tables.fresh_runs
    with store.begin() as conn:
        row = conn.execute(
            select(t.c.started_at, t.c.finished_at).where(t.c.scope == scope)
        ).first()
        if row is not None and row.finished_at is None:
            return _aware(row.started_at)
        ts = now()
        if row is None:
            conn.execute(
                insert_ignore(conn.dialect.name, t, ["scope"]).values(
                    scope=scope, label=label[:300], started_at=ts, finished_at=None
                )
            )
        else:
            conn.execute(
                t.update().where(t.c.scope == scope).values(started_at=ts, finished_at=None)
            )
        got = conn.execute(select(t.c.started_at).where(t.c.scope == scope)).scalar_one()
    return _aware(got)


def _fresh_done(store: Store, scope: str) -> None:
    """The fresh run answered everything: the next ``fresh`` starts a new one."""
    t = tables.fresh_runs
    with store.begin() as conn:
        conn.execute(t.update().where(t.c.scope == scope).values(finished_at=now()))


def prefill_status(store: Store, project: str) -> dict[str, Any]:
    """Prefill answers by model and outcome (with reasons), cost, and item coverage.

    ``predictions`` counts the model's first version; ``versions`` every version
    (``alias``, ``alias@v2``, ...: newer answers for items whose prediction was shown)."""
    r, p = tables.responses, tables.predictions
    with store.begin() as conn:
        rows = conn.execute(
            select(
                r.c.model_alias,
                r.c.simulated,
                r.c.status,
                r.c.reason,
                func.count(),
                func.coalesce(func.sum(r.c.cost_usd), 0.0),
                func.coalesce(func.sum(r.c.tokens_in), 0),
                func.coalesce(func.sum(r.c.tokens_out + r.c.tokens_thinking), 0),
            )
            .where(r.c.project == project, r.c.purpose == "prefill")
            .group_by(r.c.model_alias, r.c.simulated, r.c.status, r.c.reason)
        ).all()
        preds: dict[str, int] = dict(
            conn.execute(
                select(p.c.model_version, func.count())
                .where(p.c.project == project)
                .group_by(p.c.model_version)
            ).all()
        )
        n_items = conn.execute(
            select(func.count()).select_from(tables.items).where(tables.items.c.project == project)
        ).scalar_one()
    models: dict[str, dict[str, Any]] = {}
    for alias, sim, status, reason, n, cost, tin, tout in rows:
        m = models.setdefault(
            alias,
            {
                "simulated": bool(sim),
                "by_status": {},
                "by_reason": {},
                "cost_usd": 0.0,
                "tokens_in": 0,
                "tokens_out": 0,
            },
        )
        m["by_status"][status] = m["by_status"].get(status, 0) + n
        if reason:
            m["by_reason"][f"{status}:{reason}"] = n
        m["cost_usd"] = round(m["cost_usd"] + float(cost), 6)
        m["tokens_in"] += int(tin)
        m["tokens_out"] += int(tout)
    for alias, m in models.items():
        versions = {v: n for v, n in preds.items() if v == alias or _version_of(alias, v) > 1}
        m["predictions"] = preds.get(alias, 0)
        m["versions"] = dict(sorted(versions.items(), key=lambda kv: _version_of(alias, kv[0])))
        m["items_without_answer"] = max(0, n_items - sum(m["by_status"].values()))
    return {"project": project, "items": n_items, "models": models}
