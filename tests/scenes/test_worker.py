"""Real renders in the scenes venv (bpy 5.0.1): projection, skeleton, GT vs mask, the
worker's failure handling, the store's resume and the Ray fan-out. Tiny frames only."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image

from truthline.scenes import CameraPose, CameraSpec, RenderSettings, WorkerError, get_environment
from truthline.scenes import _camera as cm
from truthline.scenes import _humanoid as hu
from truthline.scenes._render import Job, execute, render
from truthline.scenes._store import FrameStore
from truthline.scenes._worker import WorkerClient

WB = RenderSettings(engine="BLENDER_WORKBENCH", spp=1, res_x=192, res_y=108)
DAY = {"distance_m": 5.4, "azimuth_deg": 30.0, "elevation_deg": 15.0,
       "lighting": "noon", "pose": "walking", "scene": "field"}  # fmt: skip


def _job(params, settings=WB, seed=1):
    env = get_environment("dori")
    return Job("dori", env.version, dict(params), seed, settings)


def test_projection_matches_blender_world_to_camera_view(worker):
    rng = np.random.default_rng(0)
    pts = rng.uniform([-2, -2, 0], [2, 2, 2], size=(40, 3))
    for spec, pose, res in [
        (cm.PAPER_CAMERA, CameraPose((3.0, -4.0, 2.5), (0, 0, 0.9)), None),
        (cm.NOMINAL_1_2_8_CAMERA, CameraPose((-6, 2, 1.0), (0.2, 0, 1.0), roll_deg=17), (960, 540)),
        (
            CameraSpec(23.5, 15.6, 24, 600, 400),
            CameraPose((1, -3, 4), (0, 0, 0), roll_deg=-40),
            None,
        ),
    ]:
        res_xy = res or (spec.res_x, spec.res_y)
        got = worker.request({"op": "project", "spec": spec.to_dict(), "pose": pose.to_dict(),
                              "points": pts.tolist(), "res": list(res_xy)})  # fmt: skip
        assert got["ok"], got
        blender = np.array(got["points"])
        ours = cm.project(pts, spec, pose, res_xy)
        assert np.abs(blender[:, :2] - ours[:, :2]).max() < 1e-3  # pixels
        assert np.abs(blender[:, 2] - ours[:, 2]).max() < 1e-6  # depth (m)


def test_skeleton_is_the_live_rigify_metarig(worker):
    got = worker.request({"op": "metarig"})
    assert got["ok"], got
    for name, (parent, head, tail) in hu.REST_BONES.items():
        p, h, t = got["bones"][name]
        assert p == parent
        assert np.allclose(h, head, atol=1e-3) and np.allclose(t, tail, atol=1e-3), name


def test_person_frame_gt_agrees_with_its_visible_mask(worker, tmp_path):
    res = execute(worker, _job(DAY).payload())
    assert res["ok"], res
    gt = res["gt"]
    assert gt["present"] and gt["pose"] == "walking" and gt["action"] == "walking"
    # the projected bbox (evaluated vertices) and the mask bbox agree to ~1 px
    assert np.abs(np.subtract(gt["bbox_proj"], gt["bbox_mask"])).max() <= 1.0
    mask = np.asarray(Image.open(_write(tmp_path, res, "mask")).convert("L"))
    assert mask.shape == (108, 192) and set(np.unique(mask)) <= {0, 255}  # no AA, binary
    assert int((mask > 127).sum()) == gt["visible_px"] > 50
    # PPM: formula at 1080p (f_px / depth) and apparent (bbox height / true height)
    assert gt["ppm_formula"] == pytest.approx(cm.f_px(cm.PAPER_CAMERA) / 5.4)
    assert gt["dori_class"] == "recognition"
    assert 0.8 < gt["ppm_apparent"] / gt["ppm_formula"] < 1.15
    assert gt["subject_height_m"] == pytest.approx(hu.figure_height("walking"), abs=2e-3)
    rgb = np.asarray(Image.open(_write(tmp_path, res, "rgb")))
    assert rgb.shape == (108, 192, 3)
    assert set(res["timings"]) >= {"build", "render", "mask", "extract", "total"}
    assert res["blender_version"] == "5.0.1"


def test_absent_frame_is_the_same_view_without_a_person(worker):
    res = execute(worker, _job({**DAY, "pose": "absent"}).payload())
    assert res["ok"], res
    gt = res["gt"]
    assert gt["present"] is False and gt["visible_px"] == 0 and gt["bbox_mask"] is None
    assert gt["bbox_proj"] is None and gt["dori_class"] == "recognition"


def test_midnight_cycles_frame_keeps_a_dim_linear_exr(worker, tmp_path):
    s = RenderSettings(engine="CYCLES", spp=1, res_x=96, res_y=54, denoise=None, exr=True)
    res = execute(worker, _job({**DAY, "lighting": "midnight"}, s).payload())
    assert res["ok"], res
    ext, data = res["data"]["linear"]
    assert ext == "exr" and data[:4] == b"\x76\x2f\x31\x01"  # OpenEXR magic
    from truthline.scenes import _isp

    p = _write(tmp_path, res, "linear")
    lin = _isp.read_exr(p)  # whatever the host's OpenCV wheel was built with
    assert lin.dtype == np.float32 and float(lin.mean()) < 0.05


def test_scene_error_keeps_the_worker_and_a_crash_restarts_it(worker):
    bad = {**_job(DAY).payload(), "params": {**DAY, "pose": "flying"}}
    res = execute(worker, bad)
    assert res["ok"] is False and "pose 'flying'" in res["error"]
    pid = worker.pid
    assert worker.alive
    with pytest.raises(
        WorkerError, match=r"scene job crash-1: the Blender worker died \(exit code 70\)"
    ):
        worker.request({"op": "crash", "job_id": "crash-1"})
    assert not worker.alive
    res = execute(worker, _job(DAY).payload())  # the next job gets a fresh worker
    assert res["ok"], res
    assert worker.pid != pid and worker.restarts == 1


def test_timeout_names_the_job_and_the_next_job_runs():
    with WorkerClient(timeout_s=60) as w:
        job = _job(DAY).payload()
        with pytest.raises(WorkerError, match=rf"scene job {job['job_id']} \(dori\): no answer"):
            w.request({**job, "out_dir": "/tmp"}, timeout_s=0.05)
        assert execute(w, job)["ok"]


def test_render_stores_by_content_hash_and_a_rerun_skips(worker, tmp_path):
    env = get_environment("dori")
    frames = list(env.grid("tiny"))  # type: ignore[attr-defined]
    rep = render("dori", frames, tmp_path, WB, client=worker)
    assert (rep.planned, rep.rendered, rep.skipped, rep.failed) == (4, 4, 0, [])
    st = FrameStore(tmp_path)
    recs = {r.job_id: r for r in st.records()}
    assert len(recs) == 4
    for r in recs.values():
        assert r.blender_version == "5.0.1" and r.render["engine"] == "BLENDER_WORKBENCH"
        assert r.gt["present"] == (r.params["pose"] != "absent")
        assert r.questions[0]["answer"] == ("1" if r.gt["present"] else "0")
        import hashlib

        for v in r.images:
            assert hashlib.sha256(st.variant_path(r, v).read_bytes()).hexdigest() == r.images[v]
    # the two absent frames share their mask image (all black): stored once
    absent = [r for r in recs.values() if not r.gt["present"]]
    assert absent[0].images["mask"] == absent[1].images["mask"]
    again = render("dori", frames, tmp_path, WB, client=worker)
    assert (again.rendered, again.skipped) == (0, 4)


def test_ray_fan_out_renders_the_same_frames(tmp_path, ray_local):
    from truthline.scenes import SceneError
    from truthline.scenes._render import _ray_results

    env = get_environment("dori")
    frames = list(env.grid("tiny"))[:2]  # type: ignore[attr-defined]
    rep = render("dori", frames, tmp_path, WB, workers=2)
    assert (rep.rendered, rep.failed) == (2, [])
    assert {r.gt["present"] for r in rep.records} == {True, False}
    assert ray_local.is_initialized()  # render() joined the session, and left it running
    # a call that raises inside an actor is one clear error, not a Ray traceback
    with pytest.raises(SceneError, match=r"a Ray render worker failed .*rerun"):
        list(_ray_results([{"op": "render"}], 1, None, 60))


def _write(tmp_path, res, variant):
    ext, data = res["data"][variant]
    p = tmp_path / f"{variant}.{ext}"
    p.write_bytes(data)
    return p


def test_render_time_shake_and_dof_blur_the_frame(worker):
    """Hand-shake (camera motion blur) and DOF are applied in the render: the subject's
    edges get softer than in the same frame without them."""
    s = RenderSettings(engine="CYCLES", spp=4, res_x=160, res_y=90, denoise=None, mask=False)
    near = {**DAY, "distance_m": 2.5, "elevation_deg": 0.0, "pose": "standing"}

    def sharpness(params):
        res = execute(worker, _job(params, s).payload())
        assert res["ok"], res
        import io

        g = np.asarray(Image.open(io.BytesIO(res["data"]["rgb"][1])).convert("L"), float)
        gy, gx = np.gradient(g)
        return float(np.percentile(np.hypot(gx, gy), 99))

    base = sharpness(near)
    assert sharpness({**near, "shake_deg": 3.0}) < 0.8 * base
    # a 2.8 mm f/1.4 lens is sharp from ~1 m to infinity (hyperfocal ~1.9 m): focused on the
    # subject nothing changes; focused at 5 cm the subject blurs by ~3.6 px at 160 px wide
    assert sharpness({**near, "dof": True}) == pytest.approx(base, rel=0.1)
    assert sharpness({**near, "dof": True, "focus_m": 0.05}) < 0.8 * base


def test_view_transform_is_standard_unless_asked(worker):
    """Standard by default (AgX, Blender's default, compresses contrast: SCENES.md pitfall 1)."""
    s = RenderSettings(engine="BLENDER_WORKBENCH", spp=1, res_x=96, res_y=54, mask=False)

    def grey(params):
        res = execute(worker, _job(params, s).payload())
        assert res["ok"], res
        import io

        return np.asarray(Image.open(io.BytesIO(res["data"]["rgb"][1])).convert("L"), float)

    std, agx = grey(DAY), grey({**DAY, "view_transform": "AgX"})
    assert np.array_equal(std, grey({**DAY, "view_transform": "Standard"}))
    assert np.abs(std - agx).mean() > 2.0  # AgX really changes the tones


def test_every_environment_module_imports_in_the_scenes_venv(scenes_env, tmp_path):
    """Environment modules are imported by the worker too (by the module name each render job
    carries: the bpy venv has no entry points): only stdlib/numpy/PIL/cv2 (and
    truthline.scenes) at top level, nothing from the host's venv."""
    import subprocess
    from importlib.metadata import entry_points
    from pathlib import Path

    from truthline.scenes import env as scenes_env_mod

    declared = {ep.name: ep.module for ep in entry_points(group="truthline.scenes.environments")}
    assert {"dori", "tape_gap", "plate", "vehicle_face", "damage_view"} <= set(declared)
    pkg = Path(__file__).resolve().parents[2] / "truthline"
    (tmp_path / "truthline").symlink_to(pkg)
    code = (
        "import importlib, json, sys; from truthline.scenes import environment\n"
        "failed = {}\n"
        "for m in sorted(set(sys.argv[1:])):\n"
        "    try: importlib.import_module(m)\n"
        "    except Exception as e: failed[m] = repr(e)\n"
        "print(json.dumps({'failed': failed, 'names': sorted(environment.as_dict())}))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONPATH=str(tmp_path), PYTHONNOUSERSITE="1")
    out = subprocess.run([str(scenes_env_mod.python_exe()), "-c", code, *declared.values()],
                         capture_output=True, text=True, env=env, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["failed"] == {}, got["failed"]
    assert got["names"] == sorted(declared)


def test_scenes_venv_ensure_is_a_no_op_when_ready(scenes_env):
    import time

    from truthline.scenes import env as scenes_env_mod

    t = time.perf_counter()
    v = scenes_env_mod.ensure(progress=False)
    assert v == scenes_env_mod.venv_dir() and time.perf_counter() - t < 30
    assert not v.with_name(v.name + ".partial").exists()


def test_cli_renders_a_sample_and_a_rerun_renders_nothing(tmp_path, scenes_env):
    import json

    from typer.testing import CliRunner

    from truthline.cli import app

    args = ["scenes", "render", "dori", "--sample", "2", "--seed", "5", "--engine",
            "workbench", "--res", "96x54", "--out", str(tmp_path), "--json"]  # fmt: skip
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["rendered"] == 2
    again = json.loads(CliRunner().invoke(app, args).stdout)
    assert (again["rendered"], again["skipped"]) == (0, 2)
    assert len(list((tmp_path / "records").glob("*.json"))) == 2
