"""Issue 26: an HTML report read in a 1280 px browser window: a wide leaderboard stays
inside the page (it scrolls in its own box, nothing is cut off) and its model names are
never broken; the audit's prose never prints a raw Python dict."""

from __future__ import annotations

import os
from pathlib import Path

from tests.annotate.test_annotate_cli import CHROMIUM
from truthline.audit._report import _counts
from truthline.report import Report, Section, Table
from truthline.report._render import render_html

MODELS = [
    "simulated:steel-strong;alias=simulated:steel-strong@prompt-variant-b",
    "simulated:steel-weak",
    "rule:majority",
]
CI = "0.754 [0.701, 0.803] (12 clusters in 3 strata ⚠)"


def _board_html() -> str:
    """A leaderboard as wide as a real one: a dozen columns, long aliases and run ids."""
    cols = [
        "model",
        "accuracy [95% CI]",
        "macro_f1",
        "balanced_accuracy",
        "ece",
        "coverage",
        "format rate",
        "failures",
        "infra missing",
        "cost USD",
        "run",
        "condition",
    ]
    rows = [
        [
            m,
            CI,
            "0.712",
            "0.733",
            "0.041",
            "1.000",
            "1.000",
            0,
            0,
            "0.0000",
            "steel-safety-all-base-20261202T101500-3f2a9c",
            "base",
        ]
        for m in MODELS
    ]
    table = Table(cols, rows, [120, 120, 120])
    return render_html(Report("Benchmark", [Section("Leaderboard", [table])], simulated=True))


def _measure(html: str, tmp_path: Path) -> dict:
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "report.html"
    page_file.write_text(html, encoding="utf-8")
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            env=env,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_file.as_uri())
            return page.evaluate(
                """() => {
                const wrap = document.querySelector('.table-wrap');
                const table = wrap.querySelector('table');
                const cells = [...table.querySelectorAll('tbody tr td:first-child')];
                const lines = c => {  // line boxes of the cell's text: 1 when unbroken
                  const r = document.createRange(); r.selectNodeContents(c);
                  return r.getClientRects().length;
                };
                return {
                  page: document.documentElement.scrollWidth,
                  view: window.innerWidth,
                  wrapRight: wrap.getBoundingClientRect().right,
                  wrapScroll: wrap.scrollWidth, wrapClient: wrap.clientWidth,
                  overflowX: getComputedStyle(wrap).overflowX,
                  tableWidth: table.getBoundingClientRect().width,
                  names: cells.map(c => c.textContent),
                  nameLines: cells.map(lines),
                };
            }"""
            )
        finally:
            browser.close()


def test_wide_leaderboard_fits_a_1280px_window(tmp_path: Path) -> None:
    assert os.path.exists(CHROMIUM), "Debian chromium is required (scripts/test.sh installs it)"
    m = _measure(_board_html(), tmp_path)
    assert m["view"] == 1280
    assert m["page"] <= m["view"], m  # the page itself never scrolls sideways
    assert m["wrapRight"] <= m["view"], m  # the table's box ends inside the window
    assert m["tableWidth"] > m["wrapClient"], "the planted table should be wider than the page"
    # ... so the rest of it is reachable: its box scrolls
    assert m["overflowX"] == "auto" and m["wrapScroll"] > m["wrapClient"], m
    assert m["names"][0].startswith("simulated:steel-strong")
    assert m["nameLines"] == [1, 1, 1], m  # a model name stays on one line


def test_html_wraps_every_table() -> None:
    html = _board_html()
    assert html.count('<div class="table-wrap">') == html.count("<table>") == 1


def test_audit_prose_counts_read_as_words() -> None:
    assert _counts({"blind": 120, "anchored": 80}) == "blind 120, anchored 80"
    assert _counts({}) == "none"
    assert _counts(None) == "none"
