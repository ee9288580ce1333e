"""Screening states (seeds/002 Table 4) and the blind re-verification of corrected targets, on
a release whose blind answers and adjudications are loaded from files (no Label Studio).

Planted: one probe with a single blind answer (incomplete), one disagreement left open
(further review), one withheld as ambiguous (rejected), one corrected target (further review
until a fresh blind round approves the corrected value), and one probe-level correction whose
approved siblings become risk-isolated. Everything else is answered correctly by both."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from truthline.cli import app
from truthline.errors import TruthlineError
from truthline.systems.physalign import compile_release, read_jsonl, write_import_tables
from truthline.systems.physalign._reverify import load_adjudications, load_answers
from truthline.systems.physalign._screening import screen, screening_table

A, B, ADJ = "rev-a@example.com", "rev-b@example.com", "adj@example.com"
C, D = "rev-c@example.com", "rev-d@example.com"


def _target(priv: dict) -> tuple[str, str | None]:
    t = priv["targets"]
    role = (t.get("owner") or t.get("referent"))["aliases"][0]
    return role, (t.get("read") or {}).get("text")


def _other(priv: dict, role: str) -> str:
    return next(a for a in sorted(priv["alias_map"]) if a != role)


def _answer(pid: str, who: str, role: str, read: str | None, at: str = "2026-12-01T10:00") -> dict:
    return {"probe_id": pid, "reviewer": who, "role": role, "read": read, "submitted_at": at}


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def planted(small_copy: Path, tmp_path: Path):
    compile_release(small_copy / "annotations.jsonl", small_copy / "release", seed=3)
    rel = small_copy / "release"
    private = read_jsonl(rel / "private" / "targets.jsonl")
    by_parent: dict[str, list[dict]] = {}
    for p in private:
        by_parent.setdefault(p["parent_id"], []).append(p)
    parents = sorted(by_parent, key=lambda k: -len(by_parent[k]))
    x = parents[0]  # the parent with the probe-level correction
    others = [p for k in parents[1:] for p in by_parent[k]]
    plan = {
        "incomplete": others[0],
        "open": others[1],
        "withhold": others[2],
        "correct": others[3],
        "probe_fix": by_parent[x][0],
    }
    rows = []
    for p in private:
        pid = p["probe_id"]
        role, read = _target(p)
        rows.append(_answer(pid, A, role, read))
        if p is plan["incomplete"]:
            continue
        wrong = p in (plan["open"], plan["withhold"], plan["correct"], plan["probe_fix"])
        rows.append(_answer(pid, B, _other(p, role) if wrong else role, read))
    load_answers(rel, _write(tmp_path / "blind.jsonl", rows))
    corr = plan["correct"]
    corrected_role = _other(corr, _target(corr)[0])  # the adjudicator says B was right
    adj = [
        {
            "probe_id": plan["withhold"]["probe_id"],
            "adjudicator": ADJ,
            "decision": "withhold_ambiguous",
            "submitted_at": "2026-12-01T11:00",
        },
        {
            "probe_id": corr["probe_id"],
            "adjudicator": ADJ,
            "decision": "correct_target_regenerate",
            "corrected_role": corrected_role,
            "submitted_at": "2026-12-01T11:00",
        },
        {
            "probe_id": plan["probe_fix"]["probe_id"],
            "adjudicator": ADJ,
            "decision": "correct_probe_regenerate",
            "submitted_at": "2026-12-01T11:00",
        },
    ]
    load_adjudications(rel, _write(tmp_path / "adj.jsonl", adj))
    return rel, private, plan, by_parent[x], corrected_role


def test_every_probe_ends_in_exactly_one_state(planted, tmp_path: Path):
    rel, private, plan, x_probes, _ = planted
    sc = screen(rel)
    n = len(private)
    assert sorted(sc.state) == sorted(p["probe_id"] for p in private)
    assert sc.of("incomplete") == [plan["incomplete"]["probe_id"]]
    assert sc.of("further_review") == sorted(
        [plan["open"]["probe_id"], plan["correct"]["probe_id"]]
    )
    assert sc.of("rejected") == sorted(
        [plan["withhold"]["probe_id"], plan["probe_fix"]["probe_id"]]
    )
    siblings = sorted(p["probe_id"] for p in x_probes if p is not plan["probe_fix"])
    assert sc.of("risk_isolated") == siblings and siblings
    assert len(sc.of("approved")) == n - 5 - len(siblings)
    assert "re-verification not_started" in sc.reason[plan["correct"]["probe_id"]]
    tab = screening_table(rel)
    assert sum(tab["states"].values()) == n == tab["candidates"]
    adm = tab["admission"]
    assert adm["approved_before_isolation"] == n - 5
    assert adm["retained"] == n - 5 - len(siblings)
    # parent X keeps no approved probe: all rejected or isolated
    assert adm["parents_without_retained_probe"] == 1
    planted_parents = {p["parent_id"] for p in plan.values()}
    assert adm["parents_complete"] == len(set(sc.parent.values())) - len(planted_parents)
    assert adm["parents_partial"] == len(planted_parents) - 1  # all but X keep some probes
    # the CLI gives the same table
    r = CliRunner().invoke(app, ["physalign", "screening", "--release", str(rel), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["states"] == tab["states"]
    # a declared isolation of a parent isolates its approved probes
    par = plan["incomplete"]["parent_id"]
    iso = _write(tmp_path / "iso.jsonl", [{"id": par, "reason": "licence unclear"}])
    sc2 = screen(rel, iso)
    moved = [p for p in sc.of("approved") if sc.parent[p] == par]
    assert moved and all(sc2.state[p] == "risk_isolated" for p in moved)
    assert sc2.reason[moved[0]] == "licence unclear"
    bad = _write(tmp_path / "iso_bad.jsonl", [{"id": "nope"}])
    with pytest.raises(TruthlineError, match="no probe or parent 'nope'"):
        screen(rel, bad)
    # isolation propagates to a parent sharing X's original image (the merge's image links)
    x = x_probes[0]["parent_id"]
    twin = plan["open"]["parent_id"]
    dedup = rel / "private" / "dedup.json"
    dedup.write_text(
        json.dumps(json.loads(dedup.read_text()) | {"linked_parent_groups": [sorted([x, twin])]})
    )
    sc3 = screen(rel)
    twin_ok = [p for p in sc.of("approved") if sc.parent[p] == twin]
    assert twin_ok and all(sc3.state[p] == "risk_isolated" for p in twin_ok)
    assert sc3.reason[twin_ok[0]].endswith("(same original image)")
    assert sc3.of("approved") == sorted(set(sc.of("approved")) - set(twin_ok))


def test_corrected_target_is_held_back_until_reverified_blind(planted, tmp_path: Path):
    rel, _, plan, x_probes, corrected_role = planted
    pid = plan["correct"]["probe_id"]
    read = _target(plan["correct"])[1]
    exp = write_import_tables(rel)
    assert exp["held_corrections"] == 1 and exp["held_probe_ids"] == [pid]
    assert exp["risk_isolated"] == len(x_probes) - 1
    approved = len(screen(rel).of("approved"))
    assert exp["items"] == approved
    # the adjudicator saw the target: cannot re-verify
    with pytest.raises(TruthlineError, match="cannot re-verify it blind"):
        load_answers(
            rel,
            _write(tmp_path / "r0.jsonl", [_answer(pid, ADJ, corrected_role, read)]),
            "reverify",
        )
    # only corrected targets are re-verified
    other = plan["open"]["probe_id"]
    with pytest.raises(TruthlineError, match="no corrected target to re-verify"):
        load_answers(
            rel, _write(tmp_path / "r1.jsonl", [_answer(other, C, "E1", None)]), "reverify"
        )
    # one fresh answer: pending; a fresh answer against the corrected value: failed, still held
    got = load_answers(
        rel, _write(tmp_path / "r2.jsonl", [_answer(pid, C, corrected_role, read)]), "reverify"
    )
    assert got["reverify"] == {"pending": 1} and got["held"] == [pid]
    wrong = _target(plan["correct"])[0]
    got = load_answers(
        rel,
        _write(
            tmp_path / "r3.jsonl",
            [_answer(pid, C, corrected_role, read), _answer(pid, D, wrong, read)],
        ),
        "reverify",
    )
    assert got["reverify"] == {"failed": 1}
    assert write_import_tables(rel)["held_probe_ids"] == [pid]
    assert screen(rel).state[pid] == "further_review"
    # both fresh blind answers equal the corrected value: approved, exported with it as gold
    got = load_answers(
        rel,
        _write(
            tmp_path / "r4.jsonl",
            [
                _answer(pid, C, corrected_role, read),
                _answer(pid, D, f" {corrected_role.lower()} ", read),
            ],
        ),
        "reverify",
    )
    assert got["reverify"] == {"approved": 1} and got["held"] == []
    assert screen(rel).state[pid] == "approved"
    exp = write_import_tables(rel)
    assert exp["held_corrections"] == 0 and exp["items"] == approved + 1
    with (rel / "import" / "labels.csv").open() as fh:
        decided = [
            r["value"]
            for r in csv.DictReader(fh)
            if r["item"] == f"views/{pid}" and r["annotator"] == ADJ
        ]
    assert corrected_role in decided and wrong not in decided
