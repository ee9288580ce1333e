"""Scalar fields: boolean, number with unit and tolerance, reading (literal string), free text."""

from __future__ import annotations

import math
import re
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from truthline.fields._base import FieldSpec, FieldType, field_type

_TRUE = {"true", "yes", "y", "1", "t"}
_FALSE = {"false", "no", "n", "0", "f"}


@field_type("boolean")
class Boolean(FieldType):
    """True/false; strings such as "yes"/"no" are accepted, anything else is an error."""

    def normalize(self, value: Any) -> bool | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            key = value.strip().casefold()
            if key in _TRUE:
                return True
            if key in _FALSE:
                return False
        raise self.fail(f"expected true or false, got {value!r}")

    def categories(self) -> list[Any] | None:
        return [False, True]

    def expected(self) -> str:
        return "true or false"


class NumberSpec(FieldSpec):
    unit: str = ""
    tolerance: float = Field(0.0, ge=0, allow_inf_nan=False)
    """Two values agree when |x - y| <= tolerance (in the declared unit); finite, >= 0."""
    integer: bool = False
    min: float | None = Field(None, allow_inf_nan=False)
    max: float | None = Field(None, allow_inf_nan=False)
    scale: Literal["interval", "ratio"] = "interval"

    @model_validator(mode="after")
    def _range(self) -> Self:
        """An empty range would reject every value: a typo, never an intent."""
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min:g}) is greater than max ({self.max:g})")
        return self


_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


@field_type("number")
class Number(FieldType):
    """A float with a unit; agreement within the declared tolerance; never converts units."""

    Spec = NumberSpec
    spec: NumberSpec

    @property
    def level(self):  # type: ignore[override]
        return self.spec.scale

    def normalize(self, value: Any) -> float | int | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, bool):
            raise self.fail(f"expected a number, got {value!r}")
        if isinstance(value, int | float):
            num = float(value)
        elif isinstance(value, str):
            m = _NUM.match(value)
            unit = m.group(2) if m else None
            if not m or (unit and unit.casefold() != self.spec.unit.casefold()):
                want = f" (unit {self.spec.unit!r})" if self.spec.unit else ""
                raise self.fail(f"expected a number{want}, got {value!r}")
            num = float(m.group(1))
        else:
            raise self.fail(f"expected a number, got {type(value).__name__} {value!r}")
        if not math.isfinite(num):
            raise self.fail(f"expected a finite number, got {value!r}")
        if self.spec.min is not None and num < self.spec.min:
            raise self.fail(f"{num} is below the declared minimum {self.spec.min}")
        if self.spec.max is not None and num > self.spec.max:
            raise self.fail(f"{num} is above the declared maximum {self.spec.max}")
        if self.spec.integer:
            if num != int(num):
                raise self.fail(f"expected a whole number, got {value!r}")
            return int(num)
        return num

    def agree(self, x: Any, y: Any) -> bool:
        if x is None or y is None:
            return False
        return abs(float(x) - float(y)) <= self.spec.tolerance + 1e-12

    def expected(self) -> str:
        kind = "a whole number" if self.spec.integer else "a number"
        return f"{kind} in {self.spec.unit}" if self.spec.unit else kind

    def distance(self, x: Any, y: Any) -> float:
        return (float(x) - float(y)) ** 2


Normalization = Literal["case", "spaces", "collapse_spaces", "unit_spacing", "punctuation"]


class ReadingSpec(FieldSpec):
    normalizations: list[Normalization] = []
    """Declared equivalences only: case, spaces (drop all), collapse_spaces, unit_spacing
    ("2 kg" == "2kg"), punctuation. Never unit conversion."""


@field_type("reading")
class Reading(FieldType):
    """A literal read off the image (plate, VIN, symbol); equal after declared normalizations."""

    Spec = ReadingSpec
    spec: ReadingSpec

    def expected(self) -> str:
        return "the literal text as read (a string)"

    def normalize(self, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise self.fail(f"expected a string, got {type(value).__name__} {value!r}")
        text = value.strip()
        if not text:
            return None
        for norm in self.spec.normalizations:
            if norm == "case":
                text = text.casefold()
            elif norm == "spaces":
                text = re.sub(r"\s+", "", text)
            elif norm == "collapse_spaces":
                text = re.sub(r"\s+", " ", text)
            elif norm == "unit_spacing":
                text = re.sub(r"(\d)\s+([^\W\d_])", r"\1\2", text)
            elif norm == "punctuation":
                text = re.sub(r"[^\w\s]", "", text)
        return text


@field_type("text")
class Text(FieldType):
    """Free text: kept verbatim (whitespace-trimmed); not used in agreement statistics."""

    level = None

    def expected(self) -> str:
        return "free text (a string)"

    def normalize(self, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, list):
            value = "\n".join(str(v) for v in value)
        if not isinstance(value, str):
            raise self.fail(f"expected text, got {type(value).__name__} {value!r}")
        return value.strip() or None
