"""`stats agreement --project`: the project's declared design is the default (issue 24).

Planted: 30 videos x 8 clips, two raters. In half the videos the raters agree on every clip,
in the other half rater B answers at random, so agreement is a property of the video: an
item bootstrap treats 240 clips as independent and is too narrow; the declared cluster
(``cluster = "video"``, the items' parent) must be used unless the user overrides it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from sqlalchemy import insert
from typer.testing import CliRunner

from truthline.cli import app
from truthline.store import now, tables
from truthline.workspace import Workspace

TOML = """
name = "clips"
media = "video"
cluster = "video"
strata = ["site", "visibility"]

[fields.scene]
type = "single_choice"
choices = ["yard", "furnace", "dock", "office"]
"""
VIDEOS, CLIPS = 30, 8


def _seed(ws: Workspace, tmp: Path) -> None:
    src = tmp / "tmpl"
    src.mkdir()
    (src / "project.toml").write_text(TOML)
    ws.init_project(str(src))
    rng = random.Random(7)
    cats = ["yard", "furnace", "dock", "office"]
    t = now()
    keys = [(v, f"v{v:02d}-c{c}") for v in range(VIDEOS) for c in range(CLIPS)]
    items = [
        dict(
            project="clips",
            key=key,
            media_kind="video",
            media=[],
            media_root="",
            content_hash=key,
            # site is a property of the video; visibility changes within one
            meta={"site": f"s{v % 3 == 0}", "visibility": rng.choice(["clear", "fog"])},
            parent=f"video{v:02d}",
            created_at=t,
            updated_at=t,
        )
        for v, key in keys
    ]
    with ws.store.begin() as conn:
        conn.execute(insert(tables.items), items)
    ids = ws.store.item_ids_by_key("clips")
    rows = []
    for v, key in keys:
        good = v % 2 == 0  # raters agree on every clip of a good video
        truth = rng.choice(cats)
        for ann, val in (("A", truth), ("B", truth if good else rng.choice(cats))):
            rows.append(
                dict(
                    project="clips",
                    item_id=ids[key],
                    field_path="scene",
                    annotator=ann,
                    arm="blind",
                    tier=1,
                    value=val,
                    skipped=False,
                    source="simulated",
                    source_id=f"sim:{key}:{ann}",
                    stored_at=t,
                )
            )
    with ws.store.begin() as conn:
        conn.execute(insert(tables.annotations), rows)


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "ws"))
    _seed(Workspace.from_env(tmp_path / "ws"), tmp_path)
    runner = CliRunner()

    def ok(*args: str) -> str:
        base = ["stats", "agreement", "--project", "clips", "--field", "scene"]
        res = runner.invoke(app, [*base, "--resamples", "400", *args])
        assert res.exit_code == 0, res.output
        return res.output

    return ok


def _width(r: dict) -> float:
    return float(r["high"]) - float(r["low"])


def test_declared_cluster_is_the_default_and_widens_the_interval(run):
    default = json.loads(run("--json"))
    alpha = default["results"][0]
    assert alpha["scheme"].startswith("cluster") and alpha["clusters"] == VIDEOS
    d = default["design"]
    assert d["cluster"] == "parent" and "declared cluster 'video'" in d["cluster_from"]
    # site is constant within a video (2 strata of 10 and 20 videos); visibility is not
    assert d["strata"] == ["site"] and alpha["strata"] == 2
    assert any("'visibility' not used (varies within a cluster)" in n for n in d["notes"])
    items = json.loads(run("--cluster", "none", "--strata", "none", "--json"))
    plain = items["results"][0]
    assert plain["scheme"] == "item" and plain["clusters"] is None
    assert items["design"]["cluster_from"] == "--cluster none"
    assert plain["point"] == pytest.approx(alpha["point"])
    # the planted video-level dependence: the item bootstrap is far too narrow
    assert _width(alpha) > 1.4 * _width(plain), (alpha, plain)


def test_the_table_says_which_design_was_used(run):
    out = run()
    assert "design: clusters = items' parent (the project's declared cluster 'video')" in out
    assert "strata = site (the project's declared strata)" in out
    out = run("--cluster", "none", "--strata", "none")
    assert "design: items (--cluster none)" in out


def test_explicit_options_override_and_are_checked(run, tmp_path):
    st = json.loads(run("--strata", "none", "--json"))
    assert st["design"]["strata"] == [] and st["results"][0]["strata"] is None
    runner = CliRunner()
    bad = runner.invoke(
        app,
        ["stats", "agreement", "--project", "clips", "--field", "scene", "--strata", "visibility"],
    )
    assert bad.exit_code != 0 and "varies within a cluster" in str(bad.output) + str(bad.exception)
    kripp = json.loads(run("--ci", "krippendorff", "--json"))
    assert kripp["design"]["cluster"] is None
    assert "no cluster or strata scheme" in kripp["design"]["notes"][0]


def test_items_without_a_parent_are_their_own_clusters(run, tmp_path):
    """Under the declared cluster an item with no parent is a cluster of its own (as in the
    audit); with no parent anywhere the design falls back to items, and says so."""
    from sqlalchemy import update

    ws = Workspace.from_env(tmp_path / "ws")
    items = tables.items
    with ws.store.begin() as conn:
        conn.execute(update(items).where(items.c.parent == "video00").values(parent=None))
    alpha = json.loads(run("--strata", "none", "--json"))["results"][0]
    assert alpha["clusters"] == VIDEOS - 1 + CLIPS
    with ws.store.begin() as conn:
        conn.execute(update(items).values(parent=None))
    out = json.loads(run("--json"))
    assert out["results"][0]["scheme"] == "item+stratified" and out["design"]["cluster"] is None
    assert out["design"]["strata"] == ["site", "visibility"]  # no cluster to vary within
    assert "declares cluster 'video' but no item has a parent" in out["design"]["cluster_from"]


def test_loo_uses_the_declared_cluster_too(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "ws"))
    _seed(Workspace.from_env(tmp_path / "ws"), tmp_path)
    base = ["stats", "loo", "--project", "clips", "--field", "scene", "--resamples", "400"]
    res = CliRunner().invoke(app, [*base, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["design"]["cluster"] == "parent" and out["design"]["strata"] == []
    plain = json.loads(CliRunner().invoke(app, [*base, "--cluster", "none", "--json"]).output)
    assert plain["design"]["cluster_from"] == "--cluster none"
    a, b = out["raters"][0], plain["raters"][0]
    assert a["scheme"] == "cluster" and a["clusters"] == VIDEOS and b["scheme"] == "item"
    assert a["point"] == pytest.approx(b["point"]) and _width(a) > 1.3 * _width(b)
    assert "design: clusters = items' parent" in CliRunner().invoke(app, base).output
