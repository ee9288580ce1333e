"""The dashboards in a real browser: `truthline dashboard` + Debian Chromium via Playwright."""

from __future__ import annotations

import pytest

from tests.dashboards.browser import browser, dashboard_server, open_page, screenshot

pytestmark = pytest.mark.browser

# (url path, heading, minimum plotly charts drawn, text that must be on the page)
PAGES = [
    ("", "Overview: Steel plant CCTV safety (SteelBench template)", 2, "Items through the loop"),
    ("agreement", "Rater agreement", 3, "Agreement coefficients with CIs"),
    ("audit", "Provenance audit", 8, "Flagged (two or more signals): sim-rubber"),
    ("benchmark", "Benchmark", 7, "Leaderboard"),
    ("samples?model=simulated:steel-strong", "Samples", 0, "Raw output"),
    ("lineage?field=worker_count", "Lineage of a value", 0, "Prefill predictions"),
]


def test_every_page_renders_in_chromium(sim_ws, tmp_path):
    with dashboard_server(sim_ws.root) as url, browser(tmp_path / "profile") as page:
        for path, heading, charts, must_show in PAGES:
            open_page(page, f"{url}/{path}", heading, charts=charts)
            assert page.locator('[data-testid="stException"]').count() == 0, path
            assert page.get_by_text(must_show).first.is_visible()
            shot = screenshot(page, path.split("?")[0] or "overview")
            assert shot.stat().st_size > 20_000  # a real rendering, not a blank page
        # Navigation between pages works from the sidebar.
        nav = page.locator('[data-testid="stSidebarNav"] a')
        if len(PAGES) > 1:  # Streamlit hides the navigation of a one-page app
            assert nav.count() == len(PAGES)
