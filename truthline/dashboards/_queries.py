"""Read-only store queries behind the Overview page: where each item is in the loop.

These count rows; they compute no metric (metrics come from ``truthline.stats``,
``truthline.audit`` and ``truthline.benchmark``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import distinct, func, select

from truthline.store import Store, resolve_snapshot
from truthline.store import tables as t


def _items_where(conn, stmt) -> int:
    return int(conn.execute(stmt).scalar_one() or 0)


def loop_funnel(store: Store, project: str) -> list[dict[str, Any]]:
    """One row per loop stage: how many distinct items reached it (``stage``, ``detail``, ``items``)."""
    rows: list[dict[str, Any]] = []

    def add(stage: str, detail: str, n: int) -> None:
        rows.append({"stage": stage, "detail": detail, "items": int(n)})

    with store.begin() as conn:
        add(
            "imported",
            "all",
            _items_where(conn, select(func.count()).where(t.items.c.project == project)),
        )
        p = t.predictions
        for status, n in conn.execute(
            select(p.c.status, func.count(distinct(p.c.item_id)))
            .where(p.c.project == project)
            .group_by(p.c.status)
            .order_by(p.c.status)
        ):
            add("prefilled", status, n)
        lp, lt = t.ls_projects, t.ls_tasks
        pushed = conn.execute(
            select(lp.c.arm, func.count(distinct(lt.c.item_id)))
            .select_from(
                lt.join(
                    lp,
                    (lt.c.ls_project_id == lp.c.ls_project_id)
                    & (lt.c.server_url == lp.c.server_url),
                )
            )
            .where(lp.c.project == project)
            .group_by(lp.c.arm)
            .order_by(lp.c.arm)
        ).all()
        for arm, n in pushed:
            add("pushed", arm, n)
        if not pushed:  # arms assigned but nothing pushed yet
            aa = t.arm_assignments
            for arm, n in conn.execute(
                select(aa.c.arm, func.count())
                .where(aa.c.project == project)
                .group_by(aa.c.arm)
                .order_by(aa.c.arm)
            ):
                add("assigned", arm, n)
        a = t.annotations
        for arm, n in conn.execute(
            select(a.c.arm, func.count(distinct(a.c.item_id)))
            .where(
                a.c.project == project,
                a.c.tier == 1,
                a.c.arm != "review",
                a.c.deleted_at.is_(None),
            )
            .group_by(a.c.arm)
            .order_by(a.c.arm)
        ):
            add("annotated", arm, n)
        add(
            "reviewed",
            "expert (tier 2)",
            _items_where(
                conn,
                select(func.count(distinct(a.c.item_id))).where(
                    a.c.project == project,
                    (a.c.tier == 2) | (a.c.arm == "review"),
                    a.c.deleted_at.is_(None),
                ),
            ),
        )
        snap = resolve_snapshot(conn, project, None)  # the one "latest gold" rule
        gold_items = 0
        if snap:
            gold_items = _items_where(
                conn,
                select(func.count(distinct(t.gold.c.item_id))).where(t.gold.c.snapshot == snap),
            )
        add("in gold", f"snapshot {snap[:10]}" if snap else "no snapshot", gold_items)
        rr, runs = t.run_results, t.runs
        add(
            "benchmarked",
            "any run",
            _items_where(
                conn,
                select(func.count(distinct(rr.c.item_id)))
                .select_from(rr.join(runs, rr.c.run_id == runs.c.id))
                .where(runs.c.project == project),
            ),
        )
    return rows


def item_keys(store: Store, project: str) -> list[str]:
    """The project's item keys in import order (what an item picker lists)."""
    with store.begin() as conn:
        return list(
            conn.execute(
                select(t.items.c.key).where(t.items.c.project == project).order_by(t.items.c.id)
            ).scalars()
        )


def model_costs(store: Store, project: str) -> list[dict[str, Any]]:
    """Model calls and their cost so far, per purpose and model alias."""
    r = t.responses
    with store.begin() as conn:
        rows = conn.execute(
            select(
                r.c.purpose,
                r.c.model_alias,
                r.c.simulated,
                func.count(),
                func.coalesce(func.sum(r.c.tokens_in), 0),
                func.coalesce(func.sum(r.c.tokens_out), 0),
                func.coalesce(func.sum(r.c.cost_usd), 0.0),
            )
            .where(r.c.project == project)
            .group_by(r.c.purpose, r.c.model_alias, r.c.simulated)
            .order_by(r.c.purpose, r.c.model_alias)
        ).all()
    return [
        {
            "purpose": purpose,
            "model": alias,
            "simulated": bool(sim),
            "calls": int(n),
            "tokens_in": int(tin),
            "tokens_out": int(tout),
            "cost_usd": round(float(cost), 6),
        }
        for purpose, alias, sim, n, tin, tout, cost in rows
    ]


def label_studio_links(store: Store, project: str) -> list[dict[str, Any]]:
    """Label Studio projects of this project, with the URL that opens each."""
    lp = t.ls_projects
    with store.begin() as conn:
        rows = conn.execute(
            select(lp.c.arm, lp.c.cohort, lp.c.title, lp.c.server_url, lp.c.ls_project_id)
            .where(lp.c.project == project)
            .order_by(lp.c.arm, lp.c.cohort)
        ).all()
    return [
        {
            "arm": arm,
            "cohort": cohort,
            "title": title,
            "url": f"{server.rstrip('/')}/projects/{pid}/data",
        }
        for arm, cohort, title, server, pid in rows
    ]


def data_stamp(store: Store, project: str) -> tuple[Any, ...]:
    """A cheap fingerprint of the project's data: caches are keyed on it, so new rows show up.

    SQLite: the database file's and its write-ahead log's size and mtime (every commit
    changes one of them; a stat, not 8 scans of tables that hold millions of rows at 100k
    items). Elsewhere: each table's row count and newest id/time for the project."""
    stamp = _sqlite_file_stamp(store)
    if stamp is not None:
        return stamp
    with store.begin() as conn:
        rows = [
            conn.execute(select(func.count(), func.max(col)).where(where)).one()
            for col, where in (
                (t.items.c.id, t.items.c.project == project),
                (t.responses.c.id, t.responses.c.project == project),
                (t.predictions.c.id, t.predictions.c.project == project),
                (t.annotations.c.stored_at, t.annotations.c.project == project),
                # a deletion at the source sets deleted_at: it must invalidate the caches too
                (t.annotations.c.deleted_at, t.annotations.c.project == project),
                (t.gold_snapshots.c.created_at, t.gold_snapshots.c.project == project),
                (t.runs.c.updated_at, t.runs.c.project == project),
                (t.exclusions.c.id, t.exclusions.c.project == project),
            )
        ]
    return tuple((int(n), str(m)) for n, m in rows)


def _sqlite_file_stamp(store: Store) -> tuple[Any, ...] | None:
    """(size, mtime) of a SQLite store's file and -wal file, and the WAL header (its salts
    change when a checkpoint restarts the log, which keeps its size); None elsewhere."""
    url = store.engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    db = Path(url.database)
    out: list[Any] = []
    for f in (db, db.with_name(db.name + "-wal")):
        try:
            st = f.stat()
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns))
    if out[0] is None:
        return None
    try:
        with db.with_name(db.name + "-wal").open("rb") as fh:
            out.append(fh.read(32))
    except OSError:
        out.append(b"")
    return ("sqlite-file", *out)
