"""The planted-behaviour scenario (SIMULATED, SteelBench-sized): the audit must recover
what was planted, flag only the rubber-stamper, and order the gradient as planted."""

from __future__ import annotations

from truthline.audit import finalize, load, run_audit, to_html, to_markdown
from truthline.audit._data import leaf_of


def _inside(ci: dict, planted: float) -> bool:
    return ci["low"] <= planted <= ci["high"]


def test_sizes_are_steelbench(planted):
    _, sc, res = planted
    c = res.counts
    assert c["items"] == 1345 and sc.expert_items == 363 and sc.blind_pairs == 102
    assert len(c["annotators"]) == 6
    assert res["iaa"]["workers.action"]["blind"].resamples == 1000
    assert c["expert_reviewed_items"] == 363


def test_planted_rates_recovered_inside_ci(planted):
    _, sc, res = planted
    d = res.as_dict()
    rubber = sc.of_kind("rubber_stamper")[0]
    over = sc.of_kind("over_corrector")[0]
    # rubber-stamper keeps 98% of prefills: decision-level override rate 2%
    keep = 1 - sc.behaviours["rubber_stamper"]["keep_all"]
    assert _inside(d["override"]["by_annotator"][rubber]["decision_override_rate"], keep)
    # over-corrector changes 30% of correct prefills
    p_ho = 1 - sc.behaviours["over_corrector"]["keep_right"]
    assert _inside(
        d["direction"]["by_annotator"][over]["conditional"]["changed_when_vlm_right"], p_ho
    )
    # careful annotators miss a wrong prefill with 1 - detect x difficulty, per field
    careful = sc.of_kind("careful")
    b = sc.behaviours["careful"]
    for field in ("workers.action", "workers.helmet"):
        miss = 1 - b["detect"] * sc.difficulty[field]
        hits = [
            _inside(
                d["direction"]["by_annotator_field"][a][field]["conditional"][
                    "kept_when_vlm_wrong"
                ],
                miss,
            )
            for a in careful
        ]
        assert sum(hits) >= len(careful) - 1, (field, hits)  # 95% CIs: allow one miss


def test_flags_the_rubber_stamper_and_only_it(planted):
    _, sc, res = planted
    flagged = [a for a, s in res.signals.items() if s["flagged"]]
    assert flagged == sc.of_kind("rubber_stamper")
    s = res.signals[flagged[0]]
    assert set(s["fired"]) == {"override_low", "vlm_kappa_high", "zero_productive"}
    assert s["signals"]["zero_productive"]["vlm_errors"] >= 10
    lo, hi = s["signals"]["override_low"]["team_range"]
    assert s["signals"]["override_low"]["value"] < lo / 2 <= hi
    ba = res.before_after
    assert ba is not None and ba["annotators"] == flagged
    # excluding the rubber-stamper lowers harmful anchoring and raises the override rate
    row = ba["rows"]["harmful_anchoring_rate"]
    assert row["after"].point < row["before"].point
    assert ba["rows"]["override_rate"]["after"].point > ba["rows"]["override_rate"]["before"].point


def test_gradient_has_the_planted_order(planted):
    _, _, res = planted
    g = res["gradient"]
    assert g["blind"].high < g["anchored"].low
    assert g["anchored"].high < g["vlm_sourced"].low
    assert g["inflation_pp"].low > 0


def test_harmful_anchoring_concentrates_in_hard_fields(planted):
    _, _, res = planted
    d = res["direction"]["by_field"]
    hard = d["workers.action"]["harmful_anchoring"]["rate"]
    easy = d["workers.harness"]["harmful_anchoring"]["rate"]
    assert easy.high < hard.low


def test_report_reads_like_an_audit_section(planted):
    _, sc, res = planted
    md = to_markdown(res.as_dict())
    for heading in (
        "Direction of VLM influence per field",
        "Inter-annotator agreement",
        "Exclusion signals",
        "Before / after exclusion",
        "Provenance gradient",
        "Safety-violation direction",
        "Residual risk",
    ):
        assert heading in md
    assert "**FIRED**" in md and sc.of_kind("rubber_stamper")[0] in md
    html = to_html(res.as_dict())
    assert html.startswith("<!doctype html>") and "<table>" in html and "<script" not in html


def test_finalize_after_exclusion_requeues_and_hash_is_stable(steel, tmp_path):
    from truthline.audit import exclude_annotator
    from truthline.simulate import build_scenario
    from truthline.store import Store

    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    sc = build_scenario(store, steel, n_items=300, seed=3)
    rubber = sc.of_kind("rubber_stamper")[0]
    first = finalize(store, steel)
    assert finalize(store, steel).hash == first.hash
    exclude_annotator(store, steel, rubber, "three signals", decided_by="test")
    res = finalize(store, steel)
    data = load(store, steel)
    rub_items = {a.item for a in data.annotations if a.annotator == rubber}
    gold_items = {g.item for g in res.values}
    requeued = {p.item for p in res.pending if p.kind == "requeue"}
    assert requeued  # items only the rubber-stamper labelled, without expert review
    assert requeued <= rub_items and not requeued & gold_items
    assert all(rubber in p.reason for p in res.pending if p.kind == "requeue")
    # no gold value cites the excluded annotator
    assert not any(rubber in g.sources for g in res.values)
    # provenance as planted: expert items -> expert; blind -> consensus; anchored kept/corrected
    blind_items = {a.item for a in data.annotations if a.arm == "blind"}
    for g in res.values:
        if g.item in data.expert and g.path in data.expert[g.item]:
            assert g.provenance == "expert"
        elif g.item in blind_items:
            assert g.provenance == "blind_consensus"
        elif "[" in g.path:  # anchored decision: kept iff it agrees with the prefill
            kept = steel.field(leaf_of(g.path)).agree(g.value, data.pred[g.item].get(g.path))
            assert g.provenance == ("anchored_kept" if kept else "anchored_corrected")
    run = run_audit(store, steel, resamples=100)
    assert run.exclusions == {rubber: "three signals"}
    store.close()
