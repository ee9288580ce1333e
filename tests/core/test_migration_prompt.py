"""Migration 3 (``responses.prompt``) upgrades a schema-2 store in place, on SQLite and
PostgreSQL: the column appears, the answers already stored stay (prompt NULL), and new
answers can carry their prompt text."""

from __future__ import annotations

from sqlalchemy import inspect, select, text

from truthline.store import SCHEMA_VERSION, Store, now, tables


def _response(store: Store, key: str, **extra) -> None:
    with store.begin() as conn:
        conn.execute(
            tables.responses.insert().values(
                cache_key=key,
                purpose="benchmark",
                model_spec="openai:m",
                model_alias="m",
                status="parsed",
                raw_response="{}",
                prompt_hash="h" * 64,
                created_at=now(),
                updated_at=now(),
                **extra,
            )
        )


def test_schema_2_store_gets_the_prompt_column(store_url):
    assert SCHEMA_VERSION >= 3
    s = Store(store_url)
    with s.begin() as conn:  # back to schema 2: no prompt column, version 3 not recorded
        conn.execute(text("ALTER TABLE responses DROP COLUMN prompt"))
        conn.execute(tables.schema_version.delete().where(tables.schema_version.c.version >= 3))
        conn.execute(
            text(
                "INSERT INTO responses (cache_key, purpose, model_spec, model_alias, simulated, "
                "status, raw_response, prompt_hash, created_at, updated_at) VALUES "
                "('old', 'benchmark', 'openai:m', 'm', false, 'parsed', '{}', :h, :t, :t)"
            ),
            {"h": "h" * 64, "t": now()},
        )
    s.close()
    s = Store(store_url)  # reopening migrates
    with s.begin() as conn:
        cols = {c["name"] for c in inspect(conn).get_columns("responses")}
        versions = [r[0] for r in conn.execute(select(tables.schema_version.c.version))]
        old = conn.execute(
            select(tables.responses.c.prompt, tables.responses.c.raw_response).where(
                tables.responses.c.cache_key == "old"
            )
        ).one()
    assert "prompt" in cols and versions == list(range(1, SCHEMA_VERSION + 1))
    assert old.prompt is None and old.raw_response == "{}"
    _response(s, "new", prompt={"system": "sys", "user": "how many workers?"})
    with s.begin() as conn:
        got = conn.execute(
            select(tables.responses.c.prompt).where(tables.responses.c.cache_key == "new")
        ).scalar_one()
    assert got == {"system": "sys", "user": "how many workers?"}
    s.close()
