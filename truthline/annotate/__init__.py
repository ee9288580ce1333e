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

from __future__ import annotations

from typing import TYPE_CHECKING

from truthline._lazy import lazy_exports

# public name -> defining module, imported on first use: importing a submodule (the
# stage's CLI for `--help`) loads none of the others (issue 28)
_EXPORTS = {
    "assign_arms": "truthline.annotate._assign",
    "LabelStudioDown": "truthline.annotate._client",
    "LabelStudioError": "truthline.annotate._client",
    "LSClient": "truthline.annotate._client",
    "PREFILL_LABEL": "truthline.annotate._instructions",
    "instructions": "truthline.annotate._instructions",
    "FIELD_SCHEMA": "truthline.annotate._kinds",
    "KINDS": "truthline.annotate._kinds",
    "FieldSchemaKind": "truthline.annotate._kinds",
    "FieldUnit": "truthline.annotate._kinds",
    "ProjectKind": "truthline.annotate._kinds",
    "ReadBack": "truthline.annotate._kinds",
    "Scope": "truthline.annotate._kinds",
    "get_kind": "truthline.annotate._kinds",
    "project_kind": "truthline.annotate._kinds",
    "Converted": "truthline.annotate._labelconfig",
    "LSControl": "truthline.annotate._labelconfig",
    "control_name": "truthline.annotate._labelconfig",
    "label_config": "truthline.annotate._labelconfig",
    "ls_control": "truthline.annotate._labelconfig",
    "results_to_values": "truthline.annotate._labelconfig",
    "task_data": "truthline.annotate._labelconfig",
    "unboxed_note": "truthline.annotate._labelconfig",
    "values_to_results": "truthline.annotate._labelconfig",
    "Target": "truthline.annotate._local",
    "serve": "truthline.annotate._local",
    "stop": "truthline.annotate._local",
    "target": "truthline.annotate._local",
    "MediaHTTPServer": "truthline.annotate._media",
    "MediaIndex": "truthline.annotate._media",
    "PullReport": "truthline.annotate._pull",
    "UnitAnnotation": "truthline.annotate._pull",
    "UnitPull": "truthline.annotate._pull",
    "kept_flag": "truthline.annotate._pull",
    "pull": "truthline.annotate._pull",
    "pull_units": "truthline.annotate._pull",
    "stored_annotations": "truthline.annotate._pull",
    "PushReport": "truthline.annotate._push",
    "UnitPushReport": "truthline.annotate._push",
    "adopt_ls_project": "truthline.annotate._push",
    "ensure_ls_project": "truthline.annotate._push",
    "ls_project_row": "truthline.annotate._push",
    "ls_project_rows": "truthline.annotate._push",
    "push": "truthline.annotate._push",
    "push_units": "truthline.annotate._push",
    "risk_score": "truthline.annotate._push",
    "unit_tasks": "truthline.annotate._push",
    "BoxMatch": "truthline.annotate._regions",
    "place_entities": "truthline.annotate._regions",
    "with_placed_boxes": "truthline.annotate._regions",
    "Credentials": "truthline.annotate._server",
    "LocalServer": "truthline.annotate._server",
    "USERS_FILE": "truthline.annotate._users",
    "add_users": "truthline.annotate._users",
    "submit_annotation": "truthline.annotate._users",
    "user_client": "truthline.annotate._users",
}
_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS)
__getattr__ = _lazy_getattr

if TYPE_CHECKING:
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
    from truthline.annotate._regions import BoxMatch, place_entities, with_placed_boxes
    from truthline.annotate._server import Credentials, LocalServer
    from truthline.annotate._users import USERS_FILE, add_users, submit_annotation, user_client

__all__ = [
    "FIELD_SCHEMA",
    "KINDS",
    "PREFILL_LABEL",
    "USERS_FILE",
    "BoxMatch",
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
    "place_entities",
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
    "with_placed_boxes",
]
