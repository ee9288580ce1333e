"""What a release's gold is made of, for its card: the class table of each taxonomy field
(SteelBench Table 6: code, group, name, instances) and the annotation density (Table 7:
fields and decisions per clip, scene-level vs per-entity, entities per clip).

Generic over any project: a field's level comes from its path (``workers[P1].action`` is
per-entity, ``worker_count`` scene-level, ``workers`` the entity list itself), the classes
from the project's ``[taxonomies]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from truthline.audit._gold import GoldItem
from truthline.benchmark._scoring import _ENTITY_PATH, leaf_of
from truthline.project import Project

SCENE, ENTITY, ENTITY_LIST = "scene", "per-entity", "entity list"
"""A gold decision's level: a top-level field, an entity's subfield, an entity list's members."""


@dataclass(frozen=True)
class ClassCount:
    """One taxonomy class and how many released gold decisions carry it."""

    code: str
    group: str
    group_name: str
    name: str
    description: str
    count: int


@dataclass(frozen=True)
class ClassTable:
    """A taxonomy field's classes; ``other``: gold values outside the taxonomy (e.g. an
    explicit "cannot tell")."""

    field: str
    taxonomy: str
    classes: tuple[ClassCount, ...]
    decisions: int
    other: int


@dataclass(frozen=True)
class Spread:
    """Mean, least and most of a per-clip count."""

    mean: float
    min: int
    max: int

    @classmethod
    def of(cls, xs: Sequence[int]) -> Spread:
        if not xs:
            return cls(0.0, 0, 0)
        return cls(sum(xs) / len(xs), min(xs), max(xs))


@dataclass(frozen=True)
class FieldDensity:
    """One leaf field: its level and type, the clips with gold on it, its decisions."""

    field: str
    level: str
    type: str
    clips: int
    decisions: int
    per_clip: float
    """Decisions per released clip (all clips, so fields absent on a clip count 0)."""


@dataclass(frozen=True)
class Density:
    """Annotation density of the released gold (``fields``: scene-level plus per-entity
    decisions, the entity lists' membership left out; ``decisions``: every gold value)."""

    clips: int
    decisions: int
    fields_per_clip: Spread
    scene_fields_per_clip: Spread
    entity_fields_per_clip: Spread
    decisions_per_clip: Spread
    entities_per_clip: Spread
    fields: tuple[FieldDensity, ...]


def level_of(project: Project, path: str) -> str:
    """Scene-level, per-entity, or the entity list (its membership decision)."""
    if _ENTITY_PATH.match(path):
        return ENTITY
    ft = project.field_types.get(path)
    return ENTITY_LIST if getattr(ft, "subfields", None) is not None else SCENE


def _values(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple | set) else [v]


def class_tables(project: Project, items: Iterable[GoldItem]) -> list[ClassTable]:
    """Per leaf field with a taxonomy that has gold here: each class's instances."""
    items = list(items)
    out: list[ClassTable] = []
    for leaf, ft in project.leaf_fields().items():
        tax_name = getattr(getattr(ft, "spec", None), "taxonomy", None)
        tax = project.taxonomies.get(tax_name) if tax_name else None
        if tax is None:
            continue
        counts: dict[str, int] = {}
        decisions = 0
        for it in items:
            for path, v in it.values.items():
                if leaf_of(path) != leaf or v is None:
                    continue
                decisions += 1
                for x in _values(v):
                    counts[str(x)] = counts.get(str(x), 0) + 1
        if not decisions:
            continue
        classes = tuple(
            ClassCount(
                c.code,
                c.group,
                tax.groups.get(c.group, ""),
                c.name,
                c.description,
                counts.pop(c.code, 0),
            )
            for c in tax.classes
        )
        out.append(ClassTable(leaf, str(tax_name), classes, decisions, sum(counts.values())))
    return out


def density(project: Project, items: Iterable[GoldItem]) -> Density:
    """Table 7's figures on these items' gold."""
    items = list(items)
    per_field: dict[str, dict[int, int]] = {}
    levels: dict[str, str] = {}
    scene, entity, total, ents = [], [], [], []
    for it in items:
        n = {SCENE: 0, ENTITY: 0, ENTITY_LIST: 0}
        ids: set[tuple[str, str]] = set()
        for path in it.values:
            lvl = level_of(project, path)
            n[lvl] += 1
            leaf = leaf_of(path)
            levels.setdefault(leaf, lvl)
            per_field.setdefault(leaf, {})
            per_field[leaf][it.item_id] = per_field[leaf].get(it.item_id, 0) + 1
            m = _ENTITY_PATH.match(path)
            if m:
                ids.add((m["name"], m["eid"]))
            elif lvl == ENTITY_LIST:
                ids |= {(path, str(e)) for e in _values(it.values[path]) if e is not None}
        scene.append(n[SCENE])
        entity.append(n[ENTITY])
        total.append(sum(n.values()))
        ents.append(len(ids))
    fields = tuple(
        FieldDensity(
            leaf,
            levels[leaf],
            _type_name(project, leaf),
            len(clips),
            sum(clips.values()),
            sum(clips.values()) / len(items) if items else 0.0,
        )
        for leaf, clips in per_field.items()
    )
    return Density(
        len(items),
        sum(total),
        Spread.of([a + b for a, b in zip(scene, entity, strict=True)]),
        Spread.of(scene),
        Spread.of(entity),
        Spread.of(total),
        Spread.of(ents),
        fields,
    )


def _type_name(project: Project, leaf: str) -> str:
    try:
        return project.field(leaf).name
    except KeyError:
        return ""


def composition(project: Project, items: Iterable[GoldItem]) -> dict[str, Any]:
    """The datasheet's ``classes`` and ``density`` (plain data: datasheet.json, the card)."""
    items = list(items)
    return {
        "classes": [asdict(t) for t in class_tables(project, items)],
        "density": asdict(density(project, items)),
    }
