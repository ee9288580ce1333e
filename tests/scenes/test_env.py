"""The scenes venv (bpy 5.0.1) goes through the sidecar-venv helper (``truthline._venv``):
once, under a lock, renamed into place only when ``import bpy`` works at the pinned version.

The real install (bpy, ~820 MB) runs in scripts/test.sh; here the venv is real (``python -m
venv``) but pip is replaced by a recorder that drops stub ``bpy``/``numpy``/``cv2``/``PIL``
modules into it, so the scenes probe itself decides, without a download."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from truthline import _venv
from truthline.scenes import SceneError
from truthline.scenes import env as se

STUBS = {
    "bpy": f"class app:\n    version_string = {se.BPY_VERSION!r}\n",
    "numpy": "",
    "cv2": "",
    "PIL": "",
}


def _site(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _stub(venv: Path, bpy_version: str = se.BPY_VERSION) -> None:
    for name, text in STUBS.items():
        (_site(venv) / name).mkdir(parents=True, exist_ok=True)
        (_site(venv) / name / "__init__.py").write_text(text.replace(se.BPY_VERSION, bpy_version))


@pytest.fixture
def fake_pip(monkeypatch: pytest.MonkeyPatch):
    """pip replaced: records where it installs, takes a while, then writes the stubs (or fails
    like pip does). The venv is created without pip (no ensurepip)."""
    installs: list[tuple[Path, list[str]]] = []
    state = {"ok": True}
    real_create = _venv._create_venv

    def create(path, base, *, with_pip, prompt=""):
        real_create(path, base, with_pip=False, prompt=prompt)

    def pip_install(python: Path, args: list[str], *, progress: bool) -> None:
        venv = python.parent.parent
        installs.append((venv, args))
        time.sleep(0.3)  # long enough for a second caller to arrive and wait on the lock
        if not state["ok"]:
            raise _venv._BuildFailed("pip exited with 1:\nERROR: No matching distribution")
        _stub(venv)

    monkeypatch.setattr(_venv, "_create_venv", create)
    monkeypatch.setattr(_venv, "_pip_install", pip_install)
    return installs, state


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TRUTHLINE_SCENES_VENV", str(tmp_path / "scenes"))
    return tmp_path / "scenes"


def test_the_venv_path_is_unchanged(tmp_path, monkeypatch):
    """Cached venvs from before the shared helper stay where they are (CI caches, users)."""
    monkeypatch.delenv("TRUTHLINE_SCENES_VENV", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert se.venv_dir() == tmp_path / "truthline" / "scenes-bpy-5.0.1"
    assert se.python_exe() == se.venv_dir() / "bin" / "python"
    monkeypatch.setenv("TRUTHLINE_SCENES_VENV", str(tmp_path / "mine"))
    assert se.venv_dir() == tmp_path / "mine"


def test_two_callers_install_once_and_the_venv_appears_whole(here, fake_pip):
    installs, _ = fake_pip
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(se.ensure(progress=False)))
               for _ in range(2)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [here] * 2
    # one install, into the side folder, with the pins
    assert installs == [(here.with_name("scenes.partial"), list(se.REQUIREMENTS))]
    assert se.installed() and not here.with_name("scenes.partial").exists()
    marker = json.loads((here / _venv.MARKER).read_text())
    assert marker["requirements"] == list(se.REQUIREMENTS) and marker["python"] == "3.11"
    se.ensure(progress=False)  # ready: nothing installed again
    assert len(installs) == 1


def test_a_failed_install_leaves_no_venv_and_says_what_to_do(here, fake_pip):
    fake_pip[1]["ok"] = False
    with pytest.raises(
        SceneError,
        match=r"installing bpy==5\.0\.1 .* into .*scenes failed: pip exited with 1(.|\n)*"
        r"retry with `python -m truthline\.scenes\.env --ensure`, or set TRUTHLINE_SCENES_VENV",
    ):
        se.ensure(progress=False)
    assert not here.exists() and not here.with_name("scenes.partial").exists()


def test_a_wrong_bpy_is_not_taken_for_the_pinned_one(here, fake_pip, monkeypatch):
    def wrong(python: Path, args: list[str], *, progress: bool) -> None:
        _stub(python.parent.parent, bpy_version="4.2.0")

    monkeypatch.setattr(_venv, "_pip_install", wrong)
    with pytest.raises(SceneError, match=r"do not pass the check `import bpy"):
        se.ensure(progress=False)
    assert not here.exists()


def test_a_venv_made_before_the_marker_is_kept(here):
    """The earlier code's venvs have no marker: one that imports bpy 5.0.1 is adopted."""
    _venv._create_venv(here, None, with_pip=False)
    _stub(here)
    inode = here.stat().st_ino
    assert se.installed()
    assert se.ensure(progress=False) == here and here.stat().st_ino == inode
    assert json.loads((here / _venv.MARKER).read_text())["requirements"] == list(se.REQUIREMENTS)


def test_the_cli_reports_and_ensures(here, fake_pip, capsys):
    assert se.main([]) == 0
    assert capsys.readouterr().out == f"scenes venv: {here} (missing)\n"
    assert se.main(["--ensure", "--quiet"]) == 0
    assert capsys.readouterr().out == f"scenes environment: bpy 5.0.1 in {here}\n"
    assert se.main([]) == 0
    assert capsys.readouterr().out == f"scenes venv: {here} (ready)\n"


def test_the_cli_fails_with_one_line_and_exit_1(here, fake_pip, capsys):
    fake_pip[1]["ok"] = False
    assert se.main(["--ensure", "--quiet"]) == 1
    assert capsys.readouterr().err.startswith("error: installing bpy==5.0.1 numpy<2")
