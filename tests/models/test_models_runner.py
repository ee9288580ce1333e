"""The runner against a local OpenAI-compatible stub: every outcome, exact retry counts,
the cache (no request twice), --retry-missing, the budget."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select

from truthline.models import (
    INFRA_MISSING,
    MODEL_FAILURE,
    NOT_RUN,
    PARSED,
    ModelRequest,
    RetryPolicy,
    run_requests,
)
from truthline.store import tables

FAST = RetryPolicy(retries=2, base=0.01, cap=0.05)
GOOD = '{"label": "dog", "count": 3}'


def req(tiny, images, case: str, i: int = 0) -> ModelRequest:
    return ModelRequest(
        project="tiny",
        item_id=None,
        purpose="benchmark",
        system="be brief",
        user=f"What is it? [[case:{case}]]",
        images=[images[i % len(images)]],
        fields=tiny.field_types,
        settings={"temperature": 0.0, "max_tokens": 64, "image_policy": {"max_side": 32}},
    )


def spec(stub, extra: str = "") -> str:
    return f"openai:stub-model@{stub.url};timeout=0.5{extra}"


def attempts(stub, case: str) -> int:
    return sum(1 for e in stub.log if e.case == case)


CASES = {
    "ok": (["json:" + GOOD], PARSED, None, 1),
    "fenced": (['json:```json\n{"label": "cat", "count": 1}\n```'], PARSED, None, 1),
    "garbage": (["json:lorem ipsum dolor"], MODEL_FAILURE, "unparseable", 1),
    "dupkey": (['json:{"label": "cat", "label": "dog"}'], MODEL_FAILURE, "duplicate_key", 1),
    "two": (['json:{"label": "cat"} {"label": "dog"}'], MODEL_FAILURE, "multiple_objects", 1),
    "length": (["length"], MODEL_FAILURE, "truncated", 1),
    "refusal": (["refusal"], MODEL_FAILURE, "refused", 1),
    "sorry": (["json:I'm sorry, I cannot help with that."], MODEL_FAILURE, "refused", 1),
    "r429": (["429:0.3", "json:" + GOOD], PARSED, None, 2),
    "r500": (["500", "500", "json:" + GOOD], PARSED, None, 3),
    "dead500": (["500"], INFRA_MISSING, "http_500", 3),
    "dead503": (["503"], INFRA_MISSING, "http_503", 3),
    "timeout": (["timeout", "json:" + GOOD], PARSED, None, 2),
    "deadtimeout": (["timeout"], INFRA_MISSING, "timeout", 3),
    "badbody": (["badbody"], INFRA_MISSING, "bad_response", 3),
    "auth": (["401"], INFRA_MISSING, "http_401", 1),
    "badreq": (["400"], INFRA_MISSING, "http_400", 1),
}


def test_every_outcome_and_exact_retry_counts(stub, tiny, images, store):
    stub.cases = {k: v[0] for k, v in CASES.items()}
    stub.timeout_sleep_s = 2.0
    stub.answer = lambda body: GOOD
    names = list(CASES)
    reqs = [req(tiny, images, c, i) for i, c in enumerate(names)]
    t0 = time.perf_counter()
    res = run_requests(store, spec(stub), reqs, concurrency=8, progress=False, policy=FAST)
    assert time.perf_counter() - t0 < 20
    for name, r in zip(names, res, strict=True):
        _, status, reason, n = CASES[name]
        assert (name, r.status, r.reason) == (name, status, reason)
        assert attempts(stub, name) == n, name
        assert r.attempts == n, name
    ok = res[names.index("ok")]
    assert ok.values == {"label": "dog", "count": 3} and ok.field_errors == {}
    assert ok.tokens_in > 0 and ok.tokens_out > 0 and not ok.cached
    assert res[names.index("fenced")].values == {"label": "cat", "count": 1}
    # Retry-After was honoured: the second attempt came at least 0.3 s after the first.
    t429 = [e.at for e in stub.log if e.case == "r429"]
    assert t429[1] - t429[0] >= 0.29
    # one durable row per request, with raw answer, status and settings
    with store.begin() as conn:
        rows = conn.execute(select(tables.responses)).all()
    assert len(rows) == len(names)
    by_key = {r.cache_key: r for r in rows}
    row = by_key[ok.cache_key]
    assert row.raw_response == GOOD and row.status == PARSED and row.attempts == 1
    assert row.settings["max_tokens"] == 64 and row.model_alias == "openai:stub-model"
    assert row.simulated is False


def test_rerun_never_reasks_and_retry_missing_only_resends_infra(stub, tiny, images, store):
    stub.cases = {
        "a": ["json:" + GOOD],
        "b": ["json:nonsense"],
        "c": ["500", "500", "500", "json:" + GOOD],
    }
    reqs = [req(tiny, images, c, i) for i, c in enumerate("abc")]
    first = run_requests(store, spec(stub), reqs, progress=False, policy=FAST)
    assert [r.status for r in first] == [PARSED, MODEL_FAILURE, INFRA_MISSING]
    n = len(stub.log)
    again = run_requests(store, spec(stub), reqs, progress=False, policy=FAST)
    assert len(stub.log) == n  # nothing re-requested
    assert all(r.cached for r in again)
    assert [r.response_id for r in again] == [r.response_id for r in first]
    fixed = run_requests(store, spec(stub), reqs, progress=False, policy=FAST, retry_missing=True)
    assert [e.case for e in stub.log[n:]] == ["c"]  # only the infra-missing one
    assert [r.status for r in fixed] == [PARSED, MODEL_FAILURE, PARSED]
    assert fixed[2].response_id == first[2].response_id  # the same row, updated
    with store.begin() as conn:
        assert conn.execute(select(func.count()).select_from(tables.responses)).scalar() == 3


def test_cache_key_covers_settings_prompt_and_images(stub, tiny, images, store):
    stub.answer = lambda body: GOOD
    base = req(tiny, images, "k")
    other_img = req(tiny, images, "k", 1)
    other_set = req(tiny, images, "k")
    other_set.settings = {**other_set.settings, "temperature": 0.7}
    res = run_requests(
        store,
        spec(stub),
        [base, other_img, other_set, req(tiny, images, "k")],
        progress=False,
        policy=FAST,
    )
    assert len({r.cache_key for r in res[:3]}) == 3
    assert res[3].cache_key == res[0].cache_key
    assert len(stub.log) == 3  # the duplicate in one batch is asked once


def test_max_cost_stops_cleanly(stub, tiny, images, store):
    stub.answer = lambda body: GOOD
    reqs = [req(tiny, images, f"m{i}", i) for i in range(10)]
    res = run_requests(
        store,
        spec(stub, ";price_in=100000;price_out=100000"),
        reqs,
        concurrency=1,
        max_cost=3.0,
        progress=False,
        policy=FAST,
    )
    done = [r for r in res if r.status == PARSED]
    assert done and len(done) < 10
    assert all(r.status == NOT_RUN and r.reason == "budget" for r in res[len(done) :])
    spent = sum(r.cost_usd for r in done)
    assert spent >= 3.0 and spent - done[-1].cost_usd < 3.0
    assert len(stub.log) == len(done)
    cost = done[0].tokens_in * 0.1 + (done[0].tokens_out + done[0].tokens_thinking) * 0.1
    assert done[0].cost_usd == pytest.approx(cost)


def test_field_errors_do_not_zero_siblings(stub, tiny, images, store):
    stub.cases = {"f": ['json:{"label": "cow", "count": 2, "extra": 1}']}
    (r,) = run_requests(store, spec(stub), [req(tiny, images, "f")], progress=False, policy=FAST)
    assert r.status == PARSED
    assert r.values == {"label": None, "count": 2}
    assert "label" in r.field_errors and "cow" in r.field_errors["label"]
