"""Agreement page: coefficients, rater-vs-majority and group confusion from truthline.stats."""

from __future__ import annotations

import pytest

from truthline.stats import agreement, leave_one_out
from truthline.stats._store import ratings_from_store


def _frame(at, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_agreement_page_shows_the_stats_numbers(sim_ws, run_app):
    at = run_app(sim_ws, page="agreement")
    assert not at.exception, at.exception
    assert [h.value for h in at.header] == [
        "Coefficients per field",
        "Each annotator vs the majority of the others",
        "Disagreement by taxonomy group",
    ]
    project = sim_ws.project()
    coefs = _frame(at, "coefficient")
    row = coefs[(coefs["field"] == "workers.action") & (coefs["coefficient"] == "alpha")].iloc[0]
    r, ft = ratings_from_store(sim_ws.store, project, "workers.action", tier=1)
    want = agreement(
        r,
        ["alpha"],
        level=ft.level,
        resamples=project.audit.resamples,
        seed=project.audit.seed,
        clusters=r.meta["parents"],
    )[0]
    assert row["point"] == pytest.approx(want.ci.point)
    assert row["low"] == pytest.approx(want.ci.low) and row["high"] == pytest.approx(want.ci.high)
    loo = _frame(at, "rater")
    mine = loo[loo["field"] == "workers.action"].set_index("rater")
    for x in leave_one_out(
        r, resamples=project.audit.resamples, seed=project.audit.seed, clusters=r.meta["parents"]
    ):
        assert mine.loc[x.rater, "point"] == pytest.approx(x.agreement.point)
    assert any("Rater confusion by group: workers.action" in m.value for m in at.markdown)


def test_arm_and_stratum_filters_change_the_units(sim_ws, run_app):
    at = run_app(sim_ws, page="agreement")
    all_units = _frame(at, "coefficient").query("field == 'workers.action'")["units"].iloc[0]
    at.selectbox(key="agr-arm").set_value("blind").run()
    assert not at.exception
    blind = _frame(at, "coefficient").query("field == 'workers.action'")["units"].iloc[0]
    r, _ = ratings_from_store(sim_ws.store, sim_ws.project(), "workers.action", arm="blind", tier=1)
    used = agreement(r, ["alpha"], level="nominal", resamples=0)[0].units
    assert blind == used < all_units
    at.selectbox(key="agr-stratum").set_value("visibility=clear").run()
    assert not at.exception
    clear = _frame(at, "coefficient").query("field == 'workers.action'")["units"].iloc[0]
    assert 0 < clear < blind
    # The simulated blind arm holds only even items, all at site BF: CRM has no ratings.
    at.selectbox(key="agr-stratum").set_value("site=CRM").run()
    assert not at.exception
    assert any("no workers.action ratings on items with site=CRM" in i.value for i in at.info)


def test_empty_project_says_what_to_do(empty_ws, run_app):
    at = run_app(empty_ws, page="agreement")
    assert not at.exception
    assert "annotate pull" in at.info[0].value
