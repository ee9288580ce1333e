"""`truthline stats` on CSV files and on the store; table and --json give the same numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import insert

from tests.stats.conftest import KRIPPENDORFF_2011
from truthline.stats import krippendorff_alpha
from truthline.stats._store import ratings_from_store
from truthline.store import now, tables
from truthline.workspace import Workspace


def tl(*args: str, ws: Path | None = None, check: int = 0) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if ws is not None:
        env["TRUTHLINE_WORKSPACE"] = str(ws)
    proc = subprocess.run(
        [sys.executable, "-m", "truthline", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == check, proc.stdout + proc.stderr
    return proc


@pytest.fixture
def wide_csv(tmp_path: Path) -> Path:
    lines = ["unit,A,B,C,D,clip"]
    for i, row in enumerate(KRIPPENDORFF_2011):
        cells = ["" if v is None else str(v) for v in row]
        lines.append(",".join([f"u{i + 1}", *cells, f"c{i // 3}"]))
    p = tmp_path / "ratings.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_wide_csv_table_and_json_agree(wide_csv):
    out = tl(
        "stats",
        "agreement",
        str(wide_csv),
        "--coef",
        "alpha",
        "--coef",
        "ac1",
        "--resamples",
        "300",
        "--cluster",
        "clip",
        "--json",
    )
    data = json.loads(out.stdout)
    alpha = data["results"][0]
    assert alpha["point"] == pytest.approx(0.743, abs=5e-4)
    assert alpha["resamples"] == 300 and alpha["seed"] == 0
    # 4 clips: too few clusters for a cluster bootstrap (issue 13): jackknife-t, warned
    assert alpha["scheme"] == "cluster-jackknife" and alpha["clusters"] == 4
    assert alpha["warning"] == "few clusters (4 < 20)"
    assert data["raters"] == 4 and data["units"] == 12
    table = tl(
        "stats",
        "agreement",
        str(wide_csv),
        "--coef",
        "alpha",
        "--coef",
        "ac1",
        "--resamples",
        "300",
        "--cluster",
        "clip",
    ).stdout
    for r in data["results"]:
        assert f"{r['point']:.3f}" in table
        assert f"{r['low']:.3f}" in table and f"{r['high']:.3f}" in table
    assert "300 bootstrap resamples (cluster-jackknife, 4 clusters), seed 0" in table
    assert "warning: 4 clusters: few clusters (4 < 20)" in table


def test_loo_cli_warns_on_few_clusters(wide_csv):
    out = tl("stats", "loo", str(wide_csv), "--cluster", "clip", "--resamples", "100").stdout
    assert "warning:" in out and "few clusters" in out
    data = json.loads(
        tl(
            "stats", "loo", str(wide_csv), "--cluster", "clip", "--resamples", "100", "--json"
        ).stdout
    )
    assert all(r["clusters"] and "few clusters" in r["warning"] for r in data["raters"])


def test_long_csv_interval_and_errors(tmp_path, wide_csv):
    lines = ["unit,rater,value"]
    for i, row in enumerate(KRIPPENDORFF_2011):
        for j, v in enumerate(row):
            if v is not None:
                lines.append(f"u{i},{'ABCD'[j]},{v}")
    p = tmp_path / "long.csv"
    p.write_text("\n".join(lines) + "\n")
    out = json.loads(
        tl(
            "stats",
            "agreement",
            str(p),
            "--format",
            "long",
            "--level",
            "interval",
            "--ci",
            "none",
            "--json",
        ).stdout
    )
    assert out["results"][0]["point"] == pytest.approx(0.849, abs=5e-4)
    assert out["results"][0]["low"] is None
    bad = tl("stats", "agreement", str(p), "--format", "wide", "--cluster", "nope", check=1)
    assert "no column 'nope'" in bad.stderr
    usage = tl("stats", "agreement", str(p), "--coef", "nonsense", check=2)
    assert "nonsense" in usage.stderr


def _seed_store(ws: Workspace) -> None:
    ws.init_project("steel-safety")
    t = now()
    rows = {
        # item key: annotator -> (scene_type, workers)
        "clip1": {
            "ann1": (
                "indoor",
                [{"worker_id": "P1", "helmet": "worn"}, {"worker_id": "P2", "helmet": "not_worn"}],
            ),
            "ann2": (
                "indoor",
                [{"worker_id": "P2", "helmet": "not_worn"}, {"worker_id": "P1", "helmet": "worn"}],
            ),
        },
        "clip2": {
            "ann1": ("outdoor", [{"worker_id": "P1", "helmet": "worn"}]),
            "ann2": ("indoor", [{"worker_id": "P1", "helmet": "not_worn"}]),
        },
        "clip3": {
            "ann1": ("outdoor", [{"worker_id": "P7", "helmet": "not_worn"}]),
            "ann2": ("outdoor", [{"worker_id": "P7", "helmet": "not_worn"}]),
        },
    }
    with ws.store.begin() as conn:
        for key, per in rows.items():
            item_id = conn.execute(
                insert(tables.items).values(
                    project="steel-safety",
                    key=key,
                    media_kind="video",
                    media=[],
                    media_root="",
                    content_hash=key,
                    meta={},
                    parent=None,
                    created_at=t,
                    updated_at=t,
                )
            ).inserted_primary_key[0]
            for ann, (scene, workers) in per.items():
                for fld, val in (("scene_type", scene), ("workers", workers)):
                    conn.execute(
                        insert(tables.annotations).values(
                            project="steel-safety",
                            item_id=item_id,
                            field_path=fld,
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


def test_store_field_and_entity_subfield(tmp_path):
    ws = Workspace.from_env(tmp_path / "ws")
    _seed_store(ws)
    proj = ws.registered("steel-safety")
    r, _ = ratings_from_store(ws.store, proj, "workers.helmet", arm="blind", tier=1)
    # workers aligned by key: clip1 P1/P2 in different list order still pair up
    assert sorted(r.units) == ["clip1[P1]", "clip1[P2]", "clip2[P1]", "clip3[P7]"]
    grid = {
        u: [r.values[c] if c >= 0 else None for c in row]
        for u, row in zip(r.units, r.codes, strict=True)
    }
    assert grid["clip1[P2]"] == ["not_worn", "not_worn"]
    assert grid["clip2[P1]"] == ["worn", "not_worn"]
    expected = krippendorff_alpha(
        [["worn", "worn"], ["not_worn", "not_worn"], ["worn", "not_worn"], ["not_worn", "not_worn"]]
    )
    out = json.loads(
        tl(
            "stats",
            "agreement",
            "--project",
            "steel-safety",
            "--field",
            "workers.helmet",
            "--arm",
            "blind",
            "--tier",
            "1",
            "--resamples",
            "50",
            "--json",
            ws=ws.root,
        ).stdout
    )
    assert out["results"][0]["point"] == pytest.approx(expected)
    assert out["source"] == "steel-safety:workers.helmet arm=blind tier=1"
    miss = tl(
        "stats",
        "agreement",
        "--project",
        "steel-safety",
        "--field",
        "scene_type",
        "--arm",
        "anchored",
        ws=ws.root,
        check=1,
    )
    assert "no annotations of 'scene_type'" in miss.stderr
