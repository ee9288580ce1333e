"""Annotate: a real Label Studio server, blind / anchored / review projects, push and pull.

Public API: the local server (``serve``, ``stop``, ``target``, ``LocalServer``), the label
config generated from the schema (``label_config``, ``values_to_results``,
``results_to_values``, ``ls_control`` to map a new field type), the annotator instructions
generated from the project (``instructions``; the anchored arm shows ``PREFILL_LABEL``, never
the model's name), ``push`` / ``pull``,
``assign_arms``, annotator accounts (``add_users``, ``user_client``) and
``submit_annotation`` (post values as a given user — for simulated annotators), and the
media server (``MediaHTTPServer``: registered item media only, to the Label Studio origin).
"""

from truthline.annotate._assign import assign_arms
from truthline.annotate._client import LabelStudioDown, LabelStudioError, LSClient
from truthline.annotate._instructions import PREFILL_LABEL, instructions
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
from truthline.annotate._pull import PullReport, kept_flag, pull
from truthline.annotate._push import PushReport, ensure_ls_project, push, risk_score
from truthline.annotate._server import Credentials, LocalServer
from truthline.annotate._users import USERS_FILE, add_users, submit_annotation, user_client

__all__ = [
    "PREFILL_LABEL",
    "USERS_FILE",
    "Converted",
    "Credentials",
    "LSClient",
    "LSControl",
    "LabelStudioDown",
    "LabelStudioError",
    "LocalServer",
    "MediaHTTPServer",
    "MediaIndex",
    "PullReport",
    "PushReport",
    "Target",
    "add_users",
    "assign_arms",
    "control_name",
    "ensure_ls_project",
    "instructions",
    "kept_flag",
    "label_config",
    "ls_control",
    "pull",
    "push",
    "results_to_values",
    "risk_score",
    "serve",
    "stop",
    "submit_annotation",
    "target",
    "task_data",
    "unboxed_note",
    "user_client",
    "values_to_results",
]
