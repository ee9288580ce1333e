"""The benchmark report through the shared report model: the HTML is one file with every
plot embedded (the same PNG the Markdown links), every metric name shown is in the
glossary, every table row shows its n, and Markdown and HTML carry the same numbers."""

from __future__ import annotations

import base64
import re

import pytest

from tests.benchmark.conftest import make_bench_ws
from tests.benchmark.test_across_run import MODELS, RULES
from truthline.benchmark import RunConfig, run_benchmark, write_report
from truthline.benchmark._report import _BOARD_METRICS
from truthline.report import CONTRAST, GLOSSARY

from .pages import html_numbers, md_numbers, page


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """16 SIMULATED steel items (half blind, half anchored gold), three simulated models
    and two rules, reported as .md and .html."""
    tmp = tmp_path_factory.mktemp("bench")
    ws, project, _items, _snap = make_bench_ws(tmp / "ws")
    (project.root / "rules.py").write_text(RULES)
    rid = run_benchmark(ws.store, project, RunConfig(models=MODELS), progress=False)["run_id"]
    out = {}
    for ext in ("md", "html"):
        path = tmp / "rep" / f"report.{ext}"
        path.parent.mkdir(exist_ok=True)
        data = write_report(ws.store, project, [rid], path, resamples=50)
        out[ext] = path.read_text(encoding="utf-8")
    out["files"] = tmp / "rep" / "report_files"
    out["data"] = data
    yield out
    ws.store.close()


def test_html_is_one_file_with_the_plots_embedded(reports):
    p = page(reports["html"])
    assert p.tags["script"] == 0 and p.tags["link"] == 0
    assert [r for r in p.refs if not r[2].startswith(("data:", "#"))] == []
    imgs = [v for t, k, v in p.refs if t == "img" and k == "src"]
    links = re.findall(r"!\[[^\]]*\]\(report_files/([^)]+\.png)\)", reports["md"])
    assert len(imgs) == len(links) >= 6
    for src, name in zip(imgs, links, strict=True):
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]) == (reports["files"] / name).read_bytes()


def test_glossary_covers_every_metric_name_shown(reports):
    md, html = reports["md"], reports["html"]
    head = next(x for x in md.splitlines() if x.startswith("| model | n | accuracy"))
    cols = [c.strip() for c in head.strip("|").split("|")]
    shown = [c for c in cols if c in _BOARD_METRICS]
    assert len(shown) >= 5
    across = list(reports["data"]["across"][0]["metrics"])
    for name in ["accuracy", *shown, *across, "gold_slice_inflation", "paired_difference"]:
        assert f"**{GLOSSARY[name].label}** (`{name}`)" in md, name
        assert f'id="m-{name}"' in html, name


def test_every_table_row_shows_n(reports):
    p = page(reports["html"])
    assert len(p.tables) >= 8
    for t in p.tables:
        k = [i for i, (_, cls) in enumerate(t[0]) if cls == "n"]
        assert len(k) == 1, t[0]
        assert all(row[k[0]][0] for row in t[1:]), t[0]
    md = reports["md"]
    assert "| 172 decisions / 16 items |" in md  # leaderboard: decisions and items
    assert "| 8 / 8 / 4 |" in md  # compare-gold: blind / anchored / VLM-sourced items
    assert "| 87 all / " not in md and "| 172 all / 87 hard / 85 rest |" in md


def test_markdown_and_html_carry_the_same_numbers(reports):
    assert md_numbers(reports["md"]) == html_numbers(reports["html"])
    acc = reports["data"]["leaderboard"][0]["accuracy"]
    shown = f"{acc['point']:.3f} [{acc['low']:.3f}, {acc['high']:.3f}]"
    assert shown in reports["md"] and shown in reports["html"]


def test_bias_vs_inflation_explained_where_compare_gold_appears(reports):
    assert "## How to read this" in reports["md"] and CONTRAST in reports["md"]
    assert "SIMULATED" in reports["html"]
