"""The dataset card (``public/README.md``) of a release: what a hub shows and reads.

The YAML header declares the config, its split files and the features in the form
``datasets`` reads; the body tells a user the features, the splits and how they were made,
how to evaluate with truthline, where every gold value came from, and the licence.
"""

from __future__ import annotations

from typing import Any

import yaml

from truthline.benchmark._release import yaml_feature

PROVENANCE = {
    "blind_consensus": "two or more annotators agreed without seeing a model's answer",
    "anchored_kept": "an annotator shown the model's prefill kept it (inflates model scores)",
    "anchored_corrected": "an annotator shown the model's prefill changed it",
    "adjudicated": "an adjudicator decided a disagreement",
    "expert": "an expert's label (highest tier)",
}


def _type_text(feat: Any) -> str:
    if feat.get("_type") == "Image":
        return "image"
    if feat.get("_type") == "Value":
        return str(feat["dtype"])
    if feat.get("_type") == "List":
        return f"list of {_type_text(feat['feature'])}"
    return "struct {" + ", ".join(f"{k}: {_type_text(v)}" for k, v in feat.items()) + "}"


def dataset_card(sheet: dict[str, Any], info: dict[str, Any], split_rule: dict[str, Any]) -> str:
    """Markdown with a YAML header; ``sheet`` is the datasheet (pseudonymous), ``info`` what
    ``write_splits`` returned, ``split_rule`` how items were split."""
    hidden = split_rule.get("test_answers") == "withheld"
    lines = [
        "---",
        yaml.safe_dump(_header(sheet, info), sort_keys=False).rstrip(),
        "---",
        "",
        f"# {sheet['title']}",
        "",
    ]
    if sheet["description"]:
        lines += [sheet["description"], ""]
    if sheet["simulated"]:
        lines += [
            "> **SIMULATED**: this release contains generated scenes with known truth "
            "(column `simulated` is true for them); figures on them say nothing about real data.",
            "",
        ]
    lines += _features(info, hidden)
    lines += _splits(info, split_rule, hidden)
    lines += _evaluate(sheet, hidden, info)
    lines += _classes(sheet)
    lines += _density(sheet)
    lines += _provenance(sheet)
    return "\n".join(lines)


def _header(sheet: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """The YAML header: name, licence, tags, the config's split files and features."""
    splits = info["splits"]
    return {
        "pretty_name": sheet["title"],
        "license": sheet["licence_id"],
        "tags": ["truthline", "vlm-benchmark"] + (["simulated"] if sheet["simulated"] else []),
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": s, "path": f"data/{s}-*.parquet"} for s in splits],
            }
        ],
        "dataset_info": {
            "config_name": "default",
            "features": [yaml_feature(k, v) for k, v in info["features"].items()],
            "splits": [
                {"name": s, "num_bytes": info["num_bytes"][s], "num_examples": n}
                for s, n in splits.items()
            ],
        },
    }


FEATURES = {
    "item": "item id",
    "image": "the item's image",
    "frames": "the item's frames, in order",
    "video": "paths of the item's video files, relative to this folder",
    "meta": "public metadata a model may see",
    "system": "system prompt the benchmark sends",
    "prompt": "user prompt the benchmark sends (rendered from `project/`)",
    "candidates": "entity ids a model answers about (e.g. worker tracks)",
    "gold": "gold answer per field (entity lists: one object per entity)",
    "provenance": "per gold decision: its path, provenance and pseudonymous sources",
    "simulated": "true for a generated (SIMULATED) item",
}
"""What each public column holds (the card's feature table)."""


def _features(info: dict[str, Any], hidden: bool) -> list[str]:
    what = dict(FEATURES)
    if hidden:
        for k in ("gold", "provenance"):
            what[k] += " (null in `test`: withheld)"
    lines = ["## Features", "", "| column | type | what |", "| --- | --- | --- |"]
    for k, v in info["features"].items():
        lines.append(f"| `{k}` | {_type_text(v)} | {what.get(k, '')} |")
    return lines


def _splits(info: dict[str, Any], split_rule: dict[str, Any], hidden: bool) -> list[str]:
    lines = [
        "",
        "## Splits",
        "",
        *[f"- `{s}`: {n} items" for s, n in info["splits"].items()],
        "",
        f"Split by {split_rule['by']}: every item of one cluster is in the same split "
        f"(seed {split_rule['seed']}, test fraction {split_rule['test_fraction']}, "
        f"{split_rule['clusters']} clusters). Re-exporting the same gold with the same seed "
        "gives the same split.",
        "",
    ]
    if hidden:
        lines += [
            "**Test answers are withheld.** The `test` split carries every input (media, "
            "prompts, candidates, metadata) but its `gold` and `provenance` are null: the "
            "release owner keeps them apart and scores submitted test predictions, so the "
            "test set stays blind. Use `train` to develop and validate.",
            "",
        ]
    return lines


def _media_comment(features: dict[str, Any]) -> str:
    """What the snippet's comment says of the media column this release really has (a
    video release has ``frames``, not ``image``: naming ``ex["image"]`` there made the
    card's own snippet fail with ``KeyError``)."""
    if "image" in features:
        return 'ex["image"] is a PIL image'
    if "frames" in features:
        return 'ex["frames"] is the list of PIL frames, in order'
    if "video" in features:
        return 'ex["video"] lists the video files'
    return 'ex["prompt"] is the prompt'


def _evaluate(sheet: dict[str, Any], hidden: bool, info: dict[str, Any]) -> list[str]:
    splits = list(info.get("splits") or ())
    example = "train" if hidden or "test" not in splits else "test"
    features = info.get("features") or {}
    media = _media_comment(features)
    col = next((c for c in ("image", "frames", "video", "prompt") if c in features), "item")
    return [
        "## How to evaluate",
        "",
        "```python",
        "from datasets import load_dataset",
        'ds = load_dataset("path/to/this/folder")',
        f'ex = ds["{example}"][0]  # {media}, ex["gold"] the answers',
        f'print(ex["item"], ex["{col}"] is not None, ex["gold"])',
        "```",
        "",
        "With truthline, on the whole release (this folder's parent, with its `private/` "
        "records), check the checksums, load it into a store and rerun a model under the "
        "same scoring contract (`project/`):",
        "",
        "```",
        "truthline benchmark verify RELEASE",
        "```",
        "",
        "```python",
        "from truthline.benchmark import RunConfig, load_release, run_benchmark",
        "from truthline.store import Store",
        'store = Store("sqlite:///rerun.db")',
        'got = load_release("RELEASE", store)',
        'run_benchmark(store, got["project"], RunConfig(models=["openai:gpt-4o-mini"]))',
        "```",
        "",
        f"Scores are per-field accuracy over the target fields ({', '.join(sheet['targets'])}); "
        "entity-list fields are matched by entity id first.",
        "",
    ]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _classes(sheet: dict[str, Any]) -> list[str]:
    """Each taxonomy field's classes with their gold instances (a paper's class table)."""
    tables = sheet.get("classes") or []
    if not tables:
        return []
    lines = [
        "## Classes",
        "",
        f"Gold instances per class of each taxonomy field, over {sheet['composition_of']}.",
        "",
    ]
    for t in tables:
        lines += [
            f"### `{t['field']}` (taxonomy `{t['taxonomy']}`)",
            "",
            "| code | group | name | description | instances |",
            "| --- | --- | --- | --- | --- |",
        ]
        for c in t["classes"]:
            group = f"{c['group']} ({c['group_name']})" if c["group_name"] else c["group"]
            lines.append(
                f"| `{c['code']}` | {_cell(group)} | {_cell(c['name'])} | "
                f"{_cell(c['description'])} | {c['count']} |"
            )
        other = f"; {t['other']} values outside the taxonomy" if t["other"] else ""
        lines += ["", f"{t['decisions']} gold decisions{other}.", ""]
    return lines


def _density(sheet: dict[str, Any]) -> list[str]:
    """Fields, decisions and entities per clip, and per field (annotation density)."""
    d = sheet.get("density")
    if not d or not d["clips"]:
        return []
    rows = [
        ("fields (scene-level + per-entity)", d["fields_per_clip"]),
        ("scene-level fields", d["scene_fields_per_clip"]),
        ("per-entity fields", d["entity_fields_per_clip"]),
        ("gold decisions (entity lists included)", d["decisions_per_clip"]),
        ("entities", d["entities_per_clip"]),
    ]
    lines = [
        "## Annotation density",
        "",
        f"Per item, over {sheet['composition_of']} ({d['clips']} items, {d['decisions']} gold "
        "decisions in total). A per-entity field counts once per entity.",
        "",
        "| per item | mean | min | max |",
        "| --- | --- | --- | --- |",
        *[f"| {k} | {v['mean']:.1f} | {v['min']} | {v['max']} |" for k, v in rows],
        "",
        "| field | level | type | items | decisions | per item |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for f in d["fields"]:
        lines.append(
            f"| `{f['field']}` | {f['level']} | {f['type']} | {f['clips']} | {f['decisions']} "
            f"| {f['per_clip']:.2f} |"
        )
    return [*lines, ""]


def _provenance(sheet: dict[str, Any]) -> list[str]:
    """Where the gold came from, who was excluded, and the licence."""
    lines = [
        "## Provenance of gold values",
        "",
        "Each gold decision carries a provenance (column `provenance`):",
        "",
    ]
    for k, n in sorted(sheet["provenance"].items()):
        lines.append(f"- `{k}` ({n} decisions): {PROVENANCE.get(k, '')}")
    lines += [
        "",
        f"Gold snapshot `{sheet['gold_snapshot']}`; {sheet['decisions']} decisions over "
        f"{sheet['items_in_release']} items ({sheet['items_not_released']} project items had "
        f"no gold in the exported slice). {sheet['audit']['annotators']} annotators; "
        "annotators appear only as pseudonyms (stable within this release).",
        "",
        "## Exclusions",
        "",
        *([f"- {e['annotator']}: {e['reason']}" for e in sheet["exclusions"]] or ["- none"]),
        "",
        "## Licence",
        "",
        sheet["licence"],
        "",
    ]
    return lines
