"""PhysAlign's passes, verification and adjudication go through the loop's store-backed
push and pull: projects, tasks, annotations and exposures in the store's tables (no JSON
state file), push twice imports nothing twice, a deletion in Label Studio is marked in the
store, a task imported by hand is reported, pass 4's exposure records the annotation it
showed, and a work folder or release that still has the legacy ``label_studio.json`` is
migrated into the store on first use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from truthline.annotate._pull import source_id
from truthline.errors import TruthlineError
from truthline.store import Store, tables
from truthline.systems.physalign import compile_release, read_jsonl
from truthline.systems.physalign._ls import (
    LEGACY_STATE,
    MIGRATED,
    data_uri,
    label_config,
    passes_scope,
    pushed_tasks,
    release_scope,
)
from truthline.systems.physalign._passes import DRAFT, pull_passes, push_passes, simulate_passes

SIM_ANNOTATOR = "sim-store-ann@physalign.local"
SIM_REVIEWER = "sim-store-rev@physalign.local"


def _count(store: Store, table, *where) -> int:
    with store.begin() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def _both_passes(store: Store, admin, work: Path, users_file: Path) -> None:
    push_passes(store, admin, work, "observe")
    simulate_passes(store, admin, work, "observe", [SIM_ANNOTATOR], users_file)
    pull_passes(store, admin, work)
    push_passes(store, admin, work, "review")
    simulate_passes(store, admin, work, "review", [SIM_REVIEWER], users_file)
    pull_passes(store, admin, work)


@pytest.mark.labelstudio
def test_pass4_exposure_records_the_annotation_it_showed(
    ls, small_copy: Path, users_file: Path, store: Store
):
    admin = ls.admin()
    _both_passes(store, admin, small_copy, users_file)
    assert not (small_copy / LEGACY_STATE).exists()  # no JSON state any more
    scope = passes_scope(small_copy).name
    a, e, lt = tables.annotations, tables.exposures, tables.ls_tasks
    with store.begin() as conn:
        observed = {
            r.item_id: (r.source_id, r.annotator)
            for r in conn.execute(
                select(a.c.item_id, a.c.source_id, a.c.annotator).where(
                    a.c.project == scope, a.c.arm == "observe", a.c.field_path == "record"
                )
            )
        }
        exps = conn.execute(select(e).where(e.c.project == scope)).all()
        review_pid = pushed_tasks(store, admin, passes_scope(small_copy), "review")
        assert review_pid is not None
        task_shown = {
            r.item_id: r.shown
            for r in conn.execute(
                select(lt.c.item_id, lt.c.shown).where(lt.c.ls_project_id == review_pid[0])
            )
        }
    assert len(observed) == 4 and {w for _, w in observed.values()} == {SIM_ANNOTATOR}
    # passes 1-3: the annotator saw the diagram and the text only
    obs_exp = [x for x in exps if x.arm == "observe"]
    assert {x.annotator for x in obs_exp} == {SIM_ANNOTATOR} and len(obs_exp) == 4
    assert all(not x.shown and x.prediction_id is None for x in obs_exp)
    # pass 4: the reviewer saw the pass 1-3 annotation of the same parent, named by its source
    rev_exp = {x.item_id: x for x in exps if x.arm == "review"}
    assert set(rev_exp) == set(observed) and {x.annotator for x in rev_exp.values()} == {
        SIM_REVIEWER
    }
    for item, x in rev_exp.items():
        (shown,) = x.shown
        assert shown["kind"] == "annotation" and shown["stage"] == "observe"
        assert (shown["source_id"], shown["annotator"]) == observed[item]
        assert task_shown[item] == x.shown  # recorded with the task at push time


@pytest.mark.labelstudio
def test_push_twice_is_idempotent_in_the_store_and_on_the_server(
    ls, small_copy: Path, store: Store
):
    admin = ls.admin()
    first = push_passes(store, admin, small_copy, "observe")
    rows = (
        _count(store, tables.ls_projects),
        _count(store, tables.ls_tasks),
        _count(store, tables.items),
    )
    again = push_passes(store, admin, small_copy, "observe")
    assert (first["created"], again["created"], again["existing"]) == (4, 0, 4)
    assert again["ls_project_id"] == first["ls_project_id"]
    assert rows == (1, 4, 4)
    assert (
        _count(store, tables.ls_projects),
        _count(store, tables.ls_tasks),
        _count(store, tables.items),
    ) == rows
    assert len(admin.tasks_by_item(first["ls_project_id"])) == 4
    # the scope is not a project: project lists leave it out
    assert store.project_names() == []


@pytest.mark.labelstudio
def test_pull_marks_deletions_and_reports_foreign_tasks(
    ls, small_copy: Path, users_file: Path, store: Store
):
    admin = ls.admin()
    rep = push_passes(store, admin, small_copy, "observe")
    simulate_passes(store, admin, small_copy, "observe", [SIM_ANNOTATOR], users_file)
    first = pull_passes(store, admin, small_copy)["observe"]
    assert first["annotated"] == 4 and "deleted" not in first and "foreign_tasks" not in first
    assert pull_passes(store, admin, small_copy)["observe"] == first  # idempotent
    # an annotation deleted in Label Studio, a task imported there by hand
    pid = rep["ls_project_id"]
    tid = sorted(admin.tasks_by_item(pid).values())[0]
    (gone,) = admin.get(f"/api/tasks/{tid}/annotations/")
    admin.delete(f"/api/annotations/{gone['id']}/")
    image = data_uri(small_copy / read_jsonl(small_copy / "annotations.jsonl")[0]["image"]["path"])
    made = admin.post(
        f"/api/projects/{pid}/import",
        [{"problem_text": "typed in by hand", "image": image}],
        return_task_ids="true",
    )
    out = pull_passes(store, admin, small_copy)["observe"]
    assert out["annotated"] == 3 and out["deleted"] == 1
    assert [t["ls_task_id"] for t in out["foreign_tasks"]] == made["task_ids"]
    assert len(read_jsonl(small_copy / DRAFT)) == 3
    a = tables.annotations
    sid = source_id(admin.url, pid, int(gone["id"]))
    with store.begin() as conn:
        kept = conn.execute(select(a.c.deleted_at, a.c.value).where(a.c.source_id == sid)).all()
    assert kept and all(r.deleted_at is not None for r in kept)  # kept, marked deleted
    again = pull_passes(store, admin, small_copy)["observe"]
    assert again["annotated"] == 3 and "deleted" not in again  # marked once


def _legacy_observe(admin, work: Path) -> dict:
    """What earlier versions did: a project, tasks whose ``item_id`` is the parent's
    position, and ``<work>/label_studio.json`` mapping parents to task ids."""
    problems = read_jsonl(work / "annotations.jsonl")
    title = f"PhysAlign passes 1-3 ({work.name})"
    made = admin.post(
        "/api/projects/",
        {
            "title": title,
            "label_config": label_config("observational_passes_1_4"),
            "show_skip_button": False,
        },
    )
    tasks = [
        {
            "data": {
                "item_id": k,
                "problem_text": p["text"],
                "image": data_uri(work / p["image"]["path"]),
            }
        }
        for k, p in enumerate(problems, start=1)
    ]
    ids = admin.post(f"/api/projects/{made['id']}/import", tasks, return_task_ids="true")[
        "task_ids"
    ]
    state = {
        admin.url: {
            "observe": {
                "ls_project_id": int(made["id"]),
                "title": title,
                "tasks": {p["parent_id"]: int(t) for p, t in zip(problems, ids, strict=True)},
            }
        }
    }
    (work / LEGACY_STATE).write_text(json.dumps(state))
    return state[admin.url]["observe"]


@pytest.mark.labelstudio
def test_a_legacy_state_file_is_migrated_into_the_store(
    ls, small_copy: Path, users_file: Path, store: Store
):
    admin = ls.admin()
    legacy = _legacy_observe(admin, small_copy)
    rep = push_passes(store, admin, small_copy, "observe")
    # nothing imported again: the legacy project and tasks are now the store's
    assert (rep["created"], rep["existing"], rep["recovered"]) == (0, 4, 0)
    assert rep["ls_project_id"] == legacy["ls_project_id"]
    assert not (small_copy / LEGACY_STATE).exists()
    assert json.loads((small_copy / MIGRATED).read_text())[admin.url]["observe"] == legacy
    got = pushed_tasks(store, admin, passes_scope(small_copy), "observe")
    assert got == (legacy["ls_project_id"], legacy["tasks"])
    lp = tables.ls_projects
    with store.begin() as conn:
        row = conn.execute(select(lp).where(lp.c.ls_project_id == legacy["ls_project_id"])).one()
    assert (row.kind, row.arm, row.title) == ("physalign.observe", "observe", legacy["title"])
    # the migrated project works as if pushed through the store
    sim = simulate_passes(store, admin, small_copy, "observe", [SIM_ANNOTATOR], users_file)
    assert sim["posted"] == 4
    out = pull_passes(store, admin, small_copy)
    assert out["observe"]["annotated"] == 4 and "foreign_tasks" not in out["observe"]
    assert push_passes(store, admin, small_copy, "observe")["created"] == 0


def test_a_legacy_release_state_is_migrated_with_what_adjudication_showed(
    small_copy: Path, store: Store
):
    """The release's state (two blind projects and the adjudication) moves into the store
    without a server; an adjudication task's exposure names both blind answers."""
    from truthline.systems.physalign._verify import _migrate

    release = small_copy / "release"
    compile_release(small_copy / "annotations.jsonl", release, seed=11)
    probes = [p["probe_id"] for p in read_jsonl(release / "public" / "probes.jsonl")]
    url = "http://127.0.0.1:1"
    a, b = "old-a@physalign.local", "old-b@physalign.local"
    state = {
        url: {
            f"verify:{a}": {
                "ls_project_id": 11,
                "title": "v a",
                "tasks": {p: 100 + k for k, p in enumerate(probes)},
            },
            f"verify:{b}": {
                "ls_project_id": 12,
                "title": "v b",
                "tasks": {p: 200 + k for k, p in enumerate(probes)},
            },
            "adjudicate": {"ls_project_id": 13, "title": "adj", "tasks": {probes[0]: 300}},
        }
    }
    (release / "private" / LEGACY_STATE).write_text(json.dumps(state))
    blind = [
        {"reviewer": who, "answer": {"role": "E1", "read": None}, "qc_flags": [], "note": None}
        | {"submitted_at": "2026-01-01T00:00:00Z", "ls_annotation_id": aid}
        for who, aid in ((a, 7), (b, 8))
    ]
    row = {"probe_id": probes[0], "blind": blind, "status": "needs_adjudication", "reasons": []}
    (release / "private" / "review.jsonl").write_text(json.dumps(row) + "\n")
    _migrate(store, release)
    assert (release / "private" / MIGRATED).is_file()
    assert not (release / "private" / LEGACY_STATE).exists()
    scope = release_scope(release)
    lp, lt = tables.ls_projects, tables.ls_tasks
    with store.begin() as conn:
        projects = {
            (r.arm, r.cohort): r.ls_project_id
            for r in conn.execute(select(lp).where(lp.c.project == scope.name))
        }
        shown = conn.execute(select(lt.c.shown).where(lt.c.ls_project_id == 13)).scalar_one()
    assert projects == {("verify", a): 11, ("verify", b): 12, ("adjudicate", ""): 13}
    assert _count(store, lt, lt.c.ls_project_id == 11) == len(probes)
    answers = [s for s in shown if s["kind"] == "annotation"]
    assert [s["source_id"] for s in answers] == [
        source_id(url, 11, 7),
        source_id(url, 12, 8),
    ]
    assert {s["kind"] for s in shown} == {"annotation", "target", "source_observation"}
    _migrate(store, release)  # nothing left to migrate: a no-op
    assert _count(store, lt) == 2 * len(probes) + 1


def test_a_broken_legacy_state_file_is_refused_and_kept(small_copy: Path, store: Store):
    (small_copy / LEGACY_STATE).write_text('{"http://x": {"observe": {"tasks": 3}}}')
    with pytest.raises(TruthlineError, match=r"label_studio\.json: not the Label Studio state"):
        push_passes(store, _NoServer(), small_copy, "observe")
    assert (small_copy / LEGACY_STATE).is_file() and not (small_copy / MIGRATED).exists()


class _NoServer:
    """Enough of an LSClient for a push that stops before talking to the server."""

    url = "http://127.0.0.1:1"

    def whoami(self) -> dict:
        return {}
