"""Agreement page: coefficients, rater-vs-majority and group confusion from truthline.stats."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.stats import agreement, declared_design, leave_one_out
from truthline.stats._store import ratings_from_store


def _frame(at, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_agreement_page_shows_the_stats_numbers(sim_ws, run_app):
    at = run_app(sim_ws, page="agreement")
    assert not at.exception, at.exception
    assert [h.value for h in at.header] == [
        "Coefficients per field",
        "Each annotator vs the majority of the others",
        "Annotator x annotator agreement",
        "Items the annotators disagree on",
        "Disagreement by taxonomy group",
    ]
    project = sim_ws.project()
    coefs = _frame(at, "coefficient")
    row = coefs[(coefs["field"] == "workers.action") & (coefs["coefficient"] == "alpha")].iloc[0]
    r, ft = ratings_from_store(sim_ws.store, project, "workers.action", tier=1)
    declared_design(sim_ws.store, project, r)  # the page's default, as `stats agreement`
    want = agreement(
        r, ["alpha"], level=ft.level, resamples=project.audit.resamples, seed=project.audit.seed
    )[0]
    assert row["point"] == pytest.approx(want.ci.point)
    assert row["low"] == pytest.approx(want.ci.low) and row["high"] == pytest.approx(want.ci.high)
    loo = _frame(at, "rater")
    mine = loo[loo["field"] == "workers.action"].set_index("rater")
    for x in leave_one_out(
        r, resamples=project.audit.resamples, seed=project.audit.seed, clusters=r.clusters
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


def _pooled(ws, fields, keep=None):
    """Independent of the page: (annotator -> {(field, unit): field-qualified value})."""
    out: dict[str, dict] = {}
    for f in fields:
        r, _ = ratings_from_store(ws.store, ws.project(), f, tier=1)
        for j, rater in enumerate(r.raters):
            if keep is not None and rater not in keep:
                continue
            for u in range(r.n_units):
                if r.codes[u, j] >= 0:
                    out.setdefault(str(rater), {})[(f, r.units[u])] = (
                        f"{f}={r.values[r.codes[u, j]]!r}"
                    )
    return out


def test_annotator_matrix_matches_sklearn_with_n_per_cell(sim_ws, run_app):
    """Issue 14: an annotator x annotator matrix (kappa and raw agreement, n per cell),
    checked against scikit-learn's Cohen's kappa on the same shared ratings."""
    from sklearn.metrics import cohen_kappa_score

    at = run_app(sim_ws, page="agreement")
    assert not at.exception, at.exception
    mat = _frame(at, "annotator_b")
    fields = list(at.multiselect(key="agr-fields").value)
    pooled = _pooled(sim_ws, fields)
    assert set(mat["annotator_a"]) == set(pooled)
    assert len(mat) == len(pooled) ** 2
    checked = 0
    for row in mat.itertuples():
        shared = sorted(set(pooled[row.annotator_a]) & set(pooled[row.annotator_b]), key=str)
        assert row.n == len(shared)
        if len(shared) < 5:
            continue
        x = [pooled[row.annotator_a][k] for k in shared]
        y = [pooled[row.annotator_b][k] for k in shared]
        assert row.agreement == pytest.approx(
            sum(p == q for p, q in zip(x, y, strict=True)) / len(x)
        )
        if row.annotator_a != row.annotator_b:
            assert row.kappa == pytest.approx(cohen_kappa_score(x, y))
            checked += 1
        else:
            assert row.agreement == 1.0
    assert checked >= 2
    assert any("Pairwise agreement between annotators" in m.value for m in at.markdown)
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download Pairwise agreement between annotators (CSV)" in labels
    at.radio(key="agr-matrix-measure").set_value("agreement").run()
    assert not at.exception


def test_annotator_filter_narrows_every_figure(sim_ws, run_app):
    at = run_app(sim_ws, page="agreement")
    everyone = list(at.multiselect(key="agr-annotators").value)
    assert len(everyone) >= 3
    two = sorted(everyone)[:2]
    at.multiselect(key="agr-annotators").set_value(two).run()
    assert not at.exception, at.exception
    mat = _frame(at, "annotator_b")
    assert set(mat["annotator_a"]) == set(two)
    coefs = _frame(at, "coefficient")
    row = coefs[(coefs["field"] == "workers.action") & (coefs["coefficient"] == "alpha")].iloc[0]
    r, ft = ratings_from_store(sim_ws.store, sim_ws.project(), "workers.action", tier=1)
    cols = [j for j, a in enumerate(r.raters) if a in two]
    sub = r.subset(raters=cols)
    sub = sub.subset(units=np.flatnonzero(sub.present.any(axis=1)))
    want = agreement(sub, ["alpha"], level=ft.level, resamples=0)[0]
    assert row["point"] == pytest.approx(want.ci.point)
    assert row["units"] == want.units
    at.multiselect(key="agr-annotators").set_value(two[:1]).run()
    assert not at.exception
    assert any("at least two annotators" in i.value for i in at.info)
