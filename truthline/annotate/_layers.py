"""Annotation layers in Label Studio: one project, the entity list's labels per task.

Label Studio shows a view only on choices or regions (``visibleWhen``: region-selected,
choice-selected, ...), never on task data, so a layer cannot hide controls by itself. But
every Labels tag can take its labels from the task (``value="$..."``, dynamic labels): the
layered entity list's ``RectangleLabels`` reads them from ``<list>__labels``. A Layer 2 (or
unlayered) task lists the box labels; a Layer 1 task lists none, so no entity region can be
drawn and the per-entity controls, shown only for a selected region, never appear: Layer 1
tasks have scene-level controls only, nothing per entity to fill or require. A note above
the list (``<list>__layer``) says which layer the clip is and why. Predictions and earlier
annotations a task shows are cut to its layer first (``in_layer``): a Layer 1 task never
carries an entity region either.

One project per arm keeps push, pull, overlap and exposure as they are; a project without
``[layers]`` gets the static labels it always had.
"""

from __future__ import annotations

from typing import Any

from truthline.project import LAYER_SCENE, ItemLayer


def layered_list(project: Any) -> str | None:
    """The entity list whose labels follow the item's layer (None: no ``[layers]``)."""
    rule = getattr(project, "layers", None)
    return rule.entity if rule is not None else None


def labels_key(control: str) -> str:
    """Task-data key of the layered list's labels (``workers__labels``)."""
    return f"{control}__labels"


def note_key(control: str) -> str:
    """Task-data key of the note naming the item's layer (``workers__layer``)."""
    return f"{control}__layer"


def labels_xml(control: str, to: str) -> str:
    """The layered list's ``RectangleLabels``: labels from the task, beside the layer note."""
    note = f'<Header value="${note_key(control)}" size="6"/>'
    return f'{note}<RectangleLabels name="{control}" toName="{to}" value="${labels_key(control)}"/>'


def layer_note(layer: ItemLayer | None, max_count: int, title: str) -> str:
    """What annotators read above the list: the layer, the count and what to do."""
    if layer is None:
        return ""
    if layer.layer == LAYER_SCENE:
        why = f"more than {max_count}" if layer.count > max_count else "none"
        return (
            f"{layer.name} clip ({layer.count} counted, {why}): scene-level fields only; "
            f"{title.lower()} are not annotated here."
        )
    return (
        f"{layer.name} clip ({layer.count} counted): draw a box for every one you can see "
        "and fill its fields."
    )


def layer_data(
    project: Any, control: str, labels: list[str], layer: ItemLayer | None, title: str
) -> dict[str, Any]:
    """Task data of the layered list: its labels (none on Layer 1) and the layer note."""
    shown = [] if layer is not None and layer.layer == LAYER_SCENE else labels
    return {
        labels_key(control): [{"value": lab} for lab in shown],
        note_key(control): layer_note(layer, project.layers.max_count, title),
    }
