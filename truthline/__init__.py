"""truthline: human-in-the-loop annotation and provenance audit for VLM benchmarks.

Public API: load a project (``load_project``), open a store (``Store``) or a workspace
(``Workspace``); stage packages (``truthline.prefill``, ``annotate``, ``audit``,
``benchmark``, ``dashboards``) expose their own APIs.
"""

__version__ = "0.1.0"

from truthline.errors import ProjectError, TruthlineError
from truthline.project import Project, load_project
from truthline.store import Store
from truthline.workspace import Workspace

__all__ = [
    "Project",
    "ProjectError",
    "Store",
    "TruthlineError",
    "Workspace",
    "__version__",
    "load_project",
]
