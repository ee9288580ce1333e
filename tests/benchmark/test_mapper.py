"""Free-form prompt variants with a declared mapper stage (seeds/001 App. E.2, V2): the
prose is mapped to the fields by the mapper, scored like any answer; the mapper's parse
rate and noise floor (a round trip of the gold) are reported beside the entry."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from truthline.benchmark import RunConfig, leaderboard, run_benchmark
from truthline.benchmark._mapper import gold_answer, mapped_entries, request_fields
from truthline.benchmark._runner import build_requests, targets_of
from truthline.errors import AnswerFormatError, ProjectError
from truthline.fields import parse_answer, parse_fields, request_grammar
from truthline.fields._answer import describe_answer, read_description
from truthline.models import Backend, Completion, backend
from truthline.project import load_project, validate_data
from truthline.project._load import read_raw
from truthline.store import tables
from truthline.workspace import templates_dir

PROSE: dict[str, str] = {}
"""Test backend answers by item key (``fixedprose``)."""


@backend("fixedprose")
class FixedProse(Backend):
    """Test backend: the free-form answer planted for the item's key."""

    reads_context = True  # answers by item: the item is in the cache key

    async def complete(self, request):
        return Completion(text=PROSE.get(request.context["key"], ""), tokens_in=1, tokens_out=1)


def _responses(store) -> int:
    with store.begin() as conn:
        return int(conn.execute(select(func.count()).select_from(tables.responses)).scalar())


def _rows(store, run_id: str) -> dict[int, Any]:
    r = tables.run_results
    with store.begin() as conn:
        return {x.item_id: x for x in conn.execute(select(r).where(r.c.run_id == run_id)).all()}


def _entry(man: dict[str, Any]) -> dict[str, Any]:
    (entry,) = man["entries"].values()
    return entry


def _v2(mapper: str, model: str = "simulated:perfect", **kw: Any) -> RunConfig:
    return RunConfig(models=[model], variant="v2", extra={"mapper": mapper}, **kw)


# -- the answer grammar and the prose form ----------------------------------------------------
def test_text_grammar_and_prose_round_trip(steel_project):
    p = steel_project
    free = {"d": p.field_types["scene_description"]}
    from truthline.fields._answer import bind_free_form

    ft = copy.copy(free["d"])
    bind_free_form(ft)
    assert request_grammar({"d": ft}) == "text"
    assert parse_answer({"d": ft}, "  Two workers walk.\nOne lacks a helmet. ") == {
        "d": "Two workers walk.\nOne lacks a helmet."
    }
    with pytest.raises(AnswerFormatError):
        parse_answer({"d": ft}, "   ")
    values = {
        "worker_count": 2,
        "workers": [
            {"worker_id": "P1", "action": "B1", "helmet": "not_worn", "safety_violation": True},
            {
                "worker_id": "P2",
                "action": "F3",
                "harness": "not_required",
                "safety_violation": False,
            },
        ],
    }
    fields = {k: p.field_types[k] for k in ("worker_count", "workers")}
    text = describe_answer(fields, values)
    # prose names the classes, never a code a mapper could copy
    assert "operating equipment" in text and "B1" not in text and "not worn" in text
    back, errors = parse_fields(fields, read_description(fields, text))
    assert errors == {}
    assert back == {
        "worker_count": 2,
        "workers": [
            {"worker_id": "P1", "action": "B1", "helmet": "not_worn", "safety_violation": True},
            {
                "worker_id": "P2",
                "action": "F3",
                "harness": "not_required",
                "safety_violation": False,
            },
        ],
    }


# -- the stage end to end --------------------------------------------------------------------
def _plant_gold_prose(ws, project, items) -> dict[int, str]:
    """``fixedprose`` answers each item with its gold, described; returns item id -> key."""
    keys = {r["id"]: r["key"] for r in ws.store.items(project.name)}
    gold = _gold(ws, project)
    fields = request_fields(project, targets_of(project, gold))
    by_id = {it.item_id: it for it in gold.items}
    PROSE.clear()
    for iid, _ in items:
        PROSE[keys[iid]] = describe_answer(fields, gold_answer(project, by_id[iid], fields))
    return keys


def test_lossless_chain_scores_the_described_answer(bench_ws):
    """A model describing the gold, a mapper that never errs: the mapped entry scores 1.0
    and the noise floor is 0; the model's prose and the mapper's raw answer are kept."""
    ws, project, items, _ = bench_ws
    keys = _plant_gold_prose(ws, project, items)
    cfg = _v2("simulated:mapper;error=0", model="fixedprose:gold")
    man = run_benchmark(ws.store, project, cfg, progress=False)
    e = _entry(man)
    assert e["mapper"]["alias"] == "simulated:mapper" and e["mapper"]["simulated"] is True
    assert e["simulated"] is True  # a SIMULATED mapper makes the entry SIMULATED
    assert e["mapper"]["parse"] == {
        "asked": 16,
        "mapped": 16,
        "failures": 0,
        "rate": 1.0,
        "failure_reasons": {},
        "cost_usd": 0.0,
    }
    noise = e["mapper"]["noise"]
    assert noise["wrong"] == 0 and noise["decisions"] > 100 and noise["value"]["point"] == 0.0
    (b,) = leaderboard(ws.store, project, [man["run_id"]])
    assert b.accuracy["point"] == 1.0 and b.model_failure == 0
    iid, row = next(iter(_rows(ws.store, man["run_id"]).items()))
    info = row.scores["mapper"]
    assert info["status"] == "mapped"
    assert info["free_text"] == PROSE[keys[iid]]  # the model's prose, kept
    assert json.loads(info["raw"])["workers"]  # the mapper's raw answer, kept
    with ws.store.begin() as conn:
        model_raw = conn.execute(
            select(tables.responses.c.raw_response).where(tables.responses.c.id == row.response_id)
        ).scalar()
    assert model_raw == info["free_text"]  # the row's response is the model's, not the mapper's


def test_planted_mapper_error_is_the_reported_noise(bench_ws):
    """A mapper declared to err on 30% of decisions: the round trip reports ~30% with an
    interval holding it; a model describing the gold then scores exactly 1 - noise."""
    ws, project, items, _ = bench_ws
    _plant_gold_prose(ws, project, items)
    cfg = _v2("simulated:mapper;error=0.3", model="fixedprose:gold")
    man = run_benchmark(ws.store, project, cfg, progress=False)
    noise = _entry(man)["mapper"]["noise"]
    ci = noise["value"]
    assert noise["decisions"] >= 150
    assert abs(ci["point"] - 0.3) < 0.1
    assert ci["low"] < 0.3 < ci["high"] and ci["method"] == "wilson"
    (b,) = leaderboard(ws.store, project, [man["run_id"]])
    assert b.model_failure == 0
    assert b.accuracy["point"] == pytest.approx(1 - ci["point"])


def test_mapper_failures_are_not_model_failures(bench_ws):
    ws, project, items, _ = bench_ws
    keys = _plant_gold_prose(ws, project, items)
    first = keys[items[0][0]]
    PROSE[first] = ""  # the model's own failure: an empty answer
    cfg = _v2("simulated:mapper;error=0;fail=0.4", model="fixedprose:x")
    man = run_benchmark(ws.store, project, cfg, progress=False)
    parse = _entry(man)["mapper"]["parse"]
    rows = _rows(ws.store, man["run_id"])
    failed = [r for r in rows.values() if r.scores["mapper"]["status"] == "failure"]
    assert parse["asked"] == 15  # the failed model answer is never sent to the mapper
    assert parse["failures"] == len(failed) > 0
    assert parse["mapped"] == 15 - len(failed)
    assert parse["rate"] == pytest.approx(parse["mapped"] / 15)
    assert set(parse["failure_reasons"]) == {"unparseable"}
    for r in failed:  # scored wrong, in the denominator, the model's outcome kept
        assert r.status == "parsed" and r.scores["reason"] == "mapper_unparseable"
        assert r.scores["decisions"] and not any(d["correct"] for d in r.scores["decisions"])
        assert "SIMULATED mapper" in r.scores["mapper"]["raw"]
    model_failed = rows[items[0][0]]
    assert model_failed.status == "model_failure"
    assert model_failed.scores["mapper"]["status"] == "not_asked"
    (b,) = leaderboard(ws.store, project, [man["run_id"]])
    assert b.model_failure == 1  # the model's one failure; the mapper's are counted apart
    mapped_ok = [r for r in rows.values() if r.scores["mapper"]["status"] == "mapped"]
    assert all(d["correct"] for r in mapped_ok for d in r.scores["decisions"])


def test_rerun_asks_nothing_again(bench_ws):
    ws, project, _, _ = bench_ws
    cfg = _v2("simulated:mapper;error=0.2")
    man = run_benchmark(ws.store, project, cfg, progress=False)
    n = _responses(ws.store)
    assert n == 16 + 16 + 16  # model prose, its mapping, the gold round trip
    again = run_benchmark(ws.store, project, cfg, progress=False)  # resume: nothing to do
    assert _responses(ws.store) == n
    assert _entry(again)["mapper"]["noise"] == _entry(man)["mapper"]["noise"]
    fresh = run_benchmark(
        ws.store, project, _v2(cfg.extra["mapper"], run_id="fresh"), progress=False
    )
    assert _responses(ws.store) == n  # a new run on the same inputs: every answer cached
    assert _entry(fresh)["mapper"]["noise"] == _entry(man)["mapper"]["noise"]
    assert _entry(fresh)["mapper"]["parse"] == _entry(man)["mapper"]["parse"]


def test_report_labels_mapped_entries(bench_ws, tmp_path: Path):
    from truthline.benchmark._report import write_report

    ws, project, _, _ = bench_ws
    mapped = run_benchmark(ws.store, project, _v2("simulated:mapper;error=0.1"), progress=False)
    direct = run_benchmark(
        ws.store, project, RunConfig(models=["simulated:perfect"], variant="v1"), progress=False
    )
    runs = [mapped["run_id"], direct["run_id"]]
    (m,) = mapped_entries(ws.store, runs)
    assert m.variant == "v2" and m.label == "mapped by simulated:mapper [SIMULATED]"
    out = write_report(ws.store, project, runs, tmp_path / "report.md")
    md = (tmp_path / "report.md").read_text()
    assert "Mapped (free-form) entries" in md
    board = md.split("## Leaderboard", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in board.splitlines() if "simulated:perfect" in ln]
    assert any("(v2" in ln and "mapped by simulated:mapper" in ln for ln in lines)
    assert any("(v1" in ln and "mapped by" not in ln for ln in lines)
    (j,) = out["mapped"]
    assert j["mapped_by"] == "mapped by simulated:mapper [SIMULATED]"
    assert j["noise"]["value"]["point"] == pytest.approx(
        _entry(mapped)["mapper"]["noise"]["value"]["point"]
    )


# -- declarations ------------------------------------------------------------------------------
def _raw() -> dict[str, Any]:
    return read_raw(templates_dir() / "steel-safety" / "project.toml")


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"mapper": None}, "prompts.variants.v2.mapper", "needs a mapper"),
        ({"answer": "json"}, "prompts.variants.v2.answer", 'answer = "text"'),
        ({"answer": "prose"}, "prompts.variants.v2.answer", "text"),
        ({"mapper": "gpt-4o-mini"}, "prompts.variants.v2.mapper", "not a model spec"),
        ({"mapper_prompt": None}, "prompts.variants.v2.mapper_prompt", "mapper's prompt"),
        ({"mapper_prompt": "prompts/nope.md"}, "prompts.variants.v2.mapper_prompt", "not found"),
        ({"template": None}, "prompts.variants.v2.template", "required"),
        ({"mapperr": "x"}, "prompts.variants.v2.mapperr", "unknown setting"),
    ],
)
def test_bad_declaration_names_file_and_key(change, key, words):
    data = _raw()
    v2 = data["prompts"]["variants"]["v2"]
    for k, v in change.items():
        if v is None:
            v2.pop(k, None)
        else:
            v2[k] = v
    base = templates_dir() / "steel-safety"
    with pytest.raises(ProjectError) as exc:
        validate_data(data, "steel/project.toml", base=base)
    msg = str(exc.value)
    line = next((ln for ln in msg.splitlines() if f": {key}:" in ln), None)
    assert line is not None, msg
    assert line.startswith("steel/project.toml: ") and words in line


# -- V1 / V3 unchanged -------------------------------------------------------------------------
def test_structured_variants_unchanged(bench_ws):
    """The inline ``variants = {...}`` form still loads; V1/V3 requests are the JSON
    questions they were (same prompts, same fields) and their entries carry no mapper."""
    ws, project, _, _ = bench_ws
    data = _raw()
    data["prompts"]["variants"] = {
        k: v for k, v in data["prompts"]["variants"].items() if k != "v2"
    }
    old = validate_data(data, "project.toml", base=templates_dir() / "steel-safety")
    old._source = project.source
    assert old.prompts.mapped == {} and old.prompts.mapper_of("v1") is None
    assert old.model_dump()["prompts"]["variants"] == {
        "v1": "prompts/annotate.md",
        "v3": "prompts/structured.md",
    }
    gold = _gold(ws, project)
    targets = targets_of(project, gold)
    for variant in ("v1", "v3"):
        kw: dict[str, Any] = dict(variant=variant, condition="base", control="", seed=0)
        now = build_requests(project, gold.items[:3], targets, **kw)
        before = build_requests(old, gold.items[:3], targets, **kw)
        assert [(r.system, r.user, list(r.fields)) for r in now] == [
            (r.system, r.user, list(r.fields)) for r in before
        ]
        assert request_grammar(now[0].fields) == "json"
        man = run_benchmark(
            ws.store,
            project,
            RunConfig(models=["simulated:steel-strong"], variant=variant),
            progress=False,
        )
        assert "mapper" not in _entry(man)
    assert mapped_entries(ws.store, [r["run_id"] for r in _runs(ws)]) == []


def _gold(ws, project):
    from truthline.benchmark._gold import load_gold

    return load_gold(ws.store, project.name, None, "all")


def _runs(ws) -> list[dict[str, Any]]:
    from truthline.benchmark import list_runs

    return list_runs(ws.store)


def test_template_declares_v2(steel_project):
    p = load_project(templates_dir() / "steel-safety")
    m = p.prompts.mapper_of("v2")
    assert m is not None and m.answer == "text" and m.mapper_prompt == "prompts/map_to_taxonomy.md"
    assert set(p.prompts.variants) == {"v1", "v2", "v3"}
    assert steel_project.prompts.variants["v2"] == "prompts/freeform.md"


def test_mapper_calls_are_budgeted(bench_ws):
    """The mapper's calls share the run's ``max_cost``: a priced mapper over a zero budget
    is never sent (the entry stays open, nothing scored), and a rerun with room maps all."""
    ws, project, _, _ = bench_ws
    priced = "simulated:mapper;error=0;price_in=1000;price_out=1000"
    man = run_benchmark(ws.store, project, _v2(priced, max_cost=0.0), progress=False)
    assert man["status"] == "partial" and _entry(man)["not_run"] == 16
    assert _rows(ws.store, man["run_id"]) == {}  # no mapping, no score
    assert _responses(ws.store) == 16  # the free model's prose only
    done = run_benchmark(ws.store, project, _v2(priced), progress=False)
    assert done["status"] == "done" and _entry(done)["mapper"]["parse"]["mapped"] == 16
    assert _entry(done)["mapper"]["parse"]["cost_usd"] > 0


def test_cli_run_and_report_json_carry_the_mapper(bench_ws, tmp_path: Path):
    """``benchmark run --variant v2`` uses the template's declared (SIMULATED) mapper; its
    ``--json`` manifest and the report's ``--json`` carry the parse rate and noise."""
    from typer.testing import CliRunner

    from truthline.cli import app

    ws, _, _, _ = bench_ws
    runner = CliRunner()
    base = ["--workspace", str(ws.root)]
    r = runner.invoke(
        app,
        [*base, "benchmark", "run", "-m", "simulated:steel-strong", "--variant", "v2", "--json"],
    )
    assert r.exit_code == 0, r.output
    man = json.loads(r.stdout)
    m = _entry(man)["mapper"]
    assert m["spec"] == "simulated:mapper" and m["parse"]["rate"] == 1.0
    assert 0 <= m["noise"]["value"]["point"] < 0.15  # the SIMULATED mapper's declared 5%
    out = tmp_path / "rep" / "report.md"
    r = runner.invoke(
        app,
        [*base, "benchmark", "report", man["run_id"], "--out", str(out), "--resamples", "50"],
    )
    assert r.exit_code == 0, r.output
    assert "mapped by simulated:mapper [SIMULATED]" in out.read_text()
    rep = json.loads((out.parent / "report_files" / "report.json").read_text())
    (j,) = rep["mapped"]
    assert j["noise"] == m["noise"] and j["parse"] == m["parse"]
    # benchmark show names the mapper beside the entry too (never shown as if direct)
    r = runner.invoke(
        app,
        [*base, "benchmark", "show", man["run_id"], "--resamples", "50"],
        env={"COLUMNS": "200"},
    )
    assert r.exit_code == 0 and "— mapped by" in r.output, r.output
