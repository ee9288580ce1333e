"""`truthline pow` end to end on tiny Workbench renders: frames and the rating project,
SIMULATED ratings, validation (thresholds written), benchmark items and gold, a benchmark
run with SIMULATED models whose report shows the per-environment tables. Fails without
the scenes venv."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from truthline.cli import app


def test_rates_without_rendering_and_a_bad_env_name(tmp_path):
    runner = CliRunner()
    res = runner.invoke(
        app, ["--workspace", str(tmp_path), "pow", "rates", "--n", "40", "--env", "plate", "--json"]
    )
    assert res.exit_code == 0, res.output
    r = json.loads(res.stdout)["rates"][0]
    assert r["env"] == "plate" and r["n"] == 40 and 0 <= r["acceptable"] <= 1
    bad = runner.invoke(app, ["--workspace", str(tmp_path), "pow", "rates", "--env", "dori"])
    assert bad.exit_code == 1 and "not a proof-of-work environment" in str(bad.exception)


def test_frames_ratings_validate_import_run_report(tmp_path, scenes_env):
    ws = tmp_path / "ws"
    runner = CliRunner()

    def tl(*args: str):
        res = runner.invoke(app, ["--workspace", str(ws), *args])
        assert res.exit_code == 0, res.output
        return res

    fr = json.loads(
        tl("pow", "frames", "--per-env", "3", "--engine", "workbench", "--res", "160x120",
           "--env", "tape_gap", "--env", "plate", "--json").stdout
    )  # fmt: skip
    assert fr["frames"] == 6 and fr["rating_project"] == "pow-acceptability"
    # a second rendering of the same scenes (rank transfer between renderings)
    fr2 = json.loads(
        tl("pow", "frames", "--per-env", "3", "--engine", "workbench", "--res", "192x144",
           "--env", "tape_gap", "--env", "plate", "--append", "--json").stdout
    )  # fmt: skip
    assert fr2["frames"] == 12
    assert json.loads(tl("pow", "simulate-ratings", "--json").stdout)["simulated"] is True
    v = json.loads(tl("pow", "validate", "--resamples", "50", "--json").stdout)
    c = v["counts"]
    assert c["frames"] == 12 and c["tuning"] + c["held_out_total"] == 12
    assert (ws / "scenes" / "pow" / "thresholds.json").is_file()
    imp = json.loads(tl("pow", "import", "--json").stdout)
    assert imp["items"] == 12 and imp["tuned"] is True
    assert imp["withdrawn"] == 0  # clean Workbench renders pass the render sanity checks
    # the paper's withdrawal of defective frames: recorded, counted, reversible
    key = (ws / "scenes" / "pow" / "frames.csv").read_text().splitlines()[1].split(",")[0]
    w = json.loads(tl("pow", "withdraw", key, "--reason", "board texture defect", "--json").stdout)
    assert w["withdrawn"] == 1
    again = json.loads(tl("pow", "import", "--json").stdout)
    assert again["withdrawn"] == 1 and again["withdrawn_by_reason"] == {"board texture defect": 1}
    bad = runner.invoke(app, ["--workspace", str(ws), "pow", "withdraw", "nope/x", "--reason", "r"])
    assert bad.exit_code != 0 and "no item(s) 'nope/x'" in str(bad.exception)
    assert json.loads(tl("pow", "withdraw", key, "--undo", "--json").stdout)["reinstated"] == 1
    man = json.loads(
        tl("benchmark", "run", "--project", "proof-of-work", "--model", "simulated:pow-strong",
           "--model", "simulated:pow-weak", "--model", "simulated:pow-mid", "--json").stdout
    )  # fmt: skip
    rid = man.get("run_id") or man["manifest"]["run_id"]
    show = json.loads(tl("benchmark", "show", rid, "--project", "proof-of-work", "--json").stdout)
    assert "conditional" in json.dumps(show)
    across = json.loads(
        tl("benchmark", "across", rid, "--project", "proof-of-work", "--json").stdout
    )
    rt = json.dumps(across)
    assert "rendering_transfer" in rt and "workbench-8spp-192x144" in rt
