"""Annotation passes through a real Label Studio: SIMULATED annotators post the generator's
truth through the API as themselves; the pulled records compile to exactly the probes the
truth compiles to, and a reviewer's deletions become disputed observations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from truthline.store import Store, simulated_annotators, tables
from truthline.systems.physalign import compile_release, read_jsonl
from truthline.systems.physalign._ls import label_config, passes_scope, pushed_tasks
from truthline.systems.physalign._passes import (
    DRAFT,
    PULLED,
    pull_passes,
    push_passes,
    record_to_results,
    results_to_record,
    simulate_passes,
)

pytestmark = pytest.mark.labelstudio

SIM_ANNOTATOR = "sim-annotator@physalign.local"
SIM_REVIEWER = "sim-reviewer@physalign.local"


def _probes(release: Path) -> list[dict]:
    return sorted(read_jsonl(release / "public" / "probes.jsonl"), key=lambda p: p["probe_id"])


def test_results_round_trip_without_a_server(generated: Path):
    """record -> Label Studio results -> record keeps every id, box, span and relation."""
    for rec in read_jsonl(generated / "annotations.jsonl"):
        back = results_to_record(rec, record_to_results(rec))
        assert {p["prim_id"]: p["geometry"] for p in back["pass1"]["primitives"]} == {
            p["prim_id"]: p["geometry"] for p in rec["pass1"]["primitives"]
        }
        assert {p["prim_id"]: p["transcription"] for p in back["pass1"]["primitives"]} == {
            p["prim_id"]: p["transcription"] for p in rec["pass1"]["primitives"]
        }
        assert sorted(
            (e["entity_id"], e["kind"], tuple(e["view_prim_ids"]))
            for e in back["pass2"]["entities"]
        ) == sorted(
            (e["entity_id"], e["kind"], tuple(e["view_prim_ids"])) for e in rec["pass2"]["entities"]
        )
        assert back["pass3"]["text_mentions"] == rec["pass3"]["text_mentions"]

        def obs(r: dict) -> set:
            return {
                (json.dumps(o["subject"], sort_keys=True), o["entity_id"], o["relation"])
                for o in r["pass4"]["observations"]
            }

        assert obs(back) == obs(rec)


def _tasks(store: Store, admin, work: Path, stage: str) -> dict[str, int]:
    got = pushed_tasks(store, admin, passes_scope(work), stage)
    assert got is not None
    return got[1]


def test_passes_through_label_studio_compile_to_the_truth(
    ls, gen_copy: Path, tmp_path: Path, users_file: Path, store: Store
):
    admin = ls.admin()
    config = label_config("observational_passes_1_4")
    assert "resistance" in config and "entity_object_outline" in config
    rep = push_passes(store, admin, gen_copy, "observe")
    assert rep["created"] == 12
    # the observe tasks carry the diagram and the text, never the question or an answer
    task = admin.get(f"/api/tasks/{next(iter(_tasks(store, admin, gen_copy, 'observe').values()))}")
    assert set(task["data"]) == {"item_id", "problem_text", "image"}
    assert push_passes(store, admin, gen_copy, "observe")["created"] == 0  # idempotent
    secrets = users_file
    sim = simulate_passes(store, admin, gen_copy, "observe", [SIM_ANNOTATOR], secrets)
    assert sim == {
        "stage": "observe",
        "posted": 12,
        "simulated": True,
        "annotators": [SIM_ANNOTATOR],
    }
    assert (
        simulate_passes(store, admin, gen_copy, "observe", [SIM_ANNOTATOR], secrets)["posted"] == 0
    )
    out = pull_passes(store, admin, gen_copy)
    assert out["observe"]["annotated"] == 12 and "review" not in out
    drafts = read_jsonl(gen_copy / DRAFT)
    assert {d["annotated_by"] for d in drafts} == {SIM_ANNOTATOR}

    assert push_passes(store, admin, gen_copy, "review")["created"] == 12
    simulate_passes(store, admin, gen_copy, "review", [SIM_REVIEWER], secrets, drop_every=0)
    out = pull_passes(store, admin, gen_copy)
    assert out["review"]["reviewed"] == 12 and out["review"]["disputed"] == 0
    pulled = read_jsonl(gen_copy / PULLED)
    o = pulled[0]["pass4"]["observations"][0]
    assert o["review"] == {"status": "verified", "reviewers": [SIM_ANNOTATOR, SIM_REVIEWER]}
    # the simulate commands declared their users SIMULATED: every pulled row is marked
    scope = passes_scope(gen_copy).name
    assert simulated_annotators(store, scope) == sorted([SIM_ANNOTATOR, SIM_REVIEWER])
    a = tables.annotations
    with store.begin() as conn:
        marks = conn.execute(select(a.c.simulated).where(a.c.project == scope)).scalars().all()
    assert marks and all(marks)

    # what went through Label Studio compiles to exactly the probes the truth compiles to
    compile_release(gen_copy / "annotations.jsonl", tmp_path / "truth", seed=3)
    compile_release(gen_copy / PULLED, tmp_path / "ls", seed=3)
    assert _probes(tmp_path / "ls") == _probes(tmp_path / "truth")


def test_reviewer_deletions_are_disputed_and_not_compiled(
    ls, gen_copy: Path, tmp_path: Path, users_file: Path, store: Store
):
    admin = ls.admin()
    secrets = users_file
    push_passes(store, admin, gen_copy, "observe")
    simulate_passes(store, admin, gen_copy, "observe", [SIM_ANNOTATOR], secrets)
    pull_passes(store, admin, gen_copy)
    push_passes(store, admin, gen_copy, "review")
    simulate_passes(store, admin, gen_copy, "review", [SIM_REVIEWER], secrets, drop_every=4)
    out = pull_passes(store, admin, gen_copy)
    n_obs = sum(len(r["pass4"]["observations"]) for r in read_jsonl(gen_copy / "annotations.jsonl"))
    assert out["review"]["disputed"] > 0
    assert out["review"]["verified"] + out["review"]["disputed"] == n_obs
    info = compile_release(gen_copy / PULLED, tmp_path / "r", seed=3)
    assert info["probes"] == out["review"]["verified"]
    assert info["skipped"] == out["review"]["disputed"]


def test_push_recovers_tasks_the_server_stored_before_they_were_recorded(
    ls, small_copy: Path, store: Store
):
    """A push interrupted after Label Studio stored the tasks but before the store recorded
    their ids neither duplicates nor loses them on the rerun."""
    admin = ls.admin()
    first = push_passes(store, admin, small_copy, "observe")
    assert first["created"] == 4
    ids = _tasks(store, admin, small_copy, "observe")
    lt = tables.ls_tasks
    with store.begin() as conn:  # as if the push died before recording its batch
        conn.execute(lt.delete().where(lt.c.ls_project_id == first["ls_project_id"]))
    again = push_passes(store, admin, small_copy, "observe")
    assert (again["created"], again["recovered"], again["existing"]) == (0, 4, 4)
    assert _tasks(store, admin, small_copy, "observe") == ids
    assert len(admin.tasks_by_item(first["ls_project_id"])) == 4
