"""Honest benchmark intervals (issue 13): the demo's design, 28 clips in 4 videos in 2
sites, gave 74.7 % [74.3, 75.3] from a stratified cluster bootstrap (2 clusters per
stratum: 3 distinct resamples). Every CI now names its clusters and strata, warns, and
falls back to the cluster jackknife-t, never narrower than the item bootstrap; reports
and CLI tables show the design beside each interval and a note per table."""

from __future__ import annotations

import numpy as np

from truthline.benchmark import _metrics as M
from truthline.benchmark._cli import _ci as cli_ci
from truthline.benchmark._report import Section, _fmt_ci
from truthline.stats import draw, percentile_ci


def _demo_design():
    rng = np.random.default_rng(11)
    correct = (rng.random(28) < 0.75).astype(float)
    units = np.arange(28)
    videos = units // 7
    sites = videos // 2
    return correct, units, videos, sites


def test_thin_stratified_cluster_design_is_named_warned_and_not_too_narrow():
    correct, units, videos, sites = _demo_design()
    rs = M.Resampling(2000, 0)
    ci = M.accuracy(correct, units=units, clusters=videos, strata=sites, rs=rs)
    assert (ci.clusters, ci.strata, ci.min_per_stratum) == (4, 2, 2)
    assert "few clusters" in ci.warning and "strata dropped" in ci.warning
    # the old interval: the stratified cluster bootstrap as drawn before
    W = draw(28, 2000, 0, clusters=videos.tolist(), strata=sites.tolist()).astype(float)
    old = percentile_ci(ci.point, (W @ correct) / W.sum(1))
    item = M.accuracy(correct, units=units, rs=rs)
    assert item.warning is None and item.clusters is None
    assert ci.high - ci.low >= item.high - item.low > 2 * (old.high - old.low)
    # shown with its design, everywhere
    shown = _fmt_ci(ci.as_dict())
    assert shown.endswith("(4 clusters in 2 strata ⚠)")
    assert cli_ci(ci.as_dict()).endswith("(4 clusters in 2 strata ⚠)")
    note = Section("t", sources=[{"accuracy": ci.as_dict()}]).note
    assert note.startswith("⚠ Thin resampling design — 1 interval over 4 clusters in 2 strata")
    assert "strata dropped (2 < 10 clusters in a stratum)" in note
    assert Section("t", sources=[item.as_dict()]).note == ""


def test_every_metric_records_its_design():
    correct, units, videos, _sites = _demo_design()
    rs = M.Resampling(300, 0)
    args = {"units": units, "clusters": videos, "rs": rs}
    gold = ["a" if c else "b" for c in correct]
    pred = ["a"] * 28
    cis = [
        M.macro_f1(gold, pred, **args),
        M.binary_scores(correct > 0, correct > 0, **args)["precision"],
        M.safety(correct > 0, np.ones(28, bool), **args)["safety_recall"],
        M.ece(np.full(28, 0.7), correct, **args)["ece"],
    ]
    for ci in cis:
        assert ci.clusters == 4 and "few clusters" in ci.warning, ci


def test_demo_summary_names_the_design_once():
    """The demo's own comparison table (here 4 videos in 2 sites) shows the design once,
    in the note under the table, so the cells stay short enough to keep model names."""
    from truthline.demo._loop import _inflation_row
    from truthline.stats import design_note

    correct, units, videos, sites = _demo_design()
    ci = M.accuracy(correct, units=units, clusters=videos, strata=sites, rs=M.Resampling(400, 0))
    rows = [{"model": "m", "blind": ci.as_dict(), "anchored": None}]
    row = _inflation_row(rows[0])
    assert row[1].endswith("]") and "clusters" not in row[1] and row[2] == "-"
    note = design_note(rows)
    assert note and "4 clusters in 2 strata" in note
