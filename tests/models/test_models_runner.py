"""The runner against a local OpenAI-compatible stub: every outcome, exact retry counts,
the cache (no request twice), --retry-missing, the budget."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select

from tests.models._requests import SETTINGS, tiny_request
from truthline.errors import TruthlineError
from truthline.models import (
    INFRA_MISSING,
    MODEL_FAILURE,
    NOT_RUN,
    PARSED,
    EndpointFailingError,
    ModelRequest,
    RetryPolicy,
    run_requests,
)
from truthline.store import tables

FAST = RetryPolicy(retries=2, base=0.01, cap=0.05)
GOOD = '{"label": "dog", "count": 3}'


def req(tiny, images, case: str, i: int = 0) -> ModelRequest:
    return tiny_request(
        tiny,
        f"What is it? [[case:{case}]]",
        [images[i % len(images)]],
        settings={**SETTINGS, "image_policy": {"max_side": 32}},
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
    "notfound": (["404"], INFRA_MISSING, "http_404", 1),
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


def test_max_cost_is_a_hard_cap_under_concurrency(stub, tiny, images, store):
    """Each request's worst case is reserved before it is sent: 8 parallel workers can
    no longer overshoot the cap by concurrency x price (they spent 8 answers' worth)."""
    stub.answer = lambda body: GOOD
    reqs = [req(tiny, images, f"m{i}", i) for i in range(10)]
    priced = spec(stub, ";price_in=1000;price_out=1000;image_tokens=100")
    from truthline.models import get_backend

    tin, tout = get_backend(priced).worst_case_tokens(reqs[0])
    assert tout == 64 and tin > 100
    reserve = (tin + tout) * 1000 / 1e6
    cap = 1.6 * reserve  # room for one reservation at a time
    res = run_requests(
        store, priced, reqs, concurrency=8, max_cost=cap, progress=False, policy=FAST
    )
    done = [r for r in res if r.status == PARSED]
    spent = sum(r.cost_usd for r in done)
    assert done and spent <= cap, (len(done), spent, cap)
    assert len(stub.log) == len(done)
    assert all(r.status == NOT_RUN and r.reason == "budget" for r in res if r not in done)
    cost = done[0].tokens_in * 1e-3 + (done[0].tokens_out + done[0].tokens_thinking) * 1e-3
    assert done[0].cost_usd == pytest.approx(cost)


def test_max_cost_zero_sends_nothing_and_unknown_prices_are_refused(stub, tiny, images, store):
    stub.answer = lambda body: GOOD
    reqs = [req(tiny, images, f"z{i}", i) for i in range(4)]
    priced = spec(stub, ";price_in=1;price_out=1")
    res = run_requests(store, priced, reqs, concurrency=4, max_cost=0, progress=False)
    assert len(stub.log) == 0
    assert [r.status for r in res] == [NOT_RUN] * 4 and {r.reason for r in res} == {"budget"}
    # a model missing from the price table: a budget cannot be kept, so it is refused
    with pytest.raises(TruthlineError, match="price_in=USD;price_out=USD"):
        run_requests(store, spec(stub), reqs, max_cost=5.0, progress=False)
    assert len(stub.log) == 0
    # without a budget it runs (and records cost 0)
    res = run_requests(store, spec(stub), reqs[:1], progress=False, policy=FAST)
    assert res[0].status == PARSED and res[0].cost_usd == 0.0


def test_identical_requests_each_get_their_answer(stub, tiny, images, store):
    """Byte-identical prompt and media: one call, but on_result / persist see every
    request (items sharing a request used to get no row at all)."""
    stub.answer = lambda body: GOOD
    reqs = [req(tiny, images, "same") for _ in range(5)]
    for i, r in enumerate(reqs):
        r.item_id = None
        r.context = {"n": i}
    seen: list[int] = []
    persisted: list[int] = []

    def persist(conn, jobs) -> None:
        persisted.extend(q.context["n"] for j in jobs for q in j.requests)

    res = run_requests(
        store,
        spec(stub),
        reqs,
        progress=False,
        policy=FAST,
        on_result=lambda q, r: seen.append(q.context["n"]),
        persist=persist,
    )
    assert len(stub.log) == 1 and len({r.response_id for r in res}) == 1
    assert sorted(seen) == sorted(persisted) == [0, 1, 2, 3, 4]


def test_endpoint_down_or_wrong_url_stops_the_run(stub, tiny, images, store):
    """(A rejected key stops at the first call: tests/models/test_key_rejected.py.)"""
    stub.cases = {"gone": ["404"]}
    reqs = [req(tiny, images, "gone", i) for i in range(30)]
    for i, r in enumerate(reqs):
        r.user += f" #{i}"
    with pytest.raises(EndpointFailingError, match=r"5 consecutive failures \(http_404"):
        run_requests(
            store, spec(stub), reqs, concurrency=1, progress=False, policy=FAST, max_failures=5
        )
    assert len(stub.log) == 5, "it stops asking"
    with store.begin() as conn:  # what was answered (the failures) is stored
        assert conn.execute(select(func.count()).select_from(tables.responses)).scalar() == 5
    down = [req(tiny, images, f"d{i}", i) for i in range(12)]
    with pytest.raises(EndpointFailingError, match="connection"):
        run_requests(
            store,
            "openai:m@http://127.0.0.1:9/v1",
            down,
            concurrency=2,
            progress=False,
            policy=FAST,
        )


def test_field_errors_do_not_zero_siblings(stub, tiny, images, store):
    stub.cases = {"f": ['json:{"label": "cow", "count": 2, "extra": 1}']}
    (r,) = run_requests(store, spec(stub), [req(tiny, images, "f")], progress=False, policy=FAST)
    assert r.status == PARSED
    assert r.values == {"label": None, "count": 2}
    assert "label" in r.field_errors and "cow" in r.field_errors["label"]
