"""The store on SQLite and on a real PostgreSQL: migrations, round trips, status counts."""

from __future__ import annotations

from sqlalchemy import select

from truthline.store import SCHEMA_VERSION, Store, json_hash, now, redact_url, tables


def _item(store: Store, project: str, key: str = "clip-1") -> int:
    with store.begin() as conn:
        return conn.execute(
            tables.items.insert().values(
                project=project,
                key=key,
                media_kind="frames",
                media=["a/0.jpg", "a/1.jpg"],
                media_root="/m",
                content_hash="h" * 64,
                meta={"site": "BF"},
                parent="video-1",
                sim_truth={"worker_count": 2},
                created_at=now(),
                updated_at=now(),
            )
        ).inserted_primary_key[0]


def test_migrations_are_recorded_and_idempotent(store_url):
    a = Store(store_url)
    with a.begin() as conn:
        versions = [r.version for r in conn.execute(select(tables.schema_version))]
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    a.close()
    b = Store(store_url)  # reopening applies nothing twice
    with b.begin() as conn:
        assert len(conn.execute(select(tables.schema_version)).all()) == SCHEMA_VERSION
    b.close()


def test_round_trip_json_values_and_status(store, steel_project):
    store.upsert_project(steel_project)
    store.upsert_project(steel_project)  # refresh, no duplicate
    assert store.project_names() == ["steel-safety"]
    item = _item(store, "steel-safety")
    workers = [{"worker_id": "P1", "action": "B1", "spatial_context": ["elevated", "crane_zone"]}]
    with store.begin() as conn:
        rid = conn.execute(
            tables.responses.insert().values(
                cache_key="k1",
                project="steel-safety",
                item_id=item,
                purpose="prefill",
                model_spec="simulated:steel-v1",
                model_alias="steel-v1",
                simulated=True,
                status="parsed",
                raw_response='{"worker_count": 2}',
                parsed={"worker_count": 2},
                tokens_in=100,
                tokens_out=20,
                cost_usd=0.0015,
                created_at=now(),
                updated_at=now(),
            )
        ).inserted_primary_key[0]
        pid = conn.execute(
            tables.predictions.insert().values(
                project="steel-safety",
                item_id=item,
                model_version="steel-v1",
                response_id=rid,
                values={"workers": workers, "worker_count": 2},
                status="parsed",
                simulated=True,
                created_at=now(),
            )
        ).inserted_primary_key[0]
        for i, (arm, tier, who) in enumerate(
            [("blind", 1, "ann_a"), ("anchored", 1, "ann_b"), ("review", 2, "expert")]
        ):
            conn.execute(
                tables.annotations.insert().values(
                    project="steel-safety",
                    item_id=item,
                    field_path="workers",
                    annotator=who,
                    arm=arm,
                    tier=tier,
                    value=workers,
                    lead_time=12.5,
                    source="label_studio",
                    source_id=f"ls:1:{i}",
                    shown_prediction_id=pid if arm == "anchored" else None,
                    stored_at=now(),
                )
            )
    with store.begin() as conn:
        row = conn.execute(select(tables.predictions).where(tables.predictions.c.id == pid)).one()
    assert row.values["workers"] == workers
    st = store.status("steel-safety")
    assert st["items"] == 1
    assert st["predictions"]["by_model"] == {"steel-v1": {"parsed": 1}}
    assert st["model_cost_usd"] == 0.0015
    assert st["annotations"]["by_arm_tier"] == {
        "anchored/tier1": 1,
        "blind/tier1": 1,
        "review/tier2": 1,
    }
    assert st["annotations"]["annotators"] == 3
    typed = store.stage_counts("steel-safety")  # the typed form other packages read
    assert typed.items == 1 and typed.annotations.annotators == 3
    assert typed.predictions.by_model == {"steel-v1": {"parsed": 1}}
    assert typed.to_dict() == st
    assert list(st) == [
        "project",
        "items",
        "skipped_media",
        "predictions",
        "model_cost_usd",
        "annotations",
        "gold",
        "runs",
        "exclusions",
    ]
    assert st["gold"] == {"snapshots": 0, "latest": None, "values": 0}


def test_latest_gold_snapshot_is_one_rule_even_on_a_timestamp_tie(store, steel_project):
    """Two snapshots written in the same instant: the status, the audit and the benchmark
    all name the same one as the latest (the hash breaks the tie)."""
    import pytest

    from truthline.audit import latest_snapshot, load_gold
    from truthline.errors import TruthlineError
    from truthline.store import resolve_snapshot

    store.upsert_project(steel_project)
    item = _item(store, "steel-safety")
    ts = now()
    with store.begin() as conn:
        assert resolve_snapshot(conn, "steel-safety", None) is None
        for h, n in (("b" * 64, 2), ("a" * 64, 1)):
            conn.execute(
                tables.gold_snapshots.insert().values(
                    hash=h, project="steel-safety", policy={}, counts={}, created_at=ts
                )
            )
            for k in range(n):
                conn.execute(
                    tables.gold.insert().values(
                        snapshot=h,
                        project="steel-safety",
                        item_id=item,
                        field_path=f"f{k}",
                        value=k,
                        provenance="expert",
                        sources=[],
                    )
                )
    assert latest_snapshot(store, "steel-safety") == "a" * 64
    assert store.stage_counts("steel-safety").gold.latest == "a" * 64
    assert store.status("steel-safety")["gold"] == {"snapshots": 2, "latest": "a" * 64, "values": 1}
    assert load_gold(store, "steel-safety").snapshot == "a" * 64
    assert len(load_gold(store, "steel-safety", "bbb")) == 2
    with pytest.raises(TruthlineError, match="ambiguous prefix"):
        load_gold(store, "steel-safety", "")


def test_unique_constraints_guard_idempotency(store, steel_project):
    import pytest
    from sqlalchemy.exc import IntegrityError

    store.upsert_project(steel_project)
    item = _item(store, "steel-safety")
    row = dict(
        project="steel-safety",
        item_id=item,
        field_path="helmet",
        annotator="a",
        arm="blind",
        tier=1,
        value="worn",
        source="label_studio",
        source_id="ls:9:1",
        stored_at=now(),
    )
    with store.begin() as conn:
        conn.execute(tables.annotations.insert().values(**row))
    with pytest.raises(IntegrityError), store.begin() as conn:
        conn.execute(tables.annotations.insert().values(**row))
    with store.begin() as conn:
        assert len(conn.execute(select(tables.annotations)).all()) == 1  # the first write survived


def test_helpers():
    assert json_hash({"b": 1, "a": 2}) == json_hash({"a": 2, "b": 1})
    assert "secret" not in redact_url("postgresql+psycopg://u:secret@h/db")
