"""Label Studio plumbing shared by the passes, verification and adjudication projects.

The label configs are the ones the LS 1.23.2 server accepted (shared/physalign/, bundled in
``labelconfigs/``); the passes config gets the generated problems' quantity kinds added.
Projects and tasks are created through ``truthline.annotate.LSClient``; which Label Studio
project and task belong to what is kept in ``<work folder>/label_studio.json``, per server,
so a rerun of a push imports only what is missing (tasks also carry our ``item_id``, and
``LSClient.tasks_by_item`` recovers a batch the server stored before we recorded it).
Images travel inside the task as ``data:`` URIs: nothing else needs serving.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from truthline.annotate import LSClient
from truthline.errors import TruthlineError
from truthline.systems.physalign._records import write_json

CONFIG_DIR = Path(__file__).with_name("labelconfigs")
STATE = "label_studio.json"
EXTRA_KINDS = ("resistance", "voltage", "current", "power", "magnification")
# entity kind -> the label of a region drawn along a line (PolygonLabels "line_region")
POLY_LABELS = {
    "connector": "entity_connector_path",
    "force": "entity_force_arrow",
    "object": "entity_object_outline",
    "support": "entity_support_line",
    "field": "entity_field_line",
    "point": "entity_point_mark",
}
# entity kind -> the label of a box region (RectangleLabels "region")
RECT_LABELS = {
    k: f"entity_{k}" for k in ("object", "connector", "support", "force", "field", "point")
}


def label_config(name: str) -> str:
    """One of the bundled configs; ``observational_passes_1_4`` with the extra quantity kinds."""
    xml = (CONFIG_DIR / f"{name}.xml").read_text(encoding="utf-8")
    if name == "observational_passes_1_4":
        extra = "".join(f'<Choice value="{k}"/>' for k in EXTRA_KINDS)
        xml = xml.replace('<Choice value="other"/>', extra + '<Choice value="other"/>', 1)
        # lines and outlines of objects and supports too (resistors, axes), not only cables
        more = "".join(f'<Label value="{v}"/>' for v in POLY_LABELS.values() if v not in xml)
        xml = xml.replace(
            '<Label value="entity_force_arrow"/>', '<Label value="entity_force_arrow"/>' + more, 1
        )
    return xml


def data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()


def load_state(work: Path, client: LSClient) -> dict[str, Any]:
    """This server's part of the work folder's Label Studio state."""
    p = Path(work) / STATE
    if not p.is_file():
        return {}
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except ValueError:
        raise TruthlineError(
            f"{p}: not the Label Studio state truthline writes; restore it from a backup "
            "(it maps parents and probes to Label Studio tasks)"
        ) from None
    return dict(data.get(client.url) or {})


def save_state(work: Path, client: LSClient, state: dict[str, Any]) -> None:
    p = Path(work) / STATE
    data = json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}
    data[client.url] = state
    write_json(p, data)


def ensure_project(
    client: LSClient, state: dict[str, Any], slot: str, title: str, config: str, **settings: Any
) -> int:
    """The Label Studio project recorded under ``slot``; created if missing (404: refused)."""
    rec = state.get(slot)
    if rec:
        try:
            client.get(f"/api/projects/{rec['ls_project_id']}")
        except Exception as exc:
            if getattr(exc, "status", None) == 404:
                raise TruthlineError(
                    f"Label Studio project {rec['ls_project_id']} ({title}) was deleted on "
                    f"{client.url}; its records remain in {STATE}: remove its entry {slot!r} "
                    "to start it again"
                ) from None
            raise
        return int(rec["ls_project_id"])
    body = {"title": title[:50], "label_config": config, "show_skip_button": False} | settings
    created = client.post("/api/projects/", body)
    state[slot] = {"ls_project_id": int(created["id"]), "title": title[:50], "tasks": {}}
    return int(created["id"])


def import_tasks(
    client: LSClient,
    state: dict[str, Any],
    slot: str,
    tasks: dict[str, dict[str, Any]],
    save: Any,
) -> dict[str, int]:
    """Import the tasks (key -> task body, whose data holds ``item_id``) the project lacks."""
    rec = state[slot]
    pid = rec["ls_project_id"]
    by_item = {int(t["data"]["item_id"]): k for k, t in tasks.items()}
    on_server = client.tasks_by_item(pid)
    recovered = 0
    for item, tid in on_server.items():
        k = by_item.get(item)
        if k is not None and k not in rec["tasks"]:
            rec["tasks"][k] = tid
            recovered += 1
    todo = [k for k in tasks if k not in rec["tasks"]]
    for s in range(0, len(todo), 100):
        chunk = todo[s : s + 100]
        resp = client.post(
            f"/api/projects/{pid}/import", [tasks[k] for k in chunk], return_task_ids="true"
        )
        ids = resp.get("task_ids") or []
        if len(ids) != len(chunk):
            raise TruthlineError(
                f"Label Studio project {pid}: imported {len(chunk)} tasks, got {len(ids)} ids "
                "back; rerun the push to reconcile"
            )
        for k, tid in zip(chunk, ids, strict=True):
            rec["tasks"][k] = int(tid)
        save()  # each batch recorded as soon as the server confirms it
    save()
    return {"created": len(todo), "existing": len(tasks) - len(todo), "recovered": recovered}


def export_tasks(client: LSClient, state: dict[str, Any], slot: str) -> dict[int, dict[str, Any]]:
    """Label Studio task id -> exported task (with annotations and annotator emails)."""
    rec = state.get(slot)
    if not rec:
        raise TruthlineError(f"nothing was pushed for {slot!r} to {client.url}; push it first")
    return {int(t["id"]): t for t in client.snapshot_export(int(rec["ls_project_id"]))}


def annotator_of(ann: dict[str, Any]) -> str:
    who = ann.get("completed_by")
    if isinstance(who, dict):
        return str(who.get("email") or who.get("username") or who.get("id"))
    return str(who)


def submitted(task: dict[str, Any]) -> list[dict[str, Any]]:
    """A task's submitted, not cancelled annotations, oldest first."""
    anns = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
    return sorted(anns, key=lambda a: (str(a.get("created_at")), int(a.get("id") or 0)))


def simulated_users(admin: LSClient, emails: list[str], secrets_file: Path) -> None:
    """Accounts for SIMULATED annotators; an existing account whose password this workspace
    does not hold cannot be acted as, so it is refused up front, by name."""
    from truthline.annotate import add_users

    for row in add_users(admin, emails, secrets_file):
        if "password not in" in str(row["status"]):
            raise TruthlineError(
                f"{row['email']} already has an account on {admin.url} whose password is not in "
                f"{secrets_file}; give the simulated annotator another email"
            )
