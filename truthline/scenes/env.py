"""The scenes environment: a venv with Blender as a Python module, created on first use.

bpy 5.0.1 (the PyPI wheel, ~820 MB) needs Python 3.11 and numpy<2, so it cannot share the
project's venv; it lives in ``$XDG_CACHE_HOME/truthline/scenes-bpy-5.0.1`` (``~/.cache`` when
``XDG_CACHE_HOME`` is unset) unless ``TRUTHLINE_SCENES_VENV`` names another one, with
``numpy<2``, ``opencv-python-headless`` and ``pillow`` beside it (the environment modules use
them on both sides). Creating it takes ~35 s on a fast index; it is done once, under a file
lock (two processes asking at once wait for one install), into a ``.partial`` folder that is
renamed only when ``import bpy`` works, so a killed install never leaves a half venv behind.

``python -m truthline.scenes.env --ensure`` creates it (CI calls it once);
``python -m truthline.scenes.env`` prints where it is and whether it is ready.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import venv as _venv
from pathlib import Path

from truthline.annotate.server_env import cache_dir
from truthline.scenes._types import SceneError

BPY_VERSION = "5.0.1"
REQUIREMENTS = (f"bpy=={BPY_VERSION}", "numpy<2", "opencv-python-headless", "pillow")
PYTHON_NEEDED = "3.11"  # the bpy 5.0.x wheels are cp311 only


def venv_dir() -> Path:
    return Path(
        os.environ.get("TRUTHLINE_SCENES_VENV") or cache_dir() / f"scenes-bpy-{BPY_VERSION}"
    )


def python_exe(venv: Path | None = None) -> Path:
    return (venv or venv_dir()) / "bin" / "python"


def installed(venv: Path | None = None) -> bool:
    """True when the venv imports bpy at the pinned version (and numpy, cv2, PIL)."""
    exe = python_exe(venv)
    if not exe.exists():
        return False
    res = subprocess.run(
        [str(exe), "-c", "import bpy, numpy, cv2, PIL; print(bpy.app.version_string)"],
        capture_output=True,
        text=True,
        cwd="/",
    )
    return res.returncode == 0 and res.stdout.strip().splitlines()[-1:] == [BPY_VERSION]


def _base_python() -> str:
    """A Python 3.11 to build the venv from (bpy's wheels exist for 3.11 only)."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == PYTHON_NEEDED:
        return sys.executable
    exe = shutil.which(f"python{PYTHON_NEEDED}")
    if exe is None:
        raise SceneError(
            f"the scenes environment needs Python {PYTHON_NEEDED} (bpy {BPY_VERSION} ships "
            f"cp311 wheels only); install python{PYTHON_NEEDED} or set TRUTHLINE_SCENES_VENV "
            "to a venv that has bpy"
        )
    return exe


def ensure(venv: Path | None = None, *, progress: bool = True) -> Path:
    """Return the scenes venv, creating it if needed (idempotent, safe to call concurrently)."""
    venv = venv or venv_dir()
    if installed(venv):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.with_name(venv.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second caller waits here for the first install
        if installed(venv):
            return venv
        work = venv.with_name(venv.name + ".partial")
        shutil.rmtree(work, ignore_errors=True)
        if progress:
            print(
                f"creating the scenes environment in {venv} ({', '.join(REQUIREMENTS)}; "
                "~820 MB, done once)",
                file=sys.stderr,
                flush=True,
            )
        base = _base_python()
        if base == sys.executable:
            _venv.EnvBuilder(with_pip=True).create(work)
        else:
            subprocess.run([base, "-m", "venv", str(work)], check=True)
        # Always call pip through bin/python: the venv's scripts carry the .partial path in
        # their shebangs, the interpreter finds its prefix from where it is.
        cmd = [str(python_exe(work)), "-m", "pip", "install", "--disable-pip-version-check"]
        if not progress:
            cmd.append("-q")
        res = subprocess.run([*cmd, *REQUIREMENTS], stdout=None if progress else subprocess.DEVNULL)
        if res.returncode != 0 or not installed(work):
            raise SceneError(
                f"installing {' '.join(REQUIREMENTS)} into {work} failed; retry, or set "
                "TRUTHLINE_SCENES_VENV to a Python 3.11 venv that has them"
            )
        shutil.rmtree(venv, ignore_errors=True)
        work.rename(venv)
    return venv


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m truthline.scenes.env", description=__doc__)
    ap.add_argument("--ensure", action="store_true", help="create the venv if missing")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not args.ensure:
        print(f"scenes venv: {venv_dir()} ({'ready' if installed() else 'missing'})")
        return 0
    try:
        v = ensure(progress=not args.quiet)
    except SceneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"scenes environment: bpy {BPY_VERSION} in {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
