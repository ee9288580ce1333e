"""Samples page: every number on the Benchmark page links to the answers behind it, and
the Samples page opened on that link counts the same n; each item shows its image, the
prompt as sent, the raw output, parsed vs gold and its Label Studio task."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.benchmark.test_samples import GARBAGE, make_stub_run
from truthline.benchmark import leaderboard


@pytest.fixture(scope="module")
def stub_ws(tmp_path_factory):
    ws, project, items, _log = make_stub_run(tmp_path_factory.mktemp("dash-samples") / "ws")
    yield ws, project, items
    ws.store.close()


@pytest.fixture
def app_at(monkeypatch):
    """Run one dashboard page in AppTest with URL query parameters."""
    from streamlit.testing.v1 import AppTest

    def run(ws, page: str, query: dict[str, str] | None = None):
        monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(ws.root))
        monkeypatch.delenv("TRUTHLINE_DB", raising=False)
        monkeypatch.delenv("TRUTHLINE_PROJECT", raising=False)
        script = f"from truthline.dashboards._frame import main\nmain(page={page!r})\n"
        at = AppTest.from_string(script, default_timeout=120)
        for k, v in (query or {}).items():
            at.query_params[k] = v
        return at.run()

    return run


def _frame(at, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _query(link: str) -> dict[str, str]:
    parts = urlsplit(link)
    assert parts.path == "samples" and not parts.scheme  # relative: the same app
    return dict(parse_qsl(parts.query))


def test_leaderboard_links_open_the_answers_behind_each_number(stub_ws, app_at):
    ws, project, items = stub_ws
    bench = app_at(ws, "benchmark")
    assert not bench.exception, bench.exception
    lb = _frame(bench, "samples_failures")
    want = {m.model: m for m in leaderboard(ws.store, project, ["r-samples"])}
    row = lb[lb["model"] == "stub-vlm"].iloc[0]
    m = want["stub-vlm"]
    # all answers of the model: its items, and the decisions its accuracy rests on
    at = app_at(ws, "samples", _query(row["samples"]))
    assert not at.exception, at.exception
    assert int(_metric(at, "samples")) == len(items)
    assert int(_metric(at, "decisions")) == m.decisions == row["decisions"]
    assert float(_metric(at, "accuracy")) == pytest.approx(m.accuracy["point"], abs=5e-4)
    # the model failures: as many samples as the leaderboard's failures column
    at = app_at(ws, "samples", _query(row["samples_failures"]))
    assert int(_metric(at, "samples")) == row["model_failure"] == m.model_failure > 0
    assert set(_frame(at, "outcome")["outcome"]) <= {"parse_error", "refused", "truncated"}
    # the wrong decisions: decisions x (1 - accuracy)
    at = app_at(ws, "samples", _query(row["samples_wrong"]))
    wrong = m.decisions - round(m.accuracy["point"] * m.decisions)
    assert int(_metric(at, "decisions")) == wrong and int(_metric(at, "correct")) == 0
    # the infrastructure-missing model: its samples say so
    down = lb[lb["model"] == "down"].iloc[0]
    at = app_at(ws, "samples", _query(down["samples"]))
    assert _frame(at, "outcome")["outcome"].unique().tolist() == ["infra_missing"]


def test_per_class_and_provenance_links_count_their_decisions(stub_ws, app_at):
    ws, _project, _items = stub_ws
    bench = app_at(ws, "benchmark")
    per_class = _frame(bench, "class")
    r = per_class.iloc[0]
    at = app_at(ws, "samples", _query(r["samples"]))
    assert not at.exception, at.exception
    assert int(_metric(at, "decisions")) == r["n"]
    assert float(_metric(at, "accuracy")) == pytest.approx(r["accuracy"], abs=5e-4)
    safety = _frame(bench, "n_violations")
    row = safety[safety["model"] == "stub-vlm"].iloc[0]
    at = app_at(ws, "samples", _query(row["samples"]))
    assert int(_metric(at, "decisions")) == row["n_violations"] > 0  # the true violations
    prov = _frame(bench, "gold slice")
    blind = prov[(prov["model"] == "stub-vlm") & (prov["gold slice"] == "blind")].iloc[0]
    at = app_at(ws, "samples", _query(blind["samples"]))
    assert float(_metric(at, "accuracy")) == pytest.approx(blind["point"], abs=5e-4)


def test_safety_link_accuracy_is_the_recall(stub_ws, app_at):
    """The violations behind the safety table: their accuracy is the safety recall."""
    ws, _project, _items = stub_ws
    safety = _frame(app_at(ws, "benchmark"), "n_violations")
    row = safety[safety["model"] == "stub-vlm"].iloc[0]
    at = app_at(ws, "samples", _query(row["samples"]))
    assert float(_metric(at, "accuracy")) == pytest.approx(row["recall_point"], abs=5e-4)


def test_an_item_shows_image_prompt_output_gold_and_its_task(stub_ws, app_at):
    ws, _project, _items = stub_ws
    at = app_at(ws, "samples", {"run": "r-samples", "model": "stub-vlm"})
    assert not at.exception, at.exception
    table = _frame(at, "label_studio")
    linked = table.dropna(subset=["label_studio"])
    assert len(linked) == 2
    assert linked["label_studio"].iloc[0] == "http://127.0.0.1:8080/projects/7/data?task=500"
    first = at.expander[0]  # the first item, opened
    md = [m.value for m in first.markdown]
    assert "[Label Studio task 500 (blind)](http://127.0.0.1:8080/projects/7/data?task=500)" in md
    assert first.get("image"), "the item's image is shown"
    assert any("Answer with exactly one JSON object" in t.value for t in first.text)
    assert first.code[0].value  # the raw output
    dec = next(df.value for df in first.dataframe if "gold" in df.value.columns)
    assert {"decision", "gold", "parsed", "correct"} <= set(dec.columns)


def test_filters_follow_the_url_and_write_it_back(stub_ws, app_at):
    ws, _project, _items = stub_ws
    at = app_at(ws, "samples", {"run": "r-samples", "model": "stub-vlm", "outcome": "parse_error"})
    assert not at.exception, at.exception
    assert at.selectbox(key="samples-outcome").value == "parse_error"
    codes = [c.value for e in at.expander for c in e.code]
    assert codes and set(codes) == {GARBAGE}
    at.selectbox(key="samples-outcome").set_value("refused").run()
    assert dict(at.query_params) == {"run": "r-samples", "model": "stub-vlm", "outcome": "refused"}
    assert set(_frame(at, "outcome")["outcome"]) == {"refused"}
    at.selectbox(key="samples-correct").set_value("correct").run()
    assert "No sample matches" in at.info[0].value  # a refusal has no correct decision


def test_prefill_source_and_empty_project(empty_ws, app_at):
    at = app_at(empty_ws, "samples")
    assert not at.exception, at.exception
    assert "No model answers here yet" in at.info[0].value


def test_simulated_loop_frames_and_prefill(sim_ws, run_app):
    """Clip items (several frames each) from the SIMULATED loop, and its prefill source."""
    from sqlalchemy import func, select

    from truthline.store import tables

    at = run_app(sim_ws, page="samples")
    assert not at.exception, at.exception
    with sim_ws.store.begin() as conn:
        run_id = conn.execute(select(tables.runs.c.id)).scalars().first()
        n = conn.execute(
            select(func.count())
            .select_from(tables.run_results)
            .where(tables.run_results.c.run_id == run_id)
        ).scalar_one()
        n_pred = conn.execute(select(func.count()).select_from(tables.predictions)).scalar_one()
    assert int(_metric(at, "samples")) == n
    assert at.expander[0].get("image")
    at.selectbox(key="samples-run").set_value("prefill predictions").run()
    assert not at.exception, at.exception
    assert int(_metric(at, "samples")) == n_pred > 0


def test_a_reused_answer_says_where_it_came_from(tmp_path, app_at):
    """A benchmark answer reused from the prefill (no call in the run) is marked in the table
    and, on the item, names what stored it; fresh answers say fresh."""
    import json

    from tests.benchmark.conftest import make_bench_ws
    from truthline.benchmark import RunConfig, run_benchmark
    from truthline.models._stub import StubServer
    from truthline.prefill import prefill

    ws, project, _items, _snap = make_bench_ws(tmp_path / "ws")
    good = json.dumps({"worker_count": 1, "workers": [], "scene_type": "yard"})
    stub = StubServer(answer=lambda body: good).start()
    try:
        spec = f"openai:vlm@{stub.url};alias=m"
        prefill(ws.store, project, spec, progress=False)
        run_benchmark(ws.store, project, RunConfig(models=[spec], run_id="r-re"), progress=False)
        cfg = RunConfig(models=[spec], run_id="r-fresh", fresh=True)
        run_benchmark(ws.store, project, cfg, progress=False)
    finally:
        stub.stop()
    at = app_at(ws, "samples", {"run": "r-re"})
    assert not at.exception, at.exception
    assert set(_frame(at, "answer")["answer"]) == {"reused"}
    captions = [c.value for c in at.expander[0].caption]
    assert any(
        c.startswith("reused answer (no call in this run)") and "prefill" in c for c in captions
    )
    at = app_at(ws, "samples", {"run": "r-fresh"})
    assert set(_frame(at, "answer")["answer"]) == {"fresh"}
    assert not any("reused answer" in c.value for c in at.expander[0].caption)
    ws.store.close()
