"""The scene contract on the host: job keys, records, grids, the registry, the store."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from truthline.scenes import (
    FrameRecord,
    Grid,
    RenderSettings,
    SceneError,
    environment,
    get_environment,
    job_key,
)
from truthline.scenes._store import FrameStore
from truthline.scenes._types import SCHEMA_VERSION


def test_job_key_covers_what_the_frame_is_and_not_how_fast_it_renders():
    s = RenderSettings(engine="BLENDER_WORKBENCH", spp=1, res_x=96, res_y=54)
    k = job_key("dori", "1", {"a": 1, "b": 2}, 7, s)
    assert k == job_key("dori", "1", {"b": 2, "a": 1}, 7, s)  # key order does not matter
    assert k == job_key("dori", "1", {"a": 1, "b": 2}, 7, replace(s, threads=2))
    for other in (
        job_key("dori", "2", {"a": 1, "b": 2}, 7, s),
        job_key("dori", "1", {"a": 1, "b": 3}, 7, s),
        job_key("dori", "1", {"a": 1, "b": 2}, 8, s),
        job_key("dori", "1", {"a": 1, "b": 2}, 7, replace(s, spp=2)),
        job_key("dori", "1", {"a": 1, "b": 2}, 7, replace(s, exr=True)),
    ):
        assert other != k


def test_render_settings_reject_bad_values_with_one_line():
    with pytest.raises(SceneError, match="EEVEE"):
        RenderSettings(engine="BLENDER_EEVEE")  # type: ignore[arg-type]
    with pytest.raises(SceneError, match="spp"):
        RenderSettings(spp=0)
    with pytest.raises(SceneError, match="both res_x and res_y"):
        RenderSettings(res_x=10)
    with pytest.raises(SceneError, match="unknown field"):
        RenderSettings.from_dict({"engine": "CYCLES", "sp": 3})


def test_frame_record_round_trips_and_refuses_other_schemas():
    r = FrameRecord(env="dori", env_version="1", params={"pose": "walking"}, seed=3,
                    render=RenderSettings().to_dict(), gt={"present": True},
                    images={"rgb": "ab" * 32}, image_ext={"rgb": "png"})  # fmt: skip
    back = FrameRecord.from_json(r.to_json())
    assert back == r and back.job_id == r.job_id and back.schema_version == SCHEMA_VERSION
    bad = r.to_json().replace(f'"schema_version": {SCHEMA_VERSION}', '"schema_version": 99')
    with pytest.raises(SceneError, match=r"r\.json: frame record schema 99"):
        FrameRecord.from_json(bad, source="r.json")
    with pytest.raises(SceneError, match=r"x\.json: not a frame record"):
        FrameRecord.from_json("{", source="x.json")


def test_grid_is_the_product_of_its_axes_in_a_stable_order():
    g = Grid("g", {"a": (1, 2), "b": ("x", "y", "z")}, fixed={"c": 0})
    frames = list(g)
    assert g.size == len(frames) == 6
    assert frames[0] == {"c": 0, "a": 1, "b": "x"} and frames[-1] == {"c": 0, "a": 2, "b": "z"}


def test_unknown_environment_and_grid_name_what_exists():
    with pytest.raises(SceneError, match=r"unknown scene environment 'nope' \(registered: .*dori"):
        get_environment("nope")
    with pytest.raises(SceneError, match=r"no grid 'huge' \(declared: paper, small, tiny\)"):
        get_environment("dori").grid("huge")  # type: ignore[attr-defined]
    assert "dori" in environment


def test_environments_import_on_the_host_without_bpy():
    code = (
        "import sys; from truthline.scenes import environment; "
        "[environment.get(n) for n in environment.names()]; "
        "assert 'bpy' not in sys.modules, 'bpy imported'; "
        "assert len(environment.names()) >= 7, environment.names(); print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_store_is_content_addressed_and_complete_only_with_all_images(tmp_path):
    st = FrameStore(tmp_path)
    sha = st.put_image(b"png-bytes", "png")
    assert st.put_image(b"png-bytes", "png") == sha  # same content, same file
    p = st.image_path(sha, "png")
    assert p.read_bytes() == b"png-bytes" and p.parent.name == sha[:2]
    assert not list(tmp_path.rglob("*.part"))
    rec = FrameRecord(env="dori", env_version="1", params={}, seed=1,
                      render=RenderSettings().to_dict(), images={"rgb": sha},
                      image_ext={"rgb": "png"})  # fmt: skip
    assert not st.has(rec.job_id)
    st.save(rec)
    assert st.has(rec.job_id)
    assert [r.job_id for r in st.records()] == [rec.job_id]
    p.unlink()  # an image lost after the record was written: the frame is not complete
    assert not st.has(rec.job_id)
    with pytest.raises(SceneError, match="has no 'nv' image"):
        st.variant_path(rec, "nv")


def test_worker_log_filter_drops_driver_noise_and_keeps_real_lines():
    from truthline.scenes._worker import NOISE

    noise = [
        "CUEW initialization failed: Error opening the library",
        "EGL_BAD_MATCH error in eglMakeCurrent",
        "Fra:1 Mem:12.3M (Peak 14M) | Time:00:00.12 | Rendering 1 / 4 samples",
        "Saved: '/tmp/x/rgb.png'",
    ]
    real = ["Traceback (most recent call last):", "KeyError: 'Principled BSDF'"]
    assert all(NOISE.search(x) for x in noise)
    assert not any(NOISE.search(x) for x in real)


def test_add_variant_stores_the_image_and_rewrites_the_record(tmp_path):
    st = FrameStore(tmp_path)
    rec = FrameRecord(env="dori", env_version="1", params={}, seed=1,
                      render=RenderSettings().to_dict())  # fmt: skip
    st.add_variant(rec, "nv", b"nv-png", "png")
    back = st.load(rec.job_id)
    assert st.variant_path(back, "nv").read_bytes() == b"nv-png"
    with pytest.raises(SceneError, match="image variant 'raw'"):
        st.add_variant(rec, "raw", b"x", "png")


def test_missing_scenes_env_is_one_clear_error(tmp_path, monkeypatch):
    from truthline.scenes import WorkerError, render
    from truthline.scenes import env as scenes_env

    monkeypatch.setenv("TRUTHLINE_SCENES_VENV", str(tmp_path / "nowhere"))
    assert not scenes_env.installed()
    frames = list(get_environment("dori").grid("tiny"))  # type: ignore[attr-defined]
    with pytest.raises(WorkerError, match=r"scenes environment is missing .*--ensure"):
        render("dori", frames, tmp_path / "out", RenderSettings(engine="BLENDER_WORKBENCH"))
    assert not (tmp_path / "out" / "records").exists()
