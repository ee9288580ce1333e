"""Label Studio's venv and template follow the XDG base-directory spec (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from truthline.annotate import server_env


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("TRUTHLINE_LS_VENV", raising=False)
    monkeypatch.delenv("TRUTHLINE_LS_TEMPLATE", raising=False)
    return monkeypatch


def test_xdg_cache_home_moves_venv_and_template(clean_env, tmp_path: Path) -> None:
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path))
    v = f"ls-{server_env.LS_VERSION}"
    assert server_env.venv_dir() == tmp_path / "truthline" / v
    assert server_env.template_dir() == tmp_path / "truthline" / f"{v}-template"


def test_unset_or_relative_xdg_falls_back_to_home_cache(clean_env, tmp_path: Path) -> None:
    clean_env.setenv("HOME", str(tmp_path))
    clean_env.delenv("XDG_CACHE_HOME", raising=False)
    want = tmp_path / ".cache" / "truthline" / f"ls-{server_env.LS_VERSION}"
    assert server_env.venv_dir() == want
    clean_env.setenv("XDG_CACHE_HOME", "relative/cache")  # invalid per the spec: ignored
    assert server_env.venv_dir() == want


def test_explicit_venv_wins_over_xdg(clean_env, tmp_path: Path) -> None:
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    clean_env.setenv("TRUTHLINE_LS_VENV", str(tmp_path / "mine"))
    assert server_env.venv_dir() == tmp_path / "mine"


# -- the venv goes through the sidecar helper (truthline._venv, issue 21) ------------------


def test_the_server_runs_through_the_interpreter_not_a_shebang(clean_env, tmp_path: Path) -> None:
    clean_env.setenv("TRUTHLINE_LS_VENV", str(tmp_path / "ls"))
    assert server_env.label_studio_command() == [
        str(tmp_path / "ls" / "bin" / "python"),
        "-m",
        "label_studio.server",
    ]
    assert server_env.python_exe() == tmp_path / "ls" / "bin" / "python"
    assert server_env.SPEC.requirements == (f"label-studio=={server_env.LS_VERSION}",)


def _legacy_ls_venv(venv: Path, version: str) -> None:
    """A venv as the earlier code left it: no marker, label_studio importable."""
    import sys

    from truthline import _venv

    _venv._create_venv(venv, None, with_pip=False)
    pyver = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    pkg = venv / "lib" / pyver / "site-packages" / "label_studio"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"__version__ = {version!r}\n")


def test_a_cached_venv_from_before_the_helper_is_kept(clean_env, tmp_path: Path) -> None:
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path))
    venv = server_env.venv_dir()
    _legacy_ls_venv(venv, server_env.LS_VERSION)
    inode = venv.stat().st_ino
    assert server_env.installed()
    assert server_env.ensure_venv(progress=False) == venv and venv.stat().st_ino == inode
    assert (venv / ".truthline-venv.json").exists()  # adopted: cheap to check from now on


def test_another_label_studio_is_not_ready_and_a_failed_install_says_how_to_fix(
    clean_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from truthline import _venv
    from truthline.errors import TruthlineError

    clean_env.setenv("TRUTHLINE_LS_VENV", str(tmp_path / "ls"))
    _legacy_ls_venv(tmp_path / "ls", "1.0.0")
    assert not server_env.installed()

    def no_index(python: Path, args: list[str], *, progress: bool) -> None:
        raise _venv._BuildFailed("pip exited with 1:\nERROR: No matching distribution found")

    real = _venv._create_venv
    monkeypatch.setattr(_venv, "_pip_install", no_index)
    monkeypatch.setattr(  # a real venv, without ensurepip's few seconds
        _venv, "_create_venv", lambda p, b, *, with_pip, prompt="": real(p, b, with_pip=False)
    )
    with pytest.raises(
        TruthlineError,
        match=r"installing label-studio==1\.23\.2 into .*ls failed: pip exited with 1(.|\n)*"
        r"retry with `python -m truthline\.annotate\.server_env --ensure`, or set "
        r"TRUTHLINE_LS_VENV",
    ):
        server_env.ensure_venv(progress=False)
    assert (tmp_path / "ls").is_dir() and not (tmp_path / "ls.partial").exists()  # old kept


def test_two_callers_migrate_the_template_once(
    clean_env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    clean_env.setenv("TRUTHLINE_LS_TEMPLATE", str(tmp_path / "tpl"))
    builds: list[Path] = []

    def build(tdir: Path, *, progress: bool) -> None:
        builds.append(tdir)
        time.sleep(0.3)
        tdir.mkdir()
        (tdir / "label_studio.sqlite3").write_bytes(b"db")
        (tdir / "label_studio.json").write_text("{}")

    monkeypatch.setattr(server_env, "_build_template", build)
    threads = [threading.Thread(target=server_env.ensure_template, kwargs={"progress": False})
               for _ in range(2)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [tmp_path / "tpl"]
