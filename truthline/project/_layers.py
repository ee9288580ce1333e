"""Annotation layers: which fields an item asks, from a count in its metadata.

SteelBench (seeds/001, App. A) annotates a clip with more than 5 workers at scene level only
(Layer 1) and a clip with 1..5 workers also per person (Layer 2): past five people,
per-person labels are too unreliable to be worth their cost. A project declares the rule
once::

    [layers]
    count = "persons"        # item metadata key: the number of entities (or a list of them)
    max_count = 5            # Layer 2 for 1..max_count, Layer 1 above (and for 0)
    entity = "workers"       # the entity list only Layer 2 asks
    require = ["workers.action", "workers.helmet"]   # per-entity subfields Layer 2 requires

An item's layer is a pure function of its metadata (``item_layer``), so push, pull, the
audit and the benchmark agree on it without storing it. An item whose metadata lacks the
count has no layer (``None``): it asks every field and requires nothing extra, as without
a rule. Values an annotation gives to fields outside its item's layer are not dropped
silently: ``layer_check`` names them, and readers set them aside (``in_layer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

LAYER_SCENE = 1
"""Scene-level fields only (more entities than ``max_count``, or none)."""
LAYER_ENTITY = 2
"""Scene-level fields and every entity's fields (1..``max_count`` entities)."""


class Layers(BaseModel):
    """The ``[layers]`` table of a project definition."""

    model_config = ConfigDict(extra="forbid")

    count: str = Field(min_length=1)
    """Item metadata key holding the entity count (an integer, or a list counted by length)."""
    max_count: int = Field(5, ge=1)
    """Most entities a Layer 2 item has; more (or none) make it Layer 1."""
    entity: str = Field(min_length=1)
    """The entity-list field Layer 1 does not ask."""
    require: list[str] | None = None
    """Entity subfields (``workers.action``) every entity of a Layer 2 annotation must fill;
    default: every subfield but the key and free text."""
    scene_only: list[str] = []
    """Top-level fields only Layer 1 asks (Layer 2 leaves them out)."""


@dataclass(frozen=True)
class ItemLayer:
    """One item's layer: its number, the count it came from and what it asks."""

    layer: int
    count: int
    asked: tuple[str, ...]
    """Top-level fields this layer asks, in declared order."""
    out_of_layer: tuple[str, ...]
    """Top-level fields it does not ask."""
    required: tuple[str, ...]
    """Entity subfields each entity must fill (Layer 2; empty for Layer 1)."""

    @property
    def name(self) -> str:
        return f"Layer {self.layer}"


@dataclass(frozen=True)
class LayerCheck:
    """An annotation's values against its item's layer."""

    out_of_layer: tuple[str, ...] = ()
    """Out-of-layer fields the annotation gave values to (kept in the store, left out of
    gold and agreement)."""
    missing: tuple[str, ...] = ()
    """Required values it lacks: ``workers`` (no entity at all) or ``workers[P2].helmet``."""

    @property
    def ok(self) -> bool:
        return not self.out_of_layer and not self.missing

    def describe(self, layer: ItemLayer) -> str:
        """One line for a pull report or an audit listing."""
        parts = []
        if self.out_of_layer:
            parts.append(
                f"values in {', '.join(self.out_of_layer)} are out of layer (kept in the "
                "store, left out of gold and agreement)"
            )
        if self.missing:
            parts.append("required per-entity values missing: " + ", ".join(self.missing))
        return f"{layer.name} item ({layer.count} counted): " + "; ".join(parts)


def layer_count(meta: Any, key: str) -> int | None:
    """The count under ``key`` in item metadata: an integer (or integral text/float), or a
    list's length; None when absent or unreadable."""
    v = (meta or {}).get(key) if isinstance(meta, dict) else None
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, list | tuple):
        return len(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if f == f and f >= 0 and f == int(f) else None


def default_required(project: Any, entity: str) -> list[str]:
    """Every subfield of the entity list but its key and free-text fields."""
    ft = project.field_types[entity]
    key = getattr(ft.spec, "key", None)
    return [f"{entity}.{n}" for n, st in ft.subfields.items() if n != key and st.name != "text"]


def item_layer(project: Any, meta: Any) -> ItemLayer | None:
    """The layer of an item with metadata ``meta`` (None: no rule, or no count in ``meta``)."""
    rule: Layers | None = getattr(project, "layers", None)
    if rule is None:
        return None
    n = layer_count(meta, rule.count)
    if n is None:
        return None
    names = list(project.field_types)
    if 1 <= n <= rule.max_count:
        out = set(rule.scene_only)
        req = rule.require if rule.require is not None else default_required(project, rule.entity)
        layer, required = LAYER_ENTITY, tuple(req)
    else:
        out = {rule.entity}
        layer, required = LAYER_SCENE, ()
    return ItemLayer(
        layer,
        n,
        tuple(f for f in names if f not in out),
        tuple(f for f in names if f in out),
        required,
    )


def _given(v: Any) -> bool:
    return v is not None and v != [] and v != ""


def layer_check(project: Any, layer: ItemLayer | None, values: dict[str, Any]) -> LayerCheck:
    """Which out-of-layer fields ``values`` (top-level, normalized) fill, and which required
    entity values it lacks."""
    if layer is None:
        return LayerCheck()
    out = tuple(f for f in layer.out_of_layer if _given(values.get(f)))
    missing: list[str] = []
    if layer.required:
        by_list: dict[str, list[str]] = {}
        for path in layer.required:
            head, _, sub = path.partition(".")
            by_list.setdefault(head, []).append(sub)
        for head, subs in by_list.items():
            ents = values.get(head) or []
            if not ents:
                missing.append(head)
                continue
            ft = project.field_types[head]
            for i, ent in enumerate(ents):
                eid = ft.entity_id(ent, i)
                missing += [f"{head}[{eid}].{s}" for s in subs if not _given(ent.get(s))]
    return LayerCheck(out, tuple(missing))


def in_layer(layer: ItemLayer | None, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without the fields outside ``layer`` (the same dict when nothing goes)."""
    if layer is None or not any(f in values for f in layer.out_of_layer):
        return values
    return {k: v for k, v in values.items() if k not in layer.out_of_layer}


def layer_problems(project: Any, rule: Layers) -> list[tuple[str, str]]:
    """``(path, message)`` of every problem of a ``[layers]`` table against the fields."""
    problems: list[tuple[str, str]] = []
    types = project.field_types
    ent = types.get(rule.entity)
    if ent is None or ent.name != "entity_list":
        lists = [n for n, t in types.items() if t.name == "entity_list"]
        problems.append(
            (
                "layers.entity",
                f"{rule.entity!r} is not an entity-list field "
                f"(entity lists: {', '.join(lists) or 'none declared'})",
            )
        )
        return problems
    for i, path in enumerate(rule.require or []):
        head, _, sub = path.partition(".")
        if head != rule.entity or sub not in ent.subfields:  # type: ignore[attr-defined]
            problems.append(
                (f"layers.require.{i}", f"{path!r} is not a subfield of {rule.entity!r}")
            )
    for i, name in enumerate(rule.scene_only):
        if name not in types:
            problems.append((f"layers.scene_only.{i}", f"unknown field {name!r}"))
        elif name == rule.entity:
            problems.append((f"layers.scene_only.{i}", "the entity list is never scene-only"))
    return problems
