"""Blind-first double verification and adjudication through a real Label Studio: SIMULATED
reviewers post through the API as themselves; the blind projects hold public data only;
disagreements and QC flags go to the third reviewer, and every decision names who made it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select

from truthline.errors import TruthlineError
from truthline.store import Store, simulated_annotators, tables
from truthline.systems.physalign import compile_release, read_jsonl
from truthline.systems.physalign._ls import pushed_tasks, release_scope
from truthline.systems.physalign._verify import (
    REVIEW,
    decide_blind,
    pull_adjudicate,
    pull_verify,
    push_adjudicate,
    push_verify,
    simulate_adjudicate,
    simulate_verify,
    status,
)

pytestmark = pytest.mark.labelstudio

REVIEWERS = ["sim-blind-a@physalign.local", "sim-blind-b@physalign.local"]
ADJUDICATOR = "sim-adjudicator@physalign.local"


def _blind(who: str, role: str, read: str | None = None, qc: list[str] | None = None) -> dict:
    return {
        "reviewer": who,
        "answer": {"role": role, "read": read},
        "qc_flags": qc or [],
        "submitted_at": "2026-12-01T00:00:00Z",
    }


def test_decide_blind_follows_the_spec():
    priv = {
        "targets": {
            "owner": {"aliases": ["E2"]},
            "read": {
                "text": "m_1 = 3 kg",
                "rules": ["nfc", "ws", "subsup_braces", "eq_space", "num_unit_space"],
            },
        }
    }
    ok = [_blind("a", "E2", "m_1 = 3 kg"), _blind("b", " e2 ", "m_{1}=3kg")]
    assert decide_blind(priv, ok) == ("approved_direct", [])  # equal under the contract's N
    status_, why = decide_blind(
        priv, [_blind("a", "E2", "m_1 = 3 kg"), _blind("b", "E1", "m_1 = 3 kg")]
    )
    assert status_ == "needs_adjudication" and "the blind answers disagree on the role" in why
    # both agree with each other but not with the target: still adjudicated
    status_, why = decide_blind(
        priv, [_blind("a", "E1", "m_1 = 3 kg"), _blind("b", "E1", "m_1 = 3 kg")]
    )
    assert status_ == "needs_adjudication" and any("differs from the target" in w for w in why)
    status_, why = decide_blind(
        priv, [_blind("a", "E2", "m_1 = 3 kg"), _blind("b", "E2", "m1 = 3 kg")]
    )
    assert status_ == "needs_adjudication" and "the blind readings disagree" in why  # m1 != m_1
    flagged = [
        _blind("a", "E2", "m_1 = 3 kg"),
        _blind("b", "E2", "m_1 = 3 kg", ["question_unclear"]),
    ]
    assert decide_blind(priv, flagged)[0] == "needs_adjudication"
    assert decide_blind(priv, ok[:1])[0] == "pending_blind"


@pytest.fixture
def release(small_copy: Path) -> Path:
    compile_release(small_copy / "annotations.jsonl", small_copy / "release", seed=11)
    return small_copy / "release"


def _tasks(store: Store, admin, release: Path, slot: str, cohort: str = "") -> dict[str, int]:
    got = pushed_tasks(store, admin, release_scope(release), slot, cohort)
    assert got is not None
    return got[1]


def _check_exposures(store: Store, release: Path, n_probes: int, n_adj: int) -> None:
    """Every reviewer saw their own blind project's probes and nothing else; the adjudicator
    saw both blind answers (by their store source ids), the target and the observation."""
    scope = release_scope(release).name
    e, a = tables.exposures, tables.annotations
    with store.begin() as conn:
        exps = conn.execute(select(e).where(e.c.project == scope)).all()
        verify_sids = {
            r.source_id: r.annotator
            for r in conn.execute(
                select(a.c.source_id, a.c.annotator).where(
                    a.c.project == scope, a.c.arm == "verify"
                )
            )
        }
    blind = [x for x in exps if x.arm == "verify"]
    assert sorted({x.annotator for x in blind}) == REVIEWERS
    assert len(blind) == 2 * n_probes and all(
        not x.shown and x.prediction_id is None for x in blind
    )
    adj = [x for x in exps if x.arm == "adjudicate"]
    assert len(adj) == n_adj and {x.annotator for x in adj} == {ADJUDICATOR}
    for x in adj:
        answers = [s for s in x.shown if s["kind"] == "annotation"]
        assert len(answers) == 2
        assert {verify_sids[s["source_id"]] for s in answers} == set(REVIEWERS)
        assert {s["kind"] for s in x.shown} == {"annotation", "target", "source_observation"}


def test_blind_verification_and_adjudication(ls, release: Path, users_file: Path, store: Store):
    admin = ls.admin()
    public = read_jsonl(release / "public" / "probes.jsonl")
    private = {p["probe_id"]: p for p in read_jsonl(release / "private" / "targets.jsonl")}
    with pytest.raises(TruthlineError, match="exactly two different reviewers"):
        push_verify(store, admin, release, REVIEWERS[:1])
    with pytest.raises(TruthlineError, match="no blind answers pulled yet"):
        push_adjudicate(store, admin, release)
    rep = push_verify(store, admin, release, REVIEWERS)
    assert [p["created"] for p in rep["projects"]] == [len(public), len(public)]
    pids = {p["ls_project_id"] for p in rep["projects"]}
    assert len(pids) == 2  # one project per reviewer
    # a blind task holds no target, alias map, entity id or parent id, and no prediction
    some = next(iter(_tasks(store, admin, release, "verify", REVIEWERS[0]).items()))
    task = admin.get(f"/api/tasks/{some[1]}")
    assert not task.get("predictions")
    text = json.dumps(task["data"])
    priv = private[some[0]]
    assert priv["parent_id"] not in text and not any(e in text for e in priv["alias_map"].values())
    assert set(task["data"]) == {
        "item_id",
        "question",
        "problem_text",
        "anchor_text",
        "localized_view",
        "candidate_choices",
    }
    assert push_verify(store, admin, release, REVIEWERS)["projects"][0]["created"] == 0

    sim = simulate_verify(store, admin, release, REVIEWERS, users_file, wrong_every=5, flag_every=7)
    assert sim["posted"] == 2 * len(public) and sim["simulated"]
    assert simulate_verify(store, admin, release, REVIEWERS, users_file)["posted"] == 0
    counts = pull_verify(store, admin, release)
    n = len(public)
    expect_adj = len({k for k in range(1, n + 1) if k % 5 == 0 or k % 7 == 0})
    assert counts["by_status"] == {
        "approved_direct": n - expect_adj,
        "needs_adjudication": expect_adj,
    }
    rows = {r["probe_id"]: r for r in read_jsonl(release / REVIEW)}
    direct = next(r for r in rows.values() if r.get("decision") == "approved_direct")
    assert sorted(direct["decided_by"]) == REVIEWERS
    assert all(b["submitted_at"] for b in direct["blind"])

    adj = push_adjudicate(store, admin, release)
    assert adj["tasks"] == expect_adj
    adj_task = admin.get(
        f"/api/tasks/{next(iter(_tasks(store, admin, release, 'adjudicate').values()))}"
    )
    assert {"blind_answer_a", "blind_answer_b", "private_target", "source_observation"} <= set(
        adj_task["data"]
    )
    simulate_adjudicate(store, admin, release, ADJUDICATOR, users_file, withhold_every=3)
    final = pull_adjudicate(store, admin, release)
    _check_exposures(store, release, len(public), expect_adj)
    withheld = expect_adj // 3
    assert final["by_status"] == {
        "approved_direct": n - expect_adj,
        "approved_adjudicated": expect_adj - withheld,
        "withheld": withheld,
    }
    rows = read_jsonl(release / REVIEW)
    for r in rows:
        assert r["decided_by"]
        if r["decision"] in ("approved_adjudicated", "withheld"):
            assert r["decided_by"] == ADJUDICATOR and r["adjudication"]["rationale"]
        if r["decision"] != "withheld":
            role = (
                private[r["probe_id"]]["targets"].get("owner")
                or private[r["probe_id"]]["targets"]["referent"]
            )["aliases"][0]
            assert r["final"]["role"] == role
    # a second verify pull keeps the adjudications
    assert pull_verify(store, admin, release)["by_status"] == final["by_status"]
    st = status(release)
    assert st["decided_by"][ADJUDICATOR] == expect_adj
    # the simulate commands declared reviewers and adjudicator SIMULATED in the store
    assert simulated_annotators(store, release_scope(release).name) == sorted(
        [*REVIEWERS, ADJUDICATOR]
    )

    # the adjudicator corrects one target: the latest adjudication decides, the corrected
    # alias is mapped back to its entity, and the export carries the corrected value
    from truthline.annotate import user_client
    from truthline.systems.physalign import write_import_tables

    adj_tasks = _tasks(store, admin, release, "adjudicate")
    pid, tid = sorted(adj_tasks.items())[0]
    old_role = (private[pid]["targets"].get("owner") or private[pid]["targets"]["referent"])[
        "aliases"
    ][0]
    new_role = next(a for a in sorted(private[pid]["alias_map"]) if a != old_role)
    me = user_client(admin.url, ADJUDICATOR, users_file)

    def adjudicate(role: str) -> None:
        me.post(
            f"/api/tasks/{tid}/annotations/",
            {
                "result": [
                    {
                        "from_name": "decision",
                        "to_name": "view",
                        "type": "choices",
                        "value": {"choices": ["correct_target_regenerate"]},
                    },
                    {
                        "from_name": "corrected_role",
                        "to_name": "view",
                        "type": "choices",
                        "value": {"choices": [role]},
                    },
                    {
                        "from_name": "rationale",
                        "to_name": "view",
                        "type": "textarea",
                        "value": {"text": ["SIMULATED correction"]},
                    },
                ],
                "lead_time": 5.0,
            },
        )

    adjudicate(new_role)
    pull_adjudicate(store, admin, release)
    row = next(r for r in read_jsonl(release / REVIEW) if r["probe_id"] == pid)
    assert row["decision"] == "corrected_regenerated" and row["final"]["role"] == new_role
    assert row["final"]["entity_id"] == private[pid]["alias_map"][new_role]
    # the corrected value is held back until a fresh blind round approves it
    from truthline.systems.physalign._reverify import pull_reverify, push_reverify

    assert write_import_tables(release)["held_probe_ids"] == [pid]
    assert f"views/{pid}," not in (release / "import" / "labels.csv").read_text()
    with pytest.raises(TruthlineError, match="cannot re-verify it blind"):
        push_reverify(store, admin, release, [ADJUDICATOR, REVIEWERS[0]])
    assert push_reverify(store, admin, release, REVIEWERS)["probes"] == 1
    for who in REVIEWERS:
        answer = [
            {
                "from_name": "role",
                "to_name": "view",
                "type": "choices",
                "value": {"choices": [new_role]},
            }
        ]
        if row["final"]["read"] is not None:
            answer.append(
                {
                    "from_name": "read",
                    "to_name": "view",
                    "type": "textarea",
                    "value": {"text": [row["final"]["read"]]},
                }
            )
        user_client(admin.url, who, users_file).post(
            f"/api/tasks/{_tasks(store, admin, release, 'reverify', who)[pid]}/annotations/",
            {"result": answer, "lead_time": 5.0},
        )
    assert pull_reverify(store, admin, release)["reverify"] == {"approved": 1}
    assert write_import_tables(release)["held_corrections"] == 0
    labels = (release / "import" / "labels.csv").read_text()
    assert f"views/{pid},owner,{ADJUDICATOR},{new_role},2,review,{new_role}" in labels
    adjudicate("E9")
    with pytest.raises(
        TruthlineError, match=rf"task {tid} \(probe {pid}\): field corrected_role 'E9'"
    ):
        pull_adjudicate(store, admin, release)


def test_simulated_account_without_password_is_refused_by_name(
    ls, tmp_path: Path, users_file: Path
):
    """An existing account whose password this workspace lacks cannot be acted as: one clear
    error naming it (it used to fail later, on the first post, with a generic message)."""
    from truthline.systems.physalign._ls import simulated_users

    store = Store(f"sqlite:///{tmp_path / 'sim.db'}")
    scope = release_scope(tmp_path / "release")
    email = "sim-existing@physalign.local"
    simulated_users(ls.admin(), [email], users_file, store=store, scope=scope)
    with store.begin() as conn:  # declared SIMULATED before it annotates anything
        s = tables.simulated_accounts
        got = conn.execute(select(s.c.annotator).where(s.c.project == scope.name)).scalars()
        assert list(got) == [email]
    with pytest.raises(
        TruthlineError, match=r"sim-existing@physalign\.local already has an account"
    ):
        simulated_users(ls.admin(), [email], tmp_path / "other.json", store=store, scope=scope)
