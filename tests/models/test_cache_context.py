"""The cache key of backends that answer from the request context (SIMULATED models, rules)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from truthline.models import ModelRequest, parse_model_spec, request_key, run_requests
from truthline.project import load_project
from truthline.store import Store, now, tables
from truthline.workspace import templates_dir


def _req(project, item_id: int) -> ModelRequest:
    return ModelRequest(
        project=project.name,
        item_id=item_id,
        purpose="benchmark",
        system=None,
        user="the same prompt for every item",
        images=[],
        fields=project.field_types,
        settings={"max_tokens": 256},
        context={"key": f"item-{item_id}"},
    )


def test_identical_prompts_of_different_items_do_not_share_a_simulated_answer(tmp_path):
    project = load_project(templates_dir() / "steel-safety")
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.upsert_project(project)
    one = {"worker_count": 1, "scene_type": "production"}
    three = {"worker_count": 3, "scene_type": "yard"}
    with store.begin() as conn:
        for i, truth in ((1, one), (2, three)):
            conn.execute(
                tables.items.insert().values(
                    id=i,
                    project=project.name,
                    key=f"item-{i}",
                    media_kind="frames",
                    media=[],
                    media_root="",
                    content_hash=str(i) * 64,
                    meta={},
                    sim_truth=truth,
                    created_at=now(),
                    updated_at=now(),
                )
            )
    spec = parse_model_spec("simulated:perfect")
    a, b = _req(project, 1), _req(project, 2)
    # a real model would see two identical requests: one key (a cache hit is right there) ...
    assert request_key(spec, a)[0] == request_key(spec, b)[0]
    # ... but a backend answering from the context must key on it
    assert (
        request_key(spec, a, reads_context=True)[0] != request_key(spec, b, reads_context=True)[0]
    )
    res = run_requests(store, "simulated:perfect", [a, b], progress=False)
    assert [r.values["worker_count"] for r in res] == [1, 3]
    with store.begin() as conn:
        assert conn.execute(select(func.count()).select_from(tables.responses)).scalar_one() == 2


@pytest.mark.timeout(120)
def test_more_answers_than_the_unreported_cap_do_not_stall_the_runner(tmp_path, monkeypatch):
    """Regression: with a fast backend and a slow store, over 256 answers awaiting their
    commit made the backpressure loop await finished futures without yielding, forever."""
    import time

    from truthline.models._writer import ResponseWriter

    slow = ResponseWriter._write

    def write(self, group):
        time.sleep(0.05)  # a slow store: answers pile up faster than commits land
        return slow(self, group)

    monkeypatch.setattr(ResponseWriter, "_write", write)
    project = load_project(templates_dir() / "steel-safety")
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.upsert_project(project)
    n = 700
    with store.begin() as conn:
        conn.execute(
            tables.items.insert(),
            [
                dict(
                    id=i,
                    project=project.name,
                    key=f"item-{i}",
                    media_kind="frames",
                    media=[],
                    media_root="",
                    content_hash=f"{i:064d}",
                    meta={},
                    sim_truth={"worker_count": i % 4},
                    created_at=now(),
                    updated_at=now(),
                )
                for i in range(1, n + 1)
            ],
        )
    reqs = [_req(project, i) for i in range(1, n + 1)]
    res = run_requests(store, "simulated:perfect", reqs, concurrency=64, progress=False)
    assert [r.values["worker_count"] for r in res] == [i % 4 for i in range(1, n + 1)]


def test_known_truth_never_rides_in_a_request_the_simulated_backend_reads_it_itself(tmp_path):
    """A request is what a real backend is sent: the item's known truth must not be in it
    (prompt, settings or context); the SIMULATED backend looks it up by item id."""
    import json

    from truthline.models import item_requests

    project = load_project(templates_dir() / "steel-safety")
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    store.upsert_project(project)
    truth = {"worker_count": 2, "scene_type": "yard", "marker": "TRUTH-MARKER-7"}
    with store.begin() as conn:
        conn.execute(
            tables.items.insert().values(
                id=5,
                project=project.name,
                key="clip-5",
                media_kind="frames",
                media=[],
                media_root="",
                content_hash="5" * 64,
                meta={"site": "BF"},
                sim_truth=truth,
                created_at=now(),
                updated_at=now(),
            )
        )
    (req,) = item_requests(project, store.items(project.name), purpose="prefill")
    sent = json.dumps([req.system, req.user, req.settings, req.context], default=str)
    assert "TRUTH-MARKER-7" not in sent and "sim_truth" not in sent
    (res,) = run_requests(store, "simulated:perfect", [req], progress=False)
    assert res.values["worker_count"] == 2 and res.values["scene_type"] == "yard"
