"""One report ``Section`` (truthline.report) for the audit, the benchmark, the paper systems
and the dashboards' plug-in sections, and one CI formatter (``truthline.stats.fmt_ci``)
behind every interval they show."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from truthline.report import Figure, Paragraph, Report, Section, Table, render_markdown
from truthline.stats import CI, fmt_ci

PKG = Path(__file__).resolve().parents[2] / "truthline"
THIN = {
    "point": 0.75,
    "low": 0.6,
    "high": 0.9,
    "n": 28,
    "clusters": 4,
    "strata": 2,
    "min_per_stratum": 2,
    "warning": "few clusters (4 < 20); strata dropped (2 < 10 clusters per stratum)",
}


def test_of_builds_text_figure_and_a_table_of_row_dicts_with_n():
    fig = Figure("old title", b"png")
    rows = [{"model": "a", "acc": 0.12345, "k": 3, "gone": None}, {"model": "b", "acc": 0.5}]
    s = Section.of("T", "Some text.", rows, fig, n=[10, None], metrics=["accuracy"])
    assert [type(b) for b in s.blocks] == [Paragraph, Figure, Table]
    assert fig.title == "T" and s.figure is fig and s.text == "Some text."
    assert s.table == rows and s.table[0] is rows[0]  # the rows as given, plain values
    t = s.tables[0]
    assert t.columns == ["model", "acc", "k", "gone"]
    assert t.rows == [["a", "0.123", "3", "—"], ["b", "0.500", "—", "—"]]
    assert s.n == [10, None] and s.n_column == "n"
    assert t.records()[1] == {"model": "b", "n": "–", "acc": "0.500", "k": "—", "gone": "—"}
    assert Section.of("U", table=rows).n == [None, None]  # n not recorded: shown as –
    with pytest.raises(KeyError, match="no_such_metric"):
        Section.of("V", metrics=["no_such_metric"])


def test_the_thin_design_note_goes_under_the_table_or_ends_the_section():
    s = Section.of("T", "text", [{"model": "a", "acc": fmt_ci(THIN)}], sources=[{"x": THIN}])
    assert s.note.startswith("⚠ Thin resampling design — 1 interval over 4 clusters in 2 strata")
    md = render_markdown(Report("R", [s]))
    table_end = md.index("| a |")
    assert table_end < md.index("⚠ Thin resampling design")
    alone = Section.of("U", "text", sources=[THIN])
    assert not alone.tables and alone.note
    md = render_markdown(Report("R", [alone]))
    assert md.rstrip().endswith(alone.note)
    # sources set after the section was built (what ``across_sections`` does) count too
    later = Section.of("W", "text", [{"model": "a"}])
    assert later.note == ""
    later.sources = [THIN]
    assert later.note in render_markdown(Report("R", [later]))
    assert Section("X", [Paragraph("p")]).note == ""


def test_one_section_class_everywhere():
    import truthline.benchmark as B
    from truthline.benchmark import _report

    assert _report.Section is Section
    assert B.ReportContext is _report.ReportContext
    for path in sorted((PKG / "systems").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "truthline.benchmark._report":
                pytest.fail(f"{path.relative_to(PKG)}:{node.lineno} imports benchmark._report")
    assert not (PKG / "audit" / "_cifmt.py").exists()


def test_fmt_ci_covers_every_format_the_reports_use():
    ci = dict(THIN)
    assert fmt_ci(ci) == "0.750 [0.600, 0.900] (4 clusters in 2 strata ⚠)"
    assert fmt_ci({**ci, "warning": None}) == "0.750 [0.600, 0.900] (4 clusters in 2 strata)"
    plain = {"point": 0.75, "low": 0.6, "high": 0.9, "n": 28}
    assert fmt_ci(plain) == "0.750 [0.600, 0.900]"
    assert fmt_ci(plain, digits=1, scale=100.0, unit="%") == "75.0% [60.0, 90.0]"
    pp = {"point": 3.25, "low": -1.5, "high": 8.0}
    assert fmt_ci(pp, digits=1, sign=True) == "+3.2 [-1.5, +8.0]"
    assert fmt_ci(pp, digits=1, unit=" pp") == "3.2 pp [-1.5, 8.0]"
    assert fmt_ci(plain, point=False) == "[0.600, 0.900]"
    assert fmt_ci(ci, digits=2, design=False) == "0.75 [0.60, 0.90]"
    # no interval: the point alone; no estimate: the placeholder each caller chose
    assert fmt_ci({"point": 0.5, "low": None, "high": None}) == "0.500"
    assert fmt_ci({"point": 0.5, "low": None, "high": None}, point=False) == "—"
    assert fmt_ci(None) == fmt_ci({}) == fmt_ci({"point": None}) == "—"
    assert fmt_ci(None, missing="–") == "–"
    # a CI object (NaN: no interval / no estimate) and a bare number
    nan = math.nan
    assert fmt_ci(CI(0.8, 0.7, 0.9, 100, 0), digits=0, scale=100.0) == "80 [70, 90]"
    assert fmt_ci(CI(0.8, nan, nan, 0, 0), digits=2) == "0.80"
    assert fmt_ci(CI(nan, nan, nan, 0, 0)) == "—"
    assert fmt_ci(0.25, digits=1, scale=100.0, unit="%") == "25.0%" and fmt_ci(nan) == "—"


def test_the_paper_systems_formats_are_fmt_ci():
    from truthline.systems.realitybench._conditional import fmt_ci as pow_fmt

    assert pow_fmt(CI(0.8312, 0.75, 0.9, 100, 0)) == "0.83 [0.75, 0.90]"
    assert pow_fmt(CI(0.8312, 0.75, 0.9, 100, 0), pct=True) == "83 [75, 90]"
    assert pow_fmt(CI(0.8312, math.nan, math.nan, 0, 0)) == "0.83"
    assert pow_fmt(None) is None and pow_fmt(CI(math.nan, 0, 0, 0, 0)) is None
    assert pow_fmt(0.5) == "0.50"
