"""Issue 26: scripts/demo.sh prints one line per phase, pip's output goes to a log file,
and a failed install shows the log's tail (not 300 lines of pip on every first run)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "demo.sh"
PIP_LINES = 300


def _fake_venv(root: Path, *, pip_fails: bool) -> Path:
    """A venv whose python prints pip-like chatter and whose truthline echoes its args."""
    bindir = root / "venv" / "bin"
    bindir.mkdir(parents=True)
    py = bindir / "python"
    py.write_text(
        "#!/bin/sh\n"
        f'i=0; while [ $i -lt {PIP_LINES} ]; do echo "Collecting package-$i"; i=$((i+1)); done\n'
        + (
            'case "$*" in *"-e ."*) echo "ERROR: planted failure" >&2; exit 1;; esac\n'
            if pip_fails
            else ""
        )
        + "exit 0\n"
    )
    tl = bindir / "truthline"
    tl.write_text('#!/bin/sh\necho "truthline ran: $*"\n')
    for f in (py, tl):
        f.chmod(0o755)
    return root / "venv"


def _run(tmp_path: Path, *, pip_fails: bool) -> subprocess.CompletedProcess[str]:
    venv = _fake_venv(tmp_path, pip_fails=pip_fails)
    env = {**os.environ, "TRUTHLINE_VENV": str(venv)}
    return subprocess.run(
        ["bash", str(SCRIPT), "--size", "small"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip


def test_one_line_per_phase_and_pip_in_the_log(tmp_path: Path) -> None:
    res = _run(tmp_path, pip_fails=False)
    assert res.returncode == 0, res.stderr
    out = (res.stdout + res.stderr).splitlines()
    assert len(out) <= 6, out  # phases, not pip's chatter
    assert "Collecting" not in res.stdout + res.stderr
    assert any("[2/3]" in line and "install.log" in line for line in out)
    assert out[-1] == "truthline ran: demo --size small"
    log = tmp_path / "venv" / "install.log"
    assert log.read_text().count("Collecting package-") == 2 * PIP_LINES  # pip, then -e .


def test_failed_install_shows_the_log_tail(tmp_path: Path) -> None:
    res = _run(tmp_path, pip_fails=True)
    assert res.returncode == 1
    assert "installing truthline failed" in res.stderr
    assert "ERROR: planted failure" in res.stderr  # the tail of the log
    assert res.stderr.count("Collecting") <= 20
    assert "truthline ran" not in res.stdout
