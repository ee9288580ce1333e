"""Field types: the one definition of what a value means and when two values agree.

Public API: ``FieldType`` and ``field_type`` (the registry decorator), the built-in
types, and the model-answer contract (``parse_json_answer``, ``parse_fields``).
"""

from truthline.fields._answer import parse_fields, parse_json_answer
from truthline.fields._base import (
    FieldSpec,
    FieldType,
    Level,
    field_type,
    get_field_type,
    registered_field_types,
)
from truthline.fields._choice import ChoiceSpec, MultiChoice, SingleChoice, masi_distance
from truthline.fields._region import (
    EntityList,
    EntityListSpec,
    Region,
    RegionSpec,
    box_iou,
    match_boxes,
)
from truthline.fields._scalar import Boolean, Number, NumberSpec, Reading, ReadingSpec, Text

__all__ = [
    "Boolean",
    "ChoiceSpec",
    "EntityList",
    "EntityListSpec",
    "FieldSpec",
    "FieldType",
    "Level",
    "MultiChoice",
    "Number",
    "NumberSpec",
    "Reading",
    "ReadingSpec",
    "Region",
    "RegionSpec",
    "SingleChoice",
    "Text",
    "box_iou",
    "field_type",
    "get_field_type",
    "masi_distance",
    "match_boxes",
    "parse_fields",
    "parse_json_answer",
    "registered_field_types",
]
