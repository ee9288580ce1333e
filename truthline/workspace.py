"""A workspace: one folder holding the store, project definitions, media, secrets and reports.

Privacy: opening a workspace (``Workspace.from_env``, what every command does) sets the
process's umask to 0o077 (``keep_private``), so every file truthline or a server it starts
(Label Studio, the media server, the dashboards) creates is 0600 and every folder 0700 by
its own mode, not only because of the folder it sits in. What is copied in keeps no wider
mode than that (``make_private``: project templates, Label Studio's migrated template).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from truthline._names import check_project_name, inside
from truthline.errors import TruthlineError
from truthline.project import DEFINITION_NAMES, Project, load_project
from truthline.store import Store

PRIVATE_UMASK = 0o077
"""No group or other bits on anything created: files 0600, folders 0700."""


def keep_private() -> None:
    """Make everything this process (and what it starts) creates private to its owner.

    The workspace holds API tokens, passwords and annotations; a mode of its own on each
    file keeps them unread when the workspace is copied, archived or re-permissioned.
    A stricter umask the user already has is kept."""
    os.umask(os.umask(PRIVATE_UMASK) | PRIVATE_UMASK)


def make_private(path: Path) -> None:
    """Strip the group and other bits of ``path`` and everything under it (links not
    followed): for trees copied in with the modes of their source."""
    for p in (path, *path.rglob("*")) if path.is_dir() else (path,):
        if p.is_symlink():
            continue
        mode = p.stat().st_mode & 0o7777
        if mode & 0o077:
            p.chmod(mode & ~0o077)


def templates_dir() -> Path:
    """Bundled project templates: ``projects/`` in a checkout, ``_templates`` when installed."""
    here = Path(__file__).resolve().parent
    for cand in (here.parent / "projects", here / "_templates"):
        if cand.is_dir():
            return cand
    raise TruthlineError("project templates not found; reinstall truthline")


def list_templates() -> list[str]:
    return sorted(
        p.name
        for p in templates_dir().iterdir()
        if any((p / n).is_file() for n in DEFINITION_NAMES)
    )


@dataclass
class Workspace:
    root: Path
    db_url: str | None = None
    _projects: dict[str, Project] = field(default_factory=dict, repr=False)

    @classmethod
    def from_env(cls, root: str | Path | None = None, db_url: str | None = None) -> Workspace:
        """The workspace at ``root`` (or $TRUTHLINE_WORKSPACE, ./workspace) with the store at
        ``db_url`` (or $TRUTHLINE_DB); from here on this process creates private files."""
        keep_private()
        root = Path(root or os.environ.get("TRUTHLINE_WORKSPACE") or "workspace").resolve()
        url = db_url or os.environ.get("TRUTHLINE_DB")
        return cls(root=root, db_url=Store.check_url(url) if url else None)

    # -- paths ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.db_url or f"sqlite:///{self.root / 'truthline.db'}"

    @property
    def projects_dir(self) -> Path:
        return self.root / "projects"

    @property
    def media_dir(self) -> Path:
        return self.root / "media"

    @property
    def secrets_dir(self) -> Path:
        """0700 folder for tokens and passwords (files inside are 0600)."""
        d = self.root / "secrets"
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(0o700)
        return d

    @property
    def reports_dir(self) -> Path:
        return self.root / "reports"

    @cached_property
    def store(self) -> Store:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TruthlineError(
                f"cannot create the workspace folder {self.root}: {exc.strerror}; "
                "pass --workspace with a folder you can write"
            ) from None
        return Store(self.url)

    # -- projects ---------------------------------------------------------------------
    def project_names(self) -> list[str]:
        if not self.projects_dir.is_dir():
            return []
        return sorted(
            p.name
            for p in self.projects_dir.iterdir()
            if any((p / n).is_file() for n in DEFINITION_NAMES)
        )

    def project(self, name: str | None = None) -> Project:
        """Load a project of this workspace; without a name, the only one there is."""
        names = self.project_names()
        if name is not None:
            check_project_name(name, "--project")
        else:
            if not names:
                raise TruthlineError(
                    f"no project in workspace {self.root}; start one with `truthline init steel-safety`"
                )
            if len(names) > 1:
                raise TruthlineError(
                    f"several projects in {self.root} ({', '.join(names)}); pass --project NAME"
                )
            name = names[0]
        if name not in self._projects:
            if name not in names:
                raise TruthlineError(
                    f"no project {name!r} in workspace {self.root} (have: {', '.join(names) or 'none'})"
                )
            self._projects[name] = load_project(self.projects_dir / name)
        return self._projects[name]

    def init_project(self, template: str, name: str | None = None, force: bool = False) -> Project:
        """Copy a bundled template (or a folder path) into the workspace and register it."""
        src = Path(template)
        if not src.is_dir():
            src = templates_dir() / template
        if not src.is_dir():
            known = ", ".join(list_templates())
            raise TruthlineError(
                f"unknown template {template!r} (bundled: {known}; or give a folder path)"
            )
        tmpl = load_project(src)  # validate before copying anything
        name = check_project_name(name or tmpl.name, "--name" if name else "template name")
        dest = inside(self.projects_dir, name, what="project folder")
        if dest.exists() and not force:
            if any((dest / n).is_file() for n in DEFINITION_NAMES):
                project = self.project(name)
                self.store.upsert_project(project, str(project.source))
                return project
            raise TruthlineError(f"{dest} exists and is not a project; remove it or pass --force")
        if dest.is_symlink() or dest.is_file():
            dest.unlink()  # never follow a link out of the workspace
        elif dest.exists():
            shutil.rmtree(dest)
        try:
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
            make_private(dest)  # copytree keeps the template's own (world-readable) modes
        except OSError as exc:
            raise TruthlineError(
                f"cannot copy the template into {dest}: {exc.strerror or exc}"
            ) from None
        if name != tmpl.name:
            _rename(dest, name)
        self._projects.pop(name, None)
        project = self.project(name)
        self.store.upsert_project(project, str(project.source))
        return project

    def registered(self, name: str | None = None) -> Project:
        """Load a project and make sure the store knows its current definition."""
        project = self.project(name)
        self.store.upsert_project(project, str(project.source))
        return project


def _rename(folder: Path, name: str) -> None:
    """Set ``name`` in a copied definition (first top-level ``name =`` / ``name:`` line)."""
    import re

    for fname in DEFINITION_NAMES:
        f = folder / fname
        if f.is_file():
            text = f.read_text(encoding="utf-8")
            pat = r'^name\s*=\s*"[^"]*"' if fname.endswith(".toml") else r"^name\s*:\s*.*$"
            rep = f'name = "{name}"' if fname.endswith(".toml") else f"name: {name}"
            f.write_text(re.sub(pat, rep, text, count=1, flags=re.M), encoding="utf-8")
