"""Rule baselines are scored on the probes they apply to (PHYSALIGN.md §9: the paper
compares them on their support), with the coverage beside the score: the nearest-region
rule is never 0 on text-anchored probes it cannot answer, and a model compared with it is
compared on that support."""

from __future__ import annotations

import pytest

from tests.physalign.protocol_view import nearest_answers, probes, project, view
from truthline.benchmark import compute_run_metrics, rule
from truthline.benchmark._baselines import rule_applies
from truthline.benchmark._registry import plain
from truthline.systems.physalign._protocol import protocol_sections

HARD = ("p3_E3",)


def _run(extra=None):
    p = project()
    ps = probes(4, hard=HARD)
    truth = {x.key: x.owner for x in ps}
    entries = {
        ("rule:nearest-region", "base"): (nearest_answers(ps), None),
        ("rule:majority", "base"): ({x.key: "E2" for x in ps}, None),
        ("m", "base"): (truth, None),  # a model right everywhere
        **(extra or {}),
    }
    return compute_run_metrics(view(p, ps, entries), ["probe_protocol"])["probe_protocol"]


def test_nearest_region_is_scored_on_its_support_with_coverage():
    r = _run()
    g = r["models"]["rule:nearest-region"]["G"]
    # H = the 12 image probes; on it: parents p0-p2 all right, p3 2 of 3 -> (3 + 2/3) / 4.
    # Over all 16 probes (text probes 0, balanced by type) it would be 0.458.
    assert g["support"] == {"N": 12, "of": 16, "rule": "rule:nearest-region"}
    assert g["GAcc"]["point"] == pytest.approx((3 + 2 / 3) / 4)
    assert g["GAcc"]["n"] == 12 and g["coverage"]["N"] == 16
    # a rule without a declared support, and a model, are scored on every probe
    assert "support" not in r["models"]["rule:majority"]["G"]
    assert r["models"]["rule:majority"]["G"]["GAcc"]["n"] == 16
    assert r["models"]["m"]["G"]["GAcc"]["point"] == 1.0
    sec = protocol_sections(plain(r), "r1")[0]
    row = {x["model"]: x for x in sec.table}
    assert row["rule:nearest-region"]["scored on"] == "rule's support 12/16 (75%)"
    assert row["rule:nearest-region"]["GAcc"].startswith("0.917")
    assert row["m"]["scored on"] == "all probes"
    assert sec.n[list(row).index("rule:nearest-region")] == "G 12 / L 0"


def test_a_model_compared_with_a_rule_is_compared_on_the_rules_support():
    r = _run()
    pair = next(
        x for x in r["pairs"] if {x["model_a"], x["model_b"]} == {"rule:nearest-region", "m"}
    )
    assert pair["N"] == 12
    assert pair["a-b"]["point"] == pytest.approx(pair["a"]["point"] - pair["b"]["point"])
    rule_side = "a" if pair["model_a"] == "rule:nearest-region" else "b"
    model_side = "b" if rule_side == "a" else "a"
    assert pair[rule_side]["point"] == pytest.approx((3 + 2 / 3) / 4)
    assert pair[model_side]["point"] == 1.0


def test_a_rule_declares_where_it_applies():
    @rule("p3-test-image-only", applies=lambda meta: meta["probe_type"] == "T03-image")
    def _image_only(request, support):
        return {}

    assert rule_applies("rule:p3-test-image-only") is not None
    assert rule_applies("majority") is None
    ps = probes(4)
    answers = {x.key: (x.owner if x.probe_type == "T03-image" else None) for x in ps}
    r = _run({("rule:p3-test-image-only", "base"): (answers, None)})
    g = r["models"]["rule:p3-test-image-only"]["G"]
    assert g["support"]["N"] == 12 and g["GAcc"]["point"] == 1.0
