"""Honest intervals in the audit (issue 13): every CI names the clusters it resampled and
warns on a thin design; count proportions at 0 or 1 never get a zero-width interval."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from truthline.audit import import_table, load, run_audit, to_html, to_markdown
from truthline.stats import ratio_ci
from truthline.store import tables

from .test_hand import hand  # noqa: F401  (the hand-computed fixture)


def _cis(obj, out):
    if isinstance(obj, dict) and {"point", "low", "high", "resamples"} <= set(obj):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _cis(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _cis(v, out)
    return out


def test_zero_rates_get_a_wilson_interval_not_zero_width(hand):  # noqa: F811
    store, project, _ = hand
    r = run_audit(store, project).as_dict()
    # nobody flagged anything: A's flag rate is 0 of 6 annotations (one per item)
    fr = r["flags"]["A"]["flag_rate"]
    assert fr["point"] == 0.0 and fr["low"] == 0.0
    assert fr["high"] == pytest.approx(proportion_confint(0, 6, method="wilson")[1])
    # C kept every prefill on its one reviewed item: 0 harmful overrides of 3 decisions
    ho = r["direction"]["by_annotator"]["C"]["harmful_override"]["rate"]
    assert ho["point"] == 0.0 and ho["high"] > 0.0
    # a rate of 1: B's correct-label rate on violation
    for ci in _cis(r, []):
        if ci["point"] in (0.0, 1.0) and ci["low"] is not None and ci["method"].endswith("wilson"):
            assert ci["high"] > ci["low"]


@pytest.fixture
def four_videos(hand_project, sqlite_store, tmp_path):
    """28 anchored items in 4 videos (7 clips each): the demo's thin design."""
    rng = np.random.default_rng(3)
    rows = ["item,field,annotator,arm,value,shown_prediction,expert"]
    for k in range(28):
        v = rng.choice(["walk", "stand", "carry"])
        e = v if rng.random() < 0.75 else "walk" if v != "walk" else "stand"
        h = v if rng.random() < 0.85 else e
        rows.append(f"c{k},action,{'AB'[k % 2]},anchored,{h},{v},{e}")
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    import_table(sqlite_store, hand_project, path, create_items=True)
    with sqlite_store.begin() as conn:
        for k in range(28):
            conn.execute(
                tables.items.update()
                .where(tables.items.c.key == f"c{k}")
                .values(parent=f"video{k // 7}")
            )
    return sqlite_store, hand_project


def test_thin_cluster_design_is_named_and_warned(four_videos):
    store, project = four_videos
    r = run_audit(store, project, resamples=400).as_dict()
    assert r["settings"]["clusters"] == 4
    cis = [c for c in _cis(r, []) if c["low"] is not None]
    assert cis
    for ci in cis:
        assert ci["clusters"] is not None and ci["clusters"] <= 4
        assert ci["warning"] and "few clusters" in ci["warning"]
    # the team rate: a jackknife-t over 4 videos, at least as wide as an item bootstrap
    rate = r["direction"]["all"]["productive_anchoring"]["rate"]
    assert rate["clusters"] == 4 and rate["scheme"] == "cluster-jackknife"
    d = load(store, project).d
    base = ~np.isnan(d["hv"]) & ~np.isnan(d["he"]) & ~np.isnan(d["ve"])
    hits = ((d["ve"] == 1) & (d["hv"] == 1))[base].astype(float)
    item = ratio_ci(hits, np.ones_like(hits), resamples=400, seed=1)
    assert rate["high"] - rate["low"] >= item.high - item.low
    md = to_markdown(r)
    assert "(4 clusters ⚠)" in md
    assert "⚠ Thin resampling design — " in md
    assert "intervals over 4 clusters (fewer than 20: cluster jackknife-t)" in md
    assert "4 clusters" in to_html(r)
