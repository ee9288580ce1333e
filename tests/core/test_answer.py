"""The model-answer contract (METRICS.md §5, PhysAlign appendix B)."""

from __future__ import annotations

import pytest

from truthline.errors import AnswerFormatError
from truthline.fields import parse_fields, parse_json_answer


def test_plain_object_and_fenced_block():
    assert parse_json_answer('{"a": 1}') == {"a": 1}
    assert parse_json_answer('  ```json\n{"a": 1}\n```  ') == {"a": 1}
    assert parse_json_answer('```\n{"a": [1, 2]}\n```') == {"a": [1, 2]}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": 1, "a": 2}', "duplicate_key"),
        ('{"a": 1} {"a": 2}', "multiple_objects"),
        ('```json\n{"a": 1}\n```\n```json\n{"a": 2}\n```', "multiple_objects"),
        ("I cannot help with that.", "unparseable"),
        ('Here you go: ```json\n{"a": 1}\n```', "unparseable"),
        ('{"a": 1', "unparseable"),
        ("[1, 2]", "unparseable"),
        ("", "empty"),
        (None, "empty"),
    ],
)
def test_rejections(text, reason):
    with pytest.raises(AnswerFormatError) as exc:
        parse_json_answer(text)
    assert exc.value.reason == reason


def test_fields_parsed_independently(steel_project):
    obj = parse_json_answer('{"worker_count": 2, "crane_active": "maybe", "extra": 1}')
    values, errors = parse_fields(steel_project.field_types, obj)
    assert values["worker_count"] == 2  # a bad sibling does not zero a correct field
    assert values["crane_active"] is None and "true or false" in errors["crane_active"]
    assert errors["scene_type"] == "missing"
    assert "extra" not in values
