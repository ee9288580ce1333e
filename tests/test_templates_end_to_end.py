"""Every bundled template (``ls projects/``) end to end through the real CLI: init -> items
import (generated images) -> prefill (a local OpenAI-compatible stub over HTTP) -> gold
from two agreeing blind annotators (audit import-table) -> audit finalize -> benchmark run
(Base, and +GT where the template gives something as truth; rule baselines) -> report ->
export. Templates are discovered from the folder, so a new or renamed one is covered."""

from __future__ import annotations

import csv
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from truthline.cli import app
from truthline.fields import Boolean, EntityList, Number, Reading, Region, Text
from truthline.models._stub import StubServer
from truthline.project import load_project

PROJECTS = Path(__file__).resolve().parents[1] / "projects"
TEMPLATES = sorted(p.name for p in PROJECTS.iterdir() if (p / "project.toml").is_file())


def _value(ft: Any, rng: random.Random) -> Any:
    cats = ft.categories()
    if cats:
        return rng.choice(list(cats))
    if isinstance(ft, Boolean):
        return rng.random() < 0.5
    if isinstance(ft, Number):
        lo = ft.spec.min if getattr(ft.spec, "min", None) is not None else 0
        return lo + rng.randint(0, 2)
    if isinstance(ft, Reading | Text):
        return rng.choice(["m_1", "2 kg", "F"])
    return None  # regions and other geometry: not filled by this generic generator


def _gold_rows(project: Any, keys: list[str], seed: int) -> list[dict[str, Any]]:
    """Two blind annotators agreeing on every target leaf (-> blind_consensus gold)."""
    rng = random.Random(seed)
    targets = list(project.benchmark.target_fields) or list(project.leaf_fields())
    out = []
    for key in keys:
        for t in targets:
            head = t.split(".", 1)[0]
            ft = project.field(t)
            if isinstance(ft, Region):
                continue
            if isinstance(project.field_types[head], EntityList):
                sub = t.split(".", 1)[1]
                paths = [f"{head}[P1].{sub}"]
            else:
                paths = [t]
            for path in paths:
                v = _value(ft, rng)
                if v is None:
                    continue
                for ann in ("ann_a", "ann_b"):
                    out.append(
                        {
                            "item": key,
                            "field": path,
                            "annotator": ann,
                            "arm": "blind",
                            "value": json.dumps(v) if not isinstance(v, str) else v,
                        }
                    )
    return out


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _media(project: Any, root: Path, n: int) -> tuple[Path, Path, list[str]]:
    """Small generated images (OpenCV) and a metadata CSV with every strata, cluster and
    public-input column; a ``frames`` project gets one folder of 2 frames per item."""
    import cv2
    import numpy as np

    media = root / "media"
    media.mkdir(parents=True)
    cols = {*project.strata, *project.benchmark.strata, *project.benchmark.public_inputs}
    cols |= {c for c in (project.cluster, project.benchmark.cluster) if c}
    rows, keys = [], []
    rng = np.random.default_rng(0)
    for i in range(n):
        img = np.full((48, 64, 3), 40 * (i % 5), np.uint8)
        cv2.rectangle(img, (8, 8), (30, 30), (255, 255, 255), 2)
        key = f"item{i}"
        if project.media == "frames":
            (media / key).mkdir()
            for f in range(2):
                cv2.imwrite(
                    str(media / key / f"f{f}.png"),
                    img + rng.integers(0, 5, img.shape, dtype=np.uint8),
                )
        else:
            cv2.imwrite(str(media / f"{key}.png"), img)
        row = {"key": key}
        for c in sorted(cols):
            row[c] = (
                f"{c}{i % 2}"
                if c != (project.benchmark.cluster or project.cluster)
                else f"g{i // 2}"
            )
        rows.append(row)
        keys.append(key)
    return media, _write_csv(root / "meta.csv", rows), keys


def _stub_answer(body: dict[str, Any]) -> str:
    text = json.dumps(body)
    # a fixed grounding, changed when a reading is given as truth (so +GT has transitions)
    return json.dumps(
        {"read": "M", "owner": "E1" if "local_reading" in text else "E2", "confidence": 0.5}
    )


@pytest.mark.parametrize("template", TEMPLATES)
def test_template_end_to_end(template, tmp_path, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "ws"))
    r = CliRunner()

    def ok(*args: str) -> str:
        res = r.invoke(app, list(args))
        assert res.exit_code == 0, f"{args}: {res.output}"
        return res.stdout

    ok("init", template)
    project = load_project(PROJECTS / template / "project.toml")
    media_root: list[str] = []
    if project.benchmark.ground_field:
        # a PhysAlign template: generated diagram problems with known answers, compiled
        # into probes and import tables by truthline.systems.physalign (truth named as generated)
        gen = json.loads(
            ok(
                "physalign",
                "generate",
                "--out",
                str(tmp_path / "gen"),
                "--n",
                "4",
                "--seed",
                "3",
                "--json",
            )
        )
        media, meta = Path(gen["import"]["media"]), Path(gen["import"]["metadata"])
        media_root = ["--media-root", gen["import"]["media_root"]]
        labels = Path(gen["import"]["labels"])
        keys = [r["key"] for r in csv.DictReader(meta.open(encoding="utf-8"))]
    else:
        media, meta, keys = _media(project, tmp_path / "data", 6)
        labels = _write_csv(tmp_path / "gold.csv", _gold_rows(project, keys, seed=1))
    imp = json.loads(
        ok("items", "import", str(media), *media_root, "--metadata", str(meta), "--json")
    )
    assert imp["added"] == len(keys)
    stub = StubServer(answer=_stub_answer).start()
    try:
        spec = f"openai:stub-vlm@{stub.url}"
        ok("prefill", "run", "--model", spec, "--json")
        ok("audit", "import-table", str(labels), "--json")
        snap = json.loads(ok("audit", "finalize", "--json"))
        assert snap["hash"]
        models = ["--model", spec, "--model", "rule:majority"]
        if (PROJECTS / template / "rules.py").is_file():
            names = re.findall(
                r'@rule\("([^"]+)"[,)]', (PROJECTS / template / "rules.py").read_text()
            )
            for n in names:
                models += ["--model", f"rule:{n}"]
        run = json.loads(ok("benchmark", "run", *models, "--run", "e2e", "--json"))
        assert run["status"] == "done", run
        b = project.benchmark
        gives = bool(getattr(b, "given_as_truth", None) or b.action_field)
        # a grounding-probe template (PhysAlign) declares what +GT gives
        assert gives or not b.ground_field, f"{template}: +GT has nothing to give"
        if gives:
            ok("benchmark", "run", "--model", spec, "--condition", "gt", "--run", "e2e", "--json")
        for ctl in ("reorder", "no-image"):
            ok("benchmark", "run", "--model", spec, "--control", ctl, "--run", "e2e", "--json")
        res = json.loads(ok("benchmark", "report", "e2e", "--json", "--resamples", "50"))
        board = res["leaderboard"]
        assert {m["model"] for m in board} >= {"openai:stub-vlm", "rule:majority"}
        for m in board:  # typed inputs: no rule or stub answer lost as infrastructure
            assert m["infra_missing"] == 0 and m["parsed"] == m["requests"], m
        if project.benchmark.ground_field:  # the PhysAlign checklist, per model (§13)
            proto = res["across"][0]["metrics"]["probe_protocol"]["models"]["openai:stub-vlm"]
            assert proto["G"]["coverage"]["N"] == len(keys)
            assert proto["P_m"]["N"] > 0 and "repair_rate" in proto["P_m"]
            assert proto["H"]["nearest"]["n"] > 0
            assert set(proto["controls"]) == {"reorder", "no-image"}
        out = tmp_path / "report.md"
        ok("benchmark", "report", "e2e", "--out", str(out), "--resamples", "50")
        text = out.read_text()
        assert text.strip()
        if project.benchmark.ground_field:  # the checklist is in the written report too
            for title in ("grounding and reading", "Base -> +GT on P_m", "rule baselines"):
                assert f"Probe protocol: {title}" in text, title
            # one hard subset and one net change: the protocol's, not the decision counts
            assert "Hard subset (" not in text and "Paired conditions Base" not in text
            # the nearest-region rule's leaderboard accuracy is named as not its score
            assert "rule:nearest-region applies to part of the items only" in text
            assert "Left out: rule:nearest-region" in text  # not in the decision-level pairs
        ok("benchmark", "export", "--out", str(tmp_path / "release"))
        assert (tmp_path / "release" / "public").is_dir()
    finally:
        stub.stop()
