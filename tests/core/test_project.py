"""Project definitions: the template loads; every mistake is reported with file and field path."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest
import yaml

from truthline.errors import ProjectError
from truthline.project import load_project, validate_data
from truthline.workspace import templates_dir

BASE = {
    "name": "mini",
    "media": "image",
    "fields": {
        "helmet": {"type": "single_choice", "choices": ["worn", "not_worn"]},
        "workers": {
            "type": "entity_list",
            "key": "worker_id",
            "fields": {
                "worker_id": {"type": "reading"},
                "action": {"type": "single_choice", "taxonomy": "actions"},
            },
        },
    },
    "taxonomies": {
        "actions": {
            "groups": {"A": "locomotion", "B": "stationary"},
            "classes": [{"code": "A1", "group": "A"}, {"code": "B1", "group": "B"}],
        }
    },
}


def test_steel_template_loads(steel_project):
    assert steel_project.media == "frames"
    scene = [n for n, f in steel_project.field_types.items() if f.name != "entity_list"]
    assert len(scene) == 9
    assert len(steel_project.field("workers").subfields) == 14
    assert len(steel_project.taxonomies["actions"].classes) == 25
    assert {c.group for c in steel_project.taxonomies["actions"].classes} == set("ABCDEF")
    assert "workers.action" in steel_project.leaf_fields()
    assert steel_project.field("workers[P3].action").name == "single_choice"


def _mutate(fn) -> dict:
    data = copy.deepcopy(BASE)
    fn(data)
    return data


CASES = [
    (
        "unknown field type",
        lambda d: d["fields"]["helmet"].update(type="colour"),
        "fields.helmet.type",
        "unknown field type 'colour'",
    ),
    ("missing type", lambda d: d["fields"]["helmet"].pop("type"), "fields.helmet.type", "missing"),
    (
        "unknown setting (typo)",
        lambda d: d["fields"]["helmet"].update(choises=["a"]),
        "fields.helmet.choises",
        "unknown setting",
    ),
    (
        "unknown taxonomy",
        lambda d: d["fields"]["workers"]["fields"]["action"].update(taxonomy="acts"),
        "fields.workers.fields.action.taxonomy",
        "unknown taxonomy 'acts'",
    ),
    (
        "unknown taxonomy group",
        lambda d: d["taxonomies"]["actions"]["classes"].append({"code": "G1", "group": "G"}),
        "taxonomies.actions.classes.2.group",
        "unknown group 'G'",
    ),
    (
        "duplicate class code",
        lambda d: d["taxonomies"]["actions"]["classes"].append({"code": "A1", "group": "A"}),
        "taxonomies.actions.classes.2.code",
        "duplicate class code",
    ),
    ("bad media kind", lambda d: d.update(media="audio"), "media", "Input should be"),
    (
        "entity key not a subfield",
        lambda d: d["fields"]["workers"].update(key="track"),
        "fields.workers.key",
        "not one of its subfields",
    ),
    (
        "choice without choices",
        lambda d: d["fields"]["helmet"].pop("choices"),
        "fields.helmet",
        "needs 'choices' or 'taxonomy'",
    ),
    (
        "negative tolerance type",
        lambda d: d["fields"].update(n={"type": "number", "tolerance": "wide"}),
        "fields.n.tolerance",
        "valid number",
    ),
    (
        "unknown benchmark target",
        lambda d: d.update(benchmark={"target_fields": ["workers.posture"]}),
        "benchmark.target_fields.0",
        "unknown field 'workers.posture'",
    ),
    (
        "audit arm split out of range",
        lambda d: d.update(audit={"arm_split": 1.5}),
        "audit.arm_split",
        "less than or equal to 1",
    ),
    (
        "bad project name",
        lambda d: d.update(name="Has Spaces"),
        "name",
        "String should match pattern",
    ),
    (
        "nested entity list",
        lambda d: d["fields"]["workers"]["fields"].update(
            tools={"type": "entity_list", "fields": {"t": {"type": "text"}}}
        ),
        "fields.workers.fields.tools",
        "cannot be nested",
    ),
    (
        "group credit out of range",
        lambda d: d["taxonomies"]["actions"].update(group_credit={"B": 2}),
        "taxonomies.actions.group_credit.B",
        "partial credit must be in [0, 1]",
    ),
]


@pytest.mark.parametrize(("label", "mutate", "path", "message"), CASES, ids=[c[0] for c in CASES])
def test_mistakes_name_file_and_field_path(label, mutate, path, message):
    with pytest.raises(ProjectError) as exc:
        validate_data(_mutate(mutate), "projects/mini/project.toml")
    text = str(exc.value)
    assert f"projects/mini/project.toml: {path}: " in text, text
    assert message in text, text


def test_all_problems_reported_at_once():
    def two(d):
        d["fields"]["helmet"]["type"] = "colour"
        d["taxonomies"]["actions"]["classes"].append({"code": "G1", "group": "G"})

    with pytest.raises(ProjectError) as exc:
        validate_data(_mutate(two), "p.toml")
    assert len(exc.value.problems) == 2


def test_missing_prompt_file_is_reported(tmp_path: Path):
    data = _mutate(lambda d: d.update(prompts={"user": "prompts/missing.md"}))
    (tmp_path / "project.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(
        ProjectError,
        match=r"project.yaml: prompts.user: prompt template 'prompts/missing.md' not found",
    ):
        load_project(tmp_path)


def test_yaml_and_toml_give_the_same_project(tmp_path: Path):
    src = templates_dir() / "steel-safety" / "project.toml"
    data = tomllib.loads(src.read_text())
    (tmp_path / "prompts").mkdir()
    for f in (src.parent / "prompts").iterdir():
        (tmp_path / "prompts" / f.name).write_text(f.read_text())
    (tmp_path / "project.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    a = load_project(src)
    b = load_project(tmp_path / "project.yaml")
    assert a.model_dump() == b.model_dump()


def test_invalid_toml_syntax_names_file(tmp_path: Path):
    (tmp_path / "project.toml").write_text('name = "x"\nmedia = [\n')
    with pytest.raises(ProjectError, match=r"project.toml: invalid TOML"):
        load_project(tmp_path)


@pytest.mark.parametrize(
    "name", ["steel-safety", "proof-of-work", "physics-diagrams", "dori-visibility"]
)
def test_every_bundled_template_validates(name):
    from truthline.workspace import list_templates

    assert name in list_templates()
    project = load_project(templates_dir() / name)
    assert project.name == name and project.field_types
