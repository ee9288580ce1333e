"""Label Studio plumbing shared by the passes, verification and adjudication projects.

The label configs are the ones the LS 1.23.2 server accepted (shared/physalign/, bundled in
``labelconfigs/``); the passes config gets the generated problems' quantity kinds added.
Each project is a Label Studio project kind (``physalign.observe`` / ``.review`` in
``_passes``, ``physalign.verify`` / ``.adjudicate`` in ``_verify``) pushed and pulled through
the loop's store-backed path (``truthline.annotate.push_units`` / ``pull_units``): a work
folder's parents and a release's probes are the units of a store scope (``passes_scope``,
``release_scope``); projects, tasks, annotations and exposures live in the store's tables,
so a rerun of a push imports only what is missing, a pull is idempotent, deletions are
reconciled and foreign tasks reported. A folder that still has the JSON state file of
earlier versions (``label_studio.json``) is migrated into the store on first use and the
file renamed ``label_studio.json.migrated``. Images travel inside the task as ``data:``
URIs: nothing else needs serving.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from truthline.annotate import LSClient, Scope, adopt_ls_project, ls_project_row, unit_tasks
from truthline.errors import TruthlineError
from truthline.store import Store

CONFIG_DIR = Path(__file__).with_name("labelconfigs")
LEGACY_STATE = "label_studio.json"
MIGRATED = LEGACY_STATE + ".migrated"
PASSES_SCOPE = "physalign.passes"
RELEASE_SCOPE = "physalign.verify"

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


def passes_scope(work: Path) -> Scope:
    """The store scope of a work folder's annotation passes (its parents are the units)."""
    return Scope.of_folder(PASSES_SCOPE, work)


def release_scope(release: Path) -> Scope:
    """The store scope of a release's verification and adjudication (its probes)."""
    return Scope.of_folder(RELEASE_SCOPE, release)


def _legacy_slot(slot: str) -> tuple[str, str, str]:
    """A state file's slot -> (store slot, cohort, kind)."""
    if slot.startswith("verify:"):
        return "verify", slot.split(":", 1)[1], "physalign.verify"
    if slot in ("observe", "review", "adjudicate"):
        return slot, "", f"physalign.{slot}"
    raise ValueError(slot)


def migrate_state(
    store: Store,
    state_dir: Path,
    scope: Scope,
    shown: Callable[[str, str, str, str], list[dict[str, Any]] | None] | None = None,
) -> dict[str, Any] | None:
    """Move ``state_dir/label_studio.json`` (every server in it) into the store, then rename
    it ``label_studio.json.migrated``; None when there is no such file.

    Each slot's project and its tasks are recorded as if pushed through the store
    (``adopt_ls_project``); ``shown(server_url, slot, cohort, key)`` says what a task showed
    (recorded with it for the exposure log). Annotations are not in the file: the next pull
    reads them from Label Studio into the store."""
    p = Path(state_dir) / LEGACY_STATE
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        servers = {
            str(url).rstrip("/"): {str(k): v for k, v in dict(slots).items()}
            for url, slots in dict(data).items()
        }
        for slots in servers.values():
            for slot, rec in slots.items():
                _legacy_slot(slot)
                int(rec["ls_project_id"])
                {str(k): int(v) for k, v in dict(rec.get("tasks") or {}).items()}
    except (ValueError, TypeError, KeyError, AttributeError):
        raise TruthlineError(
            f"{p}: not the Label Studio state truthline writes; restore it from a backup "
            "(it maps parents and probes to Label Studio tasks), then rerun to move it "
            "into the store"
        ) from None
    adopted = 0
    for url, slots in servers.items():
        # verification before adjudication: what an adjudication task showed names them
        for slot in sorted(slots, key=lambda s: (s == "adjudicate", s == "review", s)):
            rec = slots[slot]
            arm, cohort, kind = _legacy_slot(slot)
            tasks = {str(k): int(v) for k, v in dict(rec.get("tasks") or {}).items()}
            adopted += adopt_ls_project(
                store,
                url,
                kind,
                None,
                scope=scope,
                slot=arm,
                cohort=cohort,
                ls_project_id=int(rec["ls_project_id"]),
                title=str(rec.get("title") or ""),
                tasks=tasks,
                shown={k: s for k in tasks if (s := shown(url, arm, cohort, k)) is not None}
                if shown
                else None,
            )
    p.replace(p.with_name(MIGRATED))
    return {"state_file": str(p), "renamed_to": str(p.with_name(MIGRATED)), "tasks": adopted}


def pushed_tasks(
    store: Store, client: LSClient, scope: Scope, slot: str, cohort: str = ""
) -> tuple[int, dict[str, int]] | None:
    """(Label Studio project id, unit key -> task id) of a pushed project, or None."""
    row = ls_project_row(store, client.url, scope.name, slot, cohort)
    if row is None:
        return None
    return int(row.ls_project_id), unit_tasks(store, client.url, int(row.ls_project_id))


def export_tasks(client: LSClient, ls_project_id: int) -> dict[int, dict[str, Any]]:
    """Label Studio task id -> exported task (with annotations and annotator emails)."""
    return {int(t["id"]): t for t in client.snapshot_export(ls_project_id)}


def annotator_of(ann: dict[str, Any]) -> str:
    who = ann.get("completed_by")
    if isinstance(who, dict):
        return str(who.get("email") or who.get("username") or who.get("id"))
    return str(who)


def submitted(task: dict[str, Any]) -> list[dict[str, Any]]:
    """A task's submitted, not cancelled annotations, oldest first (of a live export)."""
    anns = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
    return sorted(anns, key=lambda a: (str(a.get("created_at")), int(a.get("id") or 0)))


def simulated_users(
    admin: LSClient, emails: list[str], secrets_file: Path, *, store: Store, scope: Scope
) -> None:
    """Accounts for SIMULATED annotators, declared SIMULATED in the store for ``scope`` so
    every pull marks what they submit; an existing account whose password this workspace
    does not hold cannot be acted as, so it is refused up front, by name."""
    from truthline.annotate import add_users
    from truthline.store import register_simulated

    for row in add_users(admin, emails, secrets_file):
        if "password not in" in str(row["status"]):
            raise TruthlineError(
                f"{row['email']} already has an account on {admin.url} whose password is not in "
                f"{secrets_file}; give the simulated annotator another email"
            )
    register_simulated(store, scope.name, emails)
