"""Bounded input and work (issue 27): an alias bomb, a file that never ends and a billion
resamples are refused at once, in one line naming the limit and the variable raising it;
prompt templates stay inside the project folder; other silent accepts are refused."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from truthline._limits import (
    MAX_INPUT_BYTES,
    MAX_RESAMPLES,
    check_resamples,
    input_file,
    read_capped,
)
from truthline.errors import ProjectError, TruthlineError
from truthline.project import load_project

BASE = 'name = "n"\nmedia = "image"\n[fields.ok]\ntype = "boolean"\n'


def tl(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("TRUTHLINE_")}
    full.update(env or {})
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "truthline", *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd,
        timeout=120,
    )
    return proc, time.monotonic() - t0


def _definition(folder: Path, text: str, name: str = "project.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    return err


# -- YAML: alias bombs and nesting ----------------------------------------------------------
def _bomb(levels: int = 9) -> str:
    lines = ["name: n", "media: image", 'l0: &l0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join([*lines, "fields:", "  ok: {type: boolean}", ""])


def test_yaml_alias_bomb_is_refused_fast(tmp_path: Path) -> None:
    folder = _definition(tmp_path / "bomb", _bomb(), "project.yaml")
    t0 = time.monotonic()
    with pytest.raises(ProjectError, match="YAML nodes once aliases are expanded") as exc:
        load_project(folder)
    assert time.monotonic() - t0 < 10  # 9**9 expanded nodes: unbounded before
    assert "TRUTHLINE_MAX_YAML_NODES" in str(exc.value)
    assert len(str(exc.value).splitlines()) == 1


def test_small_aliases_still_load(tmp_path: Path) -> None:
    text = "name: n\nmedia: image\nfields:\n  a: &b {type: boolean}\n  c: *b\nstrata: &s [site]\n"
    project = load_project(_definition(tmp_path / "ok", text, "project.yaml"))
    assert list(project.field_types) == ["a", "c"]


def test_node_limit_is_raised_by_its_variable(tmp_path: Path, monkeypatch) -> None:
    folder = _definition(tmp_path / "bomb", _bomb(5), "project.yaml")  # 9**5 = 59049 nodes
    monkeypatch.setenv("TRUTHLINE_MAX_YAML_NODES", "1000")
    with pytest.raises(ProjectError, match="more than 1000 YAML nodes"):
        load_project(folder)
    monkeypatch.setenv("TRUTHLINE_MAX_YAML_NODES", "100000")
    with pytest.raises(ProjectError, match="unknown setting"):  # past the bound: l0..l4
        load_project(folder)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("project.yaml", "name: n\nmedia: image\nx: " + "[" * 3000 + "]" * 3000 + "\n"),
        ("project.toml", BASE + "x = " + "[" * 3000 + "]" * 3000 + "\n"),
        ("project.yaml", "name: n\nmedia: image\nx: &a [*a]\n"),
    ],
    ids=["yaml-deep", "toml-deep", "yaml-self-alias"],
)
def test_deep_nesting_is_one_line(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(ProjectError, match="nested more than 64 levels") as exc:
        load_project(_definition(tmp_path / "d", text, name))
    assert len(str(exc.value).splitlines()) == 1


def test_definition_size_is_bounded(tmp_path: Path, monkeypatch) -> None:
    folder = _definition(tmp_path / "big", BASE + "# " + "x" * 5000 + "\n")
    monkeypatch.setenv("TRUTHLINE_MAX_DEFINITION_BYTES", "4096")
    with pytest.raises(ProjectError, match="over the limit of 4096; set TRUTHLINE_MAX_DEFIN"):
        load_project(folder)


def test_a_device_is_not_a_definition() -> None:
    with pytest.raises(ProjectError, match="/dev/zero: not a regular file"):
        load_project("/dev/zero")


def test_invalid_yaml_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match=r"invalid YAML: .*\(line 2, column 1\)") as exc:
        load_project(_definition(tmp_path / "y", "name: [unclosed\n", "project.yaml"))
    assert len(str(exc.value).splitlines()) == 1


# -- files that never end ---------------------------------------------------------------------
def test_input_file_refuses_devices_folders_and_oversize(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(TruthlineError, match="not a regular file"):
        input_file(Path("/dev/zero"), "ratings")
    with pytest.raises(TruthlineError, match="is a folder"):
        input_file(tmp_path, "ratings")
    with pytest.raises(TruthlineError, match="no such file"):
        input_file(tmp_path / "nope.csv")
    big = tmp_path / "big.csv"
    big.write_bytes(b"a,b\n" * 100)
    monkeypatch.setenv("TRUTHLINE_MAX_INPUT_BYTES", "100")
    with pytest.raises(TruthlineError, match="400 bytes is over the limit of 100; set TRUTHLINE"):
        input_file(big)
    monkeypatch.setenv("TRUTHLINE_MAX_INPUT_BYTES", "1000")
    assert read_capped(big, MAX_INPUT_BYTES) == b"a,b\n" * 100


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "agreement", "/dev/zero"],
        ["stats", "scorer", "/dev/zero", "--scorer", "s"],
    ],
    ids=["agreement", "scorer"],
)
def test_ratings_from_a_device_end_at_once(argv: list[str]) -> None:
    proc, took = tl(*argv)
    assert proc.returncode == 1, proc.stderr
    assert "/dev/zero: not a regular file" in _one_error_line(proc)
    assert took < 60


# -- work: resamples ------------------------------------------------------------------------
def test_resamples_limit_and_its_variable(monkeypatch) -> None:
    assert check_resamples(MAX_RESAMPLES.default) == MAX_RESAMPLES.default
    with pytest.raises(TruthlineError, match="--resamples: 100001 bootstrap resamples is over"):
        check_resamples(100_001)
    monkeypatch.setenv("TRUTHLINE_MAX_RESAMPLES", "1_000_000")
    assert check_resamples(500_000) == 500_000
    monkeypatch.setenv("TRUTHLINE_MAX_RESAMPLES", "lots")
    with pytest.raises(TruthlineError, match="TRUTHLINE_MAX_RESAMPLES='lots': give a whole"):
        check_resamples(1)


def test_resamples_option_is_bounded(tmp_path: Path) -> None:
    ratings = tmp_path / "r.csv"
    ratings.write_text("unit,A,B\nu1,1,1\nu2,2,2\nu3,1,2\n")
    proc, took = tl("stats", "agreement", str(ratings), "--resamples", "1000000000")
    assert proc.returncode == 2 and took < 60
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, proc.stderr
    assert "1000000000 bootstrap resamples is over the limit of 100000" in errors[0]
    assert "TRUTHLINE_MAX_RESAMPLES" in errors[0]
    env = {"TRUTHLINE_MAX_RESAMPLES": "10"}
    proc, _ = tl("stats", "agreement", str(ratings), "--resamples", "20", env=env)
    assert proc.returncode == 2 and "over the limit of 10" in proc.stderr
    proc, _ = tl("stats", "agreement", str(ratings), "--resamples", "10", "--json", env=env)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "run", "--resamples", "100001"],
        ["benchmark", "compare-gold", "x", "--resamples", "100001"],
    ],
    ids=["audit", "benchmark"],
)
def test_shared_resamples_option_is_bounded(argv: list[str], tmp_path: Path) -> None:
    proc, _ = tl(*argv, env={"TRUTHLINE_WORKSPACE": str(tmp_path / "ws")})
    assert proc.returncode == 2, proc.stderr
    assert "100001 bootstrap resamples is over the limit" in proc.stderr


@pytest.mark.parametrize("section", ["[audit]\nresamples", "[benchmark]\nbootstrap_resamples"])
def test_project_resamples_setting_is_bounded(tmp_path: Path, section: str) -> None:
    folder = _definition(tmp_path / "p", BASE + f"{section} = 1000000000\n")
    with pytest.raises(ProjectError, match="1000000000 bootstrap resamples is over the limit"):
        load_project(folder)


# -- prompt templates stay inside the project folder -----------------------------------------
def _with_prompt(tmp_path: Path, rel: str, key: str = "user") -> Path:
    (tmp_path / "secret.txt").write_text("OPENAI_API_KEY=sk-secret")
    folder = _definition(tmp_path / "p", BASE + f'[prompts]\n{key} = "{rel}"\n')
    (folder / "inside.md").write_text("Look at the image.")
    return folder


@pytest.mark.parametrize(
    ("rel", "key"),
    [
        ("../secret.txt", "user"),
        ("SECRET", "system"),
        ("sub/../../secret.txt", "user"),
        ("link.md", "user"),
    ],
    ids=["dotdot", "absolute", "nested-dotdot", "symlink"],
)
def test_prompt_template_outside_the_folder_is_refused(tmp_path: Path, rel: str, key: str):
    rel = rel.replace("SECRET", str(tmp_path / "secret.txt"))
    folder = _with_prompt(tmp_path, rel, key)
    (folder / "link.md").symlink_to(tmp_path / "secret.txt")
    (folder / "sub").mkdir()
    with pytest.raises(ProjectError) as exc:
        load_project(folder)
    msg = str(exc.value)
    assert msg.startswith(f"{folder / 'project.toml'}: prompts.{key}: prompt template "), msg
    assert "is outside the project folder" in msg and len(msg.splitlines()) == 1


def test_prompt_template_inside_is_kept_and_prompt_path_is_confined(tmp_path: Path) -> None:
    project = load_project(_with_prompt(tmp_path, "inside.md"))
    assert project.prompt_path("inside.md").read_text() == "Look at the image."
    with pytest.raises(TruthlineError, match=r"'\.\./secret\.txt' is outside the project folder"):
        project.prompt_path("../secret.txt")


def test_variant_and_mapper_templates_are_confined(tmp_path: Path) -> None:
    text = (
        BASE + '[prompts.variants]\nv1 = "../secret.txt"\n'
        '[prompts.variants.v2]\ntemplate = "inside.md"\nanswer = "text"\n'
        'mapper = "simulated:mapper"\nmapper_prompt = "/etc/passwd"\n'
    )
    (tmp_path / "secret.txt").write_text("x")
    folder = _definition(tmp_path / "p", text)
    (folder / "inside.md").write_text("x")
    with pytest.raises(ProjectError) as exc:
        load_project(folder)
    lines = str(exc.value).splitlines()
    assert len(lines) == 2, lines
    assert "prompts.variants.v1: prompt template '../secret.txt' is outside" in lines[0]
    assert "prompts.variants.v2.mapper_prompt: prompt template '/etc/passwd' is outside" in lines[1]


# -- other silent accepts ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "clash"),
    [
        ('choices = ["yes", "no"]\ncannot_tell = "no"', "'no'"),
        ('choices = ["yes", "no"]\ncannot_tell = "YES"', "'yes'"),
        ('taxonomy = "t"\ncannot_tell = "a1"', "'A1'"),
    ],
    ids=["choice", "case", "taxonomy-code"],
)
def test_cannot_tell_equal_to_a_choice_is_refused(tmp_path: Path, spec: str, clash: str):
    text = (
        'name = "n"\nmedia = "image"\n[taxonomies.t]\nclasses = [{code = "A1", group = "A"}]\n'
        f'[fields.c]\ntype = "single_choice"\n{spec}\n'
    )
    with pytest.raises(
        ProjectError, match=rf"fields\.c\.cannot_tell: .* is also a choice \({clash}"
    ):
        load_project(_definition(tmp_path / "p", text))


def test_cannot_tell_of_its_own_is_kept(tmp_path: Path) -> None:
    text = (
        BASE + '[fields.c]\ntype = "single_choice"\nchoices = ["yes", "no"]\n'
        'cannot_tell = "cannot_tell"\n'
    )
    project = load_project(_definition(tmp_path / "p", text))
    assert project.field("c").categories() == ["yes", "no", "cannot_tell"]


@pytest.mark.parametrize(
    ("res", "fragment"),
    [
        ("0x0", "each side must be 1 to 16384 pixels"),
        ("960x0", "each side must be 1 to 16384 pixels"),
        ("100000x100000", "each side must be 1 to 16384 pixels"),
        ("-5x10", "give WIDTHxHEIGHT in pixels"),
        ("1e3x10", "give WIDTHxHEIGHT in pixels"),
        ("9" * 40 + "x10", "give WIDTHxHEIGHT in pixels"),
    ],
)
def test_scene_render_size_is_checked(res: str, fragment: str) -> None:
    from truthline.scenes._cli import _res

    with pytest.raises(TruthlineError, match=fragment):
        _res(res)
    assert _res("960x540") == (960, 540) and _res(" 16384X1 ") == (16384, 1)


def test_benchmark_run_takes_c_as_prefill_run_does() -> None:
    import typer.main

    from truthline.benchmark._cli import app as bench
    from truthline.prefill._cli import app as prefill

    def opts(app: typer.Typer, cmd: str, dest: str) -> list[str]:
        click_cmd = typer.main.get_command(app).commands[cmd]  # type: ignore[attr-defined]
        return next(p.opts for p in click_cmd.params if p.name == dest)

    assert sorted(opts(bench, "run", "concurrency")) == sorted(opts(prefill, "run", "concurrency"))
    assert "-c" in opts(bench, "run", "concurrency")
