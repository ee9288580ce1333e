"""The public and private probe records' JSON Schemas (draft 2020-12), as §4.1 / §4.2 of
shared/PHYSALIGN.md give them, checked with the ``jsonschema`` library.

A record that does not fit is refused with its probe id and the failing field path.
"""

from __future__ import annotations

from typing import Any

from truthline.errors import TruthlineError

PUBLIC_SCHEMA: dict[str, Any] = {
    "$id": "physalign.public/1",
    "type": "object",
    "required": [
        "schema_version",
        "probe_id",
        "probe_type",
        "problem",
        "evidence",
        "candidates",
        "question",
        "output_schema",
        "conditions",
    ],
    "additionalProperties": False,
    "properties": {
        "schema_version": {"const": "physalign.public/1"},
        "probe_id": {"type": "string", "pattern": "^pa-[0-9a-f]{10}$"},
        "probe_type": {"enum": ["T02-single", "T03-image", "T03-text"]},
        "problem": {
            "type": "object",
            "required": ["text", "images"],
            "properties": {
                "text": {"type": "string"},
                "question": {"type": "string"},
                "options": {"type": "array"},
                "images": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["image_id", "path", "width", "height"],
                    },
                },
            },
        },
        "evidence": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/anchor"}},
        "candidates": {
            "type": "array",
            "minItems": 2,
            "items": {
                "type": "object",
                "required": ["alias", "views"],
                "additionalProperties": False,
                "properties": {
                    "alias": {"type": "string", "pattern": "^E[0-9]+$"},
                    "views": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/view"}},
                    "description": {
                        "type": "string",
                        "description": "neutral; never answer-bearing",
                    },
                },
            },
        },
        "question": {"type": "string"},
        "output_schema": {
            "type": "object",
            "description": "field -> instruction; fields per section 2",
        },
        "localized_views": {
            "type": "array",
            "items": {"type": "object", "required": ["view_id", "path"]},
        },
        "conditions": {
            "type": "object",
            "required": ["base"],
            "properties": {
                "base": {"type": "object", "properties": {"local_reading": {"type": "null"}}},
                "plus_gt": {
                    "type": "object",
                    "required": ["local_reading"],
                    "properties": {
                        "local_reading": {
                            "type": "array",
                            "minItems": 1,
                            "items": {
                                "type": "object",
                                "required": ["anchor_id", "text"],
                                "additionalProperties": False,
                                "properties": {
                                    "anchor_id": {"type": "string"},
                                    "text": {"type": "string", "minLength": 1},
                                },
                            },
                        }
                    },
                },
            },
        },
    },
    "$defs": {
        "anchor": {
            "oneOf": [
                {
                    "type": "object",
                    "required": ["anchor_id", "kind", "image_id", "bbox"],
                    "properties": {
                        "anchor_id": {"pattern": "^R[0-9]+$"},
                        "kind": {"const": "image_region"},
                        "image_id": {"type": "string"},
                        "bbox": {
                            "type": "array",
                            "items": {"type": "number"},
                            "minItems": 4,
                            "maxItems": 4,
                        },
                    },
                },
                {
                    "type": "object",
                    "required": ["anchor_id", "kind", "start", "end", "text"],
                    "properties": {
                        "anchor_id": {"pattern": "^R[0-9]+$"},
                        "kind": {"const": "text_span"},
                        "start": {"type": "integer"},
                        "end": {"type": "integer"},
                        "text": {"type": "string"},
                    },
                },
            ]
        },
        "view": {
            "type": "object",
            "required": ["view_id", "kind"],
            "properties": {
                "view_id": {"pattern": "^V[0-9]+$"},
                "kind": {"enum": ["image_region", "text_span"]},
                "image_id": {"type": "string"},
                "bbox": {"type": "array"},
                "polyline": {"type": "array"},
                "start": {"type": "integer"},
                "end": {"type": "integer"},
            },
        },
    },
}

PRIVATE_SCHEMA: dict[str, Any] = {
    "$id": "physalign.private/1",
    "type": "object",
    "required": [
        "schema_version",
        "probe_id",
        "parent_id",
        "probe_type",
        "targets",
        "alias_map",
        "eligibility",
        "baseline",
        "source_links",
    ],
    "properties": {
        "probe_id": {"type": "string"},
        "parent_id": {"type": "string"},
        "probe_type": {"enum": ["T02-single", "T03-image", "T03-text"]},
        "targets": {
            "type": "object",
            "properties": {
                "referent": {"$ref": "#/$defs/role"},
                "owner": {"$ref": "#/$defs/role"},
                "read": {
                    "oneOf": [
                        {"type": "null"},
                        {
                            "type": "object",
                            "required": ["text", "rules"],
                            "properties": {
                                "text": {"type": "string"},
                                "rules": {
                                    "type": "array",
                                    "items": {
                                        "enum": [
                                            "nfc",
                                            "ws",
                                            "math_delims",
                                            "subsup_braces",
                                            "unicode_minus",
                                            "num_unit_space",
                                            "eq_space",
                                        ]
                                    },
                                },
                            },
                        },
                    ]
                },
            },
        },
        "alias_map": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "alias -> entity_id",
        },
        "eligibility": {
            "type": "object",
            "required": ["G", "L", "P", "H", "H_hard", "random_eligible"],
            "additionalProperties": {"type": "boolean"},
        },
        "baseline": {"type": "object", "required": ["K", "nearest_rule", "nearest_alias"]},
        "source_links": {
            "type": "object",
            "description": "pass-4 observation id, subject primitive/mention",
        },
        "review": {"$ref": "#/$defs/review"},
    },
    "$defs": {
        "role": {
            "type": "object",
            "required": ["entity_ids", "aliases", "set_valued"],
            "properties": {
                "entity_ids": {"type": "array", "minItems": 1},
                "aliases": {"type": "array", "minItems": 1},
                "set_valued": {"type": "boolean"},
            },
        },
        "review": {
            "type": "object",
            "properties": {
                "blind": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["reviewer", "answer", "qc_flags", "submitted_at"],
                    },
                },
                "adjudication": {"type": ["object", "null"]},
                "decision": {
                    "enum": [
                        "approved_direct",
                        "approved_adjudicated",
                        "corrected_regenerated",
                        "withheld",
                    ]
                },
            },
        },
    },
}

# the spec's private schema lists these in "required" but leaves schema_version open
PRIVATE_SCHEMA["properties"]["schema_version"] = {"const": "physalign.private/1"}


class SchemaError(TruthlineError):
    """A probe record does not fit its JSON Schema."""


def _validator(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


_VALIDATORS: dict[str, Any] = {}


def validate(record: dict[str, Any], which: str, where: str) -> None:
    """Raise ``SchemaError`` naming ``where``, the probe and the field path of the first problem."""
    if which not in _VALIDATORS:
        _VALIDATORS[which] = _validator(PUBLIC_SCHEMA if which == "public" else PRIVATE_SCHEMA)
    errors = sorted(_VALIDATORS[which].iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = "/".join(str(p) for p in e.absolute_path) or "(record)"
        raise SchemaError(
            f"{where}: probe {record.get('probe_id', '?')}: {which} record field {path}: "
            f"{e.message} (schema physalign.{which}/1)"
        )


def validate_review(row: dict[str, Any], where: str) -> None:
    """A ``private/review.jsonl`` row against the private schema's ``review`` definition."""
    if "review" not in _VALIDATORS:
        _VALIDATORS["review"] = _validator(
            {"$defs": PRIVATE_SCHEMA["$defs"], "$ref": "#/$defs/review"}
        )
    errors = sorted(_VALIDATORS["review"].iter_errors(row), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = "/".join(str(p) for p in e.absolute_path) or "(row)"
        raise SchemaError(
            f"{where}: probe {row.get('probe_id', '?')}: review field {path}: {e.message}"
        )
