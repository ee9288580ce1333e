"""The field-type protocol and its registry: one home for what a field's values mean.

Every comparison in truthline (agreement statistics, the anchoring audit, benchmark
scoring) goes through a bound field's ``normalize`` / ``agree`` / ``credit`` — never ``==``.
A new field type is one class decorated with ``@field_type("name")``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from truthline._registry import Registry
from truthline.errors import FieldValueError

Level = Literal["nominal", "ordinal", "interval", "ratio", "masi"]


class FieldSpec(BaseModel):
    """Settings every field declares in the project file; types extend it."""

    model_config = ConfigDict(extra="forbid")

    type: str
    description: str = ""
    required: bool = False
    safety: bool = False
    """A safety field: the audit reports violation direction (false alarms vs misses)."""
    answer_keys: list[str] = []
    """Other keys a model's JSON answer may give this field under, where a prompt names it
    differently for some items (PhysAlign: T02-single returns the owner as ``referent``);
    the field's own name wins when both are present."""


class FieldType:
    """A field bound to its path in the project; subclasses implement one value semantics."""

    name: ClassVar[str] = ""
    Spec: ClassVar[type[FieldSpec]] = FieldSpec
    level: ClassVar[Level | None] = "nominal"

    def __init__(self, path: str, spec: FieldSpec, taxonomies: dict[str, Any] | None = None):
        self.path = path
        self.spec = spec
        self.taxonomies = taxonomies or {}

    # -- values -------------------------------------------------------------------------
    def normalize(self, value: Any) -> Any:
        """Canonical JSON-able form of ``value``; ``None`` stays missing. Raises FieldValueError."""
        raise NotImplementedError

    def agree(self, x: Any, y: Any) -> bool:
        """Whether two normalized present values agree. Missing never agrees with anything."""
        if x is None or y is None:
            return False
        return bool(x == y)

    def credit(self, x: Any, y: Any) -> float:
        """Partial credit of answer ``x`` against reference ``y`` in [0, 1] (default: agree)."""
        return 1.0 if self.agree(x, y) else 0.0

    def distance(self, x: Any, y: Any) -> float:
        """Disagreement used by Krippendorff's alpha at this field's level (nominal: 0/1)."""
        return 0.0 if self.agree(x, y) else 1.0

    def categories(self) -> list[Any] | None:
        """The closed set of values, in declared order, where there is one."""
        return None

    @property
    def describe(self) -> str:
        """What a valid value looks like, for prompts and error messages."""
        text = self.expected()
        return f"{text} — {self.spec.description}" if self.spec.description else text

    def expected(self) -> str:
        return "a value"

    def fail(self, message: str) -> FieldValueError:
        return FieldValueError(self.path, message)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path}>"


FIELD_TYPES: Registry[type[FieldType]] = Registry("field type")


def field_type(name: str):
    """Register a FieldType subclass under the ``type`` name used in project files."""

    def deco(cls: type[FieldType]) -> type[FieldType]:
        cls.name = name
        return FIELD_TYPES.register(name)(cls)

    return deco


def registered_field_types() -> dict[str, type[FieldType]]:
    return FIELD_TYPES.as_dict()


def get_field_type(name: str) -> type[FieldType]:
    if name not in FIELD_TYPES:
        known = ", ".join(FIELD_TYPES.names())
        raise KeyError(f"unknown field type {name!r} (known: {known})")
    return FIELD_TYPES.get(name)
