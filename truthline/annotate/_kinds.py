"""Label Studio project kinds: what a project shows and how its answers come back.

A kind is three things: the **label config**, how a **task** is built from a unit (an item of
the loop, a system's record), and how an **annotation is read back** into typed values (one
store row per top-level value). It is a ``ProjectKind`` subclass registered with one
decorator::

    from truthline.annotate import ProjectKind, ReadBack, project_kind

    @project_kind("mysystem.rate")
    class Rate(ProjectKind):
        fields = ("score",)

        def label_config(self, context):
            return '<View><Text name="t" value="$text"/><Rating name="score" toName="t"/></View>'

        def task(self, context, unit):
            return {"data": {"text": unit["text"]}}

        def read(self, context, key, annotation):
            r = next(iter(annotation.get("result") or []), {})
            return ReadBack({"score": (r.get("value") or {}).get("rating")})

A plug-in package declares its kinds in the ``truthline.label_studio_kinds`` entry-point group
(``"mysystem.rate" = "mysystem.kinds:Rate"``), so a kind is imported only when it is asked for
by name (``get_kind``); ``KINDS.names()`` lists them all without importing any.

The loop's own blind / anchored / review projects are the built-in ``field-schema`` kind
(config generated from the project's fields, tasks with media and the prediction shown,
results -> normalized field values). A system's kinds go through the same store-backed
``push_units`` / ``pull_units`` as the loop: its units are items of a ``Scope`` (a store
namespace that is not a project, kept out of project lists), its projects, tasks,
annotations and exposures live in the loop's tables, push and pull are idempotent,
deletions in Label Studio are reconciled and foreign tasks reported. What a task shows
besides its data (an earlier annotation, a private target) is the kind's ``shown``: it is
recorded with the task and in the exposure of everyone who annotates it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from sqlalchemy import select

from truthline._registry import Registry
from truthline.project import ItemLayer, in_layer
from truthline.store import Store, json_hash, now, tables

ENTRY_POINT_GROUP = "truthline.label_studio_kinds"


@dataclass(frozen=True)
class ReadBack:
    """One annotation read back: typed values by top-level name, the Label Studio ``origin``
    of each where the kind knows it, and problems (a malformed result: reported, skipped)."""

    values: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    refused: str | None = None
    """Why the whole annotation is refused (empty, boxes without values): ``pull`` reports it
    per task and stores none of its values, so it stays out of statistics and gold."""


class ProjectKind:
    """A kind of Label Studio project. Subclass it and decorate with ``@project_kind(name)``.

    ``context`` is whatever the kind's caller hands every method (the loop's: the
    ``Project``; PhysAlign's: the work folder's problems or the release's probes); ``unit``
    is one task's input. ``task`` returns the Label Studio task body (``{"data": ...,
    "predictions": [...]}``); the push adds ``data["item_id"]`` (the unit's store item id).
    """

    name: ClassVar[str] = ""
    fields: ClassVar[tuple[str, ...]] = ()
    """The top-level values ``read`` returns (one store row each per annotation)."""
    tier: ClassVar[int] = 1
    """Annotations' tier: 1 annotators, 2 experts (reviewers, adjudicators)."""

    def label_config(self, context: Any) -> str:
        raise NotImplementedError

    def task(self, context: Any, unit: Any) -> dict[str, Any]:
        raise NotImplementedError

    def read(self, context: Any, key: str, annotation: dict[str, Any]) -> ReadBack:
        """A submitted (not cancelled) annotation of the unit ``key`` as typed values."""
        raise NotImplementedError

    # -- optional ------------------------------------------------------------------------
    def settings(self, context: Any) -> dict[str, Any]:
        """Label Studio project settings on creation (instructions, overlap, ...)."""
        return {}

    def shown(self, context: Any, key: str, unit: Any) -> list[dict[str, Any]]:
        """What the task shows besides its data and model predictions (earlier annotations,
        private values): recorded with the task and in every annotator's exposure."""
        return []

    def check(self, context: Any, tasks: dict[str, dict[str, Any]]) -> None:
        """Refuse (raise) before anything is imported, e.g. a leak check of the task data."""

    def field_names(self, context: Any) -> list[str]:
        return list(self.fields)

    def tier_of(self, slot: str) -> int:
        """The tier of annotations pulled from the project in ``slot`` (the loop: its arm)."""
        return self.tier

    def kept(self, context: Any, name: str, value: Any, shown: Any) -> bool | None:
        """Whether ``value`` keeps the prediction value ``shown`` (None: not applicable)."""
        return None


K = TypeVar("K", bound=type[ProjectKind])

KINDS: Registry[type[ProjectKind]] = Registry(
    "Label Studio project kind", entry_point_group=ENTRY_POINT_GROUP
)


def project_kind(name: str):
    """Register a ``ProjectKind`` subclass as ``name`` (``@project_kind("physalign.observe")``)."""

    def deco(cls: K) -> K:
        cls.name = name
        KINDS.add(name, cls)
        return cls

    return deco


def get_kind(kind: str | ProjectKind) -> ProjectKind:
    """The kind registered as ``kind`` (its plug-in imported on first use), as an instance."""
    if isinstance(kind, ProjectKind):
        return kind
    return KINDS.get(kind)()


# -- the loop's own projects ----------------------------------------------------------------
@dataclass(frozen=True)
class FieldUnit:
    """One item of a loop project as a task: its media URLs, and what its arm shows
    (anchored: the prediction; review: each tier-1 annotation as ``(annotator, values)``)."""

    item_id: int
    key: str
    media: list[str]
    arm: str
    shown: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    prediction: dict[str, Any] | None = None
    layer: ItemLayer | None = None
    """The item's annotation layer (``[layers]``): what the task asks and shows."""


@project_kind("field-schema")
class FieldSchemaKind(ProjectKind):
    """Blind / anchored / review projects of a project file: the label config generated from
    its field schema, tasks with media and (anchored) the prediction under a neutral label or
    (review) every tier-1 annotation, results read back as normalized field values."""

    def label_config(self, context: Any) -> str:
        from truthline.annotate._labelconfig import label_config

        return label_config(context)

    def task(self, context: Any, unit: FieldUnit) -> dict[str, Any]:
        from truthline.annotate._instructions import PREFILL_LABEL
        from truthline.annotate._labelconfig import task_data, values_to_results

        if unit.layer is not None:  # a task shows and asks its layer's fields only
            unit = layered_unit(unit)
        data = task_data(
            context, unit.item_id, unit.media, unit.key, shown=unit.shown, layer=unit.layer
        )
        t: dict[str, Any] = {"data": data}
        if unit.arm == "anchored" and unit.prediction is not None:
            # the model's name stays in the store; annotators see a neutral label
            t["predictions"] = [
                {
                    "model_version": PREFILL_LABEL,
                    # every entity a region, values set: boxless ones as squares to place
                    "result": values_to_results(
                        context, unit.prediction, normalized=True, placeholders=True
                    ),
                }
            ]
        elif unit.arm == "review":
            t["predictions"] = [
                {
                    "model_version": f"tier1:{who}",
                    "result": values_to_results(context, vals, placeholders=True),
                }
                for who, vals in unit.shown
            ]
        return t

    def read(self, context: Any, key: str, annotation: dict[str, Any]) -> ReadBack:
        from truthline.annotate._labelconfig import results_to_values
        from truthline.annotate._regions import valueless_regions

        results = annotation.get("result") or []
        conv = results_to_values(context, results)
        refused = None
        if not results:
            refused = "empty annotation (nothing was labelled)"
        elif bare := valueless_regions(context, results):
            refused = (
                "boxes without values (" + ", ".join(bare) + "): select each box and set its values"
            )
        return ReadBack(conv.values, conv.origins, list(conv.problems), refused)

    def field_names(self, context: Any) -> list[str]:
        return list(context.field_types)

    def tier_of(self, slot: str) -> int:
        return 2 if slot == "review" else 1

    def kept(self, context: Any, name: str, value: Any, shown: Any) -> bool | None:
        from truthline.annotate._pull import kept_flag

        return kept_flag(context.field_types[name], value, shown)


FIELD_SCHEMA = "field-schema"


def layered_unit(unit: FieldUnit) -> FieldUnit:
    """``unit`` with what it shows cut to its layer (a Layer 1 task shows no entity)."""
    from dataclasses import replace

    pred = in_layer(unit.layer, unit.prediction) if unit.prediction is not None else None
    shown = [(who, in_layer(unit.layer, vals)) for who, vals in unit.shown]
    return replace(unit, prediction=pred, shown=shown)


# -- scopes: a system's units as items of the store ------------------------------------------
@dataclass(frozen=True)
class Scope:
    """A store namespace holding a system's Label Studio units (not a project definition):
    the passes of one PhysAlign work folder, the verification of one release. Its units are
    items (keyed by the unit's own id) so tasks, annotations and exposures point at them."""

    name: str
    """``projects.name`` of the namespace."""
    kind: str
    """What it is (``projects.scope``), e.g. ``physalign.passes``."""
    source: str
    """What it is of (a folder's real path)."""

    @classmethod
    def of_folder(cls, kind: str, folder: str | Path) -> Scope:
        """The scope of ``kind`` for a folder (by its real path)."""
        real = os.path.realpath(folder)
        digest = hashlib.sha256(real.encode()).hexdigest()[:16]
        return cls(name=f"{kind}:{digest}", kind=kind, source=real)

    def ensure(self, store: Store) -> None:
        """Register the namespace in ``projects`` (marked as a scope) if it is not there."""
        p = tables.projects
        with store.begin() as conn:
            if conn.execute(select(p.c.name).where(p.c.name == self.name)).first() is not None:
                return
            definition = {"scope": self.kind, "source": self.source}
            ts = now()
            conn.execute(
                p.insert().values(
                    name=self.name,
                    title=f"{self.kind} of {self.source}"[:300],
                    definition=definition,
                    definition_hash=json_hash(definition),
                    source_path=self.source,
                    scope=self.kind,
                    created_at=ts,
                    updated_at=ts,
                )
            )

    def items(
        self, store: Store, hashes: dict[str, str], *, refresh: bool = True
    ) -> dict[str, int]:
        """Unit key -> item id of every unit of the scope, creating the items that are
        missing (``refresh``: their content hash kept current). Units carry no media:
        nothing of theirs is served."""
        self.ensure(store)
        it = tables.items
        ts = now()
        with store.begin() as conn:
            have = {
                r.key: r
                for r in conn.execute(
                    select(it.c.id, it.c.key, it.c.content_hash).where(it.c.project == self.name)
                )
            }
            new = [k for k in hashes if k not in have]
            if new:
                conn.execute(
                    it.insert(),
                    [
                        {
                            "project": self.name,
                            "key": k,
                            "media_kind": "none",
                            "media": [],
                            "media_root": "",
                            "content_hash": hashes[k],
                            "meta": {},
                            "created_at": ts,
                            "updated_at": ts,
                        }
                        for k in new
                    ],
                )
            for k, h in hashes.items():
                if refresh and k in have and have[k].content_hash != h:
                    conn.execute(
                        it.update()
                        .where(it.c.id == have[k].id)
                        .values(content_hash=h, updated_at=ts)
                    )
            return {
                r.key: int(r.id)
                for r in conn.execute(select(it.c.id, it.c.key).where(it.c.project == self.name))
            }
