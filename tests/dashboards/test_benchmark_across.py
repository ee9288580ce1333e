"""Benchmark page, across models: the routing-oracle and ensemble tables show each row's
n (the decisions behind it), the same sections and numbers as the report."""

from __future__ import annotations

from truthline.benchmark import across_metrics, list_runs
from truthline.benchmark._report import across_sections


def test_across_tables_show_n_per_row(sim_ws, run_app):
    at = run_app(sim_ws, page="benchmark")
    assert not at.exception, at.exception
    project = sim_ws.project()
    run_id = list_runs(sim_ws.store, project.name)[0]["run_id"]
    secs = across_sections(across_metrics(sim_ws.store, project, run_id))
    shown = {s.title: s for s in secs if s.table}
    assert {"Routing oracle", "Majority-of-models ensemble"} <= {t.split(" (")[0] for t in shown}
    titles = [m.value for m in at.markdown]
    for title, sec in shown.items():
        assert f"**{title}**" in titles
        df = next(
            d.value
            for d in at.dataframe
            if sec.n_column in d.value.columns
            and len(d.value) == len(sec.table)
            and list(d.value.columns[:-1]) == list(dict.fromkeys(k for r in sec.table for k in r))
        )
        assert [str(n) for n in df[sec.n_column]] == [str(n) for n in sec.n]
        assert "–" not in set(map(str, df[sec.n_column])), title
