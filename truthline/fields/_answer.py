"""The model-answer contract (METRICS.md §5), shared by prefill and benchmark scoring.

An answer is accepted when it is exactly one JSON object, or exactly one fenced code
block holding only that object. Duplicate keys and several candidate objects are
rejected; extra keys are ignored; every field is parsed on its own, so a bad field
never zeroes a correct sibling.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from truthline.errors import AnswerFormatError, FieldValueError
from truthline.fields._base import FieldType

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)\n?[ \t]*```", re.S)


def _no_dup_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise AnswerFormatError("duplicate_key", f"key {k!r} appears twice")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise AnswerFormatError("non_finite", f"{name} is not JSON (strict RFC 8259)")


def _loads_object(text: str) -> dict[str, Any]:
    dec = json.JSONDecoder(object_pairs_hook=_no_dup_keys, parse_constant=_no_constant)
    text = text.strip()
    try:
        obj, end = dec.raw_decode(text)
    except json.JSONDecodeError as exc:
        raise AnswerFormatError(
            "unparseable", f"not valid JSON ({exc.msg} at char {exc.pos})"
        ) from None
    rest = text[end:].strip()
    if rest:
        if rest.startswith("{"):
            raise AnswerFormatError("multiple_objects", "more than one JSON object in the answer")
        raise AnswerFormatError("unparseable", f"text after the JSON object: {rest[:40]!r}")
    if not isinstance(obj, dict):
        raise AnswerFormatError(
            "not_an_object", f"expected a JSON object, got {type(obj).__name__}"
        )
    return obj


def parse_json_answer(text: str | None) -> dict[str, Any]:
    """The single JSON object of an answer, or AnswerFormatError with a machine-readable reason."""
    if text is None or not text.strip():
        raise AnswerFormatError("empty", "the answer is empty")
    stripped = text.strip()
    if stripped.startswith("{"):
        return _loads_object(stripped)
    blocks = _FENCE.findall(stripped)
    if len(blocks) > 1:
        raise AnswerFormatError("multiple_objects", f"{len(blocks)} fenced blocks in the answer")
    if len(blocks) == 1:
        m = _FENCE.search(stripped)
        assert m is not None
        if m.group(1).lower() not in ("", "json"):
            raise AnswerFormatError("fence_language", f"a {m.group(1)!r} block, not json")
        if stripped[: m.start()].strip() or stripped[m.end() :].strip():
            raise AnswerFormatError("unparseable", "text outside the fenced block")
        return _loads_object(blocks[0][1])
    raise AnswerFormatError("unparseable", "no JSON object or fenced block found")


def parse_fields(
    fields: Mapping[str, FieldType], obj: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Validate each declared top-level field independently.

    Returns ``(values, errors)``: ``values`` maps every declared field path to its
    normalized value (``None`` when missing or invalid); ``errors`` explains each field
    that was missing or invalid. Keys the schema does not declare are ignored.
    """
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for path, ft in fields.items():
        if path not in obj:
            values[path] = None
            errors[path] = "missing"
            continue
        try:
            values[path] = ft.normalize(obj[path])
        except FieldValueError as exc:
            values[path] = None
            errors[path] = exc.message
    return values, errors
