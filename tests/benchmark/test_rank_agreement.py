"""Rank agreement of two rankings (METRICS.md §6): simultaneous rank confidence sets. Its tau
interval covers the true tau where a percentile bootstrap of tau does not (five SIMULATED
models 2 pp apart); well-separated models give resolved rankings and point intervals; the
points match scipy; rank transfer in a run carries the interval, and counts models once."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from tests.benchmark.test_diagnostics import _project, _scored
from truthline.benchmark import RunScored, compute_run_metrics
from truthline.benchmark import metrics as M
from truthline.benchmark._across import ranked_models
from truthline.stats._ranks import METHOD, NOT_RESOLVED, RESOLVED, rank_agreement

MODELS = [f"m{i}" for i in range(5)]


def _simulated_task(rng: np.random.Generator, acc: np.ndarray, n: int) -> np.ndarray:
    """SIMULATED correctness (n items x models): item difficulty shared by every model."""
    p = np.clip(acc[None, :] + rng.normal(0, 0.1, size=(n, 1)), 0, 1)
    return (rng.random((n, len(acc))) < p).astype(float)


def _boot(rng: np.random.Generator, c: np.ndarray, b: int) -> np.ndarray:
    n = len(c)
    return rng.multinomial(n, np.full(n, 1 / n), size=b).astype(float) @ c / n


def _tau_b_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """tau-b of each row pair (replicates x models), vectorized over rows."""
    i, j = np.triu_indices(a.shape[1], 1)
    sa, sb = np.sign(a[:, i] - a[:, j]), np.sign(b[:, i] - b[:, j])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sa * sb).sum(1) / np.sqrt((sa**2).sum(1) * (sb**2).sum(1))


def test_covers_true_tau_where_the_percentile_bootstrap_does_not():
    true = 0.60 + 0.02 * np.arange(5)  # five models 2 pp apart, same order in both tasks
    true_tau = 1.0
    reps, n, b = 200, 300, 200
    new = old = 0
    for r in range(reps):
        rng = np.random.default_rng(r)
        ca, cb = _simulated_task(rng, true, n), _simulated_task(rng, true, n)
        ba, bb = _boot(rng, ca, b), _boot(rng, cb, b)
        res = rank_agreement(MODELS, ca.mean(0), cb.mean(0), ba, bb)
        lo, hi = res.tau_interval
        new += lo <= true_tau <= hi
        assert lo <= res.tau <= hi
        ql, qh = np.nanpercentile(_tau_b_rows(ba, bb), [2.5, 97.5])  # the old interval
        old += ql <= true_tau <= qh
    assert new / reps >= 0.90
    assert old / reps < 0.90


def test_covers_a_partly_resolved_truth():
    """Two pairs swap between the tasks (true tau 0.6) with gaps the design can resolve."""
    ta, tb = np.array([0.4, 0.5, 0.6, 0.7, 0.8]), np.array([0.5, 0.4, 0.6, 0.8, 0.7])
    reps, covered, resolved = 100, 0, 0
    for r in range(reps):
        rng = np.random.default_rng(1000 + r)
        ca, cb = _simulated_task(rng, ta, 300), _simulated_task(rng, tb, 300)
        res = rank_agreement(
            MODELS, ca.mean(0), cb.mean(0), _boot(rng, ca, 200), _boot(rng, cb, 200)
        )
        covered += res.tau_interval[0] <= 0.6 <= res.tau_interval[1]
        resolved += res.concordant + res.discordant
    assert covered / reps >= 0.90
    assert resolved / reps > 2  # informative: pairs get resolved, not [-1, 1] every time


def test_separated_models_are_resolved_and_close_ones_are_not():
    rng = np.random.default_rng(7)
    far = 0.30 + 0.15 * np.arange(5)
    ca, cb = _simulated_task(rng, far, 400), _simulated_task(rng, far[::-1], 400)
    res = rank_agreement(MODELS, ca.mean(0), cb.mean(0), _boot(rng, ca, 400), _boot(rng, cb, 400))
    assert res.verdict == RESOLVED and (res.concordant, res.discordant) == (0, 10)
    assert res.tau_interval == (-1.0, -1.0) and res.rho_interval == (-1.0, -1.0)
    assert res.rank_intervals["m0"] == ((5, 5), (1, 1))
    assert all(p.kept[0] > 0.99 and p.status == "discordant" for p in res.pairs)
    close = 0.60 + 0.002 * np.arange(5)
    ca, cb = _simulated_task(rng, close, 200), _simulated_task(rng, close, 200)
    res = rank_agreement(MODELS, ca.mean(0), cb.mean(0), _boot(rng, ca, 300), _boot(rng, cb, 300))
    assert res.verdict == NOT_RESOLVED and res.tau_interval == (-1.0, 1.0)
    assert res.unresolved == 10 and len(res.unresolved_pairs) == 10


def test_points_match_scipy_and_no_replicates_resolve_nothing():
    a, b = [0.9, 0.7, 0.8, 0.2], [0.8, 0.75, 0.6, 0.1]
    res = rank_agreement(["a", "b", "c", "d"], a, b, None, None)
    assert res.tau == pytest.approx(stats.kendalltau(a, b).statistic)
    assert res.rho == pytest.approx(stats.spearmanr(a, b).statistic)
    assert res.pearson_r == pytest.approx(stats.pearsonr(a, b).statistic)
    assert res.pearson_p == pytest.approx(stats.pearsonr(a, b).pvalue)
    assert res.verdict == NOT_RESOLVED and res.tau_interval == (-1.0, 1.0)
    with pytest.raises(ValueError, match="at least 3 models"):
        rank_agreement(["a", "b"], [1, 2], [1, 2], None, None)


def _transfer_view(models: dict[str, float], extra: dict[str, str] | None = None) -> RunScored:
    """SIMULATED models answering 240 action items, half rendered, half real photos; accuracy
    on both sets from ``models``; ``extra``: label -> kind ("rule") or "gt" (a +GT entry)."""
    p = _project("dori-visibility", transfer_column="source")
    rng = np.random.default_rng(3)
    entries, kinds, keys = {}, {}, {}
    labels = dict.fromkeys(models, "simulated") | (extra or {})
    for lab, kind in labels.items():
        acc = models.get(lab, 0.5)
        rows = []
        for i in range(240):
            right = rng.random() < acc
            rows.append({"item": f"i{i}", "path": "action", "gold": "standing",
                         "pred": "standing" if right else "lying", "parent": f"s{i // 4}",
                         "meta": {"source": "render" if i < 120 else "real"}})  # fmt: skip
        entries[lab] = _scored(p, rows)
        kinds[lab] = "rule" if kind == "rule" else "simulated"
        keys[lab] = (lab.split("|")[0], "", "gt" if kind == "gt" else "base", "")
    return RunScored(p, entries, kinds, keys, M.Resampling(300, 0))


def test_rank_transfer_in_a_run_carries_the_interval():
    v = _transfer_view({"a": 0.95, "b": 0.6, "c": 0.25})
    t = compute_run_metrics(v, ["rank_transfer"])["rank_transfer"]
    assert t["sets"] == ["real", "render"] and t["models"] == ["a", "b", "c"]
    assert t["value"].method == METHOD and t["value"].point == pytest.approx(1.0)
    assert t["verdict"] == RESOLVED and t["value"].low == 1.0
    assert t["rank_agreement"].n == (30, 30)  # clusters (4 items each) per set
    assert t["spearman_p"] == pytest.approx(stats.spearmanr([1, 2, 3], [1, 2, 3]).pvalue)


def test_models_are_counted_once_rules_and_other_entries_named():
    v = _transfer_view({"a": 0.9, "b": 0.5}, {"rule:majority": "rule", "a|gt": "gt"})
    count = ranked_models(v)
    assert count.models == ["a", "b"] and count.rules == ["rule:majority"]
    assert count.other == ["a|gt"]
    t = compute_run_metrics(v, ["rank_transfer"])["rank_transfer"]
    assert t["value"] is None
    assert "got 2" in t["note"] and "rule:majority" in t["note"] and "a|gt" in t["note"]


def test_transfer_with_every_model_tied_on_one_set_says_so():
    from truthline.benchmark._across import SetScores, transfer

    tied = SetScores("render", {"a": 0.5, "b": 0.5, "c": 0.5}, None, dict.fromkeys("abc", 6), 6)
    real = SetScores("real", {"a": 0.9, "b": 0.6, "c": 0.3}, None, dict.fromkeys("abc", 6), 6)
    r = transfer(tied, real)
    assert r["value"] is None and "undefined" in r["note"] and "'render'" in r["note"]
