"""Annotator instructions generated from the project definition (Label Studio's
``expert_instruction``, shown before labeling with ``show_instruction``).

Why generated: the project file is the one rule book; a hand-written page drifts from it.
The page lists every field (title, description, options with their codes and names, number
ranges and units), every taxonomy (its note and each class's code, group, name and text:
the rule texts where the taxonomy is a rule book) and what the arm shows. It never names
the pre-annotating model: anchored annotators are told a "pre-annotation" is shown.
"""

from __future__ import annotations

from html import escape
from typing import Any

from truthline.annotate._labelconfig import _entity_parts, field_title

PREFILL_LABEL = "pre-annotation"
"""What the anchored arm calls the prefill it shows (Label Studio's ``model_version``):
the model's own name stays in the store (predictions, exposures), not in front of people."""

_ARM_TEXT = {
    "blind": "Nothing is pre-filled: label what you see.",
    "anchored": (
        "A pre-annotation is pre-filled. Check every value and box against the image and "
        "correct anything wrong; it may be wrong in any field."
    ),
    "review": (
        "Each first-round annotation is shown as its own tab. Compare them with the image "
        "and submit the values you judge correct."
    ),
}


def _e(x: Any) -> str:
    return escape(str(x))


def _options(ft: Any) -> str:
    """The options of a choice field as annotators see them (code, and name where one exists)."""
    if ft.name == "boolean":
        return "yes / no"
    tax = ft.taxonomies.get(getattr(ft.spec, "taxonomy", None) or "")
    if tax is not None:
        return f"a class of the <i>{_e(field_title(ft.spec.taxonomy))}</i> list below"
    cats = ft.categories() or []
    return ", ".join(f"<code>{_e(c)}</code>" for c in cats)


def _field_item(name: str, ft: Any) -> str:
    parts = [f"<b>{_e(field_title(name))}</b>"]
    if ft.spec.description:
        parts.append(f" — {_e(ft.spec.description)}")
    spec = ft.spec
    if ft.name in ("single_choice", "multi_choice", "boolean"):
        many = " (all that apply)" if ft.name == "multi_choice" else ""
        parts.append(f"<br>Options{many}: {_options(ft)}")
    elif ft.name == "number":
        rng = [
            f"min {spec.min:g}" if getattr(spec, "min", None) is not None else "",
            f"max {spec.max:g}" if getattr(spec, "max", None) is not None else "",
            "whole numbers" if getattr(spec, "integer", False) else "",
            f"unit: {_e(spec.unit)}" if getattr(spec, "unit", "") else "",
        ]
        if any(rng):
            parts.append(f"<br>{'; '.join(r for r in rng if r)}")
    elif ft.name == "region":
        labels = list(getattr(spec, "labels", []) or [])
        parts.append(
            "<br>Draw a box around each one"
            + (f" (labels: {', '.join(_e(x) for x in labels)})" if labels else "")
        )
    return f"<li>{''.join(parts)}</li>"


def _entity_item(name: str, ft: Any) -> str:
    _box_name, box, subs = _entity_parts(ft)
    title = _e(field_title(name))
    how = (
        f"Draw one box per entry of <b>{title}</b>, then select the box to set its values "
        "(a box without values is refused; in Label Studio's Settings, &quot;Select region "
        "after creating it&quot; shows a new box's controls at once). Entries shown pre-filled "
        "but without a box are small squares in the top-left corner with their values set: "
        "drag each onto the one it stands for, or delete it if you cannot see them."
        if box is not None
        else f"Each entry of <b>{title}</b> is a small square; select it to set its values."
    )
    desc = f" — {_e(ft.spec.description)}" if ft.spec.description else ""
    inner = "".join(_field_item(sub, st) for sub, st in subs.items())
    return f"<li><b>{title}</b>{desc}<br>{how}<ul>{inner}</ul></li>"


def _taxonomy(key: str, tax: Any) -> str:
    rows = "".join(
        f"<tr><td><code>{_e(c.code)}</code></td><td>{_e(tax.groups.get(c.group, c.group))}</td>"
        f"<td>{_e(c.name)}</td><td>{_e(c.description)}</td></tr>"
        for c in tax.classes
    )
    note = f"<p>{_e(tax.note)}</p>" if tax.note else ""
    return (
        f"<h4>{_e(field_title(key))}</h4>{note}"
        "<table><tr><th>Code</th><th>Group</th><th>Name</th><th>Text</th></tr>"
        f"{rows}</table>"
    )


def instructions(project: Any, arm: str) -> str:
    """The HTML instruction page of one arm's Label Studio project."""
    out = [f"<h3>{_e(project.title or field_title(project.name))}</h3>"]
    if project.description:
        out.append(f"<p>{_e(project.description)}</p>")
    out.append(f"<p><b>This project:</b> {_e(_ARM_TEXT.get(arm, ''))}</p>")
    if (rule := getattr(project, "layers", None)) is not None:
        title = _e(field_title(rule.entity))
        out.append(
            f"<p><b>Layers:</b> a clip with 1 to {rule.max_count} counted is Layer 2: "
            f"annotate the scene and every entry of <b>{title}</b>. A clip with more (or "
            f"none) is Layer 1: annotate the scene only; no boxes can be drawn for "
            f"<b>{title}</b>. The note above the image says which layer a clip is.</p>"
        )
    items = [
        _entity_item(n, ft) if ft.name == "entity_list" else _field_item(n, ft)
        for n, ft in project.field_types.items()
    ]
    out.append(f"<h4>Fields</h4><ul>{''.join(items)}</ul>")
    used = {
        getattr(st.spec, "taxonomy", None)
        for ft in project.field_types.values()
        for st in [ft, *getattr(ft, "subfields", {}).values()]
    }
    for key, tax in project.taxonomies.items():
        if key in used:
            out.append(_taxonomy(key, tax))
    return "\n".join(out)
