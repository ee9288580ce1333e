"""Project definitions: schema, taxonomies, prompts, audit and benchmark settings."""

from truthline.project._load import DEFINITION_NAMES, find_definition, load_project, validate_data
from truthline.project._model import (
    AuditSettings,
    BenchmarkSettings,
    Check,
    ConditionAxis,
    ImagePolicy,
    Project,
    Prompts,
    Taxonomy,
    TaxonomyClass,
)

__all__ = [
    "DEFINITION_NAMES",
    "AuditSettings",
    "BenchmarkSettings",
    "Check",
    "ConditionAxis",
    "ImagePolicy",
    "Project",
    "Prompts",
    "Taxonomy",
    "TaxonomyClass",
    "find_definition",
    "load_project",
    "validate_data",
]
