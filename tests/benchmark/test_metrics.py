"""Every metric on a tiny fixture with a hand-computed answer; CI reproducibility; paired
differences with a planted gap."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.benchmark import metrics as M
from truthline.systems import steelbench

RS0 = M.Resampling(resamples=0)


def test_accuracy_and_credit_mean():
    assert M.accuracy([1, 0, 1, 1], rs=RS0).point == 0.75
    # per-item units: the point is still the decision mean
    ci = M.accuracy([1, 0, 1, 1], units=[1, 1, 2, 2], rs=M.Resampling(500, 3))
    assert ci.point == 0.75 and ci.n == 2 and ci.resamples == 500
    assert M.accuracy([0.5, 1.0, 0.0], rs=RS0).point == pytest.approx(0.5)


def test_macro_f1_hand_computed():
    # a: TP1 FN1 -> 2/3; b: TP1 FP1 -> 2/3; c: FN1 -> 0; macro = 4/9 (missing pred is wrong)
    ci = M.macro_f1(["a", "a", "b", "c"], ["a", "b", "b", None], rs=RS0)
    assert ci.point == pytest.approx(4 / 9)


def test_per_class_and_confusion():
    pc = M.per_class(["a", "a", "b"], ["a", "b", "b"])
    assert pc["a"]["accuracy"] == 0.5 and pc["b"]["accuracy"] == 1.0
    assert pc["b"]["precision"] == 0.5
    labels, m = M.confusion(["a", "a", "b"], ["a", None, "b"], ["a", "b"])
    assert labels == ["a", "b", M.MISSING]
    assert m.tolist() == [[1, 0, 1], [0, 1, 0], [0, 0, 0]]


def test_binary_acceptability_hand_computed():
    # missing prediction on a positive counts as a miss: TP1 FN2 FP1 TN1
    r = M.binary_scores([True, True, False, False, True], [True, False, True, False, None], rs=RS0)
    assert r["counts"] == {"tp": 1, "fp": 1, "fn": 2, "tn": 1}
    assert r["precision"].point == 0.5
    assert r["recall"].point == pytest.approx(1 / 3)
    assert r["f1"].point == pytest.approx(0.4)
    assert r["false_accept_rate"].point == 0.5
    assert r["miss_rate"].point == pytest.approx(2 / 3)


def test_safety_regime():
    r = M.safety([True, True, True, False], [True, False, False, True], rs=RS0)
    assert r["safety_recall"].point == pytest.approx(1 / 3)
    assert r["false_alarm_share"].point == pytest.approx(1 / 3)
    assert r["regime"] == "false-safe"
    r2 = M.safety([False, False, True], [True, True, True], rs=RS0)
    assert r2["regime"] == "false-alarm" and r2["safety_recall"].point == 1.0


def test_f2_detect():
    assert M.f_beta([3], [1], [1], beta=2, rs=RS0).point == pytest.approx(0.75)
    # recall weighs more: missing workers hurts more than extra ones
    assert M.f_beta([3], [0], [2], rs=RS0).point < M.f_beta([3], [2], [0], rs=RS0).point


def test_ece_hand_computed():
    r = M.ece([0.95, 0.95, 0.55, 0.55], [1, 0, 1, 1], rs=RS0)
    assert r["ece"].point == pytest.approx(0.45)
    assert r["mean_confidence"] == pytest.approx(0.75)
    assert sum(b["n"] for b in r["bins"]) == 4 and len(r["bins"]) == 10


def test_naudc_hand_computed():
    correct = [1, 1, 1, 0, 0, 0]
    cond = ["clear", "clear", "dust", "dust", "steam", "steam"]
    r = M.naudc(correct, cond, ["clear", "dust", "glare", "steam"], rs=RS0)
    # conditions present: clear 1.0, dust 0.5, steam 0.0 -> area 1.0 / (1.0 x 2) = 0.5
    assert r["naudc"].point == pytest.approx(0.5)
    assert r["per_condition"]["dust"] == {"n": 2, "accuracy": 0.5}
    flat = M.naudc([1, 1, 1, 1], ["clear", "clear", "dust", "dust"], ["clear", "dust"], rs=RS0)
    assert flat["naudc"].point == 1.0


def test_crg():
    assert steelbench.crg(
        [True, True, True, False], [True, False, False, True], rs=RS0
    ).point == pytest.approx(2 / 3)


def test_dwa_uses_taxonomy_group_credit(steel_project):
    ft = steel_project.field("workers.action")
    credits = [ft.credit(p, g) for p, g in [("B1", "B1"), ("B2", "B1"), ("A1", "B1")]]
    assert credits == [1.0, 0.5, 0.0]
    assert M.accuracy(credits, rs=RS0).point == pytest.approx(0.5)


def test_drs_with_threshold_sensitivity():
    checks = {
        "naudc": {"metric": "naudc", "op": ">=", "threshold": 0.85},
        "crg": {"metric": "crg", "op": "<=", "threshold": 0.20},
        "recall": {"metric": "safety_recall", "op": ">=", "threshold": 0.90},
        "dwa": {"metric": "dwa", "op": ">=", "threshold": 0.80},
    }
    r = steelbench.drs({"naudc": 0.9, "crg": 0.21, "safety_recall": 0.85, "dwa": 0.81}, checks)
    assert r["drs"] == 0.5  # naudc and dwa pass
    assert r["drs_relaxed"] == 1.0  # crg <= 0.22 and recall >= 0.81 now pass
    assert r["drs_strict"] == 0.0  # naudc >= 0.935 and dwa >= 0.88 fail
    assert steelbench.drs({"crg": float("nan")}, {"crg": checks["crg"]})["drs"] == 0.0


def test_transitions_repairs_and_harms():
    r = M.transitions([1, 0, 1, 0], [1, 1, 0, 1], rs=RS0)
    assert (r["repairs"], r["harms"], r["kept_right"], r["kept_wrong"]) == (2, 1, 1, 0)
    assert r["net_change"].point == pytest.approx(0.25)


def test_four_way():
    r = M.four_way([1, 1, 0, 0, 1], [1, 0, 1, 0, 1])
    assert r["counts"] == {"C+G+": 2, "C+G-": 1, "C-G+": 1, "C-G-": 1}
    assert r["grounding_given_read"] == pytest.approx(2 / 3)


def test_paired_difference_planted_gap_sign_and_ci():
    rng = np.random.default_rng(0)
    n = 300
    a = (rng.random(n) < 0.85).astype(float)
    b = (rng.random(n) < 0.55).astype(float)
    r = M.paired_difference(a, b, rs=M.Resampling(1000, 1))
    assert r["difference"].point == pytest.approx(a.mean() - b.mean())
    assert r["difference"].low > 0 and r["distinguishable"]
    r2 = M.paired_difference(b, a, rs=M.Resampling(1000, 1))
    assert r2["difference"].high < 0 and r2["distinguishable"]
    same = (rng.random(n) < 0.7).astype(float)
    flip = same.copy()
    flip[:4] = 1 - flip[:4]
    r3 = M.paired_difference(same, flip, rs=M.Resampling(1000, 1))
    assert not r3["distinguishable"]


def test_bootstrap_ci_reproducible_with_seed():
    x = np.random.default_rng(5).random(80)  # partial credits: continuous bootstrap values
    units = np.repeat(np.arange(40), 2)
    parents = units // 2  # 20 parents: enough clusters for the cluster bootstrap itself
    one = M.accuracy(x, units=units, clusters=parents, rs=M.Resampling(800, 7))
    two = M.accuracy(x, units=units, clusters=parents, rs=M.Resampling(800, 7))
    other = M.accuracy(x, units=units, clusters=parents, rs=M.Resampling(800, 8))
    assert one == two
    assert (one.low, one.high) != (other.low, other.high)
    assert one.scheme == "cluster" and one.seed == 7
    item = M.accuracy(x, units=units, rs=M.Resampling(800, 7))
    assert item.scheme == "item"


def test_rank_transfer():
    r = M.rank_transfer({"a": 1, "b": 2, "c": 3, "d": 4}, {"a": 1, "b": 4, "c": 9, "d": 16})
    assert r["spearman_rho"] == pytest.approx(1.0)
    assert 0.9 < r["pearson_r"] < 1.0 and 0 <= r["pearson_p"] <= 1
    with pytest.raises(ValueError):
        M.rank_transfer({"a": 1, "b": 2}, {"a": 1, "b": 2})


def test_routing_oracle_and_majority_vote():
    env = ["x", "x", "y", "y"]
    r = M.routing_oracle({"A": [1, 1, 0, 0], "B": [0, 0, 1, 1]}, env)
    assert r["best_by_environment"] == {"x": "A", "y": "B"} and r["oracle_accuracy"] == 1.0
    v = M.majority_vote(
        {"m1": ["a", "b", None], "m2": ["a", "c", "c"], "m3": ["b", "c", "d"]},
        ["a", "b", "d"],
        lambda x, y: x == y,
    )
    # decision 2 is a c/d tie (m1 abstained): no majority, scored wrong, never list order
    assert v["predictions"] == ["a", "c", None]
    assert v["correct"] == [True, False, False]
    assert (v["ties"], v["no_majority"]) == (1, 1)


def test_majority_vote_of_two_models_is_not_the_first_model():
    gold = ["a", "b", "c", "d"]
    first, second = ["a", "b", "x", "y"], ["a", "z", "c", "y"]
    v = M.majority_vote({"m1": first, "m2": second}, gold, lambda x, y: x == y)
    # agreement on decisions 0 and 3; decisions 1 and 2 are ties -> no majority
    assert v["predictions"] == ["a", None, None, "y"]
    assert v["correct"] == [True, False, False, False] and v["ties"] == 2
    # a declared tie-break model decides ties among the tied answers, nothing else
    tb = M.majority_vote({"m1": first, "m2": second}, gold, lambda x, y: x == y, tie_break="m2")
    assert tb["predictions"] == ["a", "z", "c", "y"] and tb["no_majority"] == 0
    with pytest.raises(ValueError, match="tie-break model 'm9'"):
        M.majority_vote({"m1": first}, gold, lambda x, y: x == y, tie_break="m9")


def test_balanced_weights_per_parent_and_type():
    w = M.balanced_weights(parents=["p1", "p1", "p1", "p2"])
    assert w.sum() == pytest.approx(4)
    # each parent counts equally: p1's three items share the weight of p2's one
    assert M.accuracy([1, 1, 1, 0], weights=w, rs=RS0).point == pytest.approx(0.5)
    w2 = M.balanced_weights(parents=["p1", "p2", "p3", "p3"], types=["t1", "t1", "t2", "t2"])
    assert w2[:2].sum() == pytest.approx(w2[2:].sum())


def test_open_answer_similarity_with_a_given_embedder():
    def embed(texts):  # letter counts: a transparent stand-in for the sentence model
        return np.array([[t.count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], float)

    r = M.open_answer_similarity(
        {"good": ["a worker welds", "crane lifts"], "bad": ["zzz", None]},
        ["a worker welds", "crane lifts"],
        embed=embed,
    )
    assert r["mean"]["good"] == pytest.approx(1.0)
    assert r["per_item"]["bad"][1] == 0.0
    assert r["z"]["good"] == pytest.approx(1.0) and r["z"]["bad"] == pytest.approx(-1.0)


def test_open_answer_similarity_with_the_local_minilm():
    r = M.open_answer_similarity(
        {
            "close": ["A worker in a yellow helmet is welding a pipe."],
            "far": ["The stock market fell sharply on Tuesday."],
        },
        ["Someone wearing a yellow hard hat welds a metal pipe."],
    )
    assert r["mean"]["close"] > r["mean"]["far"] + 0.3
