"""Where each pre-annotated entity's region comes from in the anchored arm (issue 26).

Label Studio ties per-entity controls (a worker's action, PPE, ...) to a region, so every
entity the pre-annotation names must arrive as a region with its values set, or the
annotator would retype them. The region's box comes, in this order, from

1. the VLM, when it returned one (``source="vlm"``; the best-overlapping person box of the
   detector, if any, is recorded with its IoU);
2. the person detector of the mining pass (item meta ``person_boxes``: the key frame's
   person boxes, percent coordinates) — a detector box no VLM box claimed, given to the
   boxless entities in order, left to right (``source="detector"``);
3. nowhere (``source="none"``): the region is a placeholder square in a corner slot that the
   annotator drags onto the worker (it reads back as "no box" if left there).

Every match is recorded with the task (``ls_tasks.shown``) and so in the exposure log: what
the annotator saw is the prediction plus these boxes. ``kept`` at pull compares the
annotation with the prediction *as shown*, boxes included (``with_placed_boxes``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from truthline.fields import box_iou

KIND = "placed_boxes"
"""``kind`` of the ``shown`` entry that records the matches of one task."""
MIN_IOU = 0.1
"""A VLM box overlapping no detector box by at least this much claims none of them."""


@dataclass(frozen=True)
class BoxMatch:
    """How one pre-annotated entity got its region."""

    field: str
    entity: str
    source: str  # vlm | detector | none
    iou: float | None = None
    """VLM box vs the detector box it claimed (None: no detector box to compare)."""
    box: dict[str, float] | None = None
    """The detector box placed (``source="detector"``), percent coordinates."""


def _box_lists(project: Any) -> dict[str, str]:
    """Entity list -> its box subfield, for the lists that have one."""
    from truthline.annotate._labelconfig import _entity_parts

    out = {}
    for name, ft in project.field_types.items():
        if ft.name == "entity_list":
            box_name, box, _subs = _entity_parts(ft)
            if box is not None and box_name:
                out[name] = box_name
    return out


def _person_boxes(meta: dict[str, Any] | None) -> list[dict[str, float]]:
    out = []
    for b in (meta or {}).get("person_boxes") or []:
        try:
            box = {k: float(b[k]) for k in ("x", "y", "width", "height")}
        except (KeyError, TypeError, ValueError):
            continue
        if box["width"] > 0 and box["height"] > 0:
            out.append(box)
    return sorted(out, key=lambda b: (b["x"], b["y"]))


def place_entities(
    project: Any, values: dict[str, Any], meta: dict[str, Any] | None
) -> tuple[dict[str, Any], list[BoxMatch]]:
    """``values`` with detector boxes given to boxless entities, and one match per entity.

    ``values`` are normalized prediction values (left unchanged); ``meta`` is the item's meta
    (``person_boxes``). Entities still without a box stay so (placeholders at push)."""
    lists = _box_lists(project)
    dets = _person_boxes(meta)
    out = dict(values)
    matches: list[BoxMatch] = []
    for name, box_name in lists.items():
        ents = values.get(name)
        if not isinstance(ents, list):
            continue
        ft = project.field_types[name]
        free = list(range(len(dets)))
        placed: list[dict[str, Any]] = [dict(e) for e in ents]
        found: dict[int, BoxMatch] = {}
        for i, ent in enumerate(placed):  # VLM boxes first: they claim what they overlap
            boxes = ent.get(box_name)
            if not boxes:
                continue
            best = max(free, key=lambda j: box_iou(boxes[0], dets[j]), default=None)
            iou = box_iou(boxes[0], dets[best]) if best is not None else None
            if best is not None and iou is not None and iou >= MIN_IOU:
                free.remove(best)
            found[i] = BoxMatch(
                name, ft.entity_id(ent, i), "vlm", None if iou is None else round(iou, 4)
            )
        for i, ent in enumerate(placed):
            if i in found:
                continue
            if free:
                box = dets[free.pop(0)]
                label = _label(ft, box_name)
                ent[box_name] = [box | {"label": label}]
                found[i] = BoxMatch(name, ft.entity_id(ent, i), "detector", None, box)
            else:
                found[i] = BoxMatch(name, ft.entity_id(ent, i), "none")
        out[name] = placed
        matches += [found[i] for i in range(len(placed))]
    return out, matches


def _label(ft: Any, box_name: str) -> str | None:
    labels = list(getattr(ft.subfields[box_name].spec, "labels", []) or [])
    return labels[0] if labels else None


_MATCH_FIELDS = tuple(f.name for f in fields(BoxMatch))


def shown_entry(matches: list[BoxMatch]) -> dict[str, Any]:
    """The ``shown`` entry (task and exposure log) recording one task's matches: what
    ``asdict`` gives, without its recursive deep copy (a match holds scalars and one flat box
    dict; ``asdict`` was a sixth of push's own CPU)."""
    return {
        "kind": KIND,
        "matches": [
            {f: dict(v) if isinstance(v := getattr(m, f), dict) else v for f in _MATCH_FIELDS}
            for m in matches
        ],
    }


def with_placed_boxes(project: Any, values: dict[str, Any], shown: Any) -> dict[str, Any]:
    """The prediction ``values`` as the task showed them: detector boxes recorded in
    ``shown`` (a task's ``shown`` list) put back on their entities."""
    entries = [s for s in shown or [] if isinstance(s, dict) and s.get("kind") == KIND]
    if not entries or not isinstance(values, dict):
        return values
    lists = _box_lists(project)
    out = dict(values)
    for m in entries[-1].get("matches") or []:
        name, box = m.get("field"), m.get("box")
        if m.get("source") != "detector" or not box or name not in lists:
            continue
        ft = project.field_types[name]
        ents = [dict(e) for e in out.get(name) or []]
        for i, ent in enumerate(ents):
            if ft.entity_id(ent, i) == m.get("entity") and not ent.get(lists[name]):
                ent[lists[name]] = [dict(box) | {"label": _label(ft, lists[name])}]
        out[name] = ents
    return out


def valueless_regions(project: Any, results: list[Any]) -> list[str]:
    """``"<list> region <id>"`` for each entity-list region of ``results`` that carries no
    per-region value (a box drawn whose controls were never shown, or left empty); lists
    whose entities have nothing but a box (and key) are never reported."""
    from truthline.annotate._labelconfig import _entity_parts, control_name

    lists = {}
    for name, ft in project.field_types.items():
        if ft.name != "entity_list":
            continue
        _box_name, box, subs = _entity_parts(ft)
        if box is not None and any(s != getattr(ft.spec, "key", None) for s in subs):
            lists[control_name(name)] = name
    boxes: dict[tuple[str, str], None] = {}
    valued: set[tuple[str, str]] = set()
    for r in results:
        if not isinstance(r, dict) or r.get("id") is None:
            continue
        fname = str(r.get("from_name", ""))
        head, _, sub = fname.partition("__")
        if head not in lists:
            continue
        key = (head, str(r["id"]))
        if not sub:
            boxes[key] = None
        elif _has_value(r.get("value")):
            valued.add(key)
    return [f"{lists[h]} region {rid}" for h, rid in boxes if (h, rid) not in valued]


def _has_value(v: Any) -> bool:
    if not isinstance(v, dict):
        return False
    for k in ("choices", "text", "number"):
        x = v.get(k)
        if isinstance(x, list) and any(str(e).strip() for e in x):
            return True
        if isinstance(x, str) and x.strip():
            return True
        if k == "number" and isinstance(x, int | float) and not isinstance(x, bool):
            return True
    return False
