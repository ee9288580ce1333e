"""The async runner: bounded concurrency, retries for infrastructure failures only,
one durable store row per answer, the cache, cost and budget, Ctrl-C.

Every request ends as exactly one of ``parsed``, ``model_failure`` (unparseable, refused,
truncated at the output cap — with the reason) or ``infra_missing`` (transport, 5xx, 429,
timeout after retries). A request the runner never sent (budget reached, interrupted)
comes back as ``not_run`` and is not stored. Answers are committed as they arrive, so a
crash loses nothing and a rerun asks nothing twice: the cache key is model identity +
settings + rendered prompt hash + image hashes.

Nothing is paid for twice (issue 27): a run claims the keys it will send in the store
first (``_claims``: another live run's work is skipped or waited for), and a paid answer
is in the journal (``_journal``, fsync'd) before its store write, so a failing write loses
nothing and the next run replays it. A rejected API key stops the run at the first call.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from truthline.errors import AnswerFormatError, TruthlineError
from truthline.fields import parse_answer, parse_fields, request_grammar
from truthline.models._claims import ClaimBook, Claims, Holder
from truthline.models._heap import frozen_heap
from truthline.models._images import holds_sources
from truthline.models._journal import Journal, default_journal_dir, replay
from truthline.models._keys import (
    Key,
    _utc,
    fresh_key,
    request_keys,
)
from truthline.models._prices import price_known
from truthline.models._registry import Backend, get_backend
from truthline.models._spec import ModelSpec, parse_model_spec
from truthline.models._types import (
    INFRA_MISSING,
    MODEL_FAILURE,
    NOT_RUN,
    PARSED,
    AuthError,
    Completion,
    EndpointFailingError,
    InfraError,
    ModelRequest,
    ModelResult,
)
from truthline.models._writer import Job, Persist, ResponseWriter
from truthline.store import now, tables

_REFUSAL = re.compile(
    r"^\s*(i'?m sorry|i am sorry|sorry,|i can(?:'|no)t|i cannot|i won'?t|i am unable|i'm unable)",
    re.I,
)


@dataclass
class RetryPolicy:
    """Retries for infrastructure failures: exponential backoff with full jitter, capped;
    a server's Retry-After wins over the computed delay."""

    retries: int = 4
    base: float = 0.5
    cap: float = 30.0
    max_retry_after: float = 300.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after))
        return random.uniform(0, min(self.cap, self.base * 2 ** (attempt - 1)))


def classify(fields: Any, comp: Completion) -> tuple[str, str | None, dict, dict]:
    """``(status, reason, values, field_errors)`` of an answer per METRICS.md §5, read under
    the answer grammar of the question (``fields._answer.request_grammar``)."""
    if comp.refusal or comp.finish_reason == "content_filter":
        return MODEL_FAILURE, "refused", {}, {}
    if comp.finish_reason == "length":
        return MODEL_FAILURE, "truncated", {}, {}
    bare = request_grammar(fields) != "json"
    if bare and comp.text and _REFUSAL.match(comp.text):  # "I cannot tell" fits a label
        return MODEL_FAILURE, "refused", {}, {}
    try:
        obj = parse_answer(fields, comp.text)
    except AnswerFormatError as exc:
        if comp.text and _REFUSAL.match(comp.text):
            return MODEL_FAILURE, "refused", {}, {}
        return MODEL_FAILURE, exc.reason, {}, {}
    values, errors = parse_fields(fields, obj)
    return PARSED, None, values, errors


def _from_row(row: Any, cached: bool = True) -> ModelResult:
    m = row._mapping
    return ModelResult(
        response_id=m["id"],
        cache_key=m["cache_key"],
        status=m["status"],
        reason=m["reason"],
        values=m["parsed"] or {},
        field_errors=m["field_errors"] or {},
        raw=m["raw_response"],
        tokens_in=m["tokens_in"] or 0,
        tokens_out=m["tokens_out"] or 0,
        tokens_thinking=m["tokens_thinking"] or 0,
        cost_usd=m["cost_usd"] or 0.0,
        latency_s=m["latency_s"],
        cached=cached,
        attempts=m["attempts"] or 1,
        simulated=bool(m["simulated"]),
        stored_at=_utc(m["created_at"]) if m["created_at"] is not None else None,
        origin=m["purpose"],
    )


def cached_results(store: Any, keys: Sequence[str]) -> dict[str, ModelResult]:
    """The stored answer of each key that has one."""
    t = tables.responses
    out: dict[str, ModelResult] = {}
    uniq = list(dict.fromkeys(keys))
    with store.begin() as conn:
        if conn.dialect.name == "sqlite":
            uniq = _stored_keys(conn, uniq)  # most keys of a new run have no answer yet
        for i in range(0, len(uniq), 500):
            for row in conn.execute(select(t).where(t.c.cache_key.in_(uniq[i : i + 500]))):
                out[row.cache_key] = _from_row(row)
    return out


def _stored_keys(conn: Any, keys: list[str]) -> list[str]:
    """Which of ``keys`` have a stored response, asked of SQLite directly. Why: for a new
    run none do, and SQLAlchemy's expanding ``IN`` (its per-key bind processing) cost more
    than the query; the rows are then read through SQLAlchemy for the keys found only."""
    found: list[str] = []
    sql_head = f"SELECT cache_key FROM {tables.responses.name} WHERE cache_key IN ("
    for i in range(0, len(keys), 900):  # under the oldest SQLite's 999 bound parameters
        chunk = keys[i : i + 900]
        marks = ", ".join("?" * len(chunk))
        sql = f"{sql_head}{marks})"
        found.extend(r[0] for r in conn.exec_driver_sql(sql, tuple(chunk)))
    return found


_FATAL = frozenset({"connection", "http_404"})
"""Infrastructure failures that no retry fixes (endpoint down, wrong URL): ``max_failures``
of them in a row stop the run. A rejected key (``_is_auth``) stops it at the first."""


def _is_auth(out: object) -> bool:
    """The endpoint rejected the key: every later call would fail the same way."""
    return isinstance(out, AuthError) or (
        isinstance(out, InfraError) and out.reason in ("http_401", "http_403")
    )


class _Run:
    def __init__(
        self,
        store: Any,
        be: Backend,
        reqs: Sequence[ModelRequest],
        keys: list[tuple],
        policy: RetryPolicy,
        max_cost: float | None,
        on_result: Callable | None,
        max_failures: int | None = None,
    ):
        self.store = store
        self.be = be
        self.reqs = reqs
        self.keys = keys
        self.policy = policy
        self.max_cost = max_cost
        self.on_result = on_result
        self.max_failures = max_failures
        self.spent = 0.0
        self.reserved = 0.0
        self.held: dict[int, tuple[float, int]] = {}
        self.scale = 1.0
        self.settled = asyncio.Event()
        self.failures = 0
        self.consecutive = 0
        self.last_failure = ""
        self.stop_reason: str | None = None
        self.results: dict[int, ModelResult] = {}
        self.dups: dict[int, list[int]] = {}
        self.existing: dict[str, int] = {}
        self.price = be.price
        self.bar: Any = None
        self.task: Any = None
        self.writer: Any = None
        self.unreported: dict[int, tuple[Job, asyncio.Future]] = {}
        self.max_unreported = 1024
        """Answers awaiting their commit before the workers wait (the writer's groups)."""
        self.error: BaseException | None = None
        self.auth: InfraError | None = None
        """The first rejection of the key (the run stopped there)."""
        self.journal: Journal | None = None
        self.unstored: set[str] = set()
        """Keys whose store write failed (their answers wait in the journal)."""
        self.healed: list[asyncio.Future] = []
        self.claims = Claims()
        self.book: ClaimBook | None = None
        self.waiting: dict[int, Holder] = {}
        """First index -> the other run holding its key (not sent by this run)."""
        self.reasons: dict[int, str] = {}
        self.retry_missing = False
        self.persists = False
        self.workers: list[asyncio.Task] = []

    # -- budget --------------------------------------------------------------------------
    async def reserve(self, i: int) -> bool:
        """Hold the worst-case cost of request ``i`` before it is sent, so that answers
        in flight can never take the run past ``max_cost``; False: it does not fit."""
        if self.max_cost is None:
            return not self.stop_reason
        tin, tout = self.be.worst_case_tokens(self.reqs[i])
        est = self.price.cost(int(tin * self.scale), tout)
        while not self.stop_reason:
            if self.spent + self.reserved + est <= self.max_cost + 1e-12:
                self.reserved += est
                self.held[i] = (est, tin)
                return True
            if self.reserved <= 0:  # nothing in flight will free budget: it is spent
                self.stop_reason = "budget"
                break
            await self.settled.wait()  # an answer in flight settles its reservation
        return False

    def settle(self, i: int, cost: float, tokens_in: int) -> None:
        est, tin = self.held.pop(i, (0.0, 0))
        self.reserved = max(0.0, self.reserved - est)
        if tin and tokens_in > tin * self.scale:  # the estimate was short: hold more
            self.scale = tokens_in / tin
        self.spent += cost
        self.settled.set()
        self.settled = asyncio.Event()

    # -- store ---------------------------------------------------------------------------
    def submit(
        self, i: int, out: Completion | InfraError, latency: float, attempts: int
    ) -> asyncio.Future:
        """Classify one answer and queue its row; report it once the future resolves."""
        req, (key, phash, ihashes) = self.reqs[i], self.keys[i]
        values: dict[str, Any]
        errors: dict[str, str]
        reason: str | None
        raw: str | None
        if isinstance(out, InfraError):
            status, reason, values, errors = INFRA_MISSING, out.reason, {}, {}
            raw, tin, tout, tthink = (out.detail or None), 0, 0, 0
        else:
            status, reason, values, errors = classify(req.fields, out)
            raw = out.raw if out.raw is not None else out.text
            tin, tout, tthink = out.tokens_in, out.tokens_out, out.tokens_thinking
        cost = self.price.cost(tin, tout, tthink)
        ts = now()
        row = dict(
            cache_key=key,
            created_at=ts,
            project=req.project,
            item_id=req.item_id,
            purpose=req.purpose,
            model_spec=self.be.spec.text,
            model_alias=self.be.spec.alias,
            simulated=self.be.simulated,
            status=status,
            reason=reason,
            raw_response=raw,
            parsed=values,
            field_errors=errors,
            tokens_in=tin,
            tokens_out=tout,
            tokens_thinking=tthink,
            cost_usd=cost,
            latency_s=latency,
            attempts=attempts,
            settings=req.settings,
            prompt_hash=phash,
            image_hashes=ihashes,
            prompt={"system": req.system, "user": req.user},
            updated_at=ts,
        )
        res = ModelResult(
            response_id=0,
            cache_key=key,
            status=status,
            reason=reason,
            values=values,
            field_errors=errors,
            raw=raw,
            tokens_in=tin,
            tokens_out=tout,
            tokens_thinking=tthink,
            cost_usd=cost,
            latency_s=latency,
            cached=False,
            attempts=attempts,
            simulated=self.be.simulated,
        )
        # the money is spent when the answer arrives: the budget counts it now
        self.settle(i, cost, tin)
        self.count_failure(out)
        job = Job(res, [req] + [self.reqs[j] for j in self.dups.get(i, [])])
        fut = self.writer.submit(row, self.existing.get(key), job)
        self.unreported[i] = (job, fut)
        return fut

    def rejected(self, i: int, out: InfraError) -> None:
        """The key was rejected: nothing to store (no answer, no cost); stop the run."""
        self.settle(i, 0.0, 0)
        self.auth = self.auth or out
        self.stop_reason = self.stop_reason or "auth"

    def count_failure(self, out: Completion | InfraError) -> None:
        """Consecutive unfixable failures (endpoint down, key rejected) stop the run."""
        if not isinstance(out, InfraError) or out.reason not in _FATAL:
            self.consecutive = 0
            return
        self.consecutive += 1
        self.last_failure = str(out)
        if self.max_failures and self.consecutive >= self.max_failures and not self.stop_reason:
            self.stop_reason = "failing"

    def report(self, i: int) -> None:
        """Account for and announce a committed answer (never before its commit)."""
        job, _ = self.unreported.pop(i)
        res = job.result
        for j in [i, *self.dups.get(i, [])]:
            self.results[j] = res
            if res.status != PARSED:
                self.failures += 1
            if self.on_result is not None:
                self.on_result(self.reqs[j], res)
        if self.bar is not None:
            self.bar.update(
                self.task,
                advance=1 + len(self.dups.get(i, [])),
                failures=self.failures,
                cost=self.spent,
            )

    def committed(self, i: int, fut: asyncio.Future) -> None:
        """Done-callback of a row's commit: report it, or stop the run on an error (the
        error is re-raised when the run ends)."""
        if i not in self.unreported:
            return
        if self.writer.journal_error is not None and self.error is None:
            self.error = self.writer.journal_error  # a full disk: stop sending
            self.stop_reason = "error"
        exc = fut.exception()
        if exc is not None:
            self.unstored.add(self.keys[i][0])
            self.error = self.error or exc
            self.stop_reason = "error"
            return
        try:
            self.report(i)
        except BaseException as err:  # an on_result callback failed: stop, re-raise later
            self.error = self.error or err
            self.stop_reason = "error"

    # -- calls ---------------------------------------------------------------------------
    async def call(self, batch: list[int]) -> None:
        pending = [i for i in batch if await self.reserve(i)]
        attempts = dict.fromkeys(pending, 0)
        while pending:
            for i in pending:
                attempts[i] += 1
            t0 = time.perf_counter()
            try:
                outs = await self.be.complete_batch([self.reqs[i] for i in pending])
            except InfraError as exc:
                outs = [exc] * len(pending)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a client bug or an unexpected library error
                err = InfraError("client_error", f"{type(exc).__name__}: {exc}", retry=False)
                outs = [err] * len(pending)
            latency = time.perf_counter() - t0
            retry: list[int] = []
            done: list[tuple[int, asyncio.Future]] = []
            delay = 0.0
            for i, out in zip(pending, outs, strict=True):
                if _is_auth(out):
                    assert isinstance(out, InfraError)
                    self.rejected(i, out)
                elif (
                    isinstance(out, InfraError)
                    and out.retry
                    and attempts[i] <= self.policy.retries
                    and not self.stop_reason
                ):
                    retry.append(i)
                    delay = max(delay, self.policy.delay(attempts[i], out.retry_after))
                else:
                    done.append((i, self.submit(i, out, latency, attempts[i])))
            # the worker moves on; each answer is reported when its commit lands
            # (``committed``). Backpressure: past ``max_unreported`` rows it waits.
            for i, fut in done:
                fut.add_done_callback(functools.partial(self.committed, i))
            while len(self.unreported) > self.max_unreported and done:
                oldest = self.unreported[min(self.unreported)][1]
                await asyncio.wait([oldest])
                # awaiting a finished future does not yield to the loop, so the commit's
                # done-callback (which reports the row and shrinks ``unreported``) would never
                # run and this loop would spin: let the loop run the callbacks first
                await asyncio.sleep(0)
            if retry:
                await asyncio.sleep(delay)
            pending = retry

    async def worker(self, queue: asyncio.Queue) -> None:
        size = max(1, self.be.batch_size)
        while not self.stop_reason:
            batch: list[int] = []
            while len(batch) < size and not queue.empty():
                batch.append(queue.get_nowait())
            if not batch:
                return
            await self.call(batch)

    async def work(self, queue: asyncio.Queue, concurrency: int) -> None:
        """Workers until the queue is empty (or the run stops)."""
        n = min(max(1, concurrency), self.be.max_concurrency or concurrency, queue.qsize())
        self.workers = [asyncio.create_task(self.worker(queue)) for _ in range(max(1, n))]
        await asyncio.gather(*self.workers)

    # -- claims --------------------------------------------------------------------------
    def take(self, i: int, old: ModelResult) -> None:
        """Request ``i`` (and its identical ones) answered by another run: its stored
        answer, no call (its prediction / result row healed by ``persist``), read under
        this request's answer fields as ``_stored_answers`` reads one stored before."""
        if not self.be.reads_context:
            old = _reread(old, self.reqs[i])
        group = [i, *self.dups.get(i, [])]
        for j in group:
            self.results[j] = old
        if self.persists:
            job = Job(old, [self.reqs[j] for j in group])
            self.healed.append(self.writer.submit(None, None, job))
        if self.on_result is not None:
            for j in group:
                self.on_result(self.reqs[j], old)
        if self.bar is not None:
            self.bar.update(self.task, advance=len(group), failures=self.failures, cost=self.spent)

    async def claim(self, idx: list[int]) -> list[int]:
        """Claim the keys of ``idx`` (first indices); returns those this run must send.
        Another run's answer found after the claim is taken (``take``), and a key another
        live run holds goes to ``waiting``. Claim first, read second: a run releases its
        claims only after its answers are committed, so a key claimed here has either no
        answer yet or one this read sees."""
        if self.book is None or not idx:
            return idx
        keys = [self.keys[i][0] for i in idx]
        held = await asyncio.to_thread(self.book.claim, keys)
        have = await asyncio.to_thread(cached_results, self.store, keys)
        send: list[int] = []
        for i, key in zip(idx, keys, strict=True):
            old = have.get(key)
            if old is not None and not (self.retry_missing and old.status == INFRA_MISSING):
                self.waiting.pop(i, None)
                self.claims.taken += 1 + len(self.dups.get(i, []))
                self.take(i, old)
            elif key in held:
                self.waiting[i] = held[key]
            else:
                self.waiting.pop(i, None)
                send.append(i)
        return send

    async def wait_claimed(self, queue: asyncio.Queue, concurrency: int) -> None:
        """``wait`` mode: poll until every key other runs held is answered or ours."""
        while self.waiting and not self.stop_reason:
            await asyncio.sleep(self.claims.poll_s)
            for i in await self.claim(sorted(self.waiting)):
                queue.put_nowait(i)
            if not queue.empty():
                await self.work(queue, concurrency)

    def leave_claimed(self) -> None:
        """What stays with other runs: ``not_run`` (reason ``claimed``), reported."""
        for i, holder in self.waiting.items():
            group = [i, *self.dups.get(i, [])]
            self.claims.left[holder] = self.claims.left.get(holder, 0) + len(group)
            for j in group:
                self.reasons[j] = "claimed"

    async def heartbeat(self) -> None:
        """Renew this run's claims while it lives (a killed run's expire)."""
        assert self.book is not None
        while True:
            await asyncio.sleep(self.claims.lease_s / 3)
            with contextlib.suppress(Exception):  # a store hiccup: the next beat retries
                await asyncio.to_thread(self.book.renew)


@frozen_heap
@holds_sources
async def arun_requests(
    store: Any,
    spec: str | ModelSpec,
    requests: Sequence[ModelRequest],
    *,
    concurrency: int = 8,
    max_cost: float | None = None,
    retry_missing: bool = False,
    progress: bool = True,
    policy: RetryPolicy | None = None,
    on_result: Callable[[ModelRequest, ModelResult], None] | None = None,
    backend: Backend | None = None,
    persist: Persist | None = None,
    max_failures: int | None = 5,
    claims: Claims | None = None,
    journal_dir: Path | None = None,
    fresh_since: datetime | None = None,
) -> list[ModelResult]:
    """The async form of ``run_requests`` (for callers already inside an event loop)."""
    ms = parse_model_spec(spec) if isinstance(spec, str) else spec
    be = backend or get_backend(ms)
    if max_cost is not None and be.paid and not price_known(ms):
        raise TruthlineError(
            f"model {ms.alias}: --max-cost needs its prices and {ms.name!r} is not in the price "
            "table; add ;price_in=USD;price_out=USD (per million tokens) to the model spec"
        )
    _check_settings(requests)
    be.bind(store)
    journal_dir = journal_dir or default_journal_dir(store)
    await asyncio.to_thread(replay, store, journal_dir)  # answers a failed write left behind
    keys, legacy = request_keys(ms, requests, reads_context=be.reads_context)
    stored, keys = _stored_answers(store, be, requests, keys, legacy, fresh_since)
    results: list[ModelResult | None] = [None] * len(requests)
    first: dict[str, int] = {}
    todo: list[int] = []
    run = _Run(
        store, be, requests, keys, policy or RetryPolicy(), max_cost, on_result, max_failures
    )
    run.claims = claims or Claims()
    run.retry_missing = retry_missing
    run.persists = persist is not None
    loop = asyncio.get_running_loop()
    run.writer = ResponseWriter(store, loop, persist=persist)
    for i, (key, _, _) in enumerate(keys):
        old = stored[i]
        if old is not None and not (retry_missing and old.status == INFRA_MISSING):
            results[i] = old
            if persist is not None:  # its prediction / result row (heals a crash between)
                run.healed.append(run.writer.submit(None, None, Job(old, [requests[i]])))
            if on_result is not None:
                on_result(requests[i], old)
            continue
        if old is not None:
            run.existing[key] = old.response_id
        if key in first:  # an identical request: one call, but every item gets its row
            run.dups.setdefault(first[key], []).append(i)
            continue
        first[key] = i
        todo.append(i)

    handled = _catch_signals(loop, run)
    beat: asyncio.Task | None = None
    try:
        if todo:
            label = run.claims.label or f"{requests[todo[0]].purpose} {ms.alias}"
            run.book = ClaimBook(store, run.claims.lease_s, label)
            beat = asyncio.create_task(run.heartbeat())
            todo = await run.claim(todo)
        waiting = run.claims.mode == "wait" and bool(run.waiting)
        if be.paid and journal_dir is not None and (todo or waiting):
            book = run.book
            run.journal = Journal(
                journal_dir, store, book.label if book else "", book.run_id if book else ""
            )
            run.writer.journal = run.journal
        await _drive(run, todo, concurrency, waiting, ms.alias, progress)
    finally:
        await run.writer.aclose()  # (done by _drive; here when a claim or the journal failed)
        if beat is not None:
            beat.cancel()
            await asyncio.gather(beat, return_exceptions=True)
        for sig, old_handler in handled.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, old_handler)
        _settle_claims(run)
        await be.aclose()
    for i, done in run.results.items():
        results[i] = done
    if run.auth is not None:
        n_sent = sum(not r.cached for r in run.results.values())
        raise EndpointFailingError(
            f"model {ms.alias}: the endpoint rejected the API key ({run.auth}); the run stopped "
            f"at the first rejection ({n_sent} answers stored, {sum(r is None for r in results)} "
            "unanswered). Check the key and its endpoint (`truthline models check SPEC`), then "
            "rerun"
        )
    if run.stop_reason == "failing":
        n_missing = sum(r.status == INFRA_MISSING for r in run.results.values())
        raise EndpointFailingError(
            f"model {ms.alias}: stopped after {run.consecutive} consecutive failures "
            f"({run.last_failure}); {n_missing} stored as infra_missing, "
            f"{sum(r is None for r in results)} not sent. Fix the endpoint or key "
            "(`truthline models check SPEC`), then rerun with --retry-missing"
        )
    out: list[ModelResult] = []
    for i, maybe in enumerate(results):
        res = maybe
        if res is None:
            res = ModelResult(
                response_id=0,
                cache_key=keys[i][0],
                status=NOT_RUN,
                reason=run.reasons.get(i) or run.stop_reason or "not_run",
                values={},
                field_errors={},
                raw=None,
                simulated=be.simulated,
            )
        out.append(res)
    return out


def _non_finite(obj: Any, path: str) -> tuple[str, float] | None:
    if isinstance(obj, float):
        return None if math.isfinite(obj) else (path, obj)
    if isinstance(obj, dict):
        items: Any = obj.items()
    elif isinstance(obj, list | tuple):
        items = enumerate(obj)
    else:
        return None
    for k, v in items:
        bad = _non_finite(v, f"{path}.{k}" if path else str(k))
        if bad is not None:
            return bad
    return None


def _check_settings(requests: Sequence[ModelRequest]) -> None:
    """Refuse a non-finite number in a request's settings (``temperature: .nan``) before
    anything is sent: no endpoint takes one, and the answer journal's JSON has no NaN
    (``_journal``). Requests usually share one settings dict: each is walked once."""
    seen: set[int] = set()
    for req in requests:
        if id(req.settings) in seen:
            continue
        seen.add(id(req.settings))
        bad = _non_finite(req.settings, "")
        if bad is not None:
            raise TruthlineError(
                f"item {req.item_id} ({req.purpose}): setting {bad[0]} is {bad[1]}, not a "
                "finite number; fix it where the settings come from (the project's "
                "benchmark/image_policy or the command's options)"
            )


def _stored_answers(
    store: Any,
    be: Backend,
    requests: Sequence[ModelRequest],
    keys: list[Key],
    legacy: list[str | None],
    fresh_since: datetime | None,
) -> tuple[list[ModelResult | None], list[Key]]:
    """The stored answer each request reuses (None: it is sent) and the keys answers
    sent now are stored under.

    Found under the request's key, or the key it had before ``KEY_LABELS`` left it. With
    ``fresh_since`` an answer stored before that time is not reused: the request is sent
    again and its answer stored under ``fresh_key`` (which a rerun of the same fresh run
    finds, so it asks nothing twice). A reused answer is read again under this request's
    answer fields (the same text: a prefill asked every field, a benchmark scores its
    targets); under the same fields that reading is the stored one."""
    since = _utc(fresh_since) if fresh_since is not None else None
    sent = [(fresh_key(k[0], since), k[1], k[2]) for k in keys] if since is not None else keys
    look = [k[0] for k in keys] + [k for k in legacy if k]
    if since is not None:
        look += [k[0] for k in sent]
    have = cached_results(store, look)
    out: list[ModelResult | None] = []
    for i, req in enumerate(requests):
        old = have.get(sent[i][0]) if since is not None else None
        for k in (keys[i][0], legacy[i]):
            cand = have.get(k) if k and old is None else None
            if cand is not None and (
                since is None or (cand.stored_at is not None and cand.stored_at >= since)
            ):
                old = cand
        if old is not None and not be.reads_context:
            old = _reread(old, req)
        out.append(old)
    return out, sent


def _reread(old: ModelResult, req: ModelRequest) -> ModelResult:
    """A stored answer read under this request's answer fields: the same text, no call
    (refusals and truncations come from the finish reason, kept as stored)."""
    if old.raw is None or old.status not in (PARSED, MODEL_FAILURE):
        return old
    if old.reason in ("refused", "truncated"):  # from the finish reason, not the text
        return old
    status, reason, values, errors = classify(req.fields, Completion(text=old.raw))
    return replace(old, status=status, reason=reason, values=values, field_errors=errors)


async def _drive(
    run: _Run, todo: list[int], concurrency: int, waiting: bool, alias: str, progress: bool
) -> None:
    """Send the queue (and, waiting, what other runs' claims free), then commit
    everything that arrived before returning or raising."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    cols = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("[cyan]{task.fields[rate]}"),
        TimeRemainingColumn(),
        TextColumn("[red]{task.fields[failures]} failed"),
        TextColumn("${task.fields[cost]:.4f}"),
    ]
    queue: asyncio.Queue = asyncio.Queue()
    for i in todo:
        queue.put_nowait(i)
    firsts = todo + (list(run.waiting) if waiting else [])
    total = sum(1 + len(run.dups.get(i, [])) for i in firsts)
    shown = progress and bool(firsts)
    with Progress(*cols, disable=not shown, transient=False) as bar:
        run.bar = _RateBar(bar) if shown else None
        run.task = bar.add_task(f"{alias}", total=total, failures=0, cost=0.0, rate="")
        try:
            if not queue.empty():
                await run.work(queue, concurrency)
            if waiting:
                await run.wait_claimed(queue, concurrency)
        except asyncio.CancelledError:
            await _cancel(run.workers)
            run.stop_reason = run.stop_reason or "interrupted"
        except BaseException:
            await _cancel(run.workers)  # nothing may outlive the run (or the writer)
            raise
        finally:
            # every answer that arrived is committed before the run returns or raises
            await run.writer.aclose()
            for i, (_, fut) in sorted(run.unreported.items()):
                if fut.done():  # committed while its worker was cancelled
                    run.committed(i, fut)
        run.leave_claimed()
        for fut in run.healed:
            if fut.exception() is not None:
                run.error = run.error or fut.exception()
        if run.error is not None:
            raise run.error
    if progress and run.claims.message():
        from rich.console import Console

        Console(stderr=True).print(f"[yellow]{alias}: {run.claims.message()}[/]")


def _settle_claims(run: _Run) -> None:
    """The journal goes once every answer is stored (else the next run replays it); the
    claims go too, but those of answers only the journal holds (they end with the lease,
    or at once when this process is gone)."""
    if run.journal is not None:
        if run.unstored or run.unreported:
            run.journal.close()
        else:
            run.journal.done()
    if run.book is not None:
        # the store may be what failed: claims then end with their lease
        with contextlib.suppress(Exception):
            run.book.release(keep=run.unstored)
        run.book.end()


def _catch_signals(loop: asyncio.AbstractEventLoop, run: _Run) -> dict[int, Any]:
    """Ctrl-C and SIGTERM stop the run the same way (in-flight answers committed);
    returns the previous handlers to restore. Only the main thread can set them."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    out: dict[int, Any] = {}
    for sig, reason in ((signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")):
        try:
            old = signal.getsignal(sig)
            loop.add_signal_handler(sig, _interrupt, run, reason)
            out[sig] = old
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    return out


async def _cancel(tasks: Sequence[asyncio.Task]) -> None:
    for w in tasks:
        w.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _RateBar:
    """Progress updates with a samples/s rate (rich's speed column is per-task smoothed)."""

    def __init__(self, bar: Any):
        self.bar = bar
        self.t0 = time.perf_counter()
        self.n = 0

    def update(self, task: Any, advance: int, failures: int, cost: float) -> None:
        self.n += advance
        el = max(time.perf_counter() - self.t0, 1e-9)
        self.bar.update(
            task, advance=advance, failures=failures, cost=cost, rate=f"{self.n / el:.1f}/s"
        )


def _interrupt(run: _Run, reason: str = "interrupted") -> None:
    """First Ctrl-C (or SIGTERM): stop starting requests and cancel the in-flight ones
    (never stored); everything already answered is committed before the run returns."""
    run.stop_reason = run.stop_reason or reason
    for task in asyncio.all_tasks():
        if task is not asyncio.current_task():
            task.cancel()


def run_requests(
    store: Any,
    spec: str | ModelSpec,
    requests: Sequence[ModelRequest],
    *,
    concurrency: int = 8,
    max_cost: float | None = None,
    retry_missing: bool = False,
    progress: bool = True,
    policy: RetryPolicy | None = None,
    on_result: Callable[[ModelRequest, ModelResult], None] | None = None,
    backend: Backend | None = None,
    persist: Persist | None = None,
    max_failures: int | None = 5,
    claims: Claims | None = None,
    journal_dir: Path | None = None,
    fresh_since: datetime | None = None,
) -> list[ModelResult]:
    """Run requests through one model; results align with ``requests``.

    Cached answers come back with ``cached=True`` and are not re-asked; ``retry_missing``
    re-sends only requests whose stored outcome is ``infra_missing``. Identical requests
    (same model, settings, prompt, images) are sent once and every one of them gets the
    answer (and its ``on_result`` / ``persist`` call).

    ``max_cost`` (USD) is a hard cap: each request's worst-case cost is reserved before
    it is sent and settled with its real usage, so the run never spends more; 0 sends
    nothing to a paid model, and a paid model without declared prices is refused
    (``TruthlineError``). Unsent requests come back as ``not_run`` with reason
    ``budget`` (``interrupted`` after Ctrl-C, ``terminated`` after SIGTERM).

    ``persist(conn, jobs)`` runs in the writer thread right after the answers' commit
    (a prediction or result row per request). ``max_failures`` consecutive unfixable
    failures (connection refused, HTTP 404) stop the run with ``EndpointFailingError``
    once everything answered is committed (None: never); a rejected key (HTTP 401/403,
    ``AuthError``) stops it at the first rejection, with the same error.

    ``claims`` (default ``Claims()``: skip): requests another live run on this store has
    claimed are not sent; they come back ``not_run`` with reason ``claimed`` and are
    counted in ``claims.left`` (``mode="wait"``: their answers are waited for instead).
    ``journal_dir`` (default: ``journal/`` in the workspace, ``default_journal_dir``):
    where paid answers are journaled before their store write, and replayed from.

    ``fresh_since`` (a fresh run's start): answers stored before it are asked again
    (``cached`` stays for those stored since, e.g. by an earlier attempt of that run).
    """
    coro = arun_requests(
        store,
        spec,
        requests,
        concurrency=concurrency,
        max_cost=max_cost,
        retry_missing=retry_missing,
        progress=progress,
        policy=policy,
        on_result=on_result,
        backend=backend,
        persist=persist,
        max_failures=max_failures,
        claims=claims,
        journal_dir=journal_dir,
        fresh_since=fresh_since,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def _in_thread() -> None:
        try:
            box["out"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["exc"] = exc

    th = threading.Thread(target=_in_thread)
    th.start()
    th.join()
    if "exc" in box:
        raise box["exc"]
    return box["out"]


def results_summary(results: Sequence[ModelResult]) -> dict[str, Any]:
    """Counts by outcome and reason, tokens and cost of a list of results."""
    by_status: dict[str, int] = {}
    by_reason: dict[str, int] = {}
    for r in results:
        by_status[r.status] = by_status.get(r.status, 0) + 1
        if r.reason:
            by_reason[f"{r.status}:{r.reason}"] = by_reason.get(f"{r.status}:{r.reason}", 0) + 1
    return {
        "requests": len(results),
        "by_status": by_status,
        "by_reason": by_reason,
        "cached": sum(r.cached for r in results),
        "cost_usd": round(sum(r.cost_usd for r in results if not r.cached), 6),
        "tokens_in": sum(r.tokens_in for r in results),
        "tokens_out": sum(r.tokens_out for r in results),
    }


__all__ = [
    "Claims",
    "EndpointFailingError",
    "RetryPolicy",
    "arun_requests",
    "cached_results",
    "classify",
    "results_summary",
    "run_requests",
]
