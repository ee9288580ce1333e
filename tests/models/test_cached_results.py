"""``cached_results`` finds exactly the stored answers among many keys, on SQLite (where
it first asks the driver which keys exist, in chunks) and on PostgreSQL."""

from __future__ import annotations

import pytest

from tests.models._rows import response_row
from truthline.models import cached_results
from truthline.store import Store, tables


@pytest.fixture
def any_store(store_url: str):
    s = Store(store_url)
    yield s
    s.close()


def _row(key: str, i: int) -> dict:
    return response_row(key, raw_response=f'{{"n": {i}}}', parsed={"n": i})


def test_every_stored_key_is_found_and_no_other(any_store) -> None:
    stored = {f"{i:064x}": i for i in range(0, 2500, 3)}  # spread over several chunks
    with any_store.begin() as conn:
        conn.execute(tables.responses.insert(), [_row(k, i) for k, i in stored.items()])
    asked = [f"{i:064x}" for i in range(2500)] + [f"{7:064x}"]  # one key asked twice
    got = cached_results(any_store, asked)
    assert set(got) == set(stored)
    assert all(got[k].values == {"n": i} and got[k].cached for k, i in stored.items())
    assert cached_results(any_store, []) == {}
