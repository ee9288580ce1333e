"""Project definitions: schema, taxonomies, prompts, audit and benchmark settings."""

from truthline.project._layers import (
    LAYER_ENTITY,
    LAYER_SCENE,
    ItemLayer,
    LayerCheck,
    Layers,
    in_layer,
    item_layer,
    layer_check,
)
from truthline.project._load import DEFINITION_NAMES, find_definition, load_project, validate_data
from truthline.project._model import (
    AuditSettings,
    BenchmarkSettings,
    Check,
    ConditionAxis,
    ImagePolicy,
    MappedVariant,
    Project,
    Prompts,
    Taxonomy,
    TaxonomyClass,
)

__all__ = [
    "DEFINITION_NAMES",
    "LAYER_ENTITY",
    "LAYER_SCENE",
    "AuditSettings",
    "BenchmarkSettings",
    "Check",
    "ConditionAxis",
    "ImagePolicy",
    "ItemLayer",
    "LayerCheck",
    "Layers",
    "MappedVariant",
    "Project",
    "Prompts",
    "Taxonomy",
    "TaxonomyClass",
    "find_definition",
    "in_layer",
    "item_layer",
    "layer_check",
    "load_project",
    "validate_data",
]
