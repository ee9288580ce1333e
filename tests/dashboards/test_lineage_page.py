"""Lineage page (one value through every table) and the Agreement page's live-labelling
parts: the last pull's time and disagreeing items linked to their Label Studio tasks."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select

from tests.core.test_lineage import EDITED_VALUE, OLD_GOLD, SERVER, planted_lineage_ws
from truthline.store import tables


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return planted_lineage_ws(tmp_path_factory.mktemp("lineage-page") / "ws")


@pytest.fixture
def app_at(monkeypatch):
    """Run one dashboard page in AppTest with URL query parameters."""
    from streamlit.testing.v1 import AppTest

    def run(ws, page: str, query: dict[str, str] | None = None):
        monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(ws.root))
        monkeypatch.delenv("TRUTHLINE_DB", raising=False)
        monkeypatch.delenv("TRUTHLINE_PROJECT", raising=False)
        script = f"from truthline.dashboards._frame import main\nmain(page={page!r})\n"
        at = AppTest.from_string(script, default_timeout=180)
        for k, v in (query or {}).items():
            at.query_params[k] = v
        return at.run()

    return run


def _frame(at, *columns: str):
    return next(d.value for d in at.dataframe if set(columns) <= set(d.value.columns))


def test_lineage_page_shows_each_step_of_the_planted_value(planted, app_at):
    ws, f = planted
    at = app_at(ws, "lineage", {"item": f["key"], "field": "worker_count"})
    assert not at.exception, at.exception
    assert [h.value for h in at.header] == [
        "Prefill predictions",
        "Exposure",
        "Annotations and edits",
        "Review and adjudication",
        "Gold",
        "Benchmark scores",
    ]
    assert at.selectbox(key="lineage-item").value == f["key"]
    anns = _frame(at, "annotation_id", "edits")
    mine = anns[anns["annotator"] == f["annotator"]]
    assert str(EDITED_VALUE) in set(mine["value"])
    earlier = mine[mine["field_path"] == "worker_count (earlier)"]
    assert list(earlier["value"]) == [str(f["first_value"])]
    task = f"{SERVER}/projects/12/data?task={12000 + f['item']}"
    assert task in set(_frame(at, "shown", "task_url")["task_url"])
    assert sorted(anns.loc[anns["deleted_at"].notna(), "annotator"]) == f["deleted"]
    gold = _frame(at, "provenance", "snapshot_at")
    old = gold[gold["snapshot"] == "0" * 64].iloc[0]
    assert (old["value"], old["provenance"], old["sources"]) == (
        str(OLD_GOLD),
        "expert",
        "old-expert",
    )
    assert not _frame(at, "credit", "pred").empty


def test_lineage_page_unknown_item_falls_back_with_a_warning(planted, app_at):
    ws, _ = planted
    at = app_at(ws, "lineage", {"item": "no/such-item"})
    assert not at.exception, at.exception
    assert any("no item 'no/such-item'" in w.value for w in at.warning)


def _disagreeing_keys(ws, field: str) -> set[str]:
    """Items whose live tier-1 ratings of a top-level field differ, read from the rows."""
    a, i = tables.annotations, tables.items
    values: dict[str, set[str]] = {}
    with ws.store.begin() as conn:
        for key, value in conn.execute(
            select(i.c.key, a.c.value)
            .select_from(a.join(i, a.c.item_id == i.c.id))
            .where(
                a.c.field_path == field,
                a.c.tier == 1,
                a.c.deleted_at.is_(None),
                a.c.skipped.is_(False),
            )
        ):
            if value is not None:
                values.setdefault(key, set()).add(repr(value))
    return {k for k, v in values.items() if len(v) > 1}


def test_agreement_page_shows_last_pull_and_links_disagreements(planted, app_at):
    ws, _ = planted
    at = app_at(ws, "agreement")
    assert not at.exception, at.exception
    assert any("As of the last pull at 2026-01-02 03:04:05 UTC" in c.value for c in at.caption), [
        c.value for c in at.caption
    ]
    assert "Items the annotators disagree on" in [h.value for h in at.header]
    rows = _frame(at, "ratings", "label_studio")
    ids = ws.store.item_ids_by_key(ws.project().name)
    wc = rows[rows["field"] == "worker_count"]
    want = _disagreeing_keys(ws, "worker_count")
    assert want and set(wc["item"]) == want
    for _, r in rows.iterrows():
        key = r["item"].split("[")[0]
        # every item has a blind task: the link opens it (blind first when no arm is chosen)
        assert r["label_studio"] == f"{SERVER}/projects/11/data?task={11000 + ids[key]}"
        link = urlsplit(r["lineage"])
        assert link.path == "lineage" and parse_qs(link.query)["item"] == [key]
        assert 0 < r["agreeing"] < 1
