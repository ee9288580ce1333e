"""The scenes venv's creation logic: once, under a lock, renamed into place only when good.

The real install (bpy, ~820 MB) runs in scripts/test.sh; here pip is replaced by a recorder
so the locking and the .partial → final rename are checked without a download."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from truthline.scenes import SceneError
from truthline.scenes import env as se


def _fake(monkeypatch, *, pip_ok: bool = True) -> list[Path]:
    installs: list[Path] = []

    def installed(venv: Path | None = None) -> bool:
        return ((venv or se.venv_dir()) / "bpy-ok").exists()

    def create(self, path):  # the venv itself: just the folder
        Path(path, "bin").mkdir(parents=True)

    def run(cmd, **kw):
        venv = Path(cmd[0]).parent.parent
        installs.append(venv)
        time.sleep(0.3)  # long enough for a second caller to arrive and wait on the lock
        if pip_ok:
            (venv / "bpy-ok").write_text("")
        return subprocess.CompletedProcess(cmd, 0 if pip_ok else 1)

    monkeypatch.setattr(se, "installed", installed)
    monkeypatch.setattr(se._venv.EnvBuilder, "create", create)
    monkeypatch.setattr(se.subprocess, "run", run)
    monkeypatch.setattr(se, "_base_python", lambda: se.sys.executable)
    return installs


def test_two_callers_install_once_and_the_venv_appears_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_SCENES_VENV", str(tmp_path / "scenes"))
    installs = _fake(monkeypatch)
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(se.ensure(progress=False)))
               for _ in range(2)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [tmp_path / "scenes"] * 2
    assert installs == [tmp_path / "scenes.partial"]  # one install, into the side folder
    assert (tmp_path / "scenes" / "bpy-ok").exists()
    assert not (tmp_path / "scenes.partial").exists()
    se.ensure(progress=False)  # ready: nothing installed again
    assert len(installs) == 1


def test_a_failed_install_leaves_no_venv_and_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_SCENES_VENV", str(tmp_path / "scenes"))
    _fake(monkeypatch, pip_ok=False)
    with pytest.raises(
        SceneError, match=r"installing bpy==5\.0\.1 .* failed; retry, or set TRUTHLINE_SCENES_VENV"
    ):
        se.ensure(progress=False)
    assert not (tmp_path / "scenes").exists()
