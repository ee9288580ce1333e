"""The sidecar-venv helper (``truthline._venv``) on real venvs: ``python -m venv`` and a wheel
built here (installed with ``pip --no-index``), so no network is needed.

Checked: a build appears whole or not at all (``.partial`` renamed into place; a killed build
leaves nothing that looks ready), two processes asking at once build once, the marker's pins
decide readiness (a changed pin rebuilds), a venv made before markers is adopted, console
scripts work after the rename, and failures name the venv and the command that fixes them."""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from truthline import _venv
from truthline._venv import MARKER, Sidecar

REPO = Path(__file__).resolve().parents[2]
ENV_VAR = "TRUTHLINE_TEST_SIDECAR_VENV"


class BuildError(Exception):
    pass


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(ENV_VAR, raising=False)
    return tmp_path / "xdg" / "truthline"


def _spec(name: str = "tiny", **kw: object) -> Sidecar:
    base: dict[str, object] = {
        "name": name,
        "title": f"the test venv {name}",
        "requirements": (),
        "env_var": ENV_VAR,
        "fix": "python -m tests.fix --ensure",
        "probe": "print('ok')",
        "expect": "ok",
        "pip_args": ("--no-index",),
        "error": BuildError,
    }
    return Sidecar(**{**base, **kw})  # type: ignore[arg-type]


def _wheel(folder: Path, version: str) -> Path:
    """A pure-Python wheel ``tlsidecar`` with a console script ``tlsidecar``."""
    dist = f"tlsidecar-{version}.dist-info"
    files = {
        "tlsidecar/__init__.py": (
            f"__version__ = {version!r}\n\ndef main():\n    print('tlsidecar', __version__)\n"
        ),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: tlsidecar\nVersion: {version}\n",
        f"{dist}/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: truthline-tests\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ),
        f"{dist}/entry_points.txt": "[console_scripts]\ntlsidecar = tlsidecar:main\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"tlsidecar-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def _run(exe: Path | str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, cwd="/")
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def _child(code: str, cache: Path) -> subprocess.Popen[str]:
    """A separate process running ``code`` with the helper importable and the same cache."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache.parent)}
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# -- building ------------------------------------------------------------------------------


def test_a_bare_venv_is_built_once_in_the_cache_with_its_marker(cache, capsys):
    spec = _spec()
    assert spec.path() == cache / "tiny" and not spec.ready()
    venv = spec.ensure()
    assert venv == cache / "tiny"
    assert _run(spec.python_exe(), "-c", "import sys; print(sys.prefix)") == str(venv)
    assert json.loads((venv / MARKER).read_text())["requirements"] == []
    assert not (cache / "tiny.partial").exists() and (cache / "tiny.lock").exists()
    err = capsys.readouterr().err
    assert "creating the test venv tiny in" in err and "is ready in" in err  # progress
    inode = venv.stat().st_ino
    assert spec.ensure() == venv and venv.stat().st_ino == inode  # ready: nothing rebuilt
    assert "creating" not in capsys.readouterr().err
    assert spec.command("json.tool", "--help", venv=venv)[:3] == [
        str(venv / "bin" / "python"),
        "-m",
        "json.tool",
    ]


def test_the_environment_variable_names_another_venv(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "mine"))
    assert _spec().path() == tmp_path / "mine"
    assert _spec().ensure(progress=False) == tmp_path / "mine"


@pytest.mark.slow
def test_pins_install_and_a_changed_pin_rebuilds(tmp_path, cache):
    """A real ``pip install`` of a local wheel; its console script works after the rename
    (shebang rewritten from ``.partial``); another pin rebuilds, the old spec is then stale."""
    probe = "import tlsidecar; print(tlsidecar.__version__)"
    v1 = _spec(requirements=(str(_wheel(tmp_path / "w1", "1.0")),), probe=probe, expect="1.0")
    v2 = _spec(requirements=(str(_wheel(tmp_path / "w2", "2.0")),), probe=probe, expect="2.0")
    venv = v1.ensure(progress=False)
    assert _run(venv / "bin" / "tlsidecar") == "tlsidecar 1.0"
    script = (venv / "bin" / "tlsidecar").read_text()
    assert script.startswith(f"#!{venv}/bin/python") and ".partial" not in script
    assert ".partial" not in (venv / "bin" / "activate").read_text()
    assert ".partial" not in (venv / "pyvenv.cfg").read_text()
    assert v1.ready() and not v2.ready()  # same folder, other pins
    assert v2.ensure(progress=False) == venv
    assert _run(venv / "bin" / "tlsidecar") == "tlsidecar 2.0"
    assert json.loads((venv / MARKER).read_text())["requirements"] == list(v2.requirements)
    assert not v1.ready()
    assert sorted(p.name for p in cache.iterdir()) == ["tiny", "tiny.lock"]  # no leftovers


def test_two_processes_asking_at_once_build_once(cache):
    """Both processes start ``ensure`` together (a barrier file); the build takes ≥2 s (its
    probe sleeps), so the second waits on the lock and then uses the first one's venv."""
    go = cache.parent / "go"
    code = (
        "import pathlib, sys, time\n"
        "from truthline._venv import Sidecar\n"
        f"spec = Sidecar(name='shared', title='the shared venv', requirements=(), "
        f"env_var={ENV_VAR!r}, fix='fix', probe='import time; time.sleep(2); print(1)', "
        "expect='1')\n"
        "print('started', file=sys.stderr, flush=True)\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
        "print(spec.ensure(progress=True))\n"
    )
    cache.mkdir(parents=True)
    procs = [_child(code, cache) for _ in range(2)]
    for p in procs:
        assert p.stderr is not None and p.stderr.readline().strip() == "started"
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o.strip() for o, _ in outs] == [str(cache / "shared")] * 2
    errs = [e for _, e in outs]
    assert sum(e.startswith("creating the shared venv") for e in errs) == 1, errs
    assert sum("waiting for another process" in e for e in errs) == 1, errs
    assert _spec("shared", probe="").ready()  # the marker alone says ready


# -- never half a venv ---------------------------------------------------------------------


def test_a_killed_build_leaves_nothing_that_looks_ready(cache):
    code = (
        "from truthline._venv import Sidecar\n"
        f"Sidecar(name='tiny', title='t', requirements=(), env_var={ENV_VAR!r}, fix='f', "
        "probe='import time; time.sleep(60)', expect='').ensure(progress=False)\n"
    )
    proc = _child(code, cache)
    partial = cache / "tiny.partial"
    deadline = time.monotonic() + 60
    while not (partial / "bin" / "python").exists():  # killed mid-build, during its check
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (cache / "tiny").exists() and not _spec().ready()
    assert _spec().ensure(progress=False) == cache / "tiny"  # the lock died with the process
    assert not partial.exists() and _spec().ready()


def test_a_finished_but_unrenamed_partial_is_not_taken(cache):
    """Even a ``.partial`` with a marker (killed just before the rename) is only a leftover."""
    spec = _spec()
    _venv._create_venv(cache / "tiny.partial", None, with_pip=False)
    spec._write_marker(cache / "tiny.partial")
    assert not spec.ready()
    spec.ensure(progress=False)
    assert spec.ready() and not (cache / "tiny.partial").exists()


def test_a_half_built_venv_in_place_is_rebuilt(cache):
    """A venv folder without a marker (e.g. a pip install killed in place), a marker without
    an interpreter, and an unreadable marker: none is ready, each is replaced."""
    spec = _spec(probe="")  # no probe: only the marker can say ready
    venv = cache / "tiny"
    _venv._create_venv(venv, None, with_pip=False)
    assert not spec.ready()
    spec.ensure(progress=False)
    assert spec.ready()
    (venv / "bin" / "python").unlink()
    assert not spec.ready()
    spec.ensure(progress=False)
    assert spec.ready()
    (venv / MARKER).write_text("{not json")
    assert not spec.ready()
    spec.ensure(progress=False)
    assert spec.ready()


def test_a_marker_with_other_pins_rebuilds(cache):
    spec = _spec()
    venv = spec.ensure(progress=False)
    (venv / "stale-file").touch()
    data = json.loads((venv / MARKER).read_text())
    (venv / MARKER).write_text(json.dumps({**data, "requirements": ["other==1"]}))
    assert not spec.ready()  # though the probe would pass
    spec.ensure(progress=False)
    assert spec.ready() and not (venv / "stale-file").exists()
    pinned = _spec(python=f"{sys.version_info[0]}.{sys.version_info[1]}")  # a pinned Python
    assert not pinned.ready()
    pinned.ensure(progress=False)
    assert pinned.ready() and not spec.ready()


def test_a_venv_from_before_markers_that_passes_its_probe_is_adopted(cache, capsys):
    """Cached venvs made by the earlier code (no marker) stay valid: no rebuild."""
    venv = cache / "tiny"
    _venv._create_venv(venv, None, with_pip=False)
    inode = venv.stat().st_ino
    failing = _spec(probe="import sys; sys.exit(1)")
    assert _spec().ready() and not failing.ready()
    assert not (venv / MARKER).exists()  # ready() writes nothing
    assert _spec().ensure() == venv and venv.stat().st_ino == inode
    assert "creating" not in capsys.readouterr().err
    assert json.loads((venv / MARKER).read_text())["requirements"] == []


# -- clear errors --------------------------------------------------------------------------


def test_a_failed_install_names_the_venv_and_the_fix(cache, monkeypatch):
    def no_pip(path, base, *, with_pip, prompt=""):  # a real venv without pip: pip fails fast
        real(path, base, with_pip=False, prompt=prompt)

    real = _venv._create_venv
    monkeypatch.setattr(_venv, "_create_venv", no_pip)
    spec = _spec(requirements=("tlsidecar==1.0",))
    with pytest.raises(BuildError) as exc:
        spec.ensure(progress=False)
    msg = str(exc.value)
    assert f"installing tlsidecar==1.0 into {cache / 'tiny'} failed: pip exited with 1" in msg
    assert "No module named pip" in msg  # pip's own words, kept when quiet
    assert f"retry with `python -m tests.fix --ensure`, or set {ENV_VAR}" in msg
    assert not (cache / "tiny").exists() and not (cache / "tiny.partial").exists()


def test_a_failing_probe_is_a_failed_build(cache):
    with pytest.raises(BuildError, match=r"do not pass the check `import nothing_here`"):
        _spec(probe="import nothing_here").ensure(progress=False)
    assert not (cache / "tiny").exists() and not (cache / "tiny.partial").exists()


def test_a_folder_that_is_not_a_venv_is_never_replaced(cache):
    (cache / "tiny").mkdir(parents=True)
    (cache / "tiny" / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match=r"is not a virtual environment.*move it away"):
        _spec().ensure(progress=False)
    assert (cache / "tiny" / "notes.txt").read_text() == "mine"


def test_a_missing_python_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_venv.shutil, "which", lambda name: None)
    spec = _spec(python="3.99", python_why="its wheels are cp399 only")
    with pytest.raises(BuildError, match=r"needs Python 3\.99 \(its wheels are cp399 only\)"):
        spec.ensure(progress=False)


def test_the_helper_imports_the_standard_library_only():
    tree = ast.parse(Path(_venv.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    tops = {n.split(".")[0] for n in names} - {"__future__"}
    assert tops <= set(sys.stdlib_module_names), tops - set(sys.stdlib_module_names)


def test_an_unwritable_cache_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    with pytest.raises(BuildError, match=r"installing a bare venv into .*file/truthline/tiny"):
        _spec().ensure(progress=False)
