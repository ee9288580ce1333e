"""``make_dumps``: the store's JSON text (cache keys hash it) is ``json.dumps``'s, byte for byte."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text

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


def test_store_json_cells_are_json_dumps_text(tmp_path) -> None:
    """A JSON cell stored through the engine holds ``json.dumps``'s text."""
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    value = {"label": "chien é", "count": 3, "nested": [1.5, None, True]}
    ts = now()
    with store.begin() as conn:
        conn.execute(
            tables.responses.insert().values(
                cache_key="k" * 64,
                purpose="check",
                model_spec="scripted:x",
                model_alias="x",
                status="parsed",
                parsed=value,
                created_at=ts,
                updated_at=ts,
            )
        )
        raw = conn.execute(text("SELECT parsed FROM responses")).scalar_one()
    store.close()
    assert raw == json.dumps(value)
