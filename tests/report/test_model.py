"""The report model: a glossary entry for every metric name either report can show, and
tables that cannot be built without an n per row or with an undefined metric name."""

from __future__ import annotations

import pytest

from truthline.benchmark import across_names, registered_metrics
from truthline.report import (
    AUDIT_METRICS,
    GLOSSARY,
    Paragraph,
    Report,
    Section,
    Table,
    render_html,
    render_markdown,
)


def test_glossary_covers_the_benchmark_registry_and_the_audit():
    names = set(registered_metrics()) | set(across_names())
    assert len(names) >= 20
    assert names - set(GLOSSARY) == set()
    assert set(AUDIT_METRICS) <= set(GLOSSARY)
    assert {"anchoring_bias", "gold_slice_inflation"} <= set(AUDIT_METRICS) | set(GLOSSARY)
    assert all(t.definition and t.label for t in GLOSSARY.values())


def test_table_needs_one_n_per_row_and_known_metrics():
    with pytest.raises(ValueError, match="2 rows but 1 n"):
        Table(["a", "b"], [["x", "1"], ["y", "2"]], [3])
    with pytest.raises(KeyError, match="no_such_metric"):
        Table(["a"], [["x"]], [1], metrics=["no_such_metric"])


def test_n_column_added_unless_the_table_has_one():
    t = Table(["model", "accuracy"], [["m", "0.5"]], [40], metrics=["accuracy"])
    assert t.display() == (["model", "n", "accuracy"], [["m", "40", "0.5"]])
    t = Table(["field", "pairs", "κ"], [["f", "11", "0.2"]], [11], n_column="pairs")
    assert t.display()[0] == ["field", "pairs", "κ"]


def test_simulated_flag_and_escaping_in_both_formats():
    rep = Report(
        "T <x>",
        [Section("S", [Paragraph("a **b** `c` <i>"), Table(["k", "v"], [["a|b", "1"]], [2])])],
        simulated=True,
    )
    md, html = render_markdown(rep), render_html(rep)
    assert md.startswith("# T <x> [SIMULATED]") and "a\\|b" in md
    assert "<b>b</b> <code>c</code> &lt;i&gt;" in html and "<i>" not in html
    assert "[SIMULATED]" in html and "Glossary" not in html
