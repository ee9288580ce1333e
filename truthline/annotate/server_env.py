"""Label Studio's own environment: its venv and a pre-migrated template data dir.

Label Studio 1.23.2 pins Django 5.2 and ``label-studio-sdk==2.1.2``; it lives in its own venv
(``$XDG_CACHE_HOME/truthline/ls-1.23.2``, ``~/.cache`` when ``XDG_CACHE_HOME`` is unset, unless
``TRUTHLINE_LS_VENV`` says otherwise), created on
first use (~3.5 min, ~1 GB). A fresh data dir needs ~400 migrations (~2 min); tests copy a
template migrated once (``TRUTHLINE_LS_TEMPLATE``, default beside the venv) and start in ~13 s.

``python -m truthline.annotate.server_env --ensure`` creates both (CI calls it once).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import venv as _venv
from pathlib import Path

from truthline.errors import TruthlineError

LS_VERSION = "1.23.2"


def cache_dir() -> Path:
    """truthline's cache folder: ``$XDG_CACHE_HOME/truthline`` (XDG base-directory spec), else
    ``~/.cache/truthline``; read at call time so a changed environment is honoured."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    # the spec says a relative path is invalid and must be ignored
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "truthline"


def venv_dir() -> Path:
    return Path(os.environ.get("TRUTHLINE_LS_VENV") or cache_dir() / f"ls-{LS_VERSION}")


def template_dir() -> Path:
    return Path(
        os.environ.get("TRUTHLINE_LS_TEMPLATE") or cache_dir() / f"ls-{LS_VERSION}-template"
    )


def _installed(venv: Path) -> bool:
    exe = venv / "bin" / "label-studio"
    if not exe.exists():
        return False
    out = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import label_studio; print(label_studio.__version__)",
        ],
        capture_output=True,
        text=True,
    )
    return out.returncode == 0 and out.stdout.strip() == LS_VERSION


def ensure_venv(venv: Path | None = None, *, progress: bool = True) -> Path:
    """Return Label Studio's venv, creating it (``pip install label-studio==1.23.2``) if needed."""
    venv = venv or venv_dir()
    if _installed(venv):
        return venv
    from rich.console import Console

    Console(stderr=True).print(
        f"creating Label Studio's own environment in {venv} "
        f"(label-studio=={LS_VERSION}, ~1 GB, a few minutes; done once)"
    )
    _venv.EnvBuilder(with_pip=True, clear=venv.exists()).create(venv)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    cmd = [*pip, f"label-studio=={LS_VERSION}"]
    res = subprocess.run(cmd, stdout=None if progress else subprocess.DEVNULL)
    if res.returncode != 0 or not _installed(venv):
        raise TruthlineError(
            f"installing label-studio=={LS_VERSION} into {venv} failed; "
            f"retry, or set TRUTHLINE_LS_VENV to a venv that has it"
        )
    return venv


def ensure_template(*, progress: bool = True) -> Path:
    """A migrated Label Studio data dir (with its admin credentials) that tests copy."""
    from truthline.annotate._server import CREDENTIALS_NAME, Credentials, LocalServer, free_port

    tdir = template_dir()
    if (tdir / "label_studio.sqlite3").is_file() and (tdir / CREDENTIALS_NAME).is_file():
        return tdir
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
    return tdir


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
