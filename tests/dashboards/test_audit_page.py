"""Provenance audit page: it shows exactly what ``run_audit`` computes, and never writes."""

from __future__ import annotations

import math

import pytest

from truthline.audit import run_audit
from truthline.dashboards._pages.audit import direction_table, signals_table


@pytest.fixture(scope="module")
def audit_dict(sim_ws):
    return run_audit(sim_ws.store, sim_ws.project()).as_dict()


def _frame(at, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_audit_page_shows_the_audit_numbers(sim_ws, run_app, texts, audit_dict):
    at = run_app(sim_ws, page="audit")
    assert not at.exception, at.exception
    assert [h.value for h in at.header] == [
        "Direction of anchoring",
        "Blind vs anchored agreement",
        "Anchoring quadrant",
        "Exclusion signals",
        "Provenance gradient",
        "Time: prefill kept vs overridden",
    ]
    # The planted rubber-stamp annotator is flagged, and the page says so.
    assert "Flagged (two or more signals): sim-rubber" in [e.value for e in at.error]
    assert audit_dict["signals"]["sim-rubber"]["flagged"]
    shown = _frame(at, "harmful_anchoring_count")
    expected = direction_table(audit_dict, list(audit_dict["settings"]["fields"]))
    assert shown.to_dict("records") == expected.to_dict("records")
    sig = _frame(at, "signal")
    assert sig.to_dict("records") == signals_table(audit_dict).to_dict("records")
    grad = _frame(at, "reference")
    vs = audit_dict["gradient"]["vlm_sourced"]["point"]
    got = grad.set_index("reference").loc["VLM-sourced gold", "point"]
    assert math.isclose(got, vs) if vs is not None else math.isnan(got)
    # CSV downloads accompany the charts.
    assert len(at.get("download_button")) >= 8


def test_field_filter_narrows_the_tables(sim_ws, run_app, audit_dict):
    at = run_app(sim_ws, page="audit")
    fields = list(audit_dict["settings"]["fields"])
    at.multiselect(key="audit-fields").set_value(fields[:1]).run()
    assert not at.exception
    assert list(_frame(at, "harmful_anchoring_count")["field"]) == fields[:1]


def test_no_annotations_is_a_clear_message(empty_ws, run_app):
    at = run_app(empty_ws, page="audit")
    assert not at.exception, at.exception
    assert any("no annotations" in i.value and "annotate pull" in i.value for i in at.info)


def test_thin_designs_are_named_and_warned(sim_ws, run_app, audit_dict):
    """The SIMULATED loop has 30 videos, but the direction rates rest on 8 of them: the
    page warns (st.warning) and shows how many clusters each interval resampled."""
    rate = audit_dict["direction"]["all"]["harmful_anchoring"]["rate"]
    assert rate["clusters"] < 20 and rate["warning"]
    at = run_app(sim_ws, page="audit")
    assert not at.exception, at.exception
    assert any("Thin resampling design" in w.value for w in at.warning)
    assert any(f"{rate['clusters']} clusters" in w.value for w in at.warning)
    assert any("clusters" in df.value.columns for df in at.dataframe)
    assert any("over 30 clusters" in c.value for c in at.caption)
