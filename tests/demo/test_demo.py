"""The main job end to end: `truthline demo` on a real Label Studio server (issue 9).

The Label Studio data dir is copied from the pre-migrated template (scripts/test.sh builds
it once), so the server starts in seconds instead of running ~400 migrations.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select

from truthline.annotate._local import creds_path
from truthline.annotate._server import CREDENTIALS_NAME, Credentials, free_port
from truthline.annotate.server_env import copy_template
from truthline.benchmark import load_release
from truthline.benchmark._export import verify_release
from truthline.store import Store, tables
from truthline.workspace import Workspace

pytestmark = pytest.mark.labelstudio


def _demo(root: Path, port: int, media_port: int) -> dict:
    env = {**os.environ, "COLUMNS": "120"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "truthline",
            "demo",
            "--workspace",
            str(root),
            "--json",
            "--port",
            str(port),
            "--media-port",
            str(media_port),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "SIMULATED" in proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("demo") / "ws"
    data = copy_template(root / "label-studio")
    creds = Credentials.load(data / CREDENTIALS_NAME)  # the template's admin, as if serve made it
    assert creds is not None
    creds.save(creds_path(Workspace.from_env(root)))
    port, media_port = free_port(), free_port()
    try:
        first = _demo(root, port, media_port)
        yield root, first, port, media_port
    finally:  # also when the demo failed: never leave a Label Studio behind
        subprocess.run(
            [sys.executable, "-m", "truthline", "-w", str(root), "annotate", "stop"], timeout=120
        )


def test_flags_the_planted_rubber_stamper_and_only_it(demo_run):
    _, res, _, _ = demo_run
    audit = res["audit"]
    assert audit["flagged"] == audit["planted_rubber_stamper"] == ["rubberstamp@annotators.local"]


def test_gold_provenance_matches_the_plan(demo_run):
    root, res, _, _ = demo_run
    ws = Workspace.from_env(root)
    store = ws.store
    t = tables
    with store.begin() as conn:
        snap = res["audit"]["gold"]["hash"]
        arms = dict(
            conn.execute(select(t.arm_assignments.c.item_id, t.arm_assignments.c.arm)).all()
        )
        gold = conn.execute(
            select(t.gold.c.item_id, t.gold.c.provenance).where(t.gold.c.snapshot == snap)
        ).all()
        reviewed = {
            r[0]
            for r in conn.execute(
                select(t.annotations.c.item_id).where(
                    t.annotations.c.tier == 2, t.annotations.c.skipped.is_(False)
                )
            )
        }
        n_items = conn.execute(select(func.count()).select_from(t.items)).scalar_one()
    by_arm = Counter((arms[i], p) for i, p in gold)
    # the blind arm never yields anchored provenance, and vice versa
    assert not any(arm == "blind" and p.startswith("anchored") for arm, p in by_arm)
    assert not any(arm == "anchored" and p == "blind_consensus" for arm, p in by_arm)
    # expert values only where the expert reviewed; every reviewed item has expert gold
    expert_items = {i for i, p in gold if p == "expert"}
    assert expert_items == reviewed
    # the review sample is the planned 30 % of items, and VLM-sourced gold exists
    assert len(reviewed) == round(0.3 * n_items)
    assert by_arm[("anchored", "anchored_kept")] > 0 and by_arm[("blind", "blind_consensus")] > 0
    counts = res["audit"]["gold"]["counts"]["by_provenance"]
    assert sum(counts.values()) == len(gold)


def test_benchmark_reports_export_and_reload(demo_run, tmp_path):
    _, res, _, _ = demo_run
    bench = res["benchmark"]
    models = {m["model"] for m in bench["compare_gold"]["models"]}
    assert models == {"simulated:steel-strong", "simulated:steel-weak", "rule:majority"}
    # the planted gradient: the same answers score higher on VLM-sourced gold than on blind gold
    for m in bench["compare_gold"]["models"]:
        if m["model"].startswith("simulated:"):
            assert m["vlm-sourced"]["point"] > m["blind"]["point"], m
    # the paper's finding, against each arm's labels: every SIMULATED model scores higher
    # against anchored labels than blind ones, and the mean over the models is positive
    labels = bench["compare_labels"]
    assert labels["reference"] == "labels" and labels["higher_on_anchored"] == "2 of 2"
    assert labels["mean_inflation_anchored_ci"]["point"] > 0
    assert Path(bench["report"]).is_file() and Path(res["audit"]["report"]).is_file()
    release = Path(bench["export"])
    assert verify_release(release) == []
    store = Store(f"sqlite:///{tmp_path / 'reloaded.db'}")
    loaded = load_release(release, store)
    assert loaded["project"].name == "steel-safety"
    assert (
        len(store.items("steel-safety")) == res["audit"]["gold"]["counts"]["items"]
    )  # items with gold


def test_everything_simulated_is_labelled_and_rerun_resumes(demo_run):
    root, _, port, media_port = demo_run
    store = Workspace.from_env(root).store
    t = tables
    with store.begin() as conn:
        assert all(m.get("simulated") for (m,) in conn.execute(select(t.items.c.meta)))
        assert all(s for (s,) in conn.execute(select(t.predictions.c.simulated)))
        # issue 26: the annotators came through Label Studio, yet the store marks them
        assert all(s for (s,) in conn.execute(select(t.annotations.c.simulated)))
        before = conn.execute(select(func.count()).select_from(t.annotations)).scalar_one()
        responses = conn.execute(select(func.count()).select_from(t.responses)).scalar_one()
    again = _demo(root, port, media_port)
    assert again["annotations"]["tier1_posted"] == 0 and again["annotations"]["expert_posted"] == 0
    with store.begin() as conn:
        assert conn.execute(select(func.count()).select_from(t.annotations)).scalar_one() == before
        assert conn.execute(select(func.count()).select_from(t.responses)).scalar_one() == responses
