"""Closed-set fields: single choice (optionally ordered, optionally from a taxonomy) and sets."""

from __future__ import annotations

from typing import Any

from truthline.fields._base import FieldSpec, FieldType, field_type


class ChoiceSpec(FieldSpec):
    choices: list[str] | None = None
    taxonomy: str | None = None
    """Name of a project taxonomy whose class codes are the choices (enables group credit)."""
    ordered: bool = False
    cannot_tell: str | None = None
    """An explicit "cannot tell" choice; without it, a skipped value is missing, not a category."""


class _ChoiceBase(FieldType):
    spec: ChoiceSpec

    def __init__(self, path: str, spec: FieldSpec, taxonomies: dict[str, Any] | None = None):
        super().__init__(path, spec, taxonomies)
        choices: list[str] = list(self.spec.choices or [])
        self._names: dict[str, str] = {}
        self._group: dict[str, str] = {}
        self._group_credit: dict[str, float] = {}
        tax = self.taxonomies.get(self.spec.taxonomy) if self.spec.taxonomy else None
        if tax is not None:
            for cls in tax.classes:
                choices.append(cls.code)
                self._group[cls.code] = cls.group
                if cls.name:
                    self._names[cls.name.casefold()] = cls.code
            self._group_credit = {
                g: tax.group_credit.get(g, tax.default_group_credit) for g in tax.groups
            }
        if self.spec.cannot_tell and self.spec.cannot_tell not in choices:
            choices.append(self.spec.cannot_tell)
        self._choices = choices
        self._lookup = {c.casefold(): c for c in choices}

    def categories(self) -> list[Any] | None:
        return list(self._choices)

    def expected(self) -> str:
        if self.spec.taxonomy:
            return (
                f"one code of taxonomy {self.spec.taxonomy!r}"
                if self.name == "single_choice"
                else (f"a list of codes of taxonomy {self.spec.taxonomy!r}")
            )
        opts = ", ".join(f'"{c}"' for c in self._choices)
        return f"one of {opts}" if self.name == "single_choice" else f"a list drawn from {opts}"

    def group_of(self, code: str) -> str | None:
        """Taxonomy group of a class code (``None`` without a taxonomy)."""
        return self._group.get(code)

    def _one(self, value: Any) -> str:
        if not isinstance(value, str | int | bool):
            raise self.fail(
                f"expected one of {self._preview()}, got {type(value).__name__} {value!r}"
            )
        text = str(value).strip()
        key = text.casefold()
        if key in self._lookup:
            return self._lookup[key]
        if key in self._names:
            return self._names[key]
        # "B1 operating equipment" / "B1: operating" -> "B1"
        head = key.replace(":", " ").replace("-", " - ").split(" ")[0]
        if self._group and head in self._lookup:
            return self._lookup[head]
        raise self.fail(f"{text!r} is not a declared choice (expected one of {self._preview()})")

    def _preview(self) -> str:
        c = self._choices
        return ", ".join(c[:8]) + (f", ... ({len(c)} in all)" if len(c) > 8 else "")


@field_type("single_choice")
class SingleChoice(_ChoiceBase):
    """One label of a closed set; ordinal for alpha when ``ordered``; group credit from a taxonomy."""

    Spec = ChoiceSpec

    @property
    def level(self):  # type: ignore[override]
        return "ordinal" if self.spec.ordered else "nominal"

    def normalize(self, value: Any) -> str | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        return self._one(value)

    def credit(self, x: Any, y: Any) -> float:
        """DWA credit: 1 exact, the group's declared weight inside one taxonomy group, else 0."""
        if x is None or y is None:
            return 0.0
        if x == y:
            return 1.0
        gx, gy = self._group.get(x), self._group.get(y)
        if gx is not None and gx == gy:
            return float(self._group_credit.get(gx, 0.0))
        return 0.0

    def distance(self, x: Any, y: Any) -> float:
        if self.spec.ordered and x in self._choices and y in self._choices:
            return float(abs(self._choices.index(x) - self._choices.index(y)))
        return super().distance(x, y)


@field_type("multi_choice")
class MultiChoice(_ChoiceBase):
    """A set of labels: agreement is exact set equality; credit is Jaccard; alpha uses MASI."""

    Spec = ChoiceSpec
    level = "masi"

    def normalize(self, value: Any) -> list[str] | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = [v for v in value.replace(";", ",").split(",") if v.strip()]
        if not isinstance(value, list | tuple | set | frozenset):
            raise self.fail(f"expected a list of choices, got {type(value).__name__} {value!r}")
        return sorted({self._one(v) for v in value}, key=self._choices.index)

    def agree(self, x: Any, y: Any) -> bool:
        if x is None or y is None:
            return False
        return set(x) == set(y)

    def credit(self, x: Any, y: Any) -> float:
        if x is None or y is None:
            return 0.0
        a, b = set(x), set(y)
        return 1.0 if not a and not b else len(a & b) / len(a | b)

    def distance(self, x: Any, y: Any) -> float:
        return masi_distance(set(x), set(y))


def masi_distance(a: set, b: set) -> float:
    """MASI distance (Passonneau 2006): 1 - Jaccard x monotonicity weight."""
    if a == b:
        return 0.0
    union = a | b
    inter = a & b
    jac = len(inter) / len(union) if union else 1.0
    if a <= b or b <= a:
        m = 2 / 3
    elif inter:
        m = 1 / 3
    else:
        m = 0.0
    return 1.0 - jac * m
