"""Issue 26: SIMULATED annotators are marked in the store (``annotations.simulated``), not
only by a source the demo's Label Studio annotators do not have, and every per-annotator
table (audit report, CLI, dashboards) shows "SIMULATED" beside them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from truthline.audit import run_audit, to_html, to_markdown
from truthline.project import load_project
from truthline.simulate import build_scenario
from truthline.store import Store, mark_simulated, simulated_annotators, tables
from truthline.workspace import templates_dir


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory):
    steel = load_project(templates_dir() / "steel-safety")
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('sim') / 'store.db'}")
    build_scenario(store, steel, n_items=120, seed=3)
    yield store, steel
    store.close()


def _annotators(store: Store, project: str) -> list[str]:
    a = tables.annotations
    with store.begin() as conn:
        rows = conn.execute(select(a.c.annotator).where(a.c.project == project).distinct())
        return sorted(r[0] for r in rows)


def test_scenario_builder_marks_its_annotators(scenario):
    store, steel = scenario
    a = tables.annotations
    with store.begin() as conn:
        unmarked = conn.execute(
            select(func.count()).select_from(a).where(a.c.simulated.is_(False))
        ).scalar_one()
    assert unmarked == 0
    assert simulated_annotators(store, steel.name) == _annotators(store, steel.name)


def test_label_studio_annotators_marked_by_whoever_planted_them(scenario):
    """The demo's people come through Label Studio (source label_studio), as real people
    do: only ``mark_simulated`` tells them apart."""
    store, steel = scenario
    who = _annotators(store, steel.name)[0]
    a = tables.annotations
    with store.begin() as conn:
        conn.execute(
            update(a).where(a.c.annotator == who).values(source="label_studio", simulated=False)
        )
    assert who not in simulated_annotators(store, steel.name)  # looks like a real person
    n = mark_simulated(store, steel.name, [who])
    assert n > 0
    assert who in simulated_annotators(store, steel.name)
    assert mark_simulated(store, steel.name, [who]) == 0  # idempotent


def test_every_per_annotator_table_says_simulated(scenario, capsys, monkeypatch):
    store, steel = scenario
    res = run_audit(store, steel, resamples=50)
    everyone = _annotators(store, steel.name)
    assert res.simulated_annotators == everyone
    d = res.as_dict()
    assert d["simulated_annotators"] == everyone
    md = to_markdown(d)
    per = md.split("## Per annotator", 1)[1].split("\n## ", 1)[0]
    for a in d["override"]["by_annotator"]:
        assert f"| {a} (SIMULATED) |" in per, per
    sig = md.split("## Exclusion signals", 1)[1].split("\n## ", 1)[0]
    assert sig.count("(SIMULATED)") == len(d["signals"])
    html = to_html(d)
    assert f"{everyone[0]} (SIMULATED)" in html
    # the prose reads counts as words, never a raw Python dict ("{'blind': 120, ...}")
    assert "{'" not in md and "{&#39;" not in html and "{'" not in html
    assert re.search(r"annotations by arm ([a-z]+ \d+, )*[a-z]+ \d+, ", md), md[:600]

    from truthline import _cli_common
    from truthline.audit._cli import _summary

    monkeypatch.setattr(_cli_common.console, "width", 200)
    _summary(d)
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith(tuple(f"│ {a} " for a in everyone))]
    assert len(rows) == len(d["signals"]) and all("SIMULATED" in ln for ln in rows), out

    from truthline.dashboards._pages.audit import shown_name, signals_table

    assert shown_name(d, everyone[0]).endswith("(SIMULATED)")
    assert signals_table(d)["simulated"].all()


def test_migration_6_adds_the_column_and_marks_simulated_sources(tmp_path: Path):
    """A store made before migration 6: the column is added and rows whose source said
    ``simulated`` are marked (others are not); the step runs even when 7 was recorded first."""
    steel = load_project(templates_dir() / "steel-safety")
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = Store(url)
    build_scenario(store, steel, n_items=20, seed=0)
    a = tables.annotations
    with store.begin() as conn:
        real = conn.execute(select(a.c.annotator).limit(1)).scalar_one()
        conn.execute(update(a).where(a.c.annotator == real).values(source="label_studio"))
        conn.exec_driver_sql("ALTER TABLE annotations DROP COLUMN simulated")
        conn.exec_driver_sql("DELETE FROM truthline_schema WHERE version = 6")
    store.close()
    store = Store(url)  # migrates
    with store.begin() as conn:
        versions = [r[0] for r in conn.execute(select(tables.schema_version.c.version))]
        marked = set(conn.execute(select(a.c.annotator, a.c.simulated).distinct()))
    store.close()
    assert 6 in versions and 7 in versions
    assert (real, False) in marked and (real, True) not in marked
    assert {w for w, sim in marked if sim} == {w for w, _ in marked} - {real}
