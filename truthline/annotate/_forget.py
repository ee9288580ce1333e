"""`annotate forget-project`: remove the store's records of a Label Studio project that is gone.

A project deleted in Label Studio keeps its rows in the store: pull reports it on every run
and push refuses its arm (the recorded project no longer exists). Forgetting it removes the
``ls_projects`` row and its ``ls_tasks`` (so push creates a fresh project for that arm and
cohort). Its pulled annotations are human work and are never removed silently: when it has
any, the caller must choose ``keep`` (they stay, counted as before) or ``delete`` (their rows,
edit history and exposure violations go too). Exposures, what each annotator was shown, stay
either way: they remain facts the blindness checks rely on.

Everything is counted and removed in one transaction; ``dry_run`` counts only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from sqlalchemy import Connection, delete, func, select

from truthline.annotate._client import LabelStudioError, LSClient
from truthline.errors import TruthlineError
from truthline.store import Store, tables

AnnotationChoice = Literal["keep", "delete"]


@dataclass(frozen=True)
class ForgetReport:
    """What forgetting a Label Studio project removed (or, dry run, would remove)."""

    project: str
    server_url: str
    ls_project_id: int
    arm: str
    cohort: str
    title: str
    exists_on_server: bool
    tasks: int
    """``ls_tasks`` rows removed."""
    annotations: int
    """Annotations pulled from the project (each has one row per field)."""
    annotation_rows: int
    history_rows: int
    violations: int
    annotators: tuple[str, ...]
    annotations_action: Literal["none", "keep", "delete"]
    exposures_kept: int
    dry_run: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def project_exists(client: LSClient, ls_project_id: int) -> bool:
    """Whether the server still has the project (404: gone; other errors propagate)."""
    try:
        client.get(f"/api/projects/{ls_project_id}")
    except LabelStudioError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def recorded_projects(store: Store, project: str, server_url: str) -> list[Any]:
    """The ``ls_projects`` rows of ``project`` on ``server_url``, by Label Studio id."""
    lp = tables.ls_projects
    with store.begin() as conn:
        return list(
            conn.execute(
                select(lp)
                .where(lp.c.project == project, lp.c.server_url == server_url)
                .order_by(lp.c.ls_project_id)
            )
        )


def _annotation_ids(conn: Connection, project: str, server_url: str, pid: int) -> list[Any]:
    """Rows (id, source_id, annotator) of the annotations pulled from project ``pid`` on the
    server: their source ids are ``ls:<pid>:<annotation>@<host:port>`` (as pull writes them)."""
    a = tables.annotations
    prefix, suffix = f"ls:{pid}:", f"@{urlsplit(server_url).netloc}"
    rows = conn.execute(
        select(a.c.id, a.c.source_id, a.c.annotator).where(
            a.c.project == project, a.c.source_id.like(f"{prefix}%{suffix}")
        )
    ).all()
    # LIKE's '_' is a wildcard: keep exactly this project on this server
    return [r for r in rows if r.source_id.startswith(prefix) and r.source_id.endswith(suffix)]


def _count(conn: Connection, table: Any, *where: Any) -> int:
    return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def forget_project(
    store: Store,
    project: str,
    client: LSClient,
    ls_project_id: int,
    *,
    annotations: AnnotationChoice | None = None,
    force: bool = False,
    dry_run: bool = False,
) -> ForgetReport:
    """Remove the store's records of Label Studio project ``ls_project_id`` on the client's
    server (see the module docstring); refused while the server still has it unless
    ``force``, and refused when it has annotations and ``annotations`` is not given."""
    url, pid = client.url, int(ls_project_id)
    lp, lt, a, h = (
        tables.ls_projects,
        tables.ls_tasks,
        tables.annotations,
        tables.annotation_history,
    )
    ev, ex = tables.exposure_violations, tables.exposures
    known = recorded_projects(store, project, url)
    row = next((r for r in known if int(r.ls_project_id) == pid), None)
    if row is None:
        have = ", ".join(f"{r.ls_project_id} ({r.arm})" for r in known) or "none"
        raise TruthlineError(
            f"the store records no Label Studio project {pid} of project {project!r} on {url} "
            f"(recorded there: {have}); nothing to forget"
        )
    exists = project_exists(client, pid)
    if exists and not force:
        raise TruthlineError(
            f"Label Studio project {pid} ({row.title!r}, {row.arm} arm) still exists on {url}; "
            "delete it there first, or pass --force to forget it anyway (its tasks and "
            "annotations there are then never pulled again)"
        )
    with store.begin() as conn:
        anns = _annotation_ids(conn, project, url, pid)
        ann_ids = [r.id for r in anns]
        n_ann = len({r.source_id for r in anns})
        if n_ann and annotations is None:
            raise TruthlineError(
                f"Label Studio project {pid} ({row.arm} arm) has {n_ann} pulled annotations "
                f"({len({r.annotator for r in anns})} annotators) in the store; pass "
                "--keep-annotations to keep them as labels, or --delete-annotations to remove "
                "them with the project (see --dry-run)"
            )
        history = sum(
            _count(conn, h, h.c.annotation_id.in_(ann_ids[k : k + 5000]))
            for k in range(0, len(ann_ids), 5000)
        )
        scope = (ev.c.project == project, ev.c.server_url == url, ev.c.ls_project_id == pid)
        action: Literal["none", "keep", "delete"] = annotations if n_ann and annotations else "none"
        report = ForgetReport(
            project=project,
            server_url=url,
            ls_project_id=pid,
            arm=str(row.arm),
            cohort=str(row.cohort),
            title=str(row.title),
            exists_on_server=exists,
            tasks=_count(conn, lt, lt.c.server_url == url, lt.c.ls_project_id == pid),
            annotations=n_ann,
            annotation_rows=len(ann_ids),
            history_rows=history,
            violations=_count(conn, ev, *scope),
            annotators=tuple(sorted({r.annotator for r in anns})),
            annotations_action=action,
            exposures_kept=_count(conn, ex, ex.c.project == project, ex.c.ls_project_id == pid),
            dry_run=dry_run,
        )
        if dry_run:
            return report
        if action == "delete":
            for k in range(0, len(ann_ids), 5000):
                chunk = ann_ids[k : k + 5000]
                conn.execute(delete(h).where(h.c.annotation_id.in_(chunk)))
                conn.execute(delete(a).where(a.c.id.in_(chunk)))
            conn.execute(delete(ev).where(*scope))
        conn.execute(delete(lt).where(lt.c.server_url == url, lt.c.ls_project_id == pid))
        conn.execute(delete(lp).where(lp.c.id == row.id))
    return report


def forget_client(
    ws: Any, project: str, ls_project_id: int, *, url: str | None, blind: bool
) -> LSClient:
    """The client of the server the project is recorded on: ``url`` (token in
    LABEL_STUDIO_API_KEY), the blind arm's instance (``blind``), else whichever of the
    workspace's instances records it (both: the caller must say which)."""
    from truthline.annotate._blind import blind_target, has_blind_instance
    from truthline.annotate._local import target

    if url is not None:
        if blind:
            raise TruthlineError("give --url or --blind-instance, not both")
        return target(ws, url=url).client
    main = target(ws)
    if blind or not has_blind_instance(ws):
        return blind_target(ws, main).client if blind else main.client
    other = blind_target(ws, main).client
    on = [
        c
        for c in (main.client, other)
        if any(
            int(r.ls_project_id) == ls_project_id
            for r in recorded_projects(ws.store, project, c.url)
        )
    ]
    if len(on) > 1:
        raise TruthlineError(
            f"Label Studio project {ls_project_id} is recorded on both the workspace's instance "
            f"({main.client.url}) and the blind arm's ({other.url}); pass --blind-instance for "
            f"the blind arm's, or --url {main.client.url} for the other"
        )
    return on[0] if on else main.client


def describe(rep: ForgetReport) -> list[str]:
    """The report as lines for the terminal: what went (or would go) and what stays."""
    verb = "would remove" if rep.dry_run else "removed"
    head = (
        f"Label Studio project {rep.ls_project_id} ({rep.title!r}, {rep.arm} arm"
        + (f", cohort {rep.cohort}" if rep.cohort else "")
        + f") on {rep.server_url}"
        + (" (still on the server: --force)" if rep.exists_on_server else " (gone from the server)")
    )
    lines = [head, f"{verb}: its project record and {rep.tasks} task records"]
    if rep.annotations:
        who = ", ".join(rep.annotators[:10]) + (" ..." if len(rep.annotators) > 10 else "")
        what = (
            f"{rep.annotations} annotations ({rep.annotation_rows} field rows, "
            f"{rep.history_rows} earlier revisions) by {len(rep.annotators)} annotators ({who})"
        )
        if rep.annotations_action == "delete":
            lines.append(f"{verb}: {what}, and {rep.violations} exposure violations")
        else:
            lines.append(f"kept: {what}, and {rep.violations} exposure violations")
    else:
        lines.append(
            "no annotations were pulled from it"
            + (f"; kept: {rep.violations} exposure violations" if rep.violations else "")
        )
    lines.append(f"kept: {rep.exposures_kept} exposures (what annotators were shown)")
    if rep.dry_run:
        lines.append("dry run: nothing was changed")
    return lines
