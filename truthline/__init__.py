"""truthline: human-in-the-loop annotation and provenance audit for VLM benchmarks.

Public API: load a project (``load_project``), open a store (``Store``) or a workspace
(``Workspace``); stage packages (``truthline.prefill``, ``annotate``, ``audit``,
``benchmark``, ``dashboards``) expose their own APIs.
"""

from typing import TYPE_CHECKING, Any

from truthline.errors import ProjectError, TruthlineError

__version__ = "0.1.0"

if TYPE_CHECKING:
    from truthline.project import Project, load_project
    from truthline.store import Store
    from truthline.workspace import Workspace

_LAZY = {
    "Project": "truthline.project",
    "load_project": "truthline.project",
    "Store": "truthline.store",
    "Workspace": "truthline.workspace",
}


def __getattr__(name: str) -> Any:
    """Import the public API on first use: ``import truthline`` (and so the CLI's start-up)
    must not pull in pydantic, SQLAlchemy and friends."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'truthline' has no attribute {name!r}")


__all__ = [
    "Project",
    "ProjectError",
    "Store",
    "TruthlineError",
    "Workspace",
    "__version__",
    "load_project",
]
