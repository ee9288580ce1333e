"""Registered metrics beyond accuracy, each on hand-built decisions with a hand-computed
answer: tolerance, set matching, four-way read/ground, balanced weights, per-entity
calibration; and across models: routing oracle, ensemble, hard subset, rank transfer,
paired conditions, open-answer similarity. Every bundled template's metric names resolve."""

from __future__ import annotations

import tomllib
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from truthline.benchmark import (
    RunScored,
    Scored,
    _across,
    compute_metrics,
    compute_run_metrics,
    is_across,
    load_project_rules,
    registered_metrics,
    registered_rules,
)
from truthline.benchmark import metrics as M
from truthline.benchmark._registry import confidence_value
from truthline.benchmark._scoring import _decision, score_answer
from truthline.project import Project, load_project
from truthline.workspace import list_templates, templates_dir

RS0 = M.Resampling(resamples=0)


def _project(name: str, **bench: Any) -> Project:
    p = load_project(templates_dir() / name)
    if bench:
        p = p.model_copy(update={"benchmark": p.benchmark.model_copy(update=bench)})
    return p


def _scored(project: Project, rows: list[dict[str, Any]], entities=None, rs=RS0) -> Scored:
    """Decisions scored by the field types themselves (the one definition of agreement)."""
    out = []
    for r in rows:
        ft = project.field(r["path"])
        d = _decision(ft, r["path"], r.get("field", r["path"]), r.get("entity"), r["gold"],
                      r.get("pred"), "")  # fmt: skip
        out.append(
            {
                "item_id": r["item"],
                "parent": r.get("parent"),
                "stratum": r.get("stratum"),
                "condition": None,
                "meta": r.get("meta", {}),
                "confidence": r.get("confidence"),
                **d,
            }
        )
    ent = pd.DataFrame(entities or [], columns=["item_id", "list", "tp", "fp", "fn"])
    return Scored(project, pd.DataFrame(out), ent, rs)


def test_every_bundled_template_names_registered_metrics():
    names = registered_metrics()
    for t in list_templates():
        raw = tomllib.loads((templates_dir() / t / "project.toml").read_text())
        declared = raw.get("benchmark", {}).get("metrics", [])
        assert declared, t
        missing = [n for n in declared if n not in names]
        assert not missing, f"{t}: unregistered metrics {missing}"
        checks = raw.get("benchmark", {}).get("checks", {})
        assert all(c["metric"] in names for c in checks.values()), t
    with pytest.raises(KeyError, match="unknown benchmark metric"):
        compute_metrics(_scored(_project("dori-visibility"), []), ["no_such_metric"])


def test_tolerance_hand_computed():
    p = _project("proof-of-work")
    s = _scored(
        p,
        [
            {"item": 1, "path": "tape_reading", "gold": 10.0, "pred": 10.1},  # |0.1| <= 1/8
            {"item": 2, "path": "tape_reading", "gold": 5.0, "pred": 5.5},  # off by 0.5
            {"item": 3, "path": "tape_reading", "gold": 3.0, "pred": None},  # missing = wrong
            {"item": 1, "path": "gap", "gold": 1.0, "pred": 1.2},  # within 1/4
        ],
    )
    r = compute_metrics(s, ["tolerance"])["tolerance"]
    assert r["value"].point == pytest.approx(2 / 4)
    tape = r["by_field"]["tape_reading"]
    assert tape["accuracy"].point == pytest.approx(1 / 3)
    assert tape["tolerance"] == 0.125 and tape["unit"] == "in"
    assert tape["mae"] == pytest.approx(0.3) and (tape["answered"], tape["n"]) == (2, 3)


def test_set_match_rows_any_order_extra_rows_free():
    p = _project("proof-of-work")
    rows = [
        {"item": 1, "path": "breakers[R1].amperage", "field": "breakers.amperage",
         "entity": "R1", "gold": 20, "pred": 20},
        {"item": 1, "path": "breakers[R2].amperage", "field": "breakers.amperage",
         "entity": "R2", "gold": 15, "pred": 30},
        {"item": 2, "path": "breakers[R3].amperage", "field": "breakers.amperage",
         "entity": "R3", "gold": 10, "pred": None},
    ]  # fmt: skip
    ents = [
        {"item_id": 1, "list": "breakers", "tp": 2, "fp": 1, "fn": 0},
        {"item_id": 2, "list": "breakers", "tp": 0, "fp": 0, "fn": 1},
    ]
    r = compute_metrics(_scored(p, rows, ents), ["set_match"])["set_match"]
    assert r["value"].point == pytest.approx(1 / 3)  # one of three gold rows fully matched
    b = r["by_field"]["breakers"]
    assert (b["gold_rows"], b["extra_rows"], b["unaligned_rows"]) == (3, 1, 1)
    # multi-choice sets: exact equality, Jaccard beside it
    steel = _project("steel-safety", target_fields=["visibility"])
    s = _scored(
        steel,
        [
            {"item": 1, "path": "visibility", "gold": ["dust", "steam"], "pred": ["steam", "dust"]},
            {"item": 2, "path": "visibility", "gold": ["dust"], "pred": ["dust", "glare"]},
        ],
    )
    r2 = compute_metrics(s, ["set_match"])["set_match"]
    assert r2["value"].point == 0.5
    assert r2["by_field"]["visibility"]["jaccard"] == pytest.approx(0.75)


def test_four_way_with_conditional_grounding_ci():
    p = _project("physics-diagrams")
    cells = [(1, 1), (1, 0), (0, 1), (0, 0), (1, 1)]
    rows = []
    for i, (rd, gr) in enumerate(cells):
        rows.append({"item": i, "parent": f"p{i}", "path": "read", "gold": "F_1",
                     "pred": "F_1" if rd else "F_2"})  # fmt: skip
        rows.append({"item": i, "parent": f"p{i}", "path": "owner", "gold": "B",
                     "pred": "B" if gr else "C"})  # fmt: skip
    r = compute_metrics(_scored(p, rows, rs=M.Resampling(300, 1)), ["four_way"])["four_way"]
    assert r["counts"] == {"C+G+": 2, "C+G-": 1, "C-G+": 1, "C-G-": 1}
    assert r["value"].point == pytest.approx(2 / 3) and r["value"].resamples == 300
    assert r["read_accuracy"].point == pytest.approx(3 / 5)
    assert r["both"].point == pytest.approx(2 / 5)
    undeclared = _project("physics-diagrams", read_field=None)
    assert compute_metrics(_scored(undeclared, rows), ["four_way"])["four_way"]["value"] is None


def test_balanced_weights_per_parent_and_type():
    p = _project("physics-diagrams")
    spec = [("p1", "t1", 1), ("p1", "t1", 1), ("p1", "t1", 1), ("p2", "t1", 0)]
    spec += [("p3", "t2", 1), ("p3", "t2", 0)]
    rows = [
        {"item": i, "parent": par, "meta": {"probe_type": t}, "path": "owner",
         "gold": "A", "pred": "A" if ok else "B"}
        for i, (par, t, ok) in enumerate(spec)
    ]  # fmt: skip
    r = compute_metrics(_scored(p, rows), ["balanced"])["balanced"]
    # t1: p1 (1.0) and p2 (0.0) -> 0.5; t2: p3 -> 0.5; types equal -> 0.5
    assert r["value"].point == pytest.approx(0.5)
    assert r["unweighted"].point == pytest.approx(4 / 6)
    assert r["types"] == ["t1", "t2"] and r["parents"] == 3
    none = _project("physics-diagrams", balance=[])
    assert compute_metrics(_scored(none, rows), ["balanced"])["balanced"]["value"] is None


def test_per_worker_confidence_reaches_each_decision():
    p = _project("steel-safety")
    assert p.benchmark.confidence_field == "workers.confidence"
    gold = {
        "workers": ["P1", "P2"],
        "workers[P1].action": "A1",
        "workers[P2].action": "B1",
    }
    answer = {
        "workers": [
            {"worker_id": "P2", "action": "A1", "confidence": "low"},
            {"worker_id": "P1", "action": "A1", "confidence": "high"},
        ]
    }
    out = score_answer(p, gold, {}, answer, ["workers.action"], "workers.confidence")
    by = {d["entity"]: d for d in out["decisions"]}
    assert (by["P1"]["confidence"], by["P1"]["correct"]) == ("high", True)
    assert (by["P2"]["confidence"], by["P2"]["correct"]) == ("low", False)
    ft = p.field("workers.confidence")
    conf = [confidence_value(ft, by[e]["confidence"]) for e in ("P1", "P2")]
    assert conf == [1.0, pytest.approx(1 / 3)]
    # bins: 1.0 -> acc 1 (gap 0); 1/3 -> acc 0 (gap 1/3): ECE = (1/3) / 2
    r = M.ece(conf, [1, 0], rs=RS0)
    assert r["ece"].point == pytest.approx(1 / 6)


# -- across models ---------------------------------------------------------------------------
GOLD = ["standing", "walking", "lying", "carrying"]
PREDS = {
    "A": ["standing", "walking", "standing", "standing"],  # right on x, wrong on y
    "B": ["lying", "lying", "lying", "carrying"],  # wrong on x, right on y
    "C": ["standing", "lying", "lying", "walking"],  # half and half
    "rule:r": ["standing", "standing", "standing", "standing"],  # right on item 0 only
}


def _view(preds: dict[str, list[Any]], **bench: Any) -> RunScored:
    p = _project("dori-visibility", **bench)
    entries, kinds, keys = {}, {}, {}
    for lab, pr in preds.items():
        model, _, cond = lab.partition("|")
        rows = [
            {"item": i, "stratum": "xy"[i // 2], "path": "action", "gold": g, "pred": x,
             "meta": {"source": "render" if i < 2 else "photo"}}
            for i, (g, x) in enumerate(zip(GOLD, pr, strict=True))
        ]  # fmt: skip
        entries[lab] = _scored(p, rows)
        kinds[lab] = "rule" if model.startswith("rule:") else "simulated"
        keys[lab] = (model, "", cond or "base", "")
    return RunScored(p, entries, kinds, keys, RS0)


def test_routing_oracle_best_model_per_environment():
    r = compute_run_metrics(_view(PREDS), ["routing_oracle"])["routing_oracle"]
    assert r["environment"] == "stratum"
    assert r["best_by_environment"] == {"x": "A", "y": "B"}  # the rule is never routed to
    assert r["value"].point == 1.0
    assert r["best_single"]["model"] == "A" and r["gain"] == pytest.approx(0.5)


def test_majority_of_models_ensemble():
    r = compute_run_metrics(_view(PREDS), ["ensemble"])["ensemble"]
    # votes: standing (A,C) right; lying (B,C) wrong; lying (B,C) right; 3-way tie -> no
    # majority, scored wrong (not A's answer by list order)
    assert r["members"] == ["A", "B", "C"]
    assert r["value"].point == 0.5 and r["by_field"] == {"action": 0.5}
    assert r["ties"] == 1 and r["ties_by_field"] == {"action": 1}
    two = compute_run_metrics(_view({k: PREDS[k] for k in ("A", "B")}), ["ensemble"])
    # A and B disagree everywhere: four ties, so the ensemble is not model A (accuracy 0.5)
    assert two["ensemble"]["ties"] == 4 and two["ensemble"]["value"].point == 0.0


def test_hard_subset_where_the_rule_fails():
    r = compute_run_metrics(_view(PREDS), ["hard_subset"])["hard_subset"]
    assert r["rule"] == "rule:r" and (r["hard_decisions"], r["n"]) == (3, 4)
    assert r["models"]["A"]["hard"].point == pytest.approx(1 / 3)
    assert r["models"]["A"]["easy"].point == 1.0
    assert r["models"]["B"]["hard"].point == pytest.approx(2 / 3)
    missing = compute_run_metrics(_view(PREDS, hard_rule="rule:nope"), ["hard_subset"])
    assert missing["hard_subset"]["value"] is None and "rule:nope" in missing["hard_subset"]["note"]


def test_rank_transfer_between_two_item_sets():
    r = compute_run_metrics(_view(PREDS, transfer_column="source"), ["rank_transfer"])
    t = r["rank_transfer"]
    # render: A 1.0, B 0.0, C 0.5; photo: A 0.0, B 1.0, C 0.5 -> perfectly reversed
    assert t["sets"] == ["photo", "render"] and t["models"] == ["A", "B", "C"]
    assert t["spearman_rho"] == pytest.approx(-1.0) and t["pearson_r"] == pytest.approx(-1.0)
    assert t["scores"]["A"] == {"photo": 0.0, "render": 1.0}
    two = compute_run_metrics(
        _view({"A": PREDS["A"], "B": PREDS["B"]}, transfer_column="source"), ["rank_transfer"]
    )
    assert two["rank_transfer"]["value"] is None and "3 models" in two["rank_transfer"]["note"]


def test_paired_conditions_transition_table():
    view = _view({"A": PREDS["A"], "A|gt": GOLD})
    r = compute_run_metrics(view, ["paired_conditions"])["paired_conditions"]
    t = r["models"]["A"]
    assert (t["repairs"], t["harms"], t["kept_right"], t["kept_wrong"]) == (2, 0, 2, 0)
    assert t["net_change"].point == pytest.approx(0.5)


def test_open_similarity_z_scores(monkeypatch):
    def letters(texts):  # transparent stand-in for the sentence model
        return np.array([[t.count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], float)

    monkeypatch.setattr(_across, "_EMBED", letters)
    p = _project("steel-safety", target_fields=["scene_description"])
    refs = ["a crane lifts a coil", "two workers weld"]
    answers = {"good": refs, "bad": ["zzz", None]}
    entries = {
        lab: _scored(
            p,
            [
                {"item": i, "path": "scene_description", "gold": g, "pred": a}
                for i, (g, a) in enumerate(zip(refs, ans, strict=True))
            ],
        )
        for lab, ans in answers.items()
    }
    keys = {lab: (lab, "", "base", "") for lab in entries}
    view = RunScored(p, entries, {}, keys, RS0)
    r = compute_run_metrics(view, ["open_similarity"])["open_similarity"]
    assert r["models"]["good"]["similarity"].point == pytest.approx(1.0)
    assert r["models"]["bad"]["similarity"].point == pytest.approx(0.0)
    assert r["models"]["good"]["z"] == pytest.approx(1.0)
    assert r["models"]["bad"]["z"] == pytest.approx(-1.0)


def test_across_metrics_are_skipped_per_model_and_known():
    assert is_across("routing_oracle") and not is_across("accuracy")
    s = _view(PREDS).entries["A"]
    out = compute_metrics(s, ["accuracy", "routing_oracle"])
    assert set(out) == {"accuracy"}


def test_physics_template_rule_nearest_region():
    p = _project("physics-diagrams")
    added = load_project_rules(p)
    assert "nearest-region" in registered_rules() and added in ([], ["nearest-region"])
    from truthline.benchmark._baselines import _RULES

    req = SimpleNamespace(
        fields={n: p.field_types[n] for n in ("read", "owner")},
        context={
            "meta": {"candidates": {"A": [0, 0], "B": [10, 10, 20, 20]}, "label_xy": [14, 16]},
            "entities": {},
        },
    )
    support = {
        "read": {"majority": "F_1", "candidates": ["F_1"]},
        "owner": {"majority": "A", "candidates": ["A", "B"]},
    }
    assert _RULES["nearest-region"](req, support) == {"read": "F_1", "owner": "B"}
