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
