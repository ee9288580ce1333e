"""Real photos for the matched questions (RealityBench §5, Table 14): a folder of photos (drawn
here with OpenCV, no downloads) and the user's answers become proof-of-work items with
source real and gold beside the renders' gold; bad CSV rows are named by file, row and
field; a run of SIMULATED models over renders and photos gives the rank transfer per
question, from Python and from ``truthline pow photos transfer --json``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from truthline._cli_common import State
from truthline.errors import TruthlineError
from truthline.stats._ranks import METHOD
from truthline.systems.realitybench import _photos as PH
from truthline.systems.realitybench import _pow as P
from truthline.systems.realitybench._cli_photos import app as photos_app

MODELS = ["simulated:pow-strong", "simulated:pow-mid", "simulated:pow-weak"]
ENVS = ("tape_gap", "vehicle_face", "damage_view")
ANSWERS = {
    "tape_reading": ["12 1/2", '8.25"', "3/8", "20-3/4 in", "15", "6.125"] * 4,
    "visible_face": ["front", "rear; left", "right", "front, right", "left", "rear"] * 4,
    "damage_severity": ["minor", "moderate", "severe", "Minor", "severe", "moderate"] * 4,
}


def draw_photo(path: Path, question: str, i: int) -> None:
    """A stand-in photo: a tape with ticks, a car from one side, or a scratched panel."""
    img = np.full((120, 160, 3), 200 - 5 * (i % 10), np.uint8)
    if question == "tape_reading":
        cv2.rectangle(img, (10, 50), (150, 70), (0, 215, 255), -1)
        for x in range(14, 150, 8):
            cv2.line(img, (x, 50), (x, 58 if x % 16 else 64), (0, 0, 0), 1)
        cv2.putText(img, str(10 + i), (60, 90), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 1)
    elif question == "visible_face":
        cv2.rectangle(img, (30, 50), (130, 85), (180, 40, 40), -1)
        cv2.rectangle(img, (50, 35), (105, 52), (150, 30, 30), -1)
        for x in (50, 110):
            cv2.circle(img, (x, 88), 10, (20, 20, 20), -1)
    else:
        cv2.rectangle(img, (20, 20), (140, 100), (140, 140, 150), -1)
        for k in range(1 + i % 3):
            cv2.line(img, (40 + 10 * k, 40), (110 + 5 * k, 80 - 8 * k), (40, 40, 40), 2)
    cv2.imwrite(str(path), img)


def photo_dir(tmp: Path, question: str, rows: list[tuple[str, str]] | None = None) -> Path:
    d = tmp / question
    d.mkdir(parents=True, exist_ok=True)
    rows = rows or [(f"p{i:02d}.png", a) for i, a in enumerate(ANSWERS[question])]
    for i, (name, _) in enumerate(rows):
        if not name.startswith("missing"):
            draw_photo(d / name, question, i)
    with (d / "answers.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["file", "answer", "scene", "notes"])
        w.writerows([n, a, f"s{i // 2}", "drawn"] for i, (n, a) in enumerate(rows))
    return d


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """Proxy renders (no Blender) and drawn photos for all three questions in one
    proof-of-work project, and a run of SIMULATED models over all of it."""
    from PIL import Image

    from truthline.benchmark import RunConfig, run_benchmark
    from truthline.workspace import Workspace

    tmp = tmp_path_factory.mktemp("photos")
    # enough tape frames that the scorer accepts several (the models then differ on them)
    frames = P.proxy_frames(48, envs=ENVS, seed=5)
    paths = []
    for i in range(len(frames)):
        p = tmp / f"r{i}.png"
        Image.fromarray(np.full((12, 16, 3), 7 * (i % 30), np.uint8)).save(p)
        paths.append(str(p))
    frames["image"] = paths
    ws = Workspace.from_env(tmp / "ws")
    proj = P.import_benchmark(ws, frames)
    render_snap = P.write_gold(ws.store, proj, frames)
    imports = {q: PH.import_photos(ws, photo_dir(tmp, q), q) for q in PH.QUESTIONS}
    man = run_benchmark(ws.store, proj, RunConfig(models=MODELS), progress=False)
    return ws, proj, frames, render_snap, imports, man["run_id"], tmp


def test_photos_become_real_items_with_gold_beside_the_renders(bench):
    ws, proj, frames, render_snap, imports, _, _ = bench
    from truthline.audit._gold import load_gold

    tape = imports["tape_reading"]
    assert len(tape.keys) == 24 and tape.scenes == 12 and tape.gold_snapshot != render_snap
    gold = load_gold(ws.store, proj.name)
    assert gold.snapshot == imports["damage_severity"].gold_snapshot
    by_key = {it.key: it for it in gold.items}
    assert {k for k in by_key if not k.startswith("real/")} == set(frames["key"])  # renders kept
    it = by_key["real/tape_reading/p00"]
    assert it.values == {"tape_reading": 12.5} and it.provenance["tape_reading"] == "photo-gt"
    assert it.meta["source"] == "real" and it.meta["environment"] == "tape_gap"
    assert it.parent == "real:s0"
    assert by_key["real/tape_reading/p03"].values["tape_reading"] == 20.75
    assert by_key["real/visible_face/p01"].values["visible_face"] == ["rear", "left"]
    assert by_key["real/damage_severity/p03"].values["damage_severity"] == "minor"
    # idempotent: the same photos again write the same snapshot
    again = PH.import_photos(ws, bench[6] / "damage_severity", "damage_severity")
    assert again.gold_snapshot == imports["damage_severity"].gold_snapshot


def test_bad_rows_are_named_by_file_row_and_field(tmp_path):
    from truthline.workspace import Workspace

    ws = Workspace.from_env(tmp_path / "ws")
    d = photo_dir(tmp_path, "tape_reading",
                  [("a.png", "12 1/2"), ("b.png", "twelve"), ("missing.png", "3"),
                   ("a.png", "4"), ("c.png", "")])  # fmt: skip
    with pytest.raises(TruthlineError) as exc:
        PH.import_photos(ws, d, "tape_reading")
    msg = str(exc.value)
    path = d / "answers.csv"
    assert f"{path}: row 3, column 'answer' (tape_reading): expected a number" in msg
    assert f"{path}: row 4, column 'file': no photo 'missing.png'" in msg
    assert f"{path}: row 5, column 'file': 'a.png' repeats row 2" in msg
    assert f"{path}: row 6, column 'answer' (tape_reading): empty answer" in msg
    d2 = photo_dir(tmp_path, "damage_severity", [("x.png", "catastrophic")])
    with pytest.raises(TruthlineError, match=r"row 2, column 'answer' .*not a declared choice"):
        PH.import_photos(ws, d2, "damage_severity")
    with pytest.raises(TruthlineError, match="not a matched question"):
        PH.import_photos(ws, d2, "plate")
    assert "proof-of-work" not in ws.project_names() or not ws.store.item_ids_by_key(
        "proof-of-work"
    )


def test_rank_transfer_per_question(bench):
    ws, proj, _, _, _, rid, _ = bench
    out = {t.question: t for t in PH.photo_transfer(ws.store, proj, rid, resamples=200)}
    assert set(out) == set(PH.QUESTIONS)
    for q, t in out.items():
        r = t.result
        assert t.note is None, (q, t.note)
        assert r["sets"] == ["render", "real"] and len(r["models"]) == 3
        assert r["value"].method == METHOD and r["value"].low <= r["spearman_rho"]
        assert 0 <= r["spearman_p"] <= 1 and r["rank_agreement"].resamples == 200
        assert all(n["real"] == 24 for n in r["n"].values())
    tape = out["tape_reading"].result["scores"]
    # the SIMULATED profiles read tapes at 0.40 / 0.20 / 0.08: strong leads on both sets
    strong = tape["simulated:pow-strong"]
    assert strong["real"] >= tape["simulated:pow-weak"]["real"]
    assert strong["render"] >= tape["simulated:pow-weak"]["render"]


def _cli(ws_root: Path) -> typer.Typer:
    """The ``photos`` sub-app mounted as ``truthline pow`` mounts it, on one workspace."""
    root = typer.Typer()

    @root.callback()
    def main(ctx: typer.Context) -> None:
        ctx.obj = State(workspace=ws_root)

    root.add_typer(photos_app, name="photos")
    return root


def test_cli_import_json_and_a_clear_error(tmp_path):
    root = _cli(tmp_path / "ws")
    d = photo_dir(tmp_path, "visible_face")
    res = CliRunner().invoke(root, ["photos", "import", str(d), "-q", "visible_face", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert (
        out["items"] == 24 and out["project"] == "proof-of-work" and out["field"] == "visible_face"
    )
    bad = CliRunner().invoke(root, ["photos", "import", str(d), "-q", "tape_reading"])
    assert bad.exit_code != 0 and "column 'answer' (tape_reading)" in str(bad.exception)


def test_cli_transfer_json(bench):
    ws, _, _, _, _, rid, _ = bench
    root = _cli(Path(ws.root))
    res = CliRunner().invoke(
        root, ["photos", "transfer", rid, "-q", "visible_face", "--resamples", "100", "--json"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    (t,) = data["questions"]
    assert t["question"] == "visible_face" and t["value"]["method"] == METHOD
    assert set(t["rank_agreement"]) >= {"tau_interval", "rho_interval", "pairs", "verdict"}
    human = CliRunner().invoke(root, ["photos", "transfer", rid, "--resamples", "50"])
    assert human.exit_code == 0 and "rendered frames -> real photos" in human.output
