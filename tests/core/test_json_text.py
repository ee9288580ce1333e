"""``make_dumps``: the text cache keys hash is ``json.dumps``'s, byte for byte; ``cell_dumps``:
a JSON cell reads back as ``json.dumps``'s text does."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text

from truthline.store import Store, _json_text, json_hash, make_dumps, now, tables

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)

_OPTIONS = [
    {},
    {"sort_keys": True, "default": str},
    {"separators": (",", ":")},
]


@settings(max_examples=300, deadline=None)
@given(_json)
def test_same_text_as_json_dumps(obj: object) -> None:
    for opts in _OPTIONS:
        assert make_dumps(**opts)(obj) == json.dumps(obj, **opts)  # type: ignore[arg-type]


def test_the_fast_encoder_is_the_one_in_use() -> None:
    """On CPython the reused C encoder is what ``make_dumps`` returns (not the fallback)."""
    assert not hasattr(make_dumps(), "func")  # a functools.partial of json.dumps has .func


def test_default_handles_what_json_cannot() -> None:
    ts = datetime(2026, 12, 7, 14, 0, tzinfo=UTC)
    hashed = make_dumps(sort_keys=True, default=str)
    assert hashed({"t": ts, "a": 1}) == json.dumps({"t": ts, "a": 1}, sort_keys=True, default=str)
    with pytest.raises(TypeError, match="Object of type datetime is not JSON serializable"):
        make_dumps()({"t": ts})


def test_nan_is_kept_as_json_dumps_writes_it() -> None:
    out = make_dumps()({"x": float("nan"), "y": float("-inf")})
    assert out == '{"x": NaN, "y": -Infinity}'
    assert math.isnan(json.loads(out)["x"])


def test_falls_back_to_json_dumps_without_the_c_encoder(monkeypatch) -> None:
    monkeypatch.setattr(_json_text._encoder, "c_make_encoder", None)
    d = make_dumps(sort_keys=True, default=str)
    assert getattr(d, "func", None) is json.dumps
    assert d({"b": 1, "a": [2]}) == '{"a": [2], "b": 1}'


def test_json_hash_unchanged() -> None:
    """Cache keys stored before the encoder was reused still match: the digest of
    ``json.dumps(obj, sort_keys=True)`` (computed with the standard library, written down)."""
    obj = {"model": "openai:x", "settings": {"t": 0.0, "max_tokens": 64}, "images": ["ab"]}
    assert json_hash(obj) == "4edc675fe7d6798bc306a9432073689d9c1f00b8213c44176094098ee16ada9b"


@settings(max_examples=300, deadline=None)
@given(_json)
def test_a_cell_reads_back_as_json_dumps_text_does(obj: object) -> None:
    """``cell_dumps`` (orjson where it can) reads back as ``json.dumps``'s text does: NaN and
    infinities stay themselves, integers past 64 bits and int keys are kept."""
    got, want = json.loads(_json_text.cell_dumps(obj)), json.loads(json.dumps(obj))
    assert _same(got, want)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_a_cell_falls_back_where_orjson_would_change_the_value() -> None:
    cell = _json_text.cell_dumps
    assert cell({"x": float("nan"), "y": None}) == '{"x": NaN, "y": null}'
    assert cell([float("inf")]) == "[Infinity]"
    assert cell({"n": None, "s": "null"}) == '{"n":null,"s":"null"}'  # nulls, no NaN: orjson
    assert cell({1: "a"}) == '{"1": "a"}' and cell(2**70) == str(2**70)
    assert cell({"label": "chien é"}) == '{"label":"chien é"}'
    with pytest.raises(TypeError, match="datetime is not JSON serializable"):
        cell({"t": datetime(2026, 12, 8, tzinfo=UTC)})


def test_store_json_cells_read_back_as_stored(tmp_path) -> None:
    """A JSON cell stored through the engine is ``cell_dumps``'s text and reads back as the
    value, NaN included."""
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    value = {"label": "chien é", "count": 3, "nested": [1.5, None, True]}
    ts = now()
    with store.begin() as conn:
        for key, parsed in (("k", value), ("n", {"x": float("nan")})):
            conn.execute(
                tables.responses.insert().values(
                    cache_key=key * 64,
                    purpose="check",
                    model_spec="scripted:x",
                    model_alias="x",
                    status="parsed",
                    parsed=parsed,
                    created_at=ts,
                    updated_at=ts,
                )
            )
        raw = conn.execute(text("SELECT parsed FROM responses ORDER BY cache_key")).scalars().all()
        read = (
            conn.execute(select(tables.responses.c.parsed).order_by(tables.responses.c.cache_key))
            .scalars()
            .all()
        )
    store.close()
    assert raw == [_json_text.cell_dumps(value), '{"x": NaN}']
    assert read[0] == value and math.isnan(read[1]["x"])
