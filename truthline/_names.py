"""Safe names: one check for every user-supplied name that becomes part of a file path.

A name (project, alias, run id, cohort, ...) must be a single plain path component:
``--name ../../x`` or ``--name /etc`` would otherwise let ``init --force`` delete a folder
outside the workspace. Use :func:`check_name` where a name enters, and :func:`inside`
where a path is built from one (defence in depth: the joined path must stay under root).
"""

from __future__ import annotations

import re
from pathlib import Path

from truthline.errors import TruthlineError

PROJECT_NAME = r"^[a-z0-9][a-z0-9_-]*$"
"""Project names: lower-case letters, digits, '_' and '-', starting with a letter or digit."""

SAFE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""Any other name used in a path: letters, digits, '.', '_', '-'; no separators, no '..'."""

MAX_NAME = 100
"""Names are stored in String(100) columns (projects.name)."""


class UnsafeNameError(TruthlineError):
    """A user-supplied name cannot be used as a file or folder name."""


def check_name(name: str, what: str = "name", *, pattern: str = SAFE_NAME) -> str:
    """``name`` if it is one safe path component, else a TruthlineError saying what to use."""
    if not isinstance(name, str) or not name:
        raise UnsafeNameError(f"{what}: empty; use letters, digits, '_' or '-'")
    bad = (
        len(name) > MAX_NAME
        or not re.fullmatch(pattern, name)
        or ".." in name
        or name in (".", "..")
    )
    if bad:
        allowed = (
            "lower-case letters, digits, '_' and '-', starting with a letter or digit"
            if pattern == PROJECT_NAME
            else "letters, digits, '.', '_' and '-', starting with a letter or digit"
        )
        raise UnsafeNameError(
            f"{what} {name[:120]!r} cannot be used as a file name: use {allowed} "
            f"(at most {MAX_NAME} characters, no '/' or '..')"
        )
    return name


def check_project_name(name: str, what: str = "project name") -> str:
    """A project name (the folder ``projects/<name>`` and the store's key)."""
    return check_name(name, what, pattern=PROJECT_NAME)


def inside(root: str | Path, *parts: str, what: str = "path") -> Path:
    """``root / parts...``, refused unless the result (symlinks resolved) stays under ``root``."""
    base = Path(root).resolve()
    target = base.joinpath(*parts)
    resolved = target.resolve()
    if resolved != base and base not in resolved.parents:
        raise UnsafeNameError(f"{what} {'/'.join(parts)!r} points outside {base}; refused")
    return target


MAX_ANNOTATOR = 200
"""Annotator ids (emails, user names) are at most this long: reports, tables and the store's
String(300) columns hold them whole; a longer one is a mistake or an attack."""


def annotator_problem(who: str) -> str | None:
    """Why ``who`` cannot be an annotator id, or None when it can: empty, longer than
    ``MAX_ANNOTATOR``, or holding a control or invisible formatting character (a newline,
    NUL, a right-to-left override) that would break or disguise reports and CSV rows."""
    import unicodedata

    if not isinstance(who, str) or not who.strip():
        return "empty annotator"
    if len(who) > MAX_ANNOTATOR:
        return (
            f"annotator id {who[:40]!r}... is {len(who)} characters long (at most "
            f"{MAX_ANNOTATOR}); use a shorter id, e.g. the person's email"
        )
    bad = next((c for c in who if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        return (
            f"annotator id {who[:60]!r} holds the control character U+{ord(bad):04X}; "
            "use printable characters only"
        )
    return None


def check_annotator(who: str, what: str = "annotator") -> str:
    """``who`` if it can be an annotator id, else a TruthlineError naming ``what``."""
    why = annotator_problem(who)
    if why is not None:
        raise TruthlineError(f"{what}: {why}")
    return who


__all__ = [
    "MAX_ANNOTATOR",
    "MAX_NAME",
    "PROJECT_NAME",
    "SAFE_NAME",
    "UnsafeNameError",
    "annotator_problem",
    "check_annotator",
    "check_name",
    "check_project_name",
    "inside",
]
