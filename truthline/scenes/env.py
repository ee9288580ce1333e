"""The scenes environment: a venv with Blender as a Python module, created on first use.

bpy 5.0.1 (the PyPI wheel, ~820 MB) needs Python 3.11 and numpy<2, so it cannot share the
project's venv; it lives in ``$XDG_CACHE_HOME/truthline/scenes-bpy-5.0.1`` (``~/.cache`` when
``XDG_CACHE_HOME`` is unset) unless ``TRUTHLINE_SCENES_VENV`` names another one, with
``numpy<2``, ``opencv-python-headless`` and ``pillow`` beside it (the environment modules use
them on both sides). It is a sidecar venv (``truthline._venv``): creating it takes ~35 s on a
fast index; it is done once, under a file lock (two processes asking at once wait for one
install), into a ``.partial`` folder that is renamed only when ``import bpy`` works, so a
killed install never leaves a half venv behind; a marker with the pins rebuilds it when they
change. The worker runs its interpreter, ``python_exe()``.

``python -m truthline.scenes.env --ensure`` creates it (CI calls it once);
``python -m truthline.scenes.env`` prints where it is and whether it is ready.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from truthline._venv import Sidecar
from truthline.scenes._types import SceneError

BPY_VERSION = "5.0.1"
REQUIREMENTS = (f"bpy=={BPY_VERSION}", "numpy<2", "opencv-python-headless", "pillow")
PYTHON_NEEDED = "3.11"  # the bpy 5.0.x wheels are cp311 only

SPEC = Sidecar(
    name=f"scenes-bpy-{BPY_VERSION}",
    title="the scenes environment",
    requirements=REQUIREMENTS,
    env_var="TRUTHLINE_SCENES_VENV",
    fix="python -m truthline.scenes.env --ensure",
    python=PYTHON_NEEDED,
    python_why=f"bpy {BPY_VERSION} ships cp311 wheels only",
    probe="import bpy, numpy, cv2, PIL; print(bpy.app.version_string)",
    expect=BPY_VERSION,
    size="~820 MB",
    error=SceneError,
)


def venv_dir() -> Path:
    return SPEC.path()


def python_exe(venv: Path | None = None) -> Path:
    return SPEC.python_exe(venv)


def installed(venv: Path | None = None) -> bool:
    """True when the venv is ready: its marker names these pins (a build writes it only once
    ``import bpy, numpy, cv2, PIL`` works at bpy 5.0.1), or, made before markers existed, it
    imports them."""
    return SPEC.ready(venv)


def ensure(venv: Path | None = None, *, progress: bool = True) -> Path:
    """Return the scenes venv, creating it if needed (idempotent, safe to call concurrently)."""
    return SPEC.ensure(venv, progress=progress)


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
