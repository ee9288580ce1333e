"""Overview page and its queries against a store with known counts at every loop stage."""

from __future__ import annotations

import sqlite3

import pytest
from sqlalchemy import insert
from sqlalchemy.exc import OperationalError

from tests.dashboards.conftest import PLANTED
from truthline.dashboards import label_studio_links, loop_funnel, model_costs, read_only_store
from truthline.store import tables


def test_loop_funnel_counts_each_stage(loop_ws):
    rows = {
        (r["stage"], r["detail"]): r["items"] for r in loop_funnel(loop_ws.store, "steel-safety")
    }
    assert rows[("imported", "all")] == PLANTED["items"]
    assert rows[("prefilled", "parsed")] == PLANTED["prefill_parsed"]
    assert rows[("prefilled", "model_failure")] == PLANTED["prefill_failed"]
    assert rows[("pushed", "blind")] == PLANTED["pushed_blind"]
    assert rows[("pushed", "anchored")] == PLANTED["pushed_anchored"]
    assert rows[("annotated", "blind")] == PLANTED["annotated_blind"]
    assert rows[("annotated", "anchored")] == PLANTED["annotated_anchored"]
    assert rows[("reviewed", "expert (tier 2)")] == PLANTED["reviewed"]
    assert rows[("in gold", "snapshot " + "g" * 10)] == PLANTED["gold_items"]
    assert rows[("benchmarked", "any run")] == PLANTED["benchmarked"]


def test_deleted_annotations_are_not_counted(loop_ws):
    """Annotations deleted in Label Studio (``deleted_at`` set) are history, not progress."""
    from truthline.store import now

    ids = sorted(loop_ws.store.item_ids_by_key("steel-safety").values())
    ts = now()
    with loop_ws.store.begin() as conn:
        for arm, tier, item in (("blind", 1, ids[10]), ("review", 2, ids[11])):
            conn.execute(
                insert(tables.annotations).values(
                    project="steel-safety",
                    item_id=item,
                    field_path="worker_count",
                    annotator="gone",
                    arm=arm,
                    tier=tier,
                    value=1,
                    source="label_studio",
                    source_id=f"ls:deleted:{item}",
                    stored_at=ts,
                    deleted_at=ts,
                )
            )
    rows = {
        (r["stage"], r["detail"]): r["items"] for r in loop_funnel(loop_ws.store, "steel-safety")
    }
    assert rows[("annotated", "blind")] == PLANTED["annotated_blind"]
    assert rows[("reviewed", "expert (tier 2)")] == PLANTED["reviewed"]


def test_costs_and_label_studio_links(loop_ws):
    costs = model_costs(loop_ws.store, "steel-safety")
    assert [(c["purpose"], c["model"], c["calls"], c["simulated"]) for c in costs] == [
        ("prefill", "simulated-steel-v1", 10, True)
    ]
    assert costs[0]["cost_usd"] == pytest.approx(PLANTED["cost_usd"])
    links = label_studio_links(loop_ws.store, "steel-safety")
    assert [(lk["arm"], lk["url"]) for lk in links] == [
        ("anchored", "http://127.0.0.1:8080/projects/12/data"),
        ("blind", "http://127.0.0.1:8080/projects/11/data"),
    ]


def test_read_only_store_refuses_writes(loop_ws):
    ro = read_only_store(loop_ws.url)
    try:
        with (
            pytest.raises(OperationalError, match=r"readonly|read-only|query_only"),
            ro.begin() as conn,
        ):
            conn.execute(
                insert(tables.exclusions).values(
                    project="steel-safety",
                    annotator="x",
                    reason="r",
                    decided_by="me",
                    decided_at=None,
                )
            )
        assert ro.status("steel-safety")["items"] == PLANTED["items"]
    finally:
        ro.close()


def _dump(path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return list(con.iterdump())
    finally:
        con.close()


def test_overview_page_shows_the_planted_numbers(loop_ws, run_app, texts):
    before = _dump(loop_ws.root / "truthline.db")
    at = run_app(loop_ws)
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Items"] == str(PLANTED["items"])
    assert metrics["Predictions"] == str(PLANTED["prefill_parsed"] + PLANTED["prefill_failed"])
    assert metrics["Model cost (USD)"] == f"{PLANTED['cost_usd']:.4f}"
    shown = texts(at)
    assert "SIMULATED data" in shown
    assert "http://127.0.0.1:8080/projects/11/data" in shown
    funnel = next(df.value for df in at.dataframe if "stage" in df.value.columns)
    got = {(r.stage, r.detail): r.items for r in funnel.itertuples()}
    assert got[("pushed", "anchored")] == PLANTED["pushed_anchored"]
    assert got[("benchmarked", "any run")] == PLANTED["benchmarked"]
    # Every chart has its CSV download next to it.
    assert len(at.get("download_button")) >= 2
    # The page never wrote to the store.
    assert _dump(loop_ws.root / "truthline.db") == before


def test_missing_store_is_a_clear_error(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "nowhere"))
    monkeypatch.delenv("TRUTHLINE_DB", raising=False)
    at = AppTest.from_string(
        "from truthline.dashboards._frame import main\nmain()\n", default_timeout=60
    ).run()
    assert not at.exception
    assert "no store at" in at.error[0].value and "truthline demo" in at.error[0].value
    assert not (tmp_path / "nowhere").exists()


def test_unknown_project_is_a_clear_error(loop_ws, run_app):
    at = run_app(loop_ws, project="nope")
    assert "no project 'nope'" in at.error[0].value
    assert "steel-safety" in at.error[0].value
