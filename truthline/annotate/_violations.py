"""Exposure violations: what a blind task held, or its annotators had seen, that breaks blindness.

A blind label is worth something only because its annotator never saw the model's output
for the item. Label Studio Community cannot enforce that: any account may add a prediction
to a blind task over the API, label from it, or open the anchored project of the same item.
Pull therefore checks every blind task it reads and reports each breach, instead of storing
the label as if it were blind:

``prediction_on_task``
    the task holds a prediction (truthline never pushes one to the blind arm): every
    annotation on it is affected, and the task itself is recorded (``source_id`` empty).
``annotation_from_prediction``
    the annotation says it was made from a prediction (``parent_prediction`` set, or a
    result whose ``origin`` is ``prediction`` / ``prediction-changed``).
``annotator_saw_item``
    the annotator has an exposure to this item in another arm (the anchored arm's
    prediction, or the tier-1 labels a review task shows).

Violations are kept in ``exposure_violations`` (one row per breach, found again by a later
pull without a duplicate); ``violated_sources`` gives the affected annotations so readers
can leave them out of blind statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select

from truthline.store import Store, tables

PREDICTION_ON_TASK = "prediction_on_task"
ANNOTATION_FROM_PREDICTION = "annotation_from_prediction"
ANNOTATOR_SAW_ITEM = "annotator_saw_item"
_FROM_PREDICTION = ("prediction", "prediction-changed")
_SHOWING_ARMS = ("anchored", "review")  # arms whose tasks show a model's or others' answers


@dataclass(frozen=True)
class Violation:
    """One breach of blindness on one blind task (``source_id`` empty: the task itself)."""

    kind: str
    ls_project_id: int
    ls_task_id: int
    item_id: int
    source_id: str = ""
    annotator: str = ""
    detail: str = ""

    def describe(self) -> str:
        who = f", annotation {self.source_id} by {self.annotator}" if self.source_id else ""
        return (
            f"exposure violation on blind task {self.ls_task_id} (Label Studio project "
            f"{self.ls_project_id}{who}): {self.detail}"
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def task_violations(
    task: dict[str, Any],
    *,
    ls_project_id: int,
    item_id: int,
    source_of: Callable[[int], str],
    annotator_of: Callable[[dict[str, Any]], str],
    seen_elsewhere: Mapping[str, str],
) -> list[Violation]:
    """Every breach on one blind task of an export.

    ``source_of`` maps an annotation id to its store source id, ``annotator_of`` names an
    annotation's annotator, ``seen_elsewhere`` maps annotators who saw this item in another
    arm to that arm."""
    tid = int(task["id"])
    out: list[Violation] = []
    anns = [a for a in task.get("annotations") or [] if isinstance(a, dict) and "id" in a]
    preds = [p for p in task.get("predictions") or [] if p is not None]
    if preds:
        ids = [p.get("id") if isinstance(p, dict) else p for p in preds]
        out.append(
            Violation(
                PREDICTION_ON_TASK,
                ls_project_id,
                tid,
                item_id,
                detail=f"the task holds {len(preds)} prediction(s) (ids {ids}); a blind task "
                "must hold none",
            )
        )
    for ann in anns:
        sid, who = source_of(int(ann["id"])), annotator_of(ann)
        if preds:
            out.append(
                Violation(
                    PREDICTION_ON_TASK,
                    ls_project_id,
                    tid,
                    item_id,
                    sid,
                    who,
                    "labelled while the task held a prediction",
                )
            )
        origins = sorted(
            {
                str(r.get("origin"))
                for r in ann.get("result") or []
                if isinstance(r, dict) and r.get("origin") in _FROM_PREDICTION
            }
        )
        if ann.get("parent_prediction") is not None or origins:
            why = (
                f"made from prediction {ann['parent_prediction']}"
                if ann.get("parent_prediction") is not None
                else f"results marked {', '.join(origins)}"
            )
            out.append(
                Violation(ANNOTATION_FROM_PREDICTION, ls_project_id, tid, item_id, sid, who, why)
            )
        if who in seen_elsewhere:
            out.append(
                Violation(
                    ANNOTATOR_SAW_ITEM,
                    ls_project_id,
                    tid,
                    item_id,
                    sid,
                    who,
                    f"the annotator saw this item in the {seen_elsewhere[who]} arm",
                )
            )
    return out


def seen_in_other_arms(store: Store, project: str) -> dict[int, dict[str, str]]:
    """Item -> {annotator: arm} for every exposure that showed something: the anchored
    arm's prediction, a review task's tier-1 labels (or any exposure to a prediction)."""
    e = tables.exposures
    out: dict[int, dict[str, str]] = {}
    with store.begin() as conn:
        rows = conn.execute(
            select(e.c.item_id, e.c.annotator, e.c.arm, e.c.prediction_id).where(
                e.c.project == project
            )
        )
        for r in rows:
            if r.arm in _SHOWING_ARMS or r.prediction_id is not None:
                out.setdefault(int(r.item_id), {})[str(r.annotator)] = str(r.arm)
    return out


def record_violations(
    conn: Any, project: str, server_url: str, found: list[Violation], found_at: Any
) -> int:
    """Store the violations not yet stored (inside the caller's transaction); how many."""
    if not found:
        return 0
    v = tables.exposure_violations
    pids = {x.ls_project_id for x in found}
    have = {
        (r.ls_project_id, r.ls_task_id, r.kind, r.source_id)
        for r in conn.execute(
            select(v.c.ls_project_id, v.c.ls_task_id, v.c.kind, v.c.source_id).where(
                v.c.server_url == server_url, v.c.ls_project_id.in_(pids)
            )
        )
    }
    rows = []
    for x in found:
        key = (x.ls_project_id, x.ls_task_id, x.kind, x.source_id)
        if key in have:
            continue
        have.add(key)
        rows.append(
            x.as_dict() | {"project": project, "server_url": server_url, "found_at": found_at}
        )
    if rows:
        conn.execute(v.insert(), rows)
    return len(rows)


def violated_sources(store: Store, project: str) -> set[str]:
    """Source ids of the annotations an exposure violation affects (left out of blind stats)."""
    v = tables.exposure_violations
    with store.begin() as conn:
        return {
            r.source_id
            for r in conn.execute(
                select(v.c.source_id).where(v.c.project == project, v.c.source_id != "")
            )
        }
