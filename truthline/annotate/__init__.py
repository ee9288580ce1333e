"""Annotate: a real Label Studio server, blind / anchored / review projects, push and pull.

Public API: the local server (``serve``, ``stop``, ``target``, ``LocalServer``), the label
config generated from the schema (``label_config``, ``values_to_results``,
``results_to_values``, ``ls_control`` to map a new field type), the annotator instructions
generated from the project (``instructions``; the anchored arm shows ``PREFILL_LABEL``, never
the model's name), ``push`` / ``pull``,
``assign_arms``, annotator accounts (``add_users``, ``user_client``) and
``submit_annotation`` (post values as a given user — for simulated annotators), and the
media server (``MediaHTTPServer``: registered item media only, to the Label Studio origin).

Label Studio project kinds (``_kinds``): ``ProjectKind`` (label config + how a task is built
+ how an annotation is read back, ``ReadBack``) registered with ``@project_kind("name")`` in
``KINDS`` (entry-point group ``truthline.label_studio_kinds``; ``get_kind``); the loop's own
projects are the built-in ``field-schema`` kind. A system's kinds push and pull through the
same store-backed path: ``push_units`` / ``pull_units`` over the units of a ``Scope``
(``UnitPushReport``, ``UnitPull``, ``UnitAnnotation``), ``adopt_ls_project`` for projects a
legacy state file knew, ``unit_tasks`` / ``ls_project_row`` / ``ls_project_rows`` for what
the store recorded.
"""

from truthline.annotate._assign import assign_arms
from truthline.annotate._client import LabelStudioDown, LabelStudioError, LSClient
from truthline.annotate._instructions import PREFILL_LABEL, instructions
from truthline.annotate._kinds import (
    FIELD_SCHEMA,
    KINDS,
    FieldSchemaKind,
    FieldUnit,
    ProjectKind,
    ReadBack,
    Scope,
    get_kind,
    project_kind,
)
from truthline.annotate._labelconfig import (
    Converted,
    LSControl,
    control_name,
    label_config,
    ls_control,
    results_to_values,
    task_data,
    unboxed_note,
    values_to_results,
)
from truthline.annotate._local import Target, serve, stop, target
from truthline.annotate._media import MediaHTTPServer, MediaIndex
from truthline.annotate._pull import (
    PullReport,
    UnitAnnotation,
    UnitPull,
    kept_flag,
    pull,
    pull_units,
    stored_annotations,
)
from truthline.annotate._push import (
    PushReport,
    UnitPushReport,
    adopt_ls_project,
    ensure_ls_project,
    ls_project_row,
    ls_project_rows,
    push,
    push_units,
    risk_score,
    unit_tasks,
)
from truthline.annotate._server import Credentials, LocalServer
from truthline.annotate._users import USERS_FILE, add_users, submit_annotation, user_client

__all__ = [
    "FIELD_SCHEMA",
    "KINDS",
    "PREFILL_LABEL",
    "USERS_FILE",
    "Converted",
    "Credentials",
    "FieldSchemaKind",
    "FieldUnit",
    "LSClient",
    "LSControl",
    "LabelStudioDown",
    "LabelStudioError",
    "LocalServer",
    "MediaHTTPServer",
    "MediaIndex",
    "ProjectKind",
    "PullReport",
    "PushReport",
    "ReadBack",
    "Scope",
    "Target",
    "UnitAnnotation",
    "UnitPull",
    "UnitPushReport",
    "add_users",
    "adopt_ls_project",
    "assign_arms",
    "control_name",
    "ensure_ls_project",
    "get_kind",
    "instructions",
    "kept_flag",
    "label_config",
    "ls_control",
    "ls_project_row",
    "ls_project_rows",
    "project_kind",
    "pull",
    "pull_units",
    "push",
    "push_units",
    "results_to_values",
    "risk_score",
    "serve",
    "stop",
    "stored_annotations",
    "submit_annotation",
    "target",
    "task_data",
    "unboxed_note",
    "unit_tasks",
    "user_client",
    "values_to_results",
]
