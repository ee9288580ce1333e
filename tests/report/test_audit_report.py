"""The audit report through the shared report model: one self-contained HTML file with
figures as data URIs, a glossary of every metric shown, n on every table row, the
anchoring-bias vs gold-slice-inflation contrast, and the same numbers in Markdown and HTML."""

from __future__ import annotations

import base64
import html as htmllib
import re

import pytest

from truthline.audit import run_audit, to_html, to_markdown
from truthline.audit._report import audit_report
from truthline.project import load_project
from truthline.report import CONTRAST, GLOSSARY
from truthline.store import Store
from truthline.workspace import templates_dir

from .pages import html_numbers, md_numbers, page


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    from truthline.simulate import build_scenario

    steel = load_project(templates_dir() / "steel-safety")
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('rep') / 's.db'}")
    sc = build_scenario(store, steel, n_items=150, seed=3)
    res = run_audit(store, steel, resamples=100, gradient_model=sc.benchmark_version)
    yield res.as_dict()
    store.close()


def test_audit_html_is_self_contained_with_figures(audit):
    html = to_html(audit)
    p = page(html)
    assert p.tags["script"] == 0 and p.tags["link"] == 0
    bad = [r for r in p.refs if not (r[2].startswith("data:") or r[2].startswith("#"))]
    assert bad == []
    imgs = [v for t, k, v in p.refs if t == "img" and k == "src"]
    assert len(imgs) >= 2  # anchoring bias and provenance gradient
    for src in imgs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"


def test_audit_glossary_covers_every_metric_shown(audit):
    rep = audit_report(audit)
    names = rep.metric_names()
    # every aggregate the before/after table names has its own entry
    assert {k.split("[")[0] for k in audit["before_after"]["rows"]} <= set(names)
    assert {"anchoring_bias", "gold_slice_inflation", "harmful_anchoring"} <= set(names)
    html, md = to_html(audit), to_markdown(audit)
    gloss = html[html.index('id="glossary"') :]
    for n in names:
        assert f'id="m-{n}"' in gloss and GLOSSARY[n].definition in htmllib.unescape(gloss)
        assert f"(`{n}`): {GLOSSARY[n].definition}" in md


def test_every_audit_table_row_shows_n(audit):
    p = page(to_html(audit))
    assert len(p.tables) >= 8
    for t in p.tables:
        head = t[0]
        k = [i for i, (_, cls) in enumerate(head) if cls == "n"]
        assert len(k) == 1, head
        for row in t[1:]:
            assert re.search(r"\d", row[k[0]][0]), (head, row)
    # the anchoring-bias rows name both arms' n
    assert "139 anchored / 11 blind" in to_markdown(audit)


def test_audit_markdown_and_html_carry_the_same_numbers(audit):
    md, html = to_markdown(audit), to_html(audit)
    assert md_numbers(md) == html_numbers(html)
    ci = audit["anchoring_bias"]["workers.spatial_context"]["bias_pp"]
    shown = f"{ci['point']:.1f} pp [{ci['low']:.1f}, {ci['high']:.1f}]"
    assert shown in md and shown in html


def test_audit_report_explains_bias_vs_inflation(audit):
    md, html = to_markdown(audit), to_html(audit)
    assert "## How to read this" in md and CONTRAST in md
    assert "anchoring bias vs gold-slice inflation" in html
    assert md.index("## Anchoring bias") < md.index("## Provenance gradient")


def test_excluded_annotator_marked_in_exclusion_signals(audit):
    import copy

    r = copy.deepcopy(audit)
    a = next(iter(r["signals"]))
    r["signals"][a]["excluded"] = True
    shown = (f"| {a} |", f"| {a} (SIMULATED) |")  # a scenario's annotators are SIMULATED
    row = next(x for x in to_markdown(r).splitlines() if x.startswith(shown) and "team [" in x)
    assert row.rstrip(" |").endswith("**excluded**") or "**excluded**, **flagged**" in row
