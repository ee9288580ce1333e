"""Sidecar venvs: a named, pinned virtual environment in truthline's cache folder.

Some tools pin libraries that clash with the project's (Label Studio pins Django 5.2 and its own
SDK, bpy 5.0.1 needs numpy<2 and Python 3.11), so each lives in its own venv, described by one
:class:`Sidecar` (``truthline.annotate.server_env.SPEC``, ``truthline.scenes.env.SPEC``):

- **where**: ``$XDG_CACHE_HOME/truthline/<name>`` (``~/.cache`` when ``XDG_CACHE_HOME`` is unset
  or relative, as the XDG base-directory spec says), unless the sidecar's environment variable
  names another venv;
- **what**: its pinned requirements (and the Python it must be built from, where that matters),
  written to a marker ``<venv>/.truthline-venv.json`` as the last step of a build. A venv whose
  marker says other pins is rebuilt; a folder without a marker is not ready, except a venv
  made before markers existed whose probe passes (it is adopted: the marker is added, nothing
  is rebuilt);
- **how**: once, under a file lock ``<name>.lock`` beside it (a second caller waits for the
  first build), into ``<name>.partial``, which is renamed into place only when the install and
  the probe passed: a killed or failed build never leaves a folder that looks ready;
- **use**: through its interpreter, ``<venv>/bin/python -m module`` (:meth:`Sidecar.command`),
  which finds its prefix from where it is, so the rename is safe. The shebangs of the venv's
  console scripts (and ``activate``) are rewritten to the final path before the rename too, so
  ``<venv>/bin/label-studio`` still works for a person who runs it by hand.

Core module: the standard library only, no stage imports.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import venv as _stdlib_venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MARKER = ".truthline-venv.json"
_TAIL_LINES = 20


class VenvError(Exception):
    """A sidecar venv could not be created (the default error of a :class:`Sidecar`)."""


class _BuildFailed(Exception):
    """A build step failed; the message says which and why."""


def cache_dir() -> Path:
    """truthline's cache folder: ``$XDG_CACHE_HOME/truthline`` (XDG base-directory spec), else
    ``~/.cache/truthline``; read at call time so a changed environment is honoured."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # the spec says a relative path is invalid and must be ignored
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "truthline"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@contextlib.contextmanager
def file_lock(target: Path, *, waiting: str = "") -> Iterator[None]:
    """Hold an exclusive lock on ``<target>.lock`` beside ``target`` (created if missing).

    ``waiting`` is printed (to stderr) when another process holds the lock, before waiting."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting:
                _say(waiting)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _clean_env() -> dict[str, str]:
    """The environment for the sidecar's interpreter: without the host's PYTHONPATH, which
    would make pip see the host's packages as already installed."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None  # a replaced sys.stderr (pytest's capture): inherit instead


def _rmtree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def _elapsed(t0: float) -> str:
    s = int(time.monotonic() - t0)
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


def _create_venv(path: Path, base: str | None, *, with_pip: bool, prompt: str = "") -> None:
    """``python -m venv path`` from ``base`` (None: the running interpreter); ``prompt`` is the
    name ``activate`` shows (by default the folder's, here the final one, not ``.partial``)."""
    prompt = prompt or path.name
    if base is None:
        _stdlib_venv.EnvBuilder(with_pip=with_pip, prompt=prompt).create(path)
        return
    opts = ["--prompt", prompt, *([] if with_pip else ["--without-pip"])]
    cmd = [base, "-m", "venv", *opts, str(path)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=_clean_env())
    if res.returncode != 0:
        raise _BuildFailed(f"`{' '.join(cmd)}` failed: {_tail(res.stdout + res.stderr)}")


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-_TAIL_LINES:]) or "(no output)"


LOG_NAME = "install.log"
"""pip's full output, kept in the venv (``<venv>/install.log``): a first run printed ~300
lines of it; now each phase is one line and the log is there to read."""


def _pip_install(python: Path, args: list[str], *, progress: bool) -> None:
    """``<venv>/bin/python -m pip install ARGS``. pip's output goes to ``<venv>/install.log``
    (its tail explains a failure); with ``progress`` one line says where the log is and, on a
    terminal, the elapsed time ticks on it while pip works."""
    cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", *args]
    work = python.parent.parent
    log = work / LOG_NAME
    shown = work.with_name(work.name.removesuffix(".partial")) / LOG_NAME  # after the rename
    if progress:
        _say(f"      pip's log: {shown}")
    tty = progress and sys.stderr.isatty()
    t0 = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=_clean_env(), stdin=subprocess.DEVNULL
        )
        while True:
            try:
                code = proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if tty:
                    print(f"\r      installing ... {_elapsed(t0)}", end="", file=sys.stderr)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
    if tty:
        print(f"\r      installed in {_elapsed(t0)}      ", file=sys.stderr, flush=True)
    if code != 0:
        text = log.read_text(encoding="utf-8", errors="replace")
        raise _BuildFailed(f"pip exited with {code}:\n{_tail(text)}")


def _relocate(work: Path, final: Path) -> None:
    """Point the scripts of a venv built in ``work`` at ``final``, where it is about to be
    renamed: shebangs, ``activate*`` and ``pyvenv.cfg`` name the interpreter by path."""
    old, new = os.fsencode(work), os.fsencode(final)
    bindir = work / "bin"
    candidates = [work / "pyvenv.cfg", *(sorted(bindir.iterdir()) if bindir.is_dir() else [])]
    for p in candidates:
        if p.is_symlink() or not p.is_file():
            continue
        with open(p, "rb") as fh:
            head = fh.read(2)
        text = head == b"#!" or p.name.startswith(("activate", "Activate")) or p.parent == work
        if not text:
            continue  # a compiled program in bin/: leave it alone
        data = p.read_bytes()
        if old in data:
            p.write_bytes(data.replace(old, new))


def _replaceable(path: Path) -> bool:
    """A folder a build may replace: a venv (``pyvenv.cfg``), one of ours, or empty."""
    if path.is_symlink():
        return True
    if not path.is_dir():
        return False
    return (path / "pyvenv.cfg").exists() or (path / MARKER).exists() or not any(path.iterdir())


@dataclass(frozen=True)
class Sidecar:
    """A named, pinned venv beside truthline's own (see the module docstring)."""

    name: str  # the folder's name in cache_dir(), e.g. "ls-1.23.2"
    title: str  # for messages, e.g. "Label Studio's environment"
    requirements: tuple[str, ...]  # pip requirements; the pins written to the marker
    env_var: str  # names another venv to use instead of cache_dir() / name
    fix: str  # the command that creates it, e.g. "python -m truthline.annotate.server_env --ensure"
    python: str | None = None  # "3.11": the major.minor it must be built from (None: any)
    python_why: str = ""  # why that Python, for the error when it is missing
    probe: str = ""  # Python code run in the venv; its last stdout line must equal `expect`
    expect: str = ""
    size: str = ""  # for the progress line, e.g. "~1 GB, a few minutes"
    pip_args: tuple[str, ...] = ()  # extra `pip install` options (e.g. --no-index)
    error: type[Exception] = VenvError  # raised when a build fails

    # -- where ---------------------------------------------------------------------------
    def path(self) -> Path:
        """The venv: ``$<env_var>`` when set, else ``cache_dir() / name``."""
        return Path(os.environ.get(self.env_var) or cache_dir() / self.name)

    def python_exe(self, venv: Path | None = None) -> Path:
        return Path(venv or self.path()) / "bin" / "python"

    def command(self, module: str, *args: str, venv: Path | None = None) -> list[str]:
        """``[<venv>/bin/python, -m, module, *args]``: run a tool without its shebang."""
        return [str(self.python_exe(venv)), "-m", module, *args]

    # -- is it ready ---------------------------------------------------------------------
    def marker(self) -> dict[str, object]:
        return {"name": self.name, "requirements": list(self.requirements), "python": self.python}

    def _state(self, venv: Path) -> str:
        """``ready`` (marker with these pins), ``stale`` (other pins, unreadable marker),
        ``unmarked`` (a venv without a marker) or ``missing`` (no interpreter)."""
        if not self.python_exe(venv).exists():  # follows the symlink to the base Python
            return "missing"
        try:
            data = json.loads((venv / MARKER).read_text())
        except FileNotFoundError:
            return "unmarked"
        except (OSError, ValueError):
            return "stale"
        if not isinstance(data, dict):
            return "stale"
        same = all(data.get(k) == v for k, v in self.marker().items() if k != "name")
        return "ready" if same else "stale"

    def _probe_ok(self, venv: Path) -> bool:
        if not self.probe:
            return False
        try:
            res = subprocess.run(
                [str(self.python_exe(venv)), "-c", self.probe],
                capture_output=True,
                text=True,
                cwd="/",
                env=_clean_env(),
                timeout=600,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return res.returncode == 0 and res.stdout.strip().splitlines()[-1:] == [self.expect]

    def ready(self, venv: Path | None = None) -> bool:
        """True when the venv has its marker with these pins (or, made before markers, passes
        its probe). Never builds or writes anything."""
        venv = Path(venv or self.path())
        state = self._state(venv)
        return state == "ready" or (state == "unmarked" and self._probe_ok(venv))

    # -- making it -----------------------------------------------------------------------
    def ensure(self, venv: Path | None = None, *, progress: bool = True) -> Path:
        """Return the venv, building it first if it is not ready. Idempotent, and safe to call
        from several processes at once: one builds, the others wait and then use it."""
        venv = Path(venv or self.path())
        state = self._state(venv)
        if state == "ready" or (state == "unmarked" and self._adopt(venv)):
            return venv  # no lock needed: a venv someone else owns may be read-only
        waiting = f"waiting for another process that is creating {self.title} in {venv}"
        try:
            with file_lock(venv, waiting=waiting if progress else ""):
                state = self._state(venv)  # the process we waited for may have built it
                if state == "ready" or (state == "unmarked" and self._adopt(venv)):
                    return venv
                self._build(venv, progress=progress)
        except OSError as exc:  # the cache folder not writable, the disk full, ...
            raise self._fail(venv, str(exc)) from None
        return venv

    def _adopt(self, venv: Path) -> bool:
        """A venv made before markers existed that passes its probe: add the marker (where
        the folder is writable) so later checks are cheap; nothing is rebuilt."""
        if not self._probe_ok(venv):
            return False
        self._write_marker(venv, best_effort=True)
        return True

    def _write_marker(self, venv: Path, *, best_effort: bool = False) -> None:
        data = {
            **self.marker(),
            "built_with": sys.version.split()[0],
            "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        tmp = venv / f"{MARKER}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            tmp.write_text(json.dumps(data, indent=2) + "\n")
            os.replace(tmp, venv / MARKER)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            if not best_effort:
                raise

    def _base_python(self) -> str | None:
        """The interpreter to build from: None for the running one when it will do."""
        if self.python is None or f"{sys.version_info[0]}.{sys.version_info[1]}" == self.python:
            return None
        exe = shutil.which(f"python{self.python}")
        if exe is None:
            why = f" ({self.python_why})" if self.python_why else ""
            raise self.error(
                f"{self.title} needs Python {self.python}{why}; install python{self.python} "
                f"and run `{self.fix}`, or set {self.env_var} to a venv that has "
                f"{' '.join(self.requirements)}"
            )
        return exe

    def _fail(self, venv: Path, why: str) -> Exception:
        return self.error(
            f"installing {' '.join(self.requirements) or 'a bare venv'} into {venv} failed: "
            f"{why}\nretry with `{self.fix}`, or set {self.env_var} to a venv that has them"
        )

    def _build(self, venv: Path, *, progress: bool) -> None:
        """Build into ``<name>.partial`` and rename it into place (the caller holds the lock)."""
        say = _say if progress else (lambda msg: None)
        work = venv.with_name(venv.name + ".partial")
        stale = venv.with_name(venv.name + ".stale")
        if (venv.exists() or venv.is_symlink()) and not _replaceable(venv):
            raise self.error(
                f"{venv} exists and is not a virtual environment, so it is not replaced by "
                f"{self.title}; move it away and run `{self.fix}`, or set {self.env_var} to "
                "another path"
            )
        base = self._base_python()
        for leftover in (work, stale):  # from a build that was killed
            _rmtree(leftover)
        t0 = time.monotonic()
        pins = ", ".join(self.requirements) or "no packages"
        say(
            f"creating {self.title} in {venv} ({pins}"
            f"{'; ' + self.size if self.size else ''}; done once)"
        )
        steps = 1 + bool(self.requirements) + bool(self.probe)
        try:
            say(f"  [1/{steps}] a new venv (Python {self.python or sys.version.split()[0]})")
            _create_venv(work, base, with_pip=bool(self.requirements), prompt=venv.name)
            if self.requirements:
                say(f"  [2/{steps}] pip install {' '.join(self.requirements)}")
                _pip_install(
                    self.python_exe(work),
                    [*self.pip_args, *self.requirements],
                    progress=progress,
                )
            if self.probe:
                say(f"  [{steps}/{steps}] checking it: {self.probe}")
                if not self._probe_ok(work):
                    raise _BuildFailed(
                        f"the installed packages do not pass the check `{self.probe}` "
                        f"(expected {self.expect!r})"
                    )
            _relocate(work, venv)
            self._write_marker(work)  # last: a folder with this marker is a finished build
        except (_BuildFailed, OSError) as exc:
            _rmtree(work)
            raise self._fail(venv, str(exc)) from None
        except BaseException:
            _rmtree(work)
            raise
        if venv.exists() or venv.is_symlink():
            os.rename(venv, stale)  # atomic: readers see the old venv or none, never half
        os.rename(work, venv)
        _rmtree(stale)
        say(f"{self.title} is ready in {venv} ({_elapsed(t0)})")
