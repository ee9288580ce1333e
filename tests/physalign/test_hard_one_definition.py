"""One definition of the hard subset and of the net change per report: with the probe
protocol in the run, its balanced H_hard (probes the frozen rule gets wrong, fixed before
any model) and its net on P_m replace the decision-count ``hard_subset`` and
``paired_conditions`` sections; projects without the protocol keep those."""

from __future__ import annotations

import pytest

from tests.physalign.protocol_view import nearest_answers, probes, project, view
from truthline.benchmark import compute_run_metrics
from truthline.benchmark._registry import plain
from truthline.benchmark._report import across_sections

GENERIC = ["hard_subset", "paired_conditions"]


def _metrics(names):
    p = project()
    ps = probes(4, hard=("p3_E3",))
    truth = {x.key: x.owner for x in ps}
    base = {k: ("E1" if k.endswith("_E3") else v) for k, v in truth.items()}  # wrong on E3
    reads = {x.key: x.reading for x in ps if x.reading}
    entries = {
        ("rule:nearest-region", "base"): (nearest_answers(ps), {k: "" for k in reads}),
        ("m", "base"): (base, reads),
        ("m", "gt"): (truth, None),  # +GT repairs the four E3 probes
    }
    v = view(p, ps, entries)
    return {"run_id": "r1", "metrics": plain(compute_run_metrics(v, names))}


def test_the_protocol_replaces_the_decision_count_sections():
    a = _metrics([*GENERIC, "probe_protocol"])
    # the generic metrics are still computed (``benchmark across --json``) ...
    hs = a["metrics"]["hard_subset"]
    assert hs["rule"] == "rule:nearest-region"
    # ... their decision count mixes the rule's (majority) readings into "hard"
    assert hs["hard_decisions"] > 1
    titles = [s.title for s in across_sections(a)]
    assert not any(t.startswith(("Hard subset", "Paired conditions")) for t in titles)
    hard = [t for t in titles if "rule baselines on the same support" in t]
    net = [t for t in titles if "Base -> +GT on P_m" in t]
    assert len(hard) == 1 and len(net) == 1
    proto = a["metrics"]["probe_protocol"]
    assert proto["supersedes"] == GENERIC
    m = proto["models"]["m"]
    # H_hard = the one probe the rule misses (p3_E3), the model is wrong there too
    assert m["H_hard"]["model"]["n"] == 1 and m["H_hard"]["model"]["point"] == 0.0
    # net on P_m = repairs - harms (balanced): the E3 probe of each parent repaired
    assert m["P_m"]["counts"]["repairs"] == 4 and m["P_m"]["counts"]["harms"] == 0
    assert m["P_m"]["net"]["point"] == pytest.approx(1 / 3)


def test_without_the_protocol_the_generic_sections_stay():
    a = _metrics(GENERIC)
    titles = [s.title for s in across_sections(a)]
    assert any(t.startswith("Hard subset") for t in titles)
    assert any(t.startswith("Paired conditions") for t in titles)
