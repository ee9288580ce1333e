"""The PhysAlign probe protocol on the shipped physics-diagrams template (issue 15): +GT
runs with model-independent admissibility and exclusion counts, repairs/harms on P_m, the
prompt's public probe fields, the reorder and no-image controls, and rule baselines that
get typed inputs and whose crashes are errors of their item (PHYSALIGN.md §5, §9-11, §13).
The workspace is built through the real CLI (items import, audit import-table, finalize)."""

from __future__ import annotations

import csv
import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.benchmark.physalign_items import make_items
from truthline.benchmark import (
    RunConfig,
    across_metrics,
    load_gold,
    model_metrics,
    run_benchmark,
)
from truthline.benchmark._runner import build_requests, targets_of
from truthline.cli import app
from truthline.models._stub import StubServer
from truthline.store import tables
from truthline.workspace import Workspace

SINGLE = "p0_E1"  # one blind annotator only: not verified
ROLE = "p1_E3"  # its gold reading "E3" is a candidate alias: role content
LEAK = "p2_E1"  # its reading occurs in a public candidate description


@pytest.fixture(scope="module")
def physics(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("physics")
    r = CliRunner()
    env = {"TRUTHLINE_WORKSPACE": str(tmp / "ws")}

    def ok(*args: str) -> str:
        res = r.invoke(app, list(args), env=env)
        assert res.exit_code == 0, f"{args}: {res.output}"
        return res.output

    ok("init", "physics-diagrams")
    meta, truth = make_items(tmp / "data", n_parents=4)
    rows = list(csv.DictReader(meta.open()))
    for row in rows:
        if row["key"] == LEAK:
            cands = json.loads(row["candidates"])
            cands["E1"]["description"] = "the block marked m_3"
            row["candidates"] = json.dumps(cands)
    with meta.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for t in truth:
        if t["key"] == ROLE:
            t["read"] = "E3"
    ok("items", "import", str(tmp / "data" / "media"), "--metadata", str(meta))
    gold = [
        {"item": t["key"], "field": f, "annotator": a, "arm": "blind", "value": t[f]}
        for t in truth
        for f in ("read", "owner")
        if t[f] is not None
        for a in (("ann_a",) if t["key"] == SINGLE else ("ann_a", "ann_b"))
    ]
    gpath = tmp / "gold.csv"
    with gpath.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(gold[0]))
        w.writeheader()
        w.writerows(gold)
    ok("audit", "import-table", str(gpath))
    ok("audit", "finalize")
    ws = Workspace.from_env(tmp / "ws")
    return ws, ws.project("physics-diagrams"), {t["key"]: t for t in truth}


def _stub() -> StubServer:
    def answer(body: dict[str, Any]) -> str:
        text = json.dumps(body)
        cand = "E1" if "local_reading" in text else "E2"
        return json.dumps({"read": "M", "owner": cand, "confidence": 0.5})

    return StubServer(answer=answer).start()


def _results(ws: Workspace, run_id: str, model: str, condition: str = "base", control: str = ""):
    r = tables.run_results
    with ws.store.begin() as conn:
        rows = conn.execute(
            r.select().where(
                r.c.run_id == run_id,
                r.c.model == model,
                r.c.condition == condition,
                r.c.control == control,
            )
        ).all()
    return rows


def _keys(ws: Workspace) -> dict[int, str]:
    with ws.store.begin() as conn:
        return dict(
            conn.execute(
                tables.items.select().with_only_columns(tables.items.c.id, tables.items.c.key)
            ).all()
        )


def test_gt_runs_on_the_shipped_template_with_admissibility_and_transitions(physics):
    ws, project, truth = physics
    stub = _stub()
    try:
        spec = f"openai:vlm@{stub.url}"
        run_benchmark(ws.store, project, RunConfig([spec], run_id="gt1"), progress=False)
        man = run_benchmark(
            ws.store, project, RunConfig([spec], condition="gt", run_id="gt1"), progress=False
        )
        gt_texts = [e.text for e in stub.log if "local_reading" in e.text]
    finally:
        stub.stop()
    sup = man["entries"]["openai:vlm||gt|"]["gt_support"]
    assert sup["given"] == ["read"]
    assert sup["excluded"] == {
        "description_leak": 1,
        "role_content": 1,
        "text_anchor": 4,
        "unverified": 1,
    }
    assert sup["excluded_items"]["unverified"] == [SINGLE]
    assert sup["admissible"] == 16 - 7
    # the given block is the anchor's verified reading, as a local_reading record
    assert len(gt_texts) == 9
    assert any('local_reading = [{"anchor_id": "R1", "text": "M"}]' in t for t in gt_texts)
    keys = _keys(ws)
    gt_rows = _results(ws, "gt1", "openai:vlm", "gt")
    assert {keys[r.item_id] for r in gt_rows}.isdisjoint({SINGLE, ROLE, LEAK})
    # the reading is given, so +GT rows are scored on the grounding only
    assert all({d["field"] for d in r.scores["decisions"]} == {"owner"} for r in gt_rows)
    proto = across_metrics(ws.store, project, "gt1", names=["probe_protocol"])
    proto = proto["metrics"]["probe_protocol"]["models"]["openai:vlm"]
    # by hand (the stub answers reading "M", candidate E2 at Base): T03-image per parent
    # 1/3 right, T03-text (gold E2) all right -> balanced (1/3 + 1) / 2, not micro 8/16
    assert proto["G"]["GAcc"]["point"] == pytest.approx(2 / 3)
    assert proto["G"]["coverage"] == {
        "N": 16,
        "n": 16,
        "scored": 16,
        "model_failure": 0,
        "error": 0,
        "infra_missing": 0,
    }
    # L: "M" is right on E3 labels except p1 (gold "E3"): C per parent 1/3, 0, 1/3, 1/3
    L = proto["L"]
    assert L["CAcc"]["point"] == pytest.approx(0.25) and L["JAcc"]["point"] == 0
    assert L["C+G-"]["point"] == pytest.approx(0.25) and L["P(G|C)"]["point"] == 0
    cells = ("JAcc", "C+G-", "C-G+", "C-G-")
    assert sum(L[c]["point"] for c in cells) == pytest.approx(1.0)
    # H: the 12 image probes; the rule misses only p3_E3 (its label is nearer E2)
    assert proto["H"]["nearest"]["n"] == 12
    assert proto["H"]["nearest"]["point"] == pytest.approx((3 + 2 / 3) / 4)
    assert proto["H"]["model"]["point"] == pytest.approx(1 / 3)
    assert proto["H"]["random"]["point"] == pytest.approx(1 / 3)
    hard = proto["H_hard"]
    assert hard["model"]["n"] == 1 and hard["model-random"]["point"] == pytest.approx(-1 / 3)
    pm = proto["P_m"]
    # stub: E2 at Base, E1 under +GT -> repairs = gold E1, harms = gold E2 on P_m
    pkeys = {keys[r.item_id] for r in gt_rows}
    gold = [truth[k]["owner"] for k in pkeys]
    assert pm["N"] == len(pkeys) == 9
    assert pm["counts"]["repairs"] == gold.count("E1")
    assert pm["counts"]["harms"] == gold.count("E2")
    assert pm["net"]["point"] == pytest.approx(pm["repair"]["point"] - pm["harm"]["point"])
    assert pm["repair_rate"]["point"] == pytest.approx(
        pm["repair"]["point"] / (1 - pm["base"]["point"])
    )
    assert pm["harm_rate"]["low"] <= pm["harm_rate"]["point"] <= pm["harm_rate"]["high"]


def test_gt_without_anything_given_says_what_to_declare(physics):
    ws, project, _ = physics
    bare = project.model_copy(
        update={"benchmark": project.benchmark.model_copy(update={"given_as_truth": []})}
    )
    with pytest.raises(Exception, match="given_as_truth"):
        run_benchmark(
            ws.store,
            bare,
            RunConfig(["rule:majority"], condition="gt", run_id="gt0"),
            progress=False,
        )


def _requests(project, ws, **kw):
    gold = load_gold(ws.store, project.name)
    items = [it for it in gold.items if it.key == "p1_E1"]
    return build_requests(
        project,
        items,
        targets_of(project, gold),
        variant=None,
        condition="base",
        seed=0,
        **kw,
    )[0]


def test_prompt_shows_the_public_probe_and_reorder_changes_the_display_order(physics):
    ws, project, _ = physics
    base = _requests(project, ws, control="")
    for part in (
        "Three blocks rest on a table",
        "Evidence anchor R1",
        "What is the content at R1",
        "[10, 50, 40, 30]",
    ):
        assert part in base.user
    order = re.findall(r"^- (E\d): region", base.user, re.M)
    assert order == ["E1", "E2", "E3"]
    rev = _requests(project, ws, control="reorder")
    assert rev.user != base.user
    assert re.findall(r"^- (E\d): region", rev.user, re.M) == ["E3", "E2", "E1"]
    # aliases stay bound to their regions: the same alias, the same box
    assert "- E1: region bbox [x, y, w, h] = [10, 50, 40, 30]" in rev.user
    none = _requests(project, ws, control="no-image")
    assert none.images == [] and base.images
    assert "No image is attached" in none.user and "(no image is attached)" in none.user


def test_nearest_region_gets_typed_inputs_and_scores_the_same_under_reorder(physics):
    ws, project, truth = physics
    for control in ("", "reorder"):
        run_benchmark(
            ws.store,
            project,
            RunConfig(["rule:nearest-region"], control=control, run_id="rule1"),
            progress=False,
        )
    keys = _keys(ws)
    got = {}
    for control in ("", "reorder"):
        rows = _results(ws, "rule1", "rule:nearest-region", control=control)
        assert len(rows) == 16 and {r.status for r in rows} == {"parsed"}
        got[control] = {
            keys[r.item_id]: next(d for d in r.scores["decisions"] if d["field"] == "owner")
            for r in rows
        }
    base = got[""]
    # image probes: nearest block, except the label drawn nearer B than its own block C
    for k, d in base.items():
        if truth[k]["probe_type"] == "T03-image":
            assert d["pred"] == ("E2" if k == "p3_E3" else truth[k]["owner"]), k
    assert {k: d["correct"] for k, d in got["reorder"].items()} == {
        k: d["correct"] for k, d in base.items()
    }
    run_benchmark(ws.store, project, RunConfig(["rule:majority"], run_id="rule1"), progress=False)
    pp = across_metrics(ws.store, project, "rule1", names=["probe_protocol"])
    pp = pp["metrics"]["probe_protocol"]
    ctl = pp["models"]["rule:nearest-region"]["controls"]["reorder"]
    # a rule is compared on its support: H, the 12 image probes (not the 4 text ones)
    assert ctl["N"] == 12 and ctl["delta"]["point"] == 0
    assert ctl["counts"] == {"changed_right_to_wrong": 0, "changed_wrong_to_right": 0}
    (pair,) = pp["pairs"]
    assert {pair["model_a"], pair["model_b"]} == {"rule:nearest-region", "rule:majority"}
    assert pair["N"] == 12
    assert pair["a-b"]["point"] == pytest.approx(pair["a"]["point"] - pair["b"]["point"])


def test_a_rule_that_raises_is_an_error_of_its_item_naming_the_exception(physics):
    ws, project, _ = physics
    rules = project.root / "rules.py"
    text = rules.read_text()
    rules.write_text(
        text
        + '\n\n@rule("crash")\ndef _crash(request, support):\n'
        + '    raise ValueError("candidate geometry unreadable")\n'
    )
    try:
        run_benchmark(ws.store, project, RunConfig(["rule:crash"], run_id="crash1"), progress=False)
    finally:
        rules.write_text(text)
    rows = _results(ws, "crash1", "rule:crash")
    assert len(rows) == 16
    assert {r.status for r in rows} == {"error"}
    assert all("ValueError: candidate geometry unreadable" in r.scores["reason"] for r in rows)
    # an error stays in the denominator: every decision scored wrong
    assert all(not d["correct"] for r in rows for d in r.scores["decisions"])
    (row,) = model_metrics(ws.store, project, "crash1", metrics=["accuracy"], resamples=0)
    assert (row.error, row.infra_missing, row.coverage) == (16, 0, 1.0)
    assert row.accuracy["point"] == 0.0


def test_random_rule_draws_among_the_items_own_candidates_and_manifest_freezes_protocol(physics):
    ws, project, _ = physics
    man = run_benchmark(
        ws.store, project, RunConfig(["rule:random"], run_id="rand1"), progress=False
    )
    rows = _results(ws, "rand1", "rule:random")
    preds = [d["pred"] for r in rows for d in r.scores["decisions"] if d["field"] == "owner"]
    assert len(preds) == 16 and set(preds) <= {"E1", "E2", "E3"}  # K_j = 3, not the 5 choices
    proto = man["protocol"]
    assert proto["nearest_rule"] == "nearest-region/v1"
    assert proto["read_rules"] == list(project.benchmark.read_rules)
    assert proto["given_as_truth"] == ["read"] and proto["reorder"] == "reverse"


def test_report_sections_of_the_checklist_carry_numbers_and_n(physics):
    from truthline.systems.physalign._protocol import protocol_sections

    ws, project, _ = physics
    stub = _stub()
    try:
        spec = f"openai:vlm@{stub.url}"
        for cond, ctl in (("base", ""), ("gt", ""), ("base", "no-image")):
            run_benchmark(
                ws.store,
                project,
                RunConfig([spec], condition=cond, control=ctl, run_id="rep1"),
                progress=False,
            )
    finally:
        stub.stop()
    r = across_metrics(ws.store, project, "rep1", names=["probe_protocol"])
    secs = protocol_sections(r["metrics"]["probe_protocol"], "rep1")
    titles = [s.title for s in secs]
    assert [t.split(": ")[1].split(" (")[0] for t in titles] == [
        "grounding and reading",
        "Base -> +GT on P_m",
        "rule baselines on the same support",
        "input controls",
    ]
    g, pm, h, ctl = secs
    assert g.table[0]["GAcc"].startswith("0.667 [") and g.n == ["G 16 / L 12"]
    assert (
        pm.table[0]["repairs"]
        + pm.table[0]["harms"]
        + pm.table[0]["stay right"]
        + pm.table[0]["stay wrong"]
        == 9
    )
    assert pm.n == ["9 (Base 16, +GT 9)"]
    assert h.n == ["H 12 / H_hard 1"] and ctl.table[0]["control"] == "no-image"
    for s in secs:
        s.metrics = ["probe_protocol"]
        s.model()  # the shared report model accepts it (glossary, n per row)


def test_a_text_probe_asks_only_for_the_grounding(physics):
    ws, project, _ = physics
    gold = load_gold(ws.store, project.name)
    items = [it for it in gold.items if it.key == "p1_text"]
    req = build_requests(
        project,
        items,
        targets_of(project, gold),
        variant=None,
        condition="base",
        control="",
        seed=0,
    )[0]
    assert '- "owner": one candidate alias' in req.user
    assert '"read"' not in req.user  # T03-text probes never get reading scores
    assert 'the text span "3 kg"' in req.user


def test_a_public_input_that_is_broken_json_names_item_and_column(physics):
    import dataclasses

    from truthline.errors import TruthlineError

    ws, project, _ = physics
    gold = load_gold(ws.store, project.name)
    it = dataclasses.replace(gold.items[0], meta={**gold.items[0].meta, "candidates": '{"E1": ['})
    with pytest.raises(TruthlineError, match=r"item 'p0_E1': metadata column 'candidates'"):
        build_requests(
            project,
            [it],
            targets_of(project, gold),
            variant=None,
            condition="base",
            control="",
            seed=0,
        )
