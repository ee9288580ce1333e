"""The CLI: --help everywhere, --json parses, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from truthline.simulate import write_dataset


def tl(*args: str, ws: Path | None = None, check: int | None = 0) -> subprocess.CompletedProcess:
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
    if check is not None:
        assert proc.returncode == check, proc.stdout + proc.stderr
    return proc


@pytest.mark.parametrize(
    "cmd",
    [
        [],
        ["init"],
        ["projects"],
        ["items"],
        ["items", "import"],
        ["status"],
        ["prefill"],
        ["annotate"],
        ["audit"],
        ["stats"],
        ["benchmark"],
        ["dashboard"],
        ["demo"],
        ["models"],
    ],
)
def test_help_everywhere(cmd):
    out = tl(*cmd, "--help").stdout
    assert "Usage:" in out


def test_init_import_status_json(tmp_path):
    ws = tmp_path / "ws"
    init = json.loads(tl("init", "steel-safety", "--json", ws=ws).stdout)
    assert init["project"] == "steel-safety"
    assert Path(init["path"]).is_file()
    media = tmp_path / "clips"
    csv_path = write_dataset(media, n_clips=4)
    imp = json.loads(
        tl("items", "import", str(media), "--metadata", str(csv_path), "--json", ws=ws).stdout
    )
    assert imp["added"] == 4
    again = json.loads(
        tl("items", "import", str(media), "--metadata", str(csv_path), "--json", ws=ws).stdout
    )
    assert again["added"] == 0 and again["unchanged"] == 4
    st = json.loads(tl("status", "--json", ws=ws).stdout)
    assert st["items"] == 4 and st["predictions"]["total"] == 0
    items = json.loads(tl("items", "list", "--json", ws=ws).stdout)
    assert len(items) == 4 and {"site", "camera", "visibility"} <= set(items[0]["meta"])
    projects = json.loads(tl("projects", "list", "--json", ws=ws).stdout)
    assert projects[0]["name"] == "steel-safety" and projects[0]["fields"] == 9 + 14
    renamed = json.loads(tl("init", "steel-safety", "--name", "plant-b", "--json", ws=ws).stdout)
    assert renamed["project"] == "plant-b"
    assert "several projects" in tl("status", ws=ws, check=1).stderr


def test_user_errors_exit_1_with_clear_message(tmp_path):
    ws = tmp_path / "ws"
    err = tl("status", ws=ws, check=1).stderr
    assert "no project in workspace" in err and "truthline init" in err
    err = tl("init", "no-such-template", ws=ws, check=1).stderr
    assert "unknown template 'no-such-template'" in err and "steel-safety" in err
    tl("init", "steel-safety", ws=ws)
    err = tl("items", "import", str(tmp_path / "missing"), ws=ws, check=1).stderr
    assert "no such file or folder" in err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "project.toml").write_text(
        'name = "bad"\nmedia = "image"\n[fields.x]\ntype = "colour"\n'
    )
    err = tl("projects", "check", str(bad), check=1).stderr
    assert "project.toml: fields.x.type: unknown field type 'colour'" in err
    assert "Traceback" not in err


def test_usage_errors_exit_2():
    assert tl("no-such-command", check=2).returncode == 2
    assert tl("status", "--no-such-flag", check=2).returncode == 2


def test_db_option_and_version(tmp_path):
    ws = tmp_path / "ws"
    db = tmp_path / "elsewhere.db"
    tl("--db", f"sqlite:///{db}", "init", "steel-safety", ws=ws)
    assert db.is_file()
    assert "truthline 0.1.0" in tl("--version").stdout
