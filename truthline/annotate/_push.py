"""Push: items -> Label Studio tasks in separate blind / anchored / review projects.

Label Studio Community has no roles and no per-annotator assignment, so each arm (and each
cohort of annotators, where assignment matters) gets its own project with the same label
config. Predictions go ONLY into anchored projects (inline with the tasks, 500 per request,
``model_version`` the neutral ``PREFILL_LABEL``: annotators never see the model's name, the
store keeps it per task and exposure); the blind project never holds one. Review projects show each tier-1
annotation of an item as a prediction (one per annotator, under a pseudonym such as
"annotator A": ``_pseudonyms``) for a tier-2 expert. Gold-standard items (known answers,
``_gold_standard``) are mixed into blind and anchored queues at ``[audit] gold_standard_rate``.

Idempotent: a task carries our ``item_id`` in its data; before importing, the project's tasks
are listed from the server, so a push interrupted after the server stored a batch (but
before we recorded it) neither duplicates nor loses it. Each batch is recorded as it lands.

Tasks are built by the project's kind (``_kinds``): the loop's own projects are the
``field-schema`` kind. ``push_units`` is the same push for a system's kind (PhysAlign's
passes, verification, adjudication): its units are items of a ``Scope``, its projects and
tasks rows of ``ls_projects`` / ``ls_tasks`` (with what each task shows), and the
exposures of annotators known up front are recorded with each batch.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from sqlalchemy import select

from truthline.annotate._assign import assign_arms
from truthline.annotate._client import LabelStudioError, LSClient
from truthline.annotate._gold_standard import known_answers, mix_in
from truthline.annotate._instructions import PREFILL_LABEL, instructions
from truthline.annotate._kinds import FIELD_SCHEMA, FieldUnit, ProjectKind, Scope, get_kind
from truthline.annotate._media import item_prefix, media_rel, media_url
from truthline.annotate._pseudonyms import pseudonyms
from truthline.annotate._regions import place_entities, shown_entry
from truthline.errors import TruthlineError
from truthline.project import item_layer
from truthline.store import Store, json_hash, now, tables
from truthline.vocab import PUSH_ARMS, Arm

BATCH = 500
FIRST_BATCH = 50
"""The first request's size: the server starts importing after 50 tasks are built, not 500."""
ARMS = PUSH_ARMS  # the arms a push creates (truthline.vocab)


@dataclass
class PushReport:
    arm: str
    cohort: str
    ls_project_id: int
    title: str
    project_url: str
    created: int = 0
    existing: int = 0
    recovered: int = 0
    predictions: int = 0
    skipped_no_prediction: int = 0
    model_version: str | None = None
    seed: int | None = None
    sample_weights: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cohort_name(annotators: list[str] | None) -> str:
    """A stable cohort name for a set of annotator emails ('' = everyone)."""
    if not annotators:
        return ""
    joined = ",".join(sorted(set(annotators)))
    return (
        joined
        if len(joined) <= 120
        else "cohort-" + hashlib.sha256(joined.encode()).hexdigest()[:12]
    )


def ensure_ls_project(
    client: LSClient,
    store: Store,
    project: Any,
    arm: str,
    *,
    cohort: str = "",
    overlap: int = 1,
) -> tuple[int, str]:
    """The Label Studio project of (project, arm, cohort) on this server; created if missing."""
    cfg = get_kind(FIELD_SCHEMA).label_config(project)
    cfg_hash = json_hash(cfg)
    t = tables.ls_projects
    with store.begin() as conn:
        row = conn.execute(
            select(t).where(
                t.c.project == project.name,
                t.c.arm == arm,
                t.c.cohort == cohort,
                t.c.server_url == client.url,
            )
        ).first()
    settings: dict[str, Any] = {
        "maximum_annotations": overlap,
        "show_skip_button": True,
        "show_collab_predictions": arm != "blind",
        "enable_empty_annotation": True,
        "expert_instruction": instructions(project, arm),
        "show_instruction": True,
    }
    if row is not None:
        _require_alive(client, row, "its store records remain")
        patch = dict(settings)
        if row.label_config_hash != cfg_hash:
            patch["label_config"] = cfg
        client.patch(f"/api/projects/{row.ls_project_id}", patch)
        if row.label_config_hash != cfg_hash:
            with store.begin() as conn:
                conn.execute(t.update().where(t.c.id == row.id).values(label_config_hash=cfg_hash))
        return int(row.ls_project_id), str(row.title)
    title = f"{project.name} {arm}" + (f" [{cohort}]" if cohort else "")
    title = title[:50]
    desc = {
        "blind": "BLIND arm: no model output is shown. Label what you see.",
        "anchored": "ANCHORED arm: a pre-annotation is shown; correct anything wrong.",
        "review": "REVIEW (tier-2): each tier-1 annotation is shown as a prediction tab; adjudicate.",
    }[arm]
    created = client.post(
        "/api/projects/",
        {"title": title, "description": desc, "label_config": cfg} | settings,
    )
    with store.begin() as conn:
        conn.execute(
            t.insert().values(
                project=project.name,
                arm=arm,
                cohort=cohort,
                server_url=client.url,
                ls_project_id=int(created["id"]),
                title=title,
                label_config_hash=cfg_hash,
                created_at=now(),
            )
        )
    return int(created["id"]), title


class _Urls:
    """Media URLs relative to the served root (one realpath per item media root, not per file);
    the media server's index computes the same paths (``item_prefix`` / ``media_rel``)."""

    def __init__(self, media_base: str, media_root: Path):
        self.base = media_base
        self.root = Path(os.path.realpath(media_root))
        self._prefix: dict[str, str] = {}

    def __call__(self, item: dict) -> list[str]:
        iroot = item["media_root"]
        if iroot not in self._prefix:
            prefix = item_prefix(self.root, iroot)
            if prefix is None:
                raise self._outside(item, Path(os.path.realpath(iroot)))
            self._prefix[iroot] = prefix
        out = []
        for m in item["media"]:
            rel = media_rel(self._prefix[iroot], m)
            if rel is None:
                raise self._outside(item, Path(iroot) / m)
            out.append(media_url(self.base, rel))
        return out

    def _outside(self, item: dict, where: Path) -> TruthlineError:
        return TruthlineError(
            f"item {item['id']} ({item['key']}): media {where} is outside the served media "
            f"root {self.root}; restart `truthline annotate serve --media-root DIR` with a "
            "folder that contains it"
        )


def _predictions(store: Store, project: str, model_version: str | None) -> tuple[str, dict]:
    """(model version, item id -> prediction row) of parsed predictions."""
    p, r = tables.predictions, tables.responses
    with store.begin() as conn:
        counts = Counter(
            mv
            for (mv,) in conn.execute(
                select(p.c.model_version).where(p.c.project == project, p.c.status == "parsed")
            )
        )
        if not counts:
            raise TruthlineError(
                f"project {project!r} has no parsed predictions to show in the anchored arm; "
                "run `truthline prefill run` first"
            )
        if model_version is None:
            model_version = counts.most_common(1)[0][0]
        elif model_version not in counts:
            raise TruthlineError(
                f"no parsed predictions from model {model_version!r} (have: {', '.join(sorted(counts))})"
            )
        rows = conn.execute(
            select(p.c.id, p.c.item_id, p.c["values"], r.c.prompt_hash)
            .select_from(p.outerjoin(r, p.c.response_id == r.c.id))
            .where(
                p.c.project == project, p.c.model_version == model_version, p.c.status == "parsed"
            )
        ).all()
    return model_version, {row.item_id: row for row in rows}


IN_CHUNK = 500
"""Item ids per ``IN (...)`` of a store read (well under SQLite's bound-parameter limit)."""


def _record(
    store: Store, client: LSClient, ls_pid: int, rows: list[dict], exposures: list[dict]
) -> None:
    """Record confirmed tasks (and exposures) in one transaction: one executemany each.
    ``rows`` are completed in place (they are the caller's throwaway dicts)."""
    ts = now()
    extra = {"ls_project_id": ls_pid, "server_url": client.url, "created_at": ts}
    with store.begin() as conn:
        if rows:
            for r in rows:
                r.update(extra)
            conn.execute(tables.ls_tasks.insert(), rows)
        if exposures:
            _upsert_exposures(conn, exposures, ts)


def _upsert_exposures(conn: Any, exposures: list[dict], ts: Any) -> None:
    """Insert the exposures not yet logged. Only the exposures of these items are read (one
    query per 500 items), not the project's whole log once per batch."""
    e = tables.exposures
    by_project: dict[str, set[int]] = {}
    for x in exposures:
        by_project.setdefault(x["project"], set()).add(x["item_id"])
    have: set[tuple[Any, ...]] = set()
    for project, item_set in by_project.items():
        ids = sorted(item_set)
        for s in range(0, len(ids), IN_CHUNK):
            have.update(
                (r.project, r.item_id, r.annotator, r.arm)
                for r in conn.execute(
                    select(e.c.project, e.c.item_id, e.c.annotator, e.c.arm).where(
                        e.c.project == project, e.c.item_id.in_(ids[s : s + IN_CHUNK])
                    )
                )
            )
    new = [
        x | {"created_at": ts}
        for x in exposures
        if (x["project"], x["item_id"], x["annotator"], x["arm"]) not in have
    ]
    seen: set = set()
    uniq = []
    for x in new:
        k = (x["project"], x["item_id"], x["annotator"], x["arm"])
        if k not in seen:
            seen.add(k)
            uniq.append(x)
    if uniq:
        conn.execute(e.insert(), uniq)


def push(
    store: Store,
    project: Any,
    client: LSClient,
    arm: str,
    *,
    media_base: str,
    media_root: Path,
    annotators: list[str] | None = None,
    overlap: int | None = None,
    split: float | None = None,
    seed: int | None = None,
    model_version: str | None = None,
    sample: int | None = None,
    strategy: str = "random",
    batch: int = BATCH,
    progress: bool = True,
) -> PushReport:
    """Create the arm's Label Studio project if needed and import the tasks it lacks."""
    _check_push_args(arm, overlap, split, sample, strategy, media_base)
    if annotators:
        from truthline.annotate._users import check_emails

        annotators = check_emails(annotators)
    client.whoami()  # unreachable server or bad token: stop before anything is stored
    cohort = cohort_name(annotators)
    if overlap is None:
        overlap = {
            "blind": project.audit.blind_overlap,
            "anchored": project.audit.anchored_overlap,
        }.get(arm, 1)
    items = _task_items(store, project.name)
    if not items:
        raise TruthlineError(f"project {project.name!r} has no items; run `truthline items import`")
    preds: dict[int, Any] = {}
    review_preds: dict[int, list[tuple[str, dict]]] = {}
    seed = project.audit.seed if seed is None else seed
    if arm == "review":
        review_preds = _tier1_values(store, project)
        # the adjudicator sees "annotator A", not an email (the mapping stays in the store)
        names = pseudonyms(store, project.name, {w for v in review_preds.values() for w, _ in v})
        review_preds = {
            i: sorted(((names[w], v) for w, v in anns), key=lambda x: x[0])
            for i, anns in review_preds.items()
        }
        chosen = sorted(review_preds)
    else:
        arms = assign_arms(store, project, split=split, seed=seed)
        chosen = sorted(i for i, a in arms.items() if a == arm and i in items)
        if project.audit.gold_standard_rate > 0:  # known answers mixed in, unmarked
            gold = set(known_answers(store, project.name)) & set(items)
            chosen = mix_in(chosen, gold, project.audit.gold_standard_rate, seed)
    if arm == "anchored":
        model_version, preds = _predictions(store, project.name, model_version)
    ls_pid, title = ensure_ls_project(client, store, project, arm, cohort=cohort, overlap=overlap)
    job = _PushJob(
        store=store,
        project=project,
        client=client,
        arm=arm,
        ls_pid=ls_pid,
        items=items,
        preds=preds,
        review_preds=review_preds,
        annotators=annotators or [],
        model_version=model_version,
        urls=_Urls(media_base, media_root),
        rep=PushReport(
            arm=arm,
            cohort=cohort,
            ls_project_id=ls_pid,
            title=title,
            project_url=f"{client.url}/projects/{ls_pid}/data",
            model_version=model_version if arm == "anchored" else None,
            seed=seed,
        ),
    )
    on_server = job.recover()
    todo = [i for i in chosen if i not in on_server]
    if arm == "anchored":
        job.rep.skipped_no_prediction = sum(1 for i in todo if i not in preds)
        todo = [i for i in todo if i in preds]
    if arm == "review":
        # --sample N is the review project's target size: a rerun tops it up, never adds N more
        want = None if sample is None else max(0, sample - len(on_server))
        if want == 0:
            todo = []
        else:
            todo, job.weights = _sample_review(
                store, project, todo, review_preds, want, strategy, seed
            )
        job.rep.sample_weights = {str(i): w for i, w in job.weights.items()}
    job.send(todo, batch, progress)
    if arm == "anchored" and (job.rep.created or job.rep.existing):
        _show_prefill(client, ls_pid, job.rep)
    return job.rep


def _task_items(store: Store, project: str) -> dict[int, dict[str, Any]]:
    """Item id -> the columns a task is built from, not ``Store.items``' every column: its
    JSON (``sim_truth`` above all) is decoded before the first import can start."""
    t = tables.items
    with store.begin() as conn:
        rows = conn.execute(
            select(t.c.id, t.c.key, t.c.media, t.c.media_root, t.c.meta)
            .where(t.c.project == project)
            .order_by(t.c.id)
        )
        return {int(r.id): dict(r._mapping) for r in rows}


def _check_push_args(
    arm: str,
    overlap: int | None,
    split: float | None,
    sample: int | None,
    strategy: str,
    media_base: str,
) -> None:
    """One clear line per bad option, before anything touches the server or the store."""
    if arm not in ARMS:
        raise TruthlineError(f"unknown arm {arm!r} (use one of {', '.join(ARMS)})")
    if overlap is not None and overlap < 1:
        raise TruthlineError(f"--overlap must be at least 1 (annotations per task), got {overlap}")
    if split is not None and not 0 <= split <= 1:
        raise TruthlineError(f"--split must be between 0 and 1, got {split}")
    if sample is not None and sample < 1:
        raise TruthlineError(f"--sample must be a positive number of items, got {sample}")
    if strategy not in ("random", "risk"):
        raise TruthlineError(f"unknown --strategy {strategy!r} (random or risk)")
    if urlsplit(media_base).scheme not in ("http", "https") or not urlsplit(media_base).hostname:
        raise TruthlineError(
            f"--media-url {media_base!r} is not an http(s) URL annotators' browsers can load "
            "media from (e.g. http://127.0.0.1:8090)"
        )


def _show_prefill(client: LSClient, ls_pid: int, rep: PushReport) -> None:
    """Show the prefill to anchored annotators (under its neutral label)."""
    try:
        client.patch(
            f"/api/projects/{ls_pid}",
            {"show_collab_predictions": True, "model_version": PREFILL_LABEL},
        )
    except LabelStudioError as exc:
        # a project pushed before predictions were labelled neutrally holds none under
        # PREFILL_LABEL (Label Studio refuses the name); it keeps the version it was given
        if exc.status != 400 or rep.created:
            raise


@dataclass
class _PushJob:
    """One arm's push to one Label Studio project: builds task payloads, imports them in
    batches and records every confirmed batch at once (a rerun never re-imports it)."""

    store: Store
    project: Any
    client: LSClient
    arm: str
    ls_pid: int
    items: dict[int, dict[str, Any]]
    preds: dict[int, Any]
    review_preds: dict[int, list[tuple[str, dict]]]
    annotators: list[str]
    model_version: str | None
    urls: _Urls
    rep: PushReport
    weights: dict[int, float] = field(default_factory=dict)
    kind: ProjectKind = field(default_factory=lambda: get_kind(FIELD_SCHEMA))
    placed: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Anchored: item -> what its task shows besides the prediction (where each entity's
    region came from, ``_regions``), recorded with the task and its exposures."""

    def recover(self) -> dict[int, int]:
        """What the server already holds (item -> task id); records tasks of a batch the
        server stored before an interruption cut us off."""
        on_server = self.client.tasks_by_item(self.ls_pid)
        lt = tables.ls_tasks
        with self.store.begin() as conn:
            recorded = {
                r.item_id
                for r in conn.execute(
                    select(lt.c.item_id).where(
                        lt.c.ls_project_id == self.ls_pid, lt.c.server_url == self.client.url
                    )
                )
            }
        recover = [
            {
                "item_id": i,
                "ls_task_id": t,
                "prediction_id": self.preds[i].id if i in self.preds else None,
            }
            for i, t in on_server.items()
            if i not in recorded and i in self.items
        ]
        if recover:
            _record(self.store, self.client, self.ls_pid, recover, [])
        self.rep.recovered = len(recover)
        self.rep.existing = len(on_server)
        return on_server

    def build(self, chunk: list[int]) -> list[dict]:
        payload = []
        for i in chunk:
            it = self.items[i]
            shown: list[tuple[str, dict]] = []
            prediction = None
            if self.arm == "anchored":
                # boxless entities get the detector's person boxes where it found them
                prediction, matches = place_entities(
                    self.project, self.preds[i].values, it.get("meta")
                )
                self.placed[i] = [shown_entry(matches)] if matches else []
                shown = [("", prediction)]
            elif self.arm == "review":
                shown = list(self.review_preds[i])
            layer = item_layer(self.project, it.get("meta"))
            unit = FieldUnit(i, it["key"], self.urls(it), self.arm, shown, prediction, layer)
            payload.append(self.kind.task(self.project, unit))
        return payload

    def record(self, chunk: list[int], resp: dict) -> None:
        ids = resp.get("task_ids") or []
        if len(ids) != len(chunk):
            raise TruthlineError(
                f"Label Studio project {self.ls_pid}: imported {len(chunk)} tasks but got "
                f"{len(ids)} ids back; rerun push to reconcile"
            )
        rows, exps = [], []
        for i, tid in zip(chunk, ids, strict=True):
            pr = self.preds.get(i)
            rows.append(
                {
                    "item_id": i,
                    "ls_task_id": int(tid),
                    "prediction_id": pr.id if pr is not None else None,
                    "sample_weight": self.weights.get(i),
                    "shown": self.placed.get(i) or None,
                }
            )
            for who in self.annotators:
                exps.append(
                    {
                        "project": self.project.name,
                        "item_id": i,
                        "annotator": who,
                        "arm": self.arm,
                        "prediction_id": pr.id if pr is not None else None,
                        "model_version": self.model_version if pr is not None else None,
                        "prompt_hash": pr.prompt_hash if pr is not None else None,
                        "ls_project_id": self.ls_pid,
                        "shown": self.placed.get(i) or None,
                    }
                )
        _record(self.store, self.client, self.ls_pid, rows, exps)
        self.rep.created += len(chunk)
        self.rep.predictions += int(resp.get("prediction_count") or 0)

    def send(self, todo: list[int], batch: int, progress: bool) -> None:
        """Import ``todo`` in batches (the first one small, so the server starts at once)."""
        from rich.progress import Progress

        first = min(batch, FIRST_BATCH) if len(todo) > batch else batch
        chunks = [todo[:first]] + [todo[s : s + batch] for s in range(first, len(todo), batch)]
        chunks = [c for c in chunks if c]
        with (
            Progress(disable=not progress, transient=True) as bar,
            ThreadPoolExecutor(max_workers=1) as pool,
        ):
            task = bar.add_task(f"pushing {self.arm} tasks", total=len(todo))
            # pipelined: the next batch is built while the server imports the current one,
            # and a confirmed batch is recorded while the server imports the next (one request
            # at a time; a batch the server stored but we did not record is ``recover``ed)
            if not chunks:
                return
            path = f"/api/projects/{self.ls_pid}/import"
            fut = pool.submit(self.client.post, path, self.build(chunks[0]), return_task_ids="true")
            for k, chunk in enumerate(chunks):
                nxt = self.build(chunks[k + 1]) if k + 1 < len(chunks) else None
                resp = fut.result()
                if nxt is not None:
                    fut = pool.submit(self.client.post, path, nxt, return_task_ids="true")
                self.record(chunk, resp)
                bar.advance(task, len(chunk))


# -- review ------------------------------------------------------------------------------------
def _tier1_values(store: Store, project: Any) -> dict[int, list[tuple[str, dict]]]:
    """Item id -> [(annotator, top-level values)] of its non-skipped tier-1 annotations."""
    a = tables.annotations
    with store.begin() as conn:
        rows = conn.execute(
            select(a.c.item_id, a.c.annotator, a.c.source_id, a.c.field_path, a.c.value).where(
                a.c.project == project.name,
                a.c.tier == 1,
                a.c.skipped.is_(False),
                a.c.arm.in_((Arm.BLIND, Arm.ANCHORED, Arm.IMPORT)),
            )
        ).all()
    by: dict[int, dict[str, tuple[str, dict]]] = {}
    for r in rows:
        ann = by.setdefault(r.item_id, {}).setdefault(r.source_id, (r.annotator, {}))
        ann[1][r.field_path] = r.value
    return {i: sorted(d.values(), key=lambda x: x[0]) for i, d in by.items()}


def risk_score(project: Any, annotations: list[tuple[str, dict]]) -> float:
    """Share of field comparisons between tier-1 annotators that disagree, plus safety flags."""
    pairs = disagree = 0
    flagged = 0.0
    for name, ft in project.field_types.items():
        vals = [v.get(name) for _, v in annotations]
        if ft.spec.safety and any(v is True for v in vals):
            flagged = 1.0
        for x in range(len(vals)):
            for y in range(x + 1, len(vals)):
                if vals[x] is None and vals[y] is None:
                    continue
                pairs += 1
                disagree += not ft.agree(vals[x], vals[y])
    return 0.1 + (disagree / pairs if pairs else 0.0) + flagged


def _sample_review(
    store: Store,
    project: Any,
    candidates: list[int],
    tier1: dict[int, list[tuple[str, dict]]],
    n: int | None,
    strategy: str,
    seed: int,
) -> tuple[list[int], dict[int, float]]:
    """Sample items for review; weights are inverse inclusion probabilities (unbiased rates).

    random: simple random sample of n (weight N/n). risk: Poisson sampling with inclusion
    probability proportional to ``risk_score`` (capped at 1), weight 1/pi.
    """
    if not candidates:
        return [], {}
    rng = np.random.default_rng(seed)
    n = len(candidates) if n is None else n
    if n <= 0:
        raise TruthlineError("--sample must be a positive number of items")
    if strategy == "random":
        k = min(n, len(candidates))
        pick = sorted(rng.choice(candidates, size=k, replace=False).tolist())
        w = len(candidates) / k
        return pick, {int(i): w for i in pick}
    if strategy != "risk":
        raise TruthlineError(f"unknown --strategy {strategy!r} (random or risk)")
    scores = np.array([risk_score(project, tier1[i]) for i in candidates])
    pi = np.minimum(1.0, n * scores / scores.sum())
    for _ in range(20):  # redistribute the capped mass so the expected size stays n
        capped = pi >= 1.0
        rest = n - capped.sum()
        if rest <= 0 or capped.all():
            break
        new = np.where(capped, 1.0, np.minimum(1.0, rest * scores / scores[~capped].sum()))
        if np.allclose(new, pi):
            break
        pi = new
    take = rng.random(len(candidates)) < pi
    pick = [int(i) for i, t in zip(candidates, take, strict=True) if t]
    return pick, {int(i): float(1.0 / p) for i, p, t in zip(candidates, pi, take, strict=True) if t}


# -- a system's units: the same store-backed push for every project kind ----------------------
@dataclass
class UnitPushReport:
    """What ``push_units`` did: tasks created, units already there, tasks the server held
    that the store had not recorded yet (an interrupted push), and where the project is."""

    ls_project_id: int
    title: str
    project_url: str
    created: int = 0
    existing: int = 0
    recovered: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def ls_project_row(store: Store, server_url: str, scope: str, slot: str, cohort: str = "") -> Any:
    """The ``ls_projects`` row of (scope or project, slot/arm, cohort) on a server, or None."""
    t = tables.ls_projects
    with store.begin() as conn:
        return conn.execute(
            select(t).where(
                t.c.project == scope,
                t.c.arm == slot,
                t.c.cohort == cohort,
                t.c.server_url == server_url,
            )
        ).first()


def ls_project_rows(store: Store, server_url: str, scope: str, slot: str) -> list[Any]:
    """Every ``ls_projects`` row of (scope, slot) on a server (one per cohort), by cohort."""
    t = tables.ls_projects
    with store.begin() as conn:
        return list(
            conn.execute(
                select(t)
                .where(t.c.project == scope, t.c.arm == slot, t.c.server_url == server_url)
                .order_by(t.c.cohort)
            )
        )


def unit_tasks(store: Store, server_url: str, ls_project_id: int) -> dict[str, int]:
    """Unit (item) key -> Label Studio task id of one pushed project, as recorded."""
    lt, it = tables.ls_tasks, tables.items
    with store.begin() as conn:
        return {
            r.key: int(r.ls_task_id)
            for r in conn.execute(
                select(it.c.key, lt.c.ls_task_id)
                .select_from(lt.join(it, lt.c.item_id == it.c.id))
                .where(lt.c.ls_project_id == ls_project_id, lt.c.server_url == server_url)
            )
        }


def _ensure_unit_project(
    client: LSClient,
    store: Store,
    kind: ProjectKind,
    context: Any,
    scope: Scope,
    slot: str,
    cohort: str,
    title: str,
) -> tuple[int, str]:
    """The Label Studio project of (scope, slot, cohort) on this server; created if missing.
    A recorded project deleted on the server is refused (its records stay in the store)."""
    row = ls_project_row(store, client.url, scope.name, slot, cohort)
    if row is not None:
        _require_alive(
            client,
            row,
            f"its records remain in the store ({scope.kind} of {scope.source}, {slot})",
        )
        return int(row.ls_project_id), str(row.title)
    cfg = kind.label_config(context)
    title = title[:50]
    body = {"title": title, "label_config": cfg, "show_skip_button": False}
    created = client.post("/api/projects/", body | kind.settings(context))
    _insert_ls_project(
        store, client.url, scope, slot, cohort, kind.name, int(created["id"]), title, cfg
    )
    return int(created["id"]), title


def _require_alive(client: Any, row: Any, remains: str) -> None:
    """Refuse a recorded Label Studio project that was deleted on the server (one line naming
    it and what is kept); other server errors propagate."""
    try:
        client.get(f"/api/projects/{row.ls_project_id}")
    except LabelStudioError as exc:
        if exc.status == 404:
            raise TruthlineError(
                f"Label Studio project {row.ls_project_id} ({row.title}) was deleted on "
                f"{client.url}; {remains}. Remove its records with `truthline annotate "
                f"forget-project {row.ls_project_id}` or push to another server"
            ) from None
        raise


def _insert_ls_project(
    store: Store,
    server_url: str,
    scope: Scope,
    slot: str,
    cohort: str,
    kind: str,
    ls_project_id: int,
    title: str,
    cfg: str | None,
) -> None:
    with store.begin() as conn:
        conn.execute(
            tables.ls_projects.insert().values(
                project=scope.name,
                arm=slot,
                cohort=cohort,
                server_url=server_url,
                ls_project_id=ls_project_id,
                title=title,
                label_config_hash=json_hash(cfg) if cfg is not None else None,
                kind=kind,
                created_at=now(),
            )
        )


def push_units(
    store: Store,
    client: LSClient,
    kind: str | ProjectKind,
    context: Any,
    units: dict[str, Any],
    *,
    scope: Scope,
    slot: str,
    title: str,
    cohort: str = "",
    annotators: list[str] | None = None,
    batch: int = 100,
) -> UnitPushReport:
    """Push a system's units (key -> unit) as tasks of the kind's project in ``slot``.

    The units become items of ``scope``; the project is created once per (scope, slot,
    cohort, server); a unit already recorded is never imported again, and tasks the server
    stored before the store recorded them (an interrupted push) are found by their
    ``item_id`` and recorded. Each batch is recorded as soon as the server confirms it, with
    what the task shows (``kind.shown``) and, for ``annotators`` known up front (a cohort),
    their exposures.
    """
    k = get_kind(kind)
    tasks = {key: k.task(context, u) for key, u in units.items()}
    ids = scope.items(store, {key: json_hash(t) for key, t in tasks.items()})
    for key, t in tasks.items():
        t["data"] = {"item_id": ids[key]} | dict(t.get("data") or {})
    k.check(context, tasks)
    shown = {key: k.shown(context, key, u) for key, u in units.items()}
    ls_pid, title = _ensure_unit_project(client, store, k, context, scope, slot, cohort, title)
    rep = UnitPushReport(
        ls_project_id=ls_pid, title=title, project_url=f"{client.url}/projects/{ls_pid}/data"
    )
    lt = tables.ls_tasks
    with store.begin() as conn:
        recorded = {
            int(r.item_id): int(r.ls_task_id)
            for r in conn.execute(
                select(lt.c.item_id, lt.c.ls_task_id).where(
                    lt.c.ls_project_id == ls_pid, lt.c.server_url == client.url
                )
            )
        }
    key_of = {ids[key]: key for key in tasks}
    known_tids = set(recorded.values())
    found = {
        item: tid
        for item, tid in client.tasks_by_item(ls_pid).items()
        if item in key_of and item not in recorded and tid not in known_tids
    }
    if found:
        rows = [
            {"item_id": item, "ls_task_id": tid, "shown": shown[key_of[item]]}
            for item, tid in found.items()
        ]
        _record(store, client, ls_pid, rows, [])
        recorded |= found
    rep.recovered = len(found)
    todo = [key for key in tasks if ids[key] not in recorded]
    rep.existing = len(tasks) - len(todo)
    for s in range(0, len(todo), batch):
        chunk = todo[s : s + batch]
        resp = client.post(
            f"/api/projects/{ls_pid}/import", [tasks[key] for key in chunk], return_task_ids="true"
        )
        got = (resp or {}).get("task_ids") or []
        if len(got) != len(chunk):
            raise TruthlineError(
                f"Label Studio project {ls_pid}: imported {len(chunk)} tasks, got {len(got)} ids "
                "back; rerun the push to reconcile"
            )
        rows = [
            {"item_id": ids[key], "ls_task_id": int(tid), "shown": shown[key]}
            for key, tid in zip(chunk, got, strict=True)
        ]
        exps = [
            {
                "project": scope.name,
                "item_id": ids[key],
                "annotator": who,
                "arm": slot,
                "ls_project_id": ls_pid,
                "shown": shown[key],
            }
            for key in chunk
            for who in annotators or []
        ]
        _record(store, client, ls_pid, rows, exps)
        rep.created += len(chunk)
    return rep


def adopt_ls_project(
    store: Store,
    server_url: str,
    kind: str | ProjectKind,
    context: Any,
    *,
    scope: Scope,
    slot: str,
    cohort: str,
    ls_project_id: int,
    title: str,
    tasks: dict[str, int],
    shown: dict[str, list[dict[str, Any]]] | None = None,
) -> int:
    """Record a Label Studio project pushed before the store kept it (a system's legacy
    state file): the project row and its tasks (unit key -> task id). Nothing is asked of
    the server; a project or task already recorded is left as it is. Tasks recorded."""
    k = get_kind(kind)
    ids = scope.items(store, dict.fromkeys(tasks, ""), refresh=False)
    if ls_project_row(store, server_url, scope.name, slot, cohort) is None:
        try:
            cfg: str | None = k.label_config(context)
        except Exception:  # a config that needs what the legacy state lacks: no hash
            cfg = None
        _insert_ls_project(
            store, server_url, scope, slot, cohort, k.name, ls_project_id, title, cfg
        )
    lt = tables.ls_tasks
    with store.begin() as conn:
        have = {
            int(r.item_id)
            for r in conn.execute(
                select(lt.c.item_id).where(
                    lt.c.ls_project_id == ls_project_id, lt.c.server_url == server_url
                )
            )
        }
        rows = [
            {
                "ls_project_id": ls_project_id,
                "server_url": server_url,
                "item_id": ids[key],
                "ls_task_id": int(tid),
                "shown": (shown or {}).get(key),
                "created_at": now(),
            }
            for key, tid in tasks.items()
            if ids[key] not in have
        ]
        if rows:
            conn.execute(lt.insert(), rows)
    return len(rows)
