"""``request_keys`` (a run's keys, its parts serialized once) gives each request the very
key and legacy key ``request_key`` and ``legacy_key`` give it one at a time: answers stored
under either are found, whichever made them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from truthline.models import ModelRequest, parse_model_spec
from truthline.models._keys import KEY_LABELS, legacy_key, request_key, request_keys

_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_settings = st.dictionaries(
    st.sampled_from([*KEY_LABELS, "temperature", "max_tokens", "image_policy", "é", "a b"]),
    _value,
    max_size=6,
)


def _images(tmp: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        p = tmp / f"img{i}.png"
        if not p.exists():
            p.write_bytes(bytes([i]) * (10 + i))
        out.append(p)
    return out


@settings(max_examples=150, deadline=None)
@given(
    shared=_settings,
    own=st.lists(st.one_of(st.none(), _settings), min_size=1, max_size=5),
    prompts=st.lists(st.tuples(st.none() | st.text(max_size=12), st.text(max_size=12)), min_size=5),
    n_images=st.integers(0, 3),
    spec=st.sampled_from(["openai:gpt-x@http://127.0.0.1:9/v1", "scripted:one;replicate=3"]),
)
def test_the_keys_of_a_run_are_each_requests_key(
    tmp_path_factory, shared, own, prompts, n_images, spec
) -> None:
    tmp = tmp_path_factory.mktemp("keys")
    ms = parse_model_spec(spec)
    reqs = [
        ModelRequest(
            project="p",
            item_id=i,
            purpose="benchmark",
            system=prompts[i][0],
            user=prompts[i][1],
            images=_images(tmp, (n_images + i) % 4),
            fields={},
            # most requests share one settings dict (as a run's do); some have their own
            settings=shared if s is None else s,
        )
        for i, s in enumerate(own)
    ]
    keys, legacy = request_keys(ms, reqs)
    assert keys == [request_key(ms, r) for r in reqs]
    assert legacy == [legacy_key(ms, r, request_key(ms, r), False) for r in reqs]


def test_reading_the_context_keys_each_item_apart(tmp_path) -> None:
    ms = parse_model_spec("scripted:one")
    same = {"variant": "v1", "temperature": 0.0, "when": datetime(2026, 1, 2)}
    reqs = [
        ModelRequest("p", i, "benchmark", None, "q", [], {}, same, context={"i": i})
        for i in range(3)
    ]
    keys, legacy = request_keys(ms, reqs, reads_context=True)
    assert keys == [request_key(ms, r, reads_context=True) for r in reqs]
    assert len({k[0] for k in keys}) == 3 and legacy == [None, None, None]
    # without the context the three share one key, and a labelled one keeps its old key
    plain, old = request_keys(ms, reqs)
    assert len({k[0] for k in plain}) == 1 and old[0] is not None and old[0] != plain[0][0]
