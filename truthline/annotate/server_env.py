"""Label Studio's own environment: its venv and a pre-migrated template data dir.

Label Studio 1.23.2 pins Django 5.2 and ``label-studio-sdk==2.1.2``; it lives in its own venv
(``$XDG_CACHE_HOME/truthline/ls-1.23.2``, ``~/.cache`` when ``XDG_CACHE_HOME`` is unset, unless
``TRUTHLINE_LS_VENV`` says otherwise), a sidecar venv (``truthline._venv``: created on first use
under a lock, built beside and renamed into place, rebuilt when its pins change; ~3.5 min,
~1 GB). The server runs as ``<venv>/bin/python -m label_studio.server`` (``label_studio_command``),
never through a console script's shebang. A fresh data dir needs ~400 migrations (~2 min);
tests copy a template migrated once (``TRUTHLINE_LS_TEMPLATE``, default beside the venv) and
start in ~13 s.

``python -m truthline.annotate.server_env --ensure`` creates both (CI calls it once).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from truthline._venv import Sidecar, cache_dir, file_lock
from truthline.errors import TruthlineError

__all__ = [
    "LS_VERSION",
    "SPEC",
    "cache_dir",
    "copy_template",
    "ensure_template",
    "ensure_venv",
    "installed",
    "label_studio_command",
    "main",
    "python_exe",
    "template_dir",
    "venv_dir",
]

LS_VERSION = "1.23.2"

SPEC = Sidecar(
    name=f"ls-{LS_VERSION}",
    title="Label Studio's environment",
    requirements=(f"label-studio=={LS_VERSION}",),
    env_var="TRUTHLINE_LS_VENV",
    fix="python -m truthline.annotate.server_env --ensure",
    probe="import label_studio; print(label_studio.__version__)",
    expect=LS_VERSION,
    size="~1 GB, a few minutes",
    error=TruthlineError,
)


def venv_dir() -> Path:
    return SPEC.path()


def template_dir() -> Path:
    return Path(
        os.environ.get("TRUTHLINE_LS_TEMPLATE") or cache_dir() / f"ls-{LS_VERSION}-template"
    )


def python_exe(venv: Path | None = None) -> Path:
    return SPEC.python_exe(venv)


def label_studio_command(venv: Path | None = None) -> list[str]:
    """``label-studio`` as ``<venv>/bin/python -m label_studio.server`` (what the console
    script runs, without depending on the path in its shebang)."""
    return SPEC.command("label_studio.server", venv=venv)


def installed(venv: Path | None = None) -> bool:
    """True when the venv is ready (its marker names these pins, or it imports label-studio
    1.23.2 and was made before markers existed)."""
    return SPEC.ready(venv)


def ensure_venv(venv: Path | None = None, *, progress: bool = True) -> Path:
    """Return Label Studio's venv, creating it (``pip install label-studio==1.23.2``) if needed."""
    return SPEC.ensure(venv, progress=progress)


def ensure_template(*, progress: bool = True) -> Path:
    """A migrated Label Studio data dir (with its admin credentials) that tests copy; made
    once, under a lock (``<template>.lock``), renamed into place when migrated."""
    tdir = template_dir()
    if _template_ready(tdir):
        return tdir
    with file_lock(tdir, waiting="waiting for another process that migrates the template"):
        if not _template_ready(tdir):  # built meanwhile by the process we waited for
            _build_template(tdir, progress=progress)
    return tdir


def _template_ready(tdir: Path) -> bool:
    from truthline.annotate._server import CREDENTIALS_NAME

    return (tdir / "label_studio.sqlite3").is_file() and (tdir / CREDENTIALS_NAME).is_file()


def _build_template(tdir: Path, *, progress: bool) -> None:
    """Migrate a fresh data dir in ``<template>.partial`` and rename it into place."""
    from truthline.annotate._server import CREDENTIALS_NAME, Credentials, LocalServer, free_port

    work = tdir.with_name(tdir.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    server = LocalServer(work, port=free_port())
    creds = Credentials.new(server.url)
    try:
        server.start(creds, progress=progress)
    finally:
        server.stop()
    for name in ("server.log", "server.pid"):
        (work / name).unlink(missing_ok=True)
    creds.save(work / CREDENTIALS_NAME)
    shutil.rmtree(tdir, ignore_errors=True)
    work.rename(tdir)


def copy_template(dest: Path) -> Path:
    """Copy the migrated template into ``dest`` (a new data dir); returns ``dest``."""
    src = ensure_template()
    shutil.copytree(src, dest, dirs_exist_ok=False)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m truthline.annotate.server_env", description=__doc__
    )
    ap.add_argument("--ensure", action="store_true", help="create the venv and template if missing")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not args.ensure:
        print(f"venv: {venv_dir()}\ntemplate: {template_dir()}")
        return 0
    try:
        v = ensure_venv(progress=not args.quiet)
        t = ensure_template(progress=not args.quiet)
    except TruthlineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Label Studio {LS_VERSION}: venv {v}, migrated template {t}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
