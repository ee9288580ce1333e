"""SynDORBench's photoreal night path: tiny Cycles renders with midnight frames through
`truthline syndor prepare → propagate → benchmark run → tables` (SIMULATED labels and viewer
models), and the host's own EXR decoder checked bit for bit against OpenCV built with OpenEXR
(the scenes venv's). Fails without the scenes venv."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from typer.testing import CliRunner

from truthline.cli import app
from truthline.errors import TruthlineError
from truthline.scenes import RenderSettings, env
from truthline.scenes import _isp as isp
from truthline.scenes._render import render
from truthline.systems.syndorbench import _syndor as sd

PARAMS = [
    {"distance_m": d, "azimuth_deg": az, "elevation_deg": 0.0, "lighting": lt,
     "pose": pose, "scene": "field"}
    for d in (5.4, 23.0)
    for lt in ("noon", "midnight")
    for pose in ("walking", "absent")
    for az in (0.0, 135.0)
]  # fmt: skip
CYCLES = RenderSettings(engine="CYCLES", spp=2, res_x=96, res_y=54, denoise=None)


@pytest.fixture(scope="module")
def store(worker, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cycles") / "store"
    rep = render("dori", PARAMS, root, CYCLES, client=worker)
    assert not rep.failed and rep.rendered == len(PARAMS)
    return root


def _scenes_python(code: str) -> str:
    res = subprocess.run(
        [str(env.python_exe()), "-c", code], capture_output=True, text=True, timeout=120,
        env={"OPENCV_IO_ENABLE_OPENEXR": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_host_reads_blender_exrs_exactly_as_opencv_with_openexr(store, tmp_path):
    renders = sd.renders_from_store(store)
    exrs = [p for p in renders["linear"] if isinstance(p, str)]
    assert len(exrs) == 8  # every midnight frame keeps its EXR, no day frame does
    out = tmp_path / "cv2"
    _scenes_python(
        "import cv2, numpy as np, sys\n"
        f"for i, p in enumerate({exrs!r}):\n"
        "    img = cv2.imread(p, cv2.IMREAD_UNCHANGED)\n"
        f"    np.save('{out}' + str(i) + '.npy', np.ascontiguousarray(img[..., 2::-1]))\n"
    )
    for i, p in enumerate(exrs):
        mine, ref = isp.read_exr(p), np.load(f"{out}{i}.npy")
        assert mine.dtype == np.float32 and mine.shape == (54, 96, 3)
        assert np.array_equal(mine, ref)  # bit for bit: the ISP sees the same photometry
        assert 1e-5 < float(mine.mean()) < 5e-3  # midnight: physically dim


@pytest.mark.parametrize(
    ("codec", "half"), [("ZIP", True), ("ZIPS", False), ("NO", False), ("NO", True)]
)
def test_read_exr_decodes_every_codec_blender_writes_in_half_and_float(tmp_path, codec, half):
    ref = tmp_path / "ref.npy"
    path = tmp_path / "x.exr"
    rng = np.random.default_rng(3)
    np.save(ref, (rng.random((37, 21, 3)) * np.array([1e-3, 1.0, 40.0])).astype(np.float32))
    _scenes_python(
        "import cv2, numpy as np\n"
        f"img = np.load('{ref}')\n"
        f"flags = [cv2.IMWRITE_EXR_COMPRESSION, cv2.IMWRITE_EXR_COMPRESSION_{codec},\n"
        f"         cv2.IMWRITE_EXR_TYPE, cv2.IMWRITE_EXR_TYPE_{'HALF' if half else 'FLOAT'}]\n"
        f"assert cv2.imwrite('{path}', np.ascontiguousarray(img[..., ::-1]), flags)\n"
        f"np.save('{ref}', cv2.imread('{path}', cv2.IMREAD_UNCHANGED)[..., ::-1])\n"
    )
    assert np.array_equal(isp.read_exr(path), np.load(ref))


def test_an_unreadable_exr_names_the_command_that_re_renders_it(store, tmp_path):
    renders = sd.renders_from_store(store)
    row = renders[renders["lighting"] == "midnight"].iloc[:1].copy()
    bad = tmp_path / "bad.exr"
    bad.write_bytes(Path(row["linear"].iloc[0]).read_bytes()[:300])
    row["linear"] = str(bad)
    with pytest.raises(TruthlineError, match=r"cannot read the linear EXR .*scenes render dori"):
        sd.make_items(row, tmp_path / "out")
    piz = tmp_path / "piz.exr"
    _scenes_python(
        "import cv2, numpy as np\n"
        f"cv2.imwrite('{piz}', np.ones((4, 4, 3), np.float32),\n"
        "            [cv2.IMWRITE_EXR_COMPRESSION, cv2.IMWRITE_EXR_COMPRESSION_PIZ])\n"
    )
    with pytest.raises(ValueError, match="compression 4 is not supported"):
        isp.read_exr(piz)


def test_cycles_midnight_grid_prepare_propagate_benchmark_tables(store, tmp_path):
    ws = tmp_path / "ws"
    runner = CliRunner()

    def tl(*args: str) -> dict:
        res = runner.invoke(app, ["--workspace", str(ws), *args, "--json"])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)

    prep = tl("syndor", "prepare", "--store", str(store))
    assert prep["renders"] == 16 and prep["items"] == 8 + 2 * 8
    items = pd.read_parquet(prep["items_table"])
    renders = sd.renders_from_store(store).set_index("render")
    night = items[items["condition"].isin(["night", "night-vision"])]
    # every midnight frame gives a night and a night-vision item, both from the linear EXR
    assert night.groupby("render")["condition"].apply(set).eq({"night", "night-vision"}).all()
    assert len(night) == 16 and (night["night_from"] == "exr").all()
    nv = items[items["condition"] == "night-vision"]
    for r in nv.itertuples():
        raw8 = np.asarray(Image.open(renders.loc[r.render, "rgb"]).convert("L"), float).mean()
        shown = np.asarray(Image.open(r.image).convert("L"), float).mean()
        assert raw8 < 12 and shown > 5 * raw8  # the 8-bit render is near black; NV is not
    day = items[items["condition"] == "day"]
    assert (day["night_from"] == "exr").sum() == 0 and len(day) == 8

    tl("syndor", "simulate-labels")
    prop = tl("syndor", "propagate", "--search", "small", "--folds", "2")
    assert prop["label_sources"]["render-gt"] == 8
    run = tl("benchmark", "run", "--project", "dori-visibility", "--model",
             "simulated-dori:strong", "--model", "simulated-dori:weak")  # fmt: skip
    t = tl("syndor", "tables", run["run_id"], "--no-action")
    assert t["distances"] == ["5.4", "23.0"]
    conds = {(r["model"], r["condition"]) for r in t["by_condition"]}
    assert conds == {(f"simulated-dori:{m}", c) for m in ("strong", "weak") for c in sd.CONDITIONS}
    assert all(r["avg"]["n"] == 24 for r in t["by_distance"])


def test_the_figure_a_rater_judges_and_its_gt_stays_exact(store):
    """Short sleeves (skin forearms against the shirt), trousers, a hair cap that leaves the
    face; the projected bbox still matches the rendered mask."""
    from truthline.scenes import _humanoid as hu
    from truthline.scenes._store import FrameStore

    bones: list[str] = []
    verts, faces, _ = hu.figure_mesh("guard_up", face_bones=bones)
    parts = {b: hu.part_of(b) for b in bones}
    assert parts["forearm.L"] == "skin" != parts["upper_arm.L"] == "shirt"
    assert parts["thigh.R"] == "pants" and parts["hair"] == "hair"
    head = np.array([i for f, b in zip(faces, bones, strict=True) if b == "spine.006" for i in f])
    front = head[np.argmin(verts[head, 1])]  # the face looks along -Y
    hair_v = np.array([i for f, b in zip(faces, bones, strict=True) if b == "hair" for i in f])
    assert verts[front, 1] < verts[hair_v, 1].min()  # the face is not under the hair
    assert hu.figure_height("standing") == pytest.approx(1.75, abs=0.03)
    near = [r for r in FrameStore(store).records() if r.gt["present"] and r.gt["distance_m"] < 6]
    assert len(near) == 4  # (at 23 m the figure is 4 px tall: the mask samples pixel centres)
    for rec in near:
        assert np.allclose(rec.gt["bbox_mask"], rec.gt["bbox_proj"], atol=1.5), rec.gt
