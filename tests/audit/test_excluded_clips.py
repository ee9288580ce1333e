"""Clips flagged, abandoned, or failing schema validation are excluded from gold and counted
(SteelBench §4; issue 24). Planted store, one clip per case, whose answer is known:

- ok1, ok2: two blind annotators agree -> blind consensus gold;
- flag: A flagged the clip -> excluded, flagged (even though an expert reviewed it);
- cancel: A cancelled the task (every field skipped) -> excluded, abandoned;
- half: A cancelled, B completed it -> kept (B's single blind label);
- unread: A's annotation could not be read at pull (stored without values) -> schema_invalid;
- badval: A answered "fly", not one of the field's choices -> schema_invalid;
- xflag: only X flagged it, and X is an excluded annotator -> kept (B's label).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from typer.testing import CliRunner

from tests.audit.conftest import HAND_TOML
from truthline.audit import exclude_annotator, finalize, load_gold
from truthline.project import Project
from truthline.store import Store, now, tables

GOOD = {"action": "walk", "violation": False, "count": 2}
# key: [(annotator, arm, tier, values or None for a cancelled task, flagged)]
PLAN: dict[str, list[tuple[str, str, int, dict | None, bool]]] = {
    "ok1": [("A", "blind", 1, GOOD, False), ("B", "blind", 1, GOOD, False)],
    "ok2": [("A", "blind", 1, GOOD, False), ("B", "blind", 1, GOOD, False)],
    "flag": [("A", "blind", 1, GOOD, True), ("E", "review", 2, GOOD, False)],
    "cancel": [("A", "blind", 1, None, False)],
    "half": [("A", "blind", 1, None, False), ("B", "blind", 1, GOOD, False)],
    "unread": [("A", "blind", 1, dict.fromkeys(GOOD), False), ("B", "blind", 1, GOOD, False)],
    "badval": [("A", "blind", 1, {**GOOD, "action": "fly"}, False)],
    "xflag": [("X", "blind", 1, GOOD, True), ("B", "blind", 1, GOOD, False)],
}
EXPECTED = {"flag": "flagged", "cancel": "abandoned", "unread": "schema_invalid"}
EXPECTED |= {"badval": "schema_invalid"}


def _seed(store: Store, project: Project) -> dict[str, int]:
    store.upsert_project(project)
    ts = now()
    rows: list[dict] = []
    with store.begin() as conn:
        conn.execute(
            tables.items.insert(),
            [
                dict(
                    project=project.name,
                    key=key,
                    media_kind="image",
                    media=[],
                    media_root="",
                    content_hash=key,
                    meta={},
                    created_at=ts,
                    updated_at=ts,
                )
                for key in PLAN
            ],
        )
    items = store.item_ids_by_key(project.name)
    with store.begin() as conn:
        for key, anns in PLAN.items():
            for n, (who, arm, tier, vals, flagged) in enumerate(anns):
                for f in GOOD:
                    rows.append(
                        dict(
                            project=project.name,
                            item_id=items[key],
                            field_path=f,
                            annotator=who,
                            arm=arm,
                            tier=tier,
                            value=None if vals is None else vals[f],
                            skipped=vals is None,
                            flagged=flagged,
                            source="label_studio",
                            source_id=f"ls:1:{key}:{n}",
                            stored_at=ts,
                        )
                    )
        conn.execute(tables.annotations.insert(), rows)
    exclude_annotator(store, project, "X", "planted: excluded", decided_by="test")
    return items


@pytest.fixture
def planted_clips(hand_project, sqlite_store):
    return sqlite_store, hand_project, _seed(sqlite_store, hand_project)


def test_unusable_clips_get_no_gold_and_are_counted_by_reason(planted_clips):
    store, project, ids = planted_clips
    key = {i: k for k, i in ids.items()}
    res = finalize(store, project)
    assert {key[i]: r for i, r in res.unusable.items()} == EXPECTED
    c = res.counts()
    assert c["unusable_items"] == 4
    assert c["unusable_by_reason"] == {"flagged": 1, "schema_invalid": 2, "abandoned": 1}
    gold_items = {key[g.item] for g in res.values}
    assert gold_items == {"ok1", "ok2", "half", "xflag"}
    assert not any(p.item in res.unusable for p in res.pending)  # nothing queued for them
    # the snapshot written carries the counts; the gold loader sees only usable clips
    with store.begin() as conn:
        stored = conn.execute(
            select(tables.gold_snapshots.c.counts).where(tables.gold_snapshots.c.hash == res.hash)
        ).scalar_one()
    assert stored["unusable_by_reason"] == c["unusable_by_reason"]
    assert {it.key for it in load_gold(store, project.name).items} == gold_items


def test_nothing_saved_is_lost_and_a_cleared_flag_comes_back(planted_clips):
    store, project, ids = planted_clips
    with store.begin() as conn:
        before = conn.execute(select(func.count()).select_from(tables.annotations)).scalar_one()
    first = finalize(store, project)
    assert finalize(store, project).hash == first.hash  # stable on unchanged data
    with store.begin() as conn:
        after = conn.execute(select(func.count()).select_from(tables.annotations)).scalar_one()
        assert after == before  # every annotation, flagged or cancelled, is still stored
        conn.execute(
            update(tables.annotations)
            .where(tables.annotations.c.item_id == ids["flag"])
            .values(flagged=False)
        )
    again = finalize(store, project)
    assert ids["flag"] not in again.unusable and again.hash != first.hash
    flag_gold = {g.provenance for g in again.values if g.item == ids["flag"]}
    assert flag_gold == {"expert"}
    assert again.counts()["unusable_by_reason"]["flagged"] == 0


def test_finalize_cli_reports_the_counts(tmp_path: Path, monkeypatch):
    from truthline.cli import app
    from truthline.workspace import Workspace

    src = tmp_path / "tmpl"
    src.mkdir()
    (src / "project.toml").write_text(HAND_TOML)
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "ws"))
    ws = Workspace.from_env(tmp_path / "ws")
    _seed(ws.store, ws.init_project(str(src)))
    res = CliRunner().invoke(app, ["audit", "finalize", "--json"])
    assert res.exit_code == 0, res.output
    counts = json.loads(res.output)["counts"]
    assert counts["unusable_by_reason"] == {"flagged": 1, "schema_invalid": 2, "abandoned": 1}
