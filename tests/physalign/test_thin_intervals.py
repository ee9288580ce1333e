"""Honest intervals on thin parent designs (METRICS.md §2, §6): under 20 parents the
probe protocol's balanced aggregates (net, repair and harm rates) use the delete-one-
parent jackknife-t(G-1), never narrower than the parent percentile interval; a share over
one or two events never prints a zero-width interval as if exact, in the protocol and in
the generic count shares (a false-alarm share on two errors of one clip)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from tests.physalign.protocol_view import probes, project, view
from truthline.benchmark import compute_run_metrics
from truthline.benchmark import metrics as M
from truthline.stats import fmt_ci, proportion_ci

RS = M.Resampling(400, 3)


def _pm():
    """12 parents, image probes only. Base: wrong on p11_E1 and p11_E2; +GT repairs
    p11_E1 only -> 1 repair of 2 base-wrong probes, both in one parent; no harm."""
    p = project()
    ps = probes(12, text=False)
    truth = {x.key: x.owner for x in ps}
    base = {**truth, "p11_E1": "E3", "p11_E2": "E3"}
    gt = {**truth, "p11_E2": "E3"}
    v = view(p, ps, {("m", "base"): (base, None), ("m", "gt"): (gt, None)}, RS)
    return compute_run_metrics(v, ["probe_protocol"])["probe_protocol"]["models"]["m"]["P_m"]


def test_net_at_12_parents_is_the_jackknife_t_never_narrower_than_the_percentile():
    pm = _pm()
    net = pm["net"]
    assert net["point"] == pytest.approx(1 / 36)
    assert net["method"].startswith("parent jackknife-t(11)")
    assert "few clusters (12 < 20)" in net["warning"]
    # by hand: delete each parent, recompute the balanced net (one type: parent means)
    per_parent = np.array([0.0] * 11 + [1 / 3])  # +GT - Base per parent
    theta = np.array([np.delete(per_parent, k).mean() for k in range(12)])
    se = np.sqrt(11 / 12 * ((theta - theta.mean()) ** 2).sum())
    t = sps.t.ppf(0.975, 11)
    assert net["low"] <= 1 / 36 - t * se + 1e-12 and net["high"] >= 1 / 36 + t * se - 1e-12
    # the parent percentile interval of the same draw lies inside
    s = M.Support.of([f"p{k}" for k in range(12)])
    W = M.support_draw(s, RS.resamples, RS.seed)
    boot = np.asarray(s.agg(per_parent, W))
    lo, hi = np.quantile(boot[np.isfinite(boot)], [0.025, 0.975])
    assert net["low"] <= lo and net["high"] >= hi


def test_a_rate_over_two_events_in_one_parent_is_not_printed_as_exact():
    pm = _pm()
    rr = pm["repair_rate"]
    # every resample holding p11 gives exactly 0.5, deleting p11 leaves it undefined: the
    # percentile interval alone would be 0.5 [0.5, 0.5]
    assert rr["point"] == pytest.approx(0.5)
    w = proportion_ci(1, 2)
    assert rr["low"] <= w.low < 0.5 < w.high <= rr["high"]
    assert "2 event(s) in one parent" in rr["warning"]
    assert not fmt_ci(rr).startswith("0.500 [0.500, 0.500]")
    # no harm at all: the harm rate is 0 with a Wilson upper bound, not [0, 0]
    hr = pm["harm_rate"]
    assert hr["point"] == 0 and hr["low"] == 0 and hr["high"] > 0.02


def test_false_alarm_share_on_two_errors_of_one_clip_is_not_zero_width():
    # 25 clips of 3 decisions; clip c0 holds the only two safety errors (1 FP, 1 FN)
    gold, pred, clips = [], [], []
    for c in range(25):
        for i in range(3):
            g = i == 0
            p = (not g) if c == 0 and i < 2 else g
            gold.append(g)
            pred.append(p)
            clips.append(f"c{c}")
    r = M.safety(gold, pred, units=list(range(75)), clusters=clips, rs=RS)
    fa = r["false_alarm_share"]
    assert r["counts"]["false_alarms"] == 1 and r["counts"]["missed"] == 1
    assert fa.point == 0.5
    w = proportion_ci(1, 2)
    assert fa.low <= w.low and fa.high >= w.high
    assert "2 event(s) in one cluster" in (fa.warning or "")
    # the same two errors in two clips (FN in c0, FP in c1): no one-cluster note
    pred2 = list(gold)
    pred2[0], pred2[4] = False, True
    r2 = M.safety(gold, pred2, units=list(range(75)), clusters=clips, rs=RS)
    assert r2["counts"]["false_alarms"] == 1 and r2["counts"]["missed"] == 1
    assert "one cluster" not in (r2["false_alarm_share"].warning or "")


def test_no_change_at_all_is_not_an_exact_zero():
    # +GT changes no answer on 36 probes: net 0, but not 0.000 [0.000, 0.000]
    p = project()
    ps = probes(12, text=False)
    truth = {x.key: x.owner for x in ps}
    answers = {**truth, "p0_E1": "E3", "p5_E2": "E3"}
    v = view(p, ps, {("m", "base"): (answers, None), ("m", "gt"): (answers, None)}, RS)
    pm = compute_run_metrics(v, ["probe_protocol"])["probe_protocol"]["models"]["m"]["P_m"]
    net = pm["net"]
    assert net["point"] == 0 and pm["counts"]["repairs"] == pm["counts"]["harms"] == 0
    assert net["low"] < -0.02 and net["high"] > 0.02
    assert "0 discordant probe(s)" in net["warning"]
    # many discordant probes keep the paired interval as it is (no floor)
    s = M.Support.of([f"p{k // 3}" for k in range(36)])
    a = np.array([1, 0, 1] * 12, dtype=float)
    b = np.array([0, 1, 1] * 12, dtype=float)
    out = M.support_ci(
        s,
        {"a": a, "b": b},
        lambda x: {"a-b": x["a"] - x["b"]},
        rs=RS,
        differences={"a-b": ("a", "b")},
    )
    assert "discordant" not in (out["a-b"]["warning"] or "")


def test_the_safety_table_shows_the_false_alarm_share_with_its_interval(tmp_path):
    from types import SimpleNamespace

    from truthline.benchmark._registry import plain
    from truthline.benchmark._report import _safety_sections
    from truthline.benchmark._types import EntryKey

    gold = [i % 3 == 0 for i in range(75)]
    pred = list(gold)
    pred[0], pred[1] = False, True  # one miss and one false alarm, both in clip c0
    clips = [f"c{i // 3}" for i in range(75)]
    r = plain(M.safety(gold, pred, units=list(range(75)), clusters=clips, rs=RS))
    board = [
        SimpleNamespace(
            key=EntryKey("m"),
            simulated=False,
            metrics={
                "safety_recall": {"value": r["safety_recall"]},
                "false_alarm_share": {
                    "value": r["false_alarm_share"],
                    "regime": r["regime"],
                    "counts": r["counts"],
                },
            },
        )
    ]
    ctx = SimpleNamespace(board=board, files=tmp_path)
    (sec,) = _safety_sections(ctx)
    row = sec.table[0]
    assert row["false-alarm share"].startswith("0.500 [0.0")  # not "0.5" nor [0.500, 0.500]
    assert row["safety errors"] == 2 and sec.n == [25]
