"""Field types: the one definition of what a value means and when two values agree.

Public API: ``FieldType`` and ``field_type`` (the registry decorator), the built-in
types, and the model-answer contract (``parse_answer`` under a field's answer grammar —
``json``, ``label``, ``digit`` — ``parse_json_answer``, ``parse_fields``, ``render_answer``).
"""

from truthline.fields._answer import (
    GRAMMARS,
    bind_grammar,
    field_grammar,
    grammar_problem,
    parse_answer,
    parse_bare,
    parse_fields,
    parse_json_answer,
    render_answer,
    request_grammar,
)
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
    "GRAMMARS",
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
    "bind_grammar",
    "box_iou",
    "field_grammar",
    "field_type",
    "get_field_type",
    "grammar_problem",
    "masi_distance",
    "match_boxes",
    "parse_answer",
    "parse_bare",
    "parse_fields",
    "parse_json_answer",
    "registered_field_types",
    "render_answer",
    "request_grammar",
]
