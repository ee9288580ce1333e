"""The DORI person environment's host side: grids, params, questions, overrides."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from truthline.cli import app
from truthline.scenes import SceneError, get_environment
from truthline.systems.syndorbench.envs.dori_person import ABSENT, ACTION_PROMPT, PRESENCE_PROMPT


def test_paper_grid_is_the_syndorbench_design():
    g = get_environment("dori").grid("paper")  # type: ignore[attr-defined]
    # 3 distances x 8 azimuths x 4 elevations x 4 lightings x (8 actions + absent) x 3 scenes
    assert g.size == 3 * 8 * 4 * 4 * 9 * 3 == 10368
    assert g.axes["distance_m"] == (5.4, 10.8, 23.0)
    assert set(g.axes["lighting"]) == {"morning", "noon", "evening", "midnight"}
    assert ABSENT in g.axes["pose"]


def test_grid_list_prints_the_size():
    res = CliRunner().invoke(app, ["scenes", "grid", "dori", "--list"])
    assert res.exit_code == 0, res.output
    assert "paper: 10368 frames" in res.output and "tiny: 4 frames" in res.output


def test_questions_follow_the_paper_prompts():
    env = get_environment("dori")
    present = env.questions({"present": True, "pose": "covering_face"}, None)
    assert [(q["question"], q["answer"]) for q in present] == [
        (PRESENCE_PROMPT, "1"),
        (ACTION_PROMPT, "covering face with hands"),
    ]
    absent = env.questions({"present": False, "pose": None}, None)
    assert [(q["id"], q["answer"]) for q in absent] == [("presence", "0")]


def test_bad_params_are_one_line_and_midnight_keeps_the_exr():
    env = get_environment("dori")
    good = {"distance_m": 5.4, "azimuth_deg": 0.0, "elevation_deg": 0.0,
            "lighting": "noon", "pose": "walking", "scene": "field"}  # fmt: skip
    env.check(good)  # type: ignore[attr-defined]
    with pytest.raises(SceneError, match="dori: pose 'flying'"):
        env.check({**good, "pose": "flying"})  # type: ignore[attr-defined]
    with pytest.raises(SceneError, match="dori: lighting 'dusk'"):
        env.check({**good, "lighting": "dusk"})  # type: ignore[attr-defined]
    assert env.render_overrides({**good, "lighting": "midnight"}) == {"exr": True}  # type: ignore[attr-defined]
    assert env.render_overrides(good) == {}  # type: ignore[attr-defined]


def test_sampler_honours_strata_and_is_seeded():
    env = get_environment("dori")
    a = env.sample(np.random.default_rng(1), {"lighting": "midnight"})
    b = env.sample(np.random.default_rng(1), {"lighting": "midnight"})
    assert a == b and a["lighting"] == "midnight"
    seen = {env.sample(np.random.default_rng(i))["distance_m"] for i in range(40)}
    assert seen == {5.4, 10.8, 23.0}


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--sample", "2", "--grid", "tiny"], "give --grid or --sample, not both"),
        (["--res", "96by54"], "--res '96by54': give WIDTHxHEIGHT"),
        (["--engine", "eevee"], "--engine 'eevee': use cycles or workbench"),
        (["--grid", "huge"], "no grid 'huge' (declared: paper, small, tiny)"),
    ],
)
def test_render_command_rejects_bad_options_in_one_line(tmp_path, args, msg):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "truthline", "scenes", "render", "dori", "--out", str(tmp_path)]
    res = subprocess.run([*cmd, *args], capture_output=True, text=True)
    assert res.returncode == 1, res.stderr
    lines = [ln for ln in (res.stdout + res.stderr).splitlines() if ln.strip()]
    assert len(lines) == 1 and msg in lines[0]
    assert not (tmp_path / "records").exists()
