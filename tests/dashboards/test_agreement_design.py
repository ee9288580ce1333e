"""The agreement page resamples under the project's declared design by default, the same
interval ``truthline stats agreement --project`` prints (one ``declared_design``), and a
control switches to items only (``--cluster none --strata none``). Planted: 30 videos of
8 clips whose raters agree on every clip of even videos, so the cluster interval is wide."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.stats.test_agreement_design_default import VIDEOS, _seed
from truthline.cli import app
from truthline.workspace import Workspace


@pytest.fixture
def clips_ws(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "ws"))
    ws = Workspace.from_env(tmp_path / "ws")
    _seed(ws, tmp_path)
    yield ws
    ws.store.close()


def _cli(ws: Workspace, *args: str) -> dict:
    cfg = ws.project("clips").audit
    base = ["stats", "agreement", "--project", "clips", "--field", "scene", "--json"]
    res = CliRunner().invoke(
        app, [*base, "--resamples", str(cfg.resamples), "--seed", str(cfg.seed), *args]
    )
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["results"][0]


def _alpha(at) -> dict:
    df = next(d.value for d in at.dataframe if "coefficient" in d.value.columns)
    return df[(df["field"] == "scene") & (df["coefficient"] == "alpha")].iloc[0].to_dict()


def test_page_defaults_to_the_declared_design_and_switches_to_items(clips_ws, run_app):
    at = run_app(clips_ws, page="agreement", project="clips")
    assert not at.exception, at.exception
    assert at.radio(key="agr-design").value == "declared design"
    page, cli = _alpha(at), _cli(clips_ws)
    assert cli["clusters"] == VIDEOS and cli["strata"] == 2  # site: constant within videos
    for k in ("point", "low", "high"):
        assert page[k] == pytest.approx(cli[k]), k
    assert page["clusters"] == VIDEOS
    captions = " ".join(c.value for c in at.caption)
    assert "clusters = items' parent (the project's declared cluster 'video')" in captions
    assert "strata = site" in captions

    at.radio(key="agr-design").set_value("items only").run()
    assert not at.exception, at.exception
    items, cli_items = _alpha(at), _cli(clips_ws, "--cluster", "none", "--strata", "none")
    for k in ("point", "low", "high"):
        assert items[k] == pytest.approx(cli_items[k]), k
    assert items["point"] == pytest.approx(page["point"])
    # the planted video-level dependence: items alone give a far narrower interval
    assert page["high"] - page["low"] > 1.4 * (items["high"] - items["low"])
    assert "design: items (--cluster none)" in " ".join(c.value for c in at.caption)
