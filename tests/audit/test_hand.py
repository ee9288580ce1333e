"""A hand-built example: 12 items, 3 annotators, 1 expert; every number computed by hand.

Anchored items 1-9 (A: 1-3, B: 4-6, C: 7-9), blind items 10-12 (A and B), expert on
1-7 and 10. Fields: action (choice), violation (safety boolean), count (number, tolerance 1).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from truthline.audit import exclude_annotator, finalize, import_table, run_audit
from truthline.stats import cohen_kappa

V = {  # prefill v: action, violation, count
    1: ("walk", False, 2),
    2: ("stand", True, 1),
    3: ("carry", False, 3),
    4: ("walk", True, 2),
    5: ("stand", False, 1),
    6: ("walk", False, 4),
    7: ("carry", True, 2),
    8: ("walk", False, 1),
    9: ("stand", False, 2),
    10: ("walk", False, 1),
    11: ("carry", True, 3),
    12: ("stand", False, 2),
}
E = {  # expert e
    1: ("walk", False, 2),
    2: ("walk", True, 1),
    3: ("carry", True, 5),
    4: ("stand", False, 2),
    5: ("stand", False, 1),
    6: ("walk", False, 4),
    7: ("walk", True, 2),
    10: ("stand", False, 1),
}
H = [  # annotator, item, arm, (action, violation, count), lead time
    ("A", 1, "anchored", ("walk", False, 2), 100),
    ("A", 2, "anchored", ("stand", True, 1), 120),
    ("A", 3, "anchored", ("walk", True, 5), 200),
    ("B", 4, "anchored", ("carry", False, 3), 300),
    ("B", 5, "anchored", ("stand", False, 1), 100),
    ("B", 6, "anchored", ("stand", False, 4), 250),
    ("C", 7, "anchored", ("carry", True, 2), 80),
    ("C", 8, "anchored", ("walk", False, 1), 100),
    ("C", 9, "anchored", ("walk", False, 2), 150),
    ("A", 10, "blind", ("stand", False, 1), 90),
    ("B", 10, "blind", ("stand", False, 2), 95),
    ("A", 11, "blind", ("carry", True, 3), 90),
    ("B", 11, "blind", ("carry", False, 3), 95),
    ("A", 12, "blind", ("walk", False, 2), 90),
    ("B", 12, "blind", ("walk", False, 4), 95),
]
EVAL = {**V, 3: ("walk", False, 3), 11: ("carry", False, 3), 9: ("stand", False, 4)}
FIELDS = ("action", "violation", "count")


def _vals(t: tuple) -> dict:
    return dict(zip(FIELDS, t, strict=True))


def _fmt(x: object) -> str:
    return str(x).lower() if isinstance(x, bool) else str(x)


@pytest.fixture
def hand(hand_project, sqlite_store, tmp_path: Path, add_items, add_predictions):
    ids = add_items(sqlite_store, hand_project, [f"i{k}" for k in range(1, 13)])
    add_predictions(
        sqlite_store, hand_project, "hand-v1", {ids[f"i{k}"]: _vals(v) for k, v in V.items()}
    )
    add_predictions(
        sqlite_store, hand_project, "hand-eval", {ids[f"i{k}"]: _vals(v) for k, v in EVAL.items()}
    )
    path = tmp_path / "labels.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "item",
                "field",
                "annotator",
                "arm",
                "tier",
                "value",
                "shown_prediction",
                "model_version",
                "lead_time",
                "expert",
            ]
        )
        for who, item, arm, vals, lead in H:
            for f, x, v, e in zip(FIELDS, vals, V[item], E.get(item, (None,) * 3), strict=True):
                w.writerow(
                    [
                        f"i{item}",
                        f,
                        who,
                        arm,
                        1,
                        _fmt(x),
                        _fmt(v) if arm == "anchored" else "",
                        "hand-v1",
                        lead,
                        "" if e is None else _fmt(e),
                    ]
                )
    rep = import_table(sqlite_store, hand_project, path, create_items=False)
    assert rep.annotations == 15 and rep.expert_reviews == 8 and rep.items_created == 0
    return sqlite_store, hand_project, ids


def _p(ci: dict) -> float:
    return ci["point"]


def test_direction_table_every_cell(hand):
    store, project, _ = hand
    r = run_audit(store, project, gradient_model="hand-eval").as_dict()
    d = r["direction"]

    def cells(t):
        return {
            k: t[k]["count"]
            for k in (
                "productive_anchoring",
                "harmful_anchoring",
                "harmful_override",
                "productive_override",
                "wrong_override",
            )
        } | {"n": t["n"]}

    # items 1-7 x 3 fields: PA 13, HA 2 (items 2, 7 action), HO 2 (3, 6 action),
    # PO 3 (item 3 violation and count, item 4 violation), WO 1 (item 4 action)
    assert cells(d["all"]) == dict(
        productive_anchoring=13,
        harmful_anchoring=2,
        harmful_override=2,
        productive_override=3,
        wrong_override=1,
        n=21,
    )
    assert _p(d["all"]["harmful_anchoring"]["rate"]) == pytest.approx(2 / 21)
    assert cells(d["by_field"]["action"]) == dict(
        productive_anchoring=2,
        harmful_anchoring=2,
        harmful_override=2,
        productive_override=0,
        wrong_override=1,
        n=7,
    )
    assert cells(d["by_field"]["violation"]) == dict(
        productive_anchoring=5,
        harmful_anchoring=0,
        harmful_override=0,
        productive_override=2,
        wrong_override=0,
        n=7,
    )
    # item 4: count 3 vs prefill 2 is within tolerance 1 -> kept, productive anchoring
    assert cells(d["by_field"]["count"]) == dict(
        productive_anchoring=6,
        harmful_anchoring=0,
        harmful_override=0,
        productive_override=1,
        wrong_override=0,
        n=7,
    )
    assert cells(d["by_annotator"]["A"]) == dict(
        productive_anchoring=5,
        harmful_anchoring=1,
        harmful_override=1,
        productive_override=2,
        wrong_override=0,
        n=9,
    )
    assert cells(d["by_annotator"]["B"]) == dict(
        productive_anchoring=6,
        harmful_anchoring=0,
        harmful_override=1,
        productive_override=1,
        wrong_override=1,
        n=9,
    )
    assert cells(d["by_annotator"]["C"]) == dict(
        productive_anchoring=2,
        harmful_anchoring=1,
        harmful_override=0,
        productive_override=0,
        wrong_override=0,
        n=3,
    )
    # every CI brackets its point
    ci = d["all"]["harmful_anchoring"]["rate"]
    assert ci["low"] <= ci["point"] <= ci["high"] and ci["resamples"] == 200


def test_override_rates_edit_depth_correct_labels(hand):
    store, project, _ = hand
    r = run_audit(store, project).as_dict()
    ov = r["override"]
    assert _p(ov["by_annotator"]["A"]["override_rate"]) == pytest.approx(1 / 3)
    assert _p(ov["by_annotator"]["A"]["edit_depth"]) == pytest.approx(1.0)
    assert _p(ov["by_annotator"]["B"]["override_rate"]) == pytest.approx(2 / 3)
    assert _p(ov["by_annotator"]["B"]["edit_depth"]) == pytest.approx(1.0)
    assert _p(ov["by_annotator"]["C"]["override_rate"]) == pytest.approx(1 / 3)
    assert _p(ov["by_annotator"]["C"]["edit_depth"]) == pytest.approx(1 / 3)
    assert _p(ov["team"]["override_rate"]) == pytest.approx(4 / 9)
    assert _p(ov["team"]["edit_depth"]) == pytest.approx(7 / 9)
    cl = r["correct_label"]["by_annotator"]
    assert (_p(cl["A"]), _p(cl["B"]), _p(cl["C"])) == pytest.approx((10 / 12, 10 / 12, 2 / 3))
    bias = r["anchoring_bias"]
    assert _p(bias["action"]["bias_pp"]) == pytest.approx(100 * (5 / 9 - 2 / 6))
    assert _p(bias["violation"]["bias_pp"]) == pytest.approx(100 * (7 / 9 - 5 / 6))
    assert _p(bias["count"]["bias_pp"]) == pytest.approx(100 * (8 / 9 - 5 / 6))
    t = r["time"]["all"]
    assert (_p(t["kept"]), _p(t["overridden"])) == pytest.approx((100.0, 225.0))
    s = r["safety"]["violation"]
    assert (
        s["n"],
        s["vlm_false_alarm"]["count"],
        s["vlm_miss"]["count"],
        s["expert_only_catch"]["count"],
    ) == (7, 1, 1, 0)
    rr = r["residual_risk"]
    assert rr["items_without_review"] == 2


def test_residual_risk_is_a_true_upper_bound_on_items(hand):
    """Items 1-7 are the expert-reviewed anchored items; items 2 and 7 carry a harmful
    anchor (action), so 2 of 7 items; items 8 and 9 were finalized without review. The
    bound is the 95th percentile of BetaBinomial(N, k + 1/2, n - k + 1/2) (the rate's
    uncertainty and the 2 unreviewed items' own spread), never the per-decision rate
    (2 of 21) x items, which counts neither items nor a bound."""
    from statsmodels.stats.proportion import proportion_confint

    store, project, _ = hand
    rr = run_audit(store, project).as_dict()["residual_risk"]
    assert (rr["reviewed_items"], rr["reviewed_items_with_harmful_anchor"]) == (7, 2)
    assert _p(rr["item_harmful_rate"]) == pytest.approx(2 / 7)
    assert rr["expected_items"] == pytest.approx(2 * 2 / 7)
    from scipy.stats import betabinom

    # the 95th percentile of BetaBinomial(N = 2, k + 1/2, n - k + 1/2): a whole count
    assert rr["upper_bound_items"] == int(betabinom.ppf(0.95, 2, 2.5, 5.5)) == 2
    wilson_high = proportion_confint(2, 7, method="wilson")[1]
    assert rr["upper_bound_items"] >= 2 * wilson_high - 1e-9
    assert rr["upper_bound_items"] > 2 * 2 / 21 * 4  # the old figure was far below


def test_kappas_match_the_stats_package(hand):
    store, project, _ = hand
    r = run_audit(store, project).as_dict()
    b_pairs = [(V[i][0], h[0]) for who, i, arm, h, _ in H if arm == "anchored" and who == "B"]
    got = r["vlm_kappa"]["by_annotator_field"]["B"]["action"]["point"]
    assert got == pytest.approx(cohen_kappa([a for a, _ in b_pairs], [b for _, b in b_pairs]))
    all_pairs = [(V[i][0], h[0]) for _, i, arm, h, _ in H if arm == "anchored"]
    got = r["vlm_kappa"]["by_field"]["action"]["point"]
    assert got == pytest.approx(cohen_kappa([a for a, _ in all_pairs], [b for _, b in all_pairs]))
    # blind pairs (items 10-12, A first): violation (F,F), (T,F), (F,F)
    iaa = r["iaa"]["violation"]
    assert iaa["blind_pairs"] == 3 and iaa["anchored_pairs"] == 0
    assert iaa["blind"]["point"] == pytest.approx(
        cohen_kappa([False, True, False], [False, False, False])
    )


def test_provenance_gradient_by_hand(hand):
    store, project, _ = hand
    r = run_audit(store, project, gradient_model="hand-eval").as_dict()
    g = r["gradient"]
    assert g["predictions"] == "hand-eval"
    # blind: 12 of 18 decisions; anchored: 20 of 27; VLM-sourced gold = item 8 (3 kept)
    # + item 9 violation and count (kept): eval misses item 9 count -> 4 of 5
    assert (_p(g["blind"]), _p(g["anchored"]), _p(g["vlm_sourced"])) == pytest.approx(
        (12 / 18, 20 / 27, 4 / 5)
    )
    assert not any("self-reference" in w for w in r["warnings"])
    # scoring the prefill itself is circular and the audit says so
    r2 = run_audit(store, project).as_dict()
    assert _p(r2["gradient"]["vlm_sourced"]) == 1.0
    assert any("self-reference" in w for w in r2["warnings"])


def test_one_gold_loader_latest_snapshot_and_prefix(hand):
    """One home for reading gold: the audit's and the benchmark's load_gold are one
    function; the newest snapshot is the default; a unique hash prefix finds a snapshot
    (the audit's own loader used to match whole hashes only and return nothing)."""
    from truthline import audit, benchmark
    from truthline.audit import self_reference
    from truthline.errors import TruthlineError

    assert benchmark.load_gold is audit.load_gold
    store, project, _ids = hand
    with pytest.raises(TruthlineError, match="has no gold yet"):
        audit.load_gold(store, project.name)
    first = finalize(store, project)
    exclude_annotator(store, project, "C", "test: rubber stamping", decided_by="tester")
    second = finalize(store, project)
    assert first.hash != second.hash
    assert audit.load_gold(store, project.name).snapshot == second.hash
    assert self_reference(store, project.name, "hand-v1")["snapshot"] == second.hash
    old = audit.load_gold(store, project.name, first.hash[:10])
    assert old.snapshot == first.hash and len(old) == len(first.values)
    prov: dict[str, int] = {}
    for rec in old:
        prov[rec["provenance"]] = prov.get(rec["provenance"], 0) + 1
    assert prov == first.counts()["by_provenance"] == old.counts()
    blind = audit.load_gold(store, project.name, first.hash, slice_="blind")
    assert {r["provenance"] for r in blind} <= {"blind_consensus", "expert"}
    with pytest.raises(TruthlineError, match=r"'zzzz' of project .*: not found"):
        audit.load_gold(store, project.name, "zzzz")


def test_finalize_provenance_and_exclusion(hand):
    store, project, ids = hand
    res = finalize(store, project)
    c = res.counts()
    assert c["by_provenance"] == {
        "anchored_corrected": 1,
        "anchored_kept": 5,
        "blind_consensus": 4,
        "expert": 24,
    }
    pend = sorted((p.item, p.path) for p in res.pending)
    assert pend == sorted([(ids["i11"], "violation"), (ids["i12"], "count")])
    prov = {(g.item, g.path): g.provenance for g in res.values}
    assert prov[(ids["i9"], "action")] == "anchored_corrected"
    assert prov[(ids["i9"], "count")] == "anchored_kept"
    assert prov[(ids["i10"], "count")] == "expert"
    assert finalize(store, project).hash == res.hash  # stable across reruns
    exclude_annotator(store, project, "C", "test: rubber stamping", decided_by="tester")
    res2 = finalize(store, project)
    assert res2.hash != res.hash
    assert res2.counts()["by_provenance"] == {"blind_consensus": 4, "expert": 24}
    req = sorted(p.item for p in res2.pending if p.kind == "requeue")
    assert req == sorted([ids["i8"], ids["i9"]])
    assert all(
        "C excluded: test: rubber stamping" in p.reason for p in res2.pending if p.kind == "requeue"
    )
    r = run_audit(store, project).as_dict()
    assert r["exclusions"] == {"C": "test: rubber stamping"}
    assert r["before_after"]["kind"] == "recorded exclusions"
    row = r["before_after"]["rows"]["harmful_anchoring_rate"]
    assert (row["before"]["point"], row["after"]["point"]) == pytest.approx((2 / 21, 1 / 18))


def test_deleted_annotation_changes_neither_gold_nor_audit(hand):
    """An annotation deleted in Label Studio stays in the store as history (``deleted_at``)
    but must not count: a deleted conflicting blind label on item 8 and a deleted expert
    review of item 9 leave the gold hash and every audit figure as they were."""
    from truthline.store import now, tables

    store, project, ids = hand
    gold_before = finalize(store, project)
    before = run_audit(store, project, gradient_model="hand-eval").as_dict()
    ts = now()
    base = dict(
        project=project.name,
        tier=1,
        skipped=False,
        flagged=True,
        lead_time=5.0,
        source="label_studio",
        annotated_at=ts,
        stored_at=ts,
        deleted_at=ts,
    )
    rows = [
        dict(
            base,
            item_id=ids["i8"],
            annotator="D",
            arm="blind",
            source_id="ls:1:9001",
            field_path=f,
            value=v,
        )
        for f, v in (("action", "carry"), ("violation", True), ("count", 9))
    ] + [
        dict(
            base,
            item_id=ids["i9"],
            annotator="expert2",
            arm="review",
            tier=2,
            source_id="ls:1:9002",
            field_path=f,
            value=v,
        )
        for f, v in (("action", "carry"), ("violation", True), ("count", 9))
    ]
    with store.begin() as conn:
        conn.execute(tables.annotations.insert(), rows)
    gold_after = finalize(store, project)
    after = run_audit(store, project, gradient_model="hand-eval").as_dict()
    assert gold_after.hash == gold_before.hash
    assert gold_after.counts() == gold_before.counts()
    assert after["counts"] == before["counts"]
    for key in ("direction", "override", "correct_label", "flags", "iaa", "gradient"):
        assert after[key] == before[key], key


def test_streamed_gold_hash_is_the_json_hash_of_the_snapshot(hand):
    """The gold hash is computed row by row (memory); it must stay byte-identical to
    ``json_hash`` of the whole snapshot, or every stored snapshot would look changed."""
    from truthline.audit import load
    from truthline.audit._gold import decide
    from truthline.store import json_hash

    store, project, _ = hand
    data = load(store, project)
    res = decide(data, {})
    full = json_hash(
        {
            "project": project.name,
            "policy": res.policy.as_dict(),
            "values": sorted(
                [data.item_keys[g.item], g.path, g.value, g.provenance, sorted(g.sources)]
                for g in res.values
            ),
        }
    )
    assert res.hash == full


def test_chunked_gold_hash_is_the_hash_of_one_encoding(hand, monkeypatch):
    """Gold rows are JSON-encoded a chunk at a time; with chunks of 2 rows the hash is
    still ``json_hash`` of the whole snapshot."""
    from truthline.audit import _gold, load
    from truthline.store import json_hash

    store, project, _ = hand
    data = load(store, project)
    monkeypatch.setattr(_gold, "HASH_CHUNK", 2)
    res = _gold.decide(data, {})
    assert len(res.values) > 4
    rows = [
        [data.item_keys[g.item], g.path, g.value, g.provenance, sorted(g.sources)]
        for g in res.values
    ]
    full = json_hash(
        {"project": project.name, "policy": res.policy.as_dict(), "values": sorted(rows)}
    )
    assert res.hash == full


def test_gradient_and_signals_are_typed_and_their_json_is_unchanged(hand):
    """The provenance gradient and the exclusion signals cross into the CLI, dashboards,
    reports and demo as frozen dataclasses; their JSON keeps the keys, in the order
    ``--json`` has always printed them."""
    import dataclasses
    import json

    from truthline.audit._results import AnnotatorSignals, OverrideLow, ProvenanceGradient
    from truthline.stats import CI

    store, project, _ = hand
    exclude_annotator(store, project, "C", "test: rubber stamping", decided_by="tester")
    res = run_audit(store, project, gradient_model="hand-eval")
    g = res.gradient
    assert isinstance(g, ProvenanceGradient) and res["gradient"] is g
    assert g.predictions == "hand-eval" and isinstance(g.blind, CI)
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.blind = g.anchored  # type: ignore[misc]

    def ci(x):
        return {k: (None if v != v else v) for k, v in x.as_dict().items()}

    want_gradient = {
        "predictions": g.predictions,
        "blind": ci(g.blind),
        "anchored": ci(g.anchored),
        "vlm_sourced": ci(g.vlm_sourced),
        "inflation_pp": ci(g.inflation_pp),
    }
    out = res.as_dict()
    assert json.dumps(out["gradient"]) == json.dumps(want_gradient)
    assert g["blind"] is g.blind and list(g) == list(want_gradient)  # the dict view
    sig = res.signals["C"]
    assert isinstance(sig, AnnotatorSignals) and sig.excluded and sig["excluded"]
    assert list(out["signals"]["C"]) == ["signals", "fired", "flagged", "excluded"]
    for name, s in sig.signals.items():
        assert out["signals"]["C"]["signals"][name] == s.to_dict()
        assert list(s.to_dict()) == [f.name for f in dataclasses.fields(s)]
    low = sig.signals.get("override_low")
    if low is not None:
        assert isinstance(low, OverrideLow)
        assert list(low.to_dict()) == [
            "value",
            "team_range",
            "threshold",
            "ratio_to_team_low",
            "fired",
        ]
