"""A rejected API key stops the run at the first rejection (issue 27), not after a failed
call per item: exit 1, one line, nothing stored, and a rerun with a good key asks all."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from tests.models._requests import numbered as _req
from tests.prefill.conftest import STEEL_ANSWER
from truthline.cli import app
from truthline.media import import_items
from truthline.models import (
    PARSED,
    EndpointFailingError,
    RetryPolicy,
    run_requests,
)
from truthline.models._stub import StubServer
from truthline.store import tables

FAST = RetryPolicy(retries=2, base=0.01, cap=0.05)
GOOD = '{"label": "dog", "count": 3}'


@pytest.mark.parametrize("code", ["401", "403"])
def test_rejected_key_stops_at_the_first_rejection(stub, tiny, images, store, code):
    stub.cases = {"": [code]}
    reqs = [_req(tiny, images, i) for i in range(30)]
    spec = f"openai:m@{stub.url};timeout=2"
    with pytest.raises(EndpointFailingError, match="rejected the API key") as exc:
        run_requests(store, spec, reqs, concurrency=4, progress=False, policy=FAST)
    assert "\n" not in str(exc.value) and f"http_{code}" in str(exc.value)
    assert len(stub.log) <= 4, "only the calls already in flight"
    with store.begin() as conn:  # a rejection is no answer: nothing stored, nothing paid
        assert conn.execute(select(func.count()).select_from(tables.responses)).scalar() == 0
        assert conn.execute(select(tables.request_claims)).all() == []
    stub.cases = {}
    stub.answer = lambda body: GOOD
    asked = len(stub.log)
    res = run_requests(store, spec, reqs, concurrency=4, progress=False, policy=FAST)
    assert [r.status for r in res] == [PARSED] * 30
    assert len(stub.log) - asked == 30, "the fixed key asks every item (no --retry-missing)"


def test_other_infra_failures_still_count_toward_max_failures(stub, tiny, images, store):
    stub.cases = {"": ["404"]}
    reqs = [_req(tiny, images, i) for i in range(20)]
    with pytest.raises(EndpointFailingError, match="3 consecutive failures"):
        run_requests(
            store,
            f"openai:m@{stub.url}",
            reqs,
            concurrency=1,
            progress=False,
            policy=FAST,
            max_failures=3,
        )
    assert len(stub.log) == 3


def test_prefill_run_with_a_rejected_key_exits_1_with_one_line(tmp_path):
    from truthline.simulate._scene import write_dataset
    from truthline.workspace import Workspace

    ws = Workspace.from_env(tmp_path / "ws")
    project = ws.init_project("steel-safety")
    media = ws.media_dir / project.name
    csv_path = write_dataset(media, n_clips=8, seed=2, size=(64, 36))
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    denied = StubServer(cases={"": ["401"]}, answer=lambda b: json.dumps(STEEL_ANSWER)).start()
    args = ["--workspace", str(ws.root), "prefill", "run", "-m", f"openai:m@{denied.url}"]
    try:
        r = CliRunner().invoke(app, [*args, "-c", "1", "--json"])
    finally:
        denied.stop()
    assert r.exit_code == 1
    assert "rejected the API key" in str(r.exception) and len(denied.log) == 1
    with ws.store.begin() as conn:
        assert conn.execute(select(func.count()).select_from(tables.responses)).scalar() == 0
    ws.store.close()


def test_not_run_results_name_the_rejection(stub, tiny, images, store):
    """Called from a library, the error carries the counts; nothing is half-reported."""
    stub.cases = {"": ["401"]}
    with pytest.raises(EndpointFailingError, match=r"0 answers stored, 5 unanswered"):
        run_requests(
            store,
            f"openai:m@{stub.url}",
            [_req(tiny, images, i) for i in range(5)],
            concurrency=1,
            progress=False,
            policy=FAST,
        )
