"""Label Studio label configs generated from the project schema, and the value <-> result mapping.

Mapping (one registry entry per field type, ``@ls_control("type")`` adds one):

| field type      | Label Studio control                        | result value            |
|-----------------|---------------------------------------------|-------------------------|
| single_choice   | ``Choices choice="single-radio"``           | ``{"choices": [c]}``    |
| multi_choice    | ``Choices choice="multiple"``               | ``{"choices": [...]}``  |
| boolean         | ``Choices`` with ``yes`` / ``no``           | ``{"choices": ["yes"]}``|
| number          | ``Number`` (min/max, step 1 for integers)   | ``{"number": x}``       |
| reading, text   | ``TextArea`` (one submission, editable)     | ``{"text": [s]}``       |
| region          | ``RectangleLabels`` (percent coordinates)   | one result per box      |
| entity_list     | ``RectangleLabels`` named after the list:   | one region per entity;  |
|                 | one rectangle per entity, and every other   | per-region results share|
|                 | subfield as a per-region control            | the region's ``id``     |
|                 | (``perRegion="true"``)                      |                         |

Control names are field paths with ``.`` written ``__`` (``workers__action``). Label Studio
ties per-entity controls to a region, so every pre-annotated entity arrives as a region with
its values set (issue 26: annotators never retype values): its box from the VLM or the person
detector (``_regions``), else a placeholder square in a corner slot that the annotator drags
onto it (``placeholders=True``; a square left on its slot reads back as "no box"). A note
above the image (task data ``<list>__unboxed``, see ``unboxed_note``) says how many squares
there are. A region drawn by the annotator without a key gets the key ``ls-<region id>``.

A new region is not selected in Label Studio 1.23 unless the annotator's browser has
"Select regions after creating" on (a per-browser setting, local storage
``labelStudio:settings``; no config attribute or API sets it), so its per-region controls stay
hidden: the first per-region control of each entity list is ``required`` (Label Studio then
refuses to submit a region without it, selects that region and shows its controls), and
``annotate pull`` refuses an annotation whose regions carry no values (``_pull``).

Taxonomy classes show "code name" and store the code via ``alias`` (Label Studio writes the
alias into results and matches predictions by it); the hint carries group and class text.
Headers show each field's title (``worker_count`` -> "Worker count") and description.

Media objects (every control points at the one object that carries the regions):

| media  | object tags                                        | task data                    |
|--------|----------------------------------------------------|------------------------------|
| image  | ``Image name="image" value="$image"``              | ``image``                    |
| video  | ``Video name="video" value="$video"``              | ``video``                    |
| frames | ``Image name="image" value="$image"`` (key frame,  | ``image`` (the middle frame),|
|        | boxes and every control) beside                    | ``frames`` (all, in order),  |
|        | ``Image name="clip" value="$frames"`` (a viewer:   | ``frames_note``              |
|        | the current frame large over a strip of all frame  |                              |
|        | thumbnails; no control points at it)               |                              |

Why frames are not one multi-image ``<Image valueList="$frames">``: Label Studio 1.23 ties
each region on such an object to one frame (``item_index`` in the result and the export)
and opens a task on the first frame, so the anchored arm's prefilled boxes, which belong to
the middle frame (the project's box fields say so), would be hidden until the annotator
paged to them, and boxes drawn on other frames would mean other moments. A key-frame object
keeps one box per worker on the frame the schema names; the viewer shows the whole clip.
A result that still carries ``item_index`` is read like any other (the index is ignored).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import quoteattr

from truthline.annotate._layers import labels_xml as layered_labels_xml
from truthline.annotate._layers import layer_data, layered_list
from truthline.errors import FieldValueError
from truthline.fields import FieldType
from truthline.project import ItemLayer

OBJECT_NAME = {"image": "image", "frames": "image", "video": "video"}
CLIP_VIEWER = "clip"
"""Name of the frames projects' clip viewer (an object tag no control points at)."""


def control_name(path: str) -> str:
    return path.replace(".", "__")


def field_path(name: str) -> str:
    return name.replace("__", ".")


@dataclass
class LSControl:
    """How one field type appears in Label Studio and how its values convert."""

    tag: str
    result_type: str
    xml: Callable[[FieldType, str, str, bool], str]
    to_result: Callable[[FieldType, Any], dict[str, Any] | None]
    """Normalized value -> the result's ``value`` dict (None = no result)."""
    from_result: Callable[[FieldType, dict[str, Any]], Any]
    """A result's ``value`` dict -> a raw value for ``FieldType.normalize``."""


_CONTROLS: dict[str, LSControl] = {}


def ls_control(type_name: str) -> Callable[[LSControl], LSControl]:
    """Register the Label Studio mapping of a field type (one decorator per type)."""

    def deco(ctrl: LSControl) -> LSControl:
        _CONTROLS[type_name] = ctrl
        return ctrl

    return deco


def control_for(ft: FieldType) -> LSControl:
    try:
        return _CONTROLS[ft.name]
    except KeyError:
        raise FieldValueError(
            ft.path,
            f"field type {ft.name!r} has no Label Studio control; register one with "
            "@ls_control in truthline.annotate",
        ) from None


def _attrs(**kw: Any) -> str:
    return " ".join(f"{k}={quoteattr(str(v))}" for k, v in kw.items() if v is not None)


def _choices_xml(ft: FieldType, name: str, to: str, per_region: bool, multiple: bool) -> str:
    opts = "".join(_choice_xml(ft, c) for c in (ft.categories() or []))
    return (
        f"<Choices {_attrs(name=name, toName=to, choice='multiple' if multiple else 'single-radio', perRegion='true' if per_region else None, showInline='true')}>"
        f"{opts}</Choices>"
    )


def _choice_xml(ft: FieldType, code: str) -> str:
    """One option: a taxonomy class shows "code name" and stores its code through ``alias``
    (Label Studio writes the alias into results and matches predictions by it); the hint
    (hover text) carries the class's group and description. Other options show their value."""
    tax = ft.taxonomies.get(getattr(ft.spec, "taxonomy", None) or "")
    cls = next((c for c in tax.classes if c.code == code), None) if tax is not None else None
    if tax is None or cls is None:
        return f"<Choice {_attrs(value=code)}/>"
    hint = "; ".join(x for x in (tax.groups.get(cls.group, ""), cls.description) if x)
    if not cls.name:
        return f"<Choice {_attrs(value=code, hint=hint or None)}/>"
    return f"<Choice {_attrs(value=f'{code} {cls.name}', alias=code, hint=hint or None)}/>"


def _one_choice(ft: FieldType, v: dict[str, Any]) -> Any:
    ch = v.get("choices")
    if not isinstance(ch, list):
        raise ft.fail(f"expected a 'choices' list, got {v!r}")
    if len(ch) > 1:
        raise ft.fail(f"one choice expected, got {ch!r}")
    return ch[0] if ch else None


def _list_choices(ft: FieldType, v: dict[str, Any]) -> Any:
    ch = v.get("choices")
    if not isinstance(ch, list):
        raise ft.fail(f"expected a 'choices' list, got {v!r}")
    return ch


ls_control("single_choice")(
    LSControl(
        "Choices",
        "choices",
        lambda ft, n, to, pr: _choices_xml(ft, n, to, pr, False),
        lambda ft, v: None if v is None else {"choices": [v]},
        _one_choice,
    )
)
ls_control("multi_choice")(
    LSControl(
        "Choices",
        "choices",
        lambda ft, n, to, pr: _choices_xml(ft, n, to, pr, True),
        lambda ft, v: None if v is None else {"choices": list(v)},
        _list_choices,
    )
)
ls_control("boolean")(
    LSControl(
        "Choices",
        "choices",
        lambda ft, n, to, pr: (
            f"<Choices {_attrs(name=n, toName=to, choice='single-radio', perRegion='true' if pr else None, showInline='true')}>"
            '<Choice value="yes"/><Choice value="no"/></Choices>'
        ),
        lambda ft, v: None if v is None else {"choices": ["yes" if v else "no"]},
        _one_choice,
    )
)


def _number_xml(ft: FieldType, n: str, to: str, pr: bool) -> str:
    spec = ft.spec
    return f"<Number {_attrs(name=n, toName=to, min=_num(getattr(spec, 'min', None)), max=_num(getattr(spec, 'max', None)), step='1' if getattr(spec, 'integer', False) else 'any', perRegion='true' if pr else None)}/>"


def _num(x: float | None) -> str | None:
    if x is None:
        return None
    return str(int(x)) if float(x).is_integer() else str(x)


def _number_from(ft: FieldType, v: dict[str, Any]) -> Any:
    if "number" not in v:
        raise ft.fail(f"expected a 'number' value, got {v!r}")
    return v["number"]


ls_control("number")(
    LSControl(
        "Number",
        "number",
        _number_xml,
        lambda ft, v: None if v is None else {"number": v},
        _number_from,
    )
)


def _text_xml(ft: FieldType, n: str, to: str, pr: bool) -> str:
    rows = 1 if ft.name == "reading" else 2
    return f"<TextArea {_attrs(name=n, toName=to, rows=rows, editable='true', maxSubmissions='1', perRegion='true' if pr else None)}/>"


def _text_from(ft: FieldType, v: dict[str, Any]) -> Any:
    text = v.get("text")
    if isinstance(text, str):
        return text
    if not isinstance(text, list) or not all(isinstance(s, str) for s in text):
        raise ft.fail(f"expected a 'text' list of strings, got {v!r}")
    return "\n".join(text)


for _t in ("reading", "text"):
    ls_control(_t)(
        LSControl(
            "TextArea",
            "textarea",
            _text_xml,
            lambda ft, v: None if v is None else {"text": [str(v)]},
            _text_from,
        )
    )


def _labels_xml(name: str, to: str, labels: list[str]) -> str:
    opts = "".join(f"<Label {_attrs(value=lab)}/>" for lab in labels)
    return f"<RectangleLabels {_attrs(name=name, toName=to)}>{opts}</RectangleLabels>"


def _box_from(ft: FieldType, v: dict[str, Any]) -> dict[str, Any]:
    labels = v.get("rectanglelabels")
    if not isinstance(labels, list) or len(labels) > 1:
        raise ft.fail(f"expected one rectangle label, got {v!r}")
    try:
        box: dict[str, Any] = {k: float(v[k]) for k in ("x", "y", "width", "height")}
    except (KeyError, TypeError, ValueError):
        raise ft.fail(f"expected numeric x, y, width, height, got {v!r}") from None
    box["label"] = labels[0] if labels else None
    return box


ls_control("region")(
    LSControl(
        "RectangleLabels",
        "rectanglelabels",
        lambda ft, n, to, pr: _labels_xml(n, to, list(getattr(ft.spec, "labels", [])) or [ft.path]),
        lambda ft, v: None,  # one result per box: see values_to_results
        _box_from,
    )
)
# entity lists are composite: handled by the functions below, registered for completeness.
ls_control("entity_list")(
    LSControl("RectangleLabels", "rectanglelabels", lambda *a: "", lambda *a: None, _box_from)
)


# -- whole configs ---------------------------------------------------------------------------
def _entity_parts(ft: FieldType) -> tuple[str | None, FieldType | None, dict[str, FieldType]]:
    """(box subfield name, its type, the other subfields) of an entity list."""
    subs: dict[str, FieldType] = dict(getattr(ft, "subfields", {}))
    box_name = getattr(ft.spec, "match_region", None)
    if box_name is None:
        box_name = next((n for n, s in subs.items() if s.name == "region"), None)
    box = subs.pop(box_name) if box_name else None
    return box_name, box, subs


def label_config(project: Any) -> str:
    """The Label Studio XML for a project: one control per field, in declared order."""
    media = project.media
    obj = OBJECT_NAME[media]
    parts = ["<View>"]
    if media == "video":
        parts.append('<Video name="video" value="$video"/>')
    elif media == "frames":
        parts += [
            '<View style="display: flex; gap: 16px; align-items: flex-start">',
            '<View style="flex: 3; min-width: 0">',
            '<Header value="$frames_note" size="6"/>',
            '<Image name="image" value="$image" zoom="true" zoomControl="true"/>',
            "</View>",
            '<View style="flex: 2; min-width: 0">',
            '<Header value="The whole clip, in order: click a thumbnail to enlarge it" size="6"/>',
            f'<Image name="{CLIP_VIEWER}" value="$frames"/>',
            "</View>",
            "</View>",
        ]
    else:
        parts.append('<Image name="image" value="$image" zoom="true" zoomControl="true"/>')
    taken = {obj, CLIP_VIEWER} if media == "frames" else {obj}
    for name, ft in project.field_types.items():
        if control_name(name) in taken:
            raise FieldValueError(
                ft.path,
                f"the name {name!r} is taken by a Label Studio object tag in {media} projects; "
                "rename the field",
            )
        header = f"<Header {_attrs(value=_heading(name, ft), size='5')}/>"
        if ft.name == "entity_list":
            if media == "video":
                raise FieldValueError(
                    ft.path, "entity lists need boxes on an image; video projects cannot use them"
                )
            _box_name, box, subs = _entity_parts(ft)
            labels = list(getattr(box.spec, "labels", []) or []) if box else []
            parts.append(header)
            if box is not None:  # the pre-annotation's entities it could not place
                parts.append(
                    f'<View style="white-space: pre-line"><Header {_attrs(value="$" + unboxed_key(name), size="6")}/></View>'
                )
            if name == layered_list(project):  # labels per task: none on Layer 1
                parts.append(layered_labels_xml(control_name(name), obj))
            else:
                parts.append(_labels_xml(control_name(name), obj, labels or [name]))
            parts.append(
                f'<View visibleWhen="region-selected" {_attrs(whenTagName=control_name(name))}>'
            )
            first = next((s for s in subs if s != getattr(ft.spec, "key", None)), None)
            for sub, st in subs.items():
                parts.append(f"<Header {_attrs(value=_heading(sub, st), size='6')}/>")
                xml = control_for(st).xml(st, control_name(f"{name}.{sub}"), obj, True)
                if sub == first:  # a region cannot be submitted without it (see above)
                    xml = _required(xml, control_name(name), field_title(sub))
                parts.append(xml)
            parts.append("</View>")
            continue
        if ft.name == "region" and media == "video":
            raise FieldValueError(ft.path, "region fields need an image or frames project")
        parts.append(header)
        parts.append(control_for(ft).xml(ft, control_name(name), obj, False))
    parts.append("</View>")
    return "\n".join(parts)


def _required(xml: str, list_control: str, title: str) -> str:
    """A per-region control Label Studio requires on every region of ``list_control``: at
    submit it selects the first region without a value (its controls appear) and says so."""
    tag, sep, rest = xml.partition(" ")
    attrs = _attrs(
        required="true",
        requiredMessage=f"{title} is not set for a selected box: set it, or delete the box",
        visibleWhen="region-selected",
        whenTagName=list_control,
    )
    return f"{tag} {attrs}{sep}{rest}"


def field_title(name: str) -> str:
    """A field's name as annotators read it: ``worker_count`` -> "Worker count"."""
    words = name.replace("__", " ").replace("_", " ").replace(".", " ").split()
    return " ".join(words).capitalize() if words else name


def _heading(name: str, ft: FieldType) -> str:
    desc = ft.spec.description or ""
    return field_title(name) + (f": {desc}" if desc else "")


def unboxed_key(list_name: str) -> str:
    """Task-data key of the note listing an entity list's pre-annotated entities without a box."""
    return f"{control_name(list_name)}__unboxed"


def _unboxed_lists(project: Any) -> list[str]:
    return [
        n
        for n, ft in project.field_types.items()
        if ft.name == "entity_list" and _entity_parts(ft)[1] is not None
    ]


def task_data(
    project: Any,
    item_id: int,
    urls: list[str],
    key: str,
    *,
    shown: list[tuple[str, dict]] | None = None,
    layer: ItemLayer | None = None,
) -> dict[str, Any]:
    """Task data: our item id (idempotence), its key, the media URL(s), and per entity list
    the note on entities the values in ``shown`` (``(who, values)``; the anchored arm's
    pre-annotation, the review arm's tier-1 annotations) list without a box; with
    ``[layers]``, the layered list's labels and note for the item's ``layer``."""
    data: dict[str, Any] = {"item_id": item_id, "key": key}
    if (lname := layered_list(project)) is not None:
        ft = project.field_types[lname]
        box = _entity_parts(ft)[1]
        labels = list(getattr(box.spec, "labels", []) or []) if box else []
        data |= layer_data(
            project, control_name(lname), labels or [lname], layer, field_title(lname)
        )
    for name in _unboxed_lists(project):
        data[unboxed_key(name)] = unboxed_note(project, name, shown or [])
    if project.media == "video":
        data["video"] = urls[0]
    elif project.media == "frames":
        mid = len(urls) // 2
        data["image"] = urls[mid]
        data["frames"] = urls
        data["frames_note"] = (
            f"{key}: key frame {mid + 1} of {len(urls)} (the middle one); boxes go here"
        )
    else:
        data["image"] = urls[0]
    return data


def unboxed_note(project: Any, name: str, shown: list[tuple[str, dict]]) -> str:
    """Text beside the image when ``shown`` names entities of list ``name`` without a box.

    Each such entity arrives as a region with its values set, a placeholder square in the
    top-left corner (Label Studio ties per-entity controls to a region, and an annotator must
    never retype values): the note says how many there are and what to do with them, never
    their values. Empty when none.
    """
    ft = project.field_types[name]
    box_name, _box, _subs = _entity_parts(ft)
    n = sum(
        1
        for _who, values in shown
        for ent in values.get(name) or []
        if isinstance(ent, dict) and box_name and not ent.get(box_name)
    )
    if not n:
        return ""
    title = field_title(name)
    return (
        f"{title}: {n} pre-annotated without a box, shown as small squares in the top-left "
        "corner with their values set: drag each onto the one it stands for and correct its "
        "values, or delete it if you cannot see them."
    )


# -- values -> results ------------------------------------------------------------------------
PLACEHOLDER = 6.0  # side (percent) of the square standing in for an entity without a box


def placeholder_box(index: int) -> dict[str, float]:
    return {
        "x": 1.0 + (index % 12) * (PLACEHOLDER + 2),
        "y": 1.0 + (index // 12) * (PLACEHOLDER + 2),
        "width": PLACEHOLDER,
        "height": PLACEHOLDER,
    }


def is_placeholder(box: dict[str, Any]) -> bool:
    """A box sitting exactly on a placeholder slot (an entity shown without a box)."""
    step = PLACEHOLDER + 2
    if abs(box["width"] - PLACEHOLDER) > 1e-6 or abs(box["height"] - PLACEHOLDER) > 1e-6:
        return False
    gx, gy = (box["x"] - 1.0) / step, (box["y"] - 1.0) / step
    return abs(gx - round(gx)) < 1e-6 and abs(gy - round(gy)) < 1e-6 and 0 <= round(gx) < 12


def _geom(box: dict[str, Any]) -> dict[str, Any]:
    return {k: float(box[k]) for k in ("x", "y", "width", "height")} | {"rotation": 0}


def values_to_results(
    project: Any,
    values: dict[str, Any],
    *,
    origin: dict[str, str] | str | None = None,
    normalized: bool = False,
    placeholders: bool = False,
) -> list[dict[str, Any]]:
    """Field values (top-level names) -> Label Studio result items.

    Values are normalized first unless ``normalized`` says they already are (stored values).
    An entity without a box gets no region unless ``placeholders``: then a placeholder square
    in a corner slot stands in for it, values set, which reads back as "no box" unless moved
    (pre-annotations the annotator places, annotations posted over the API).
    """
    obj = OBJECT_NAME[project.media]
    out: list[dict[str, Any]] = []

    def org(name: str) -> dict[str, str]:
        o = origin.get(name) if isinstance(origin, dict) else origin
        return {"origin": o} if o else {}

    for name, ft in project.field_types.items():
        if name not in values:
            continue
        value = values[name] if normalized else ft.normalize(values[name])
        if value is None:
            continue
        cname = control_name(name)
        if ft.name == "region":
            for i, box in enumerate(value):
                out.append(
                    {
                        "id": f"{cname}-{i}",
                        "from_name": cname,
                        "to_name": obj,
                        "type": "rectanglelabels",
                        "value": _geom(box) | {"rectanglelabels": [box["label"] or name]},
                        **org(name),
                    }
                )
            continue
        if ft.name == "entity_list":
            out += _entities_to_results(ft, name, value, obj, org(name), placeholders)
            continue
        ctrl = control_for(ft)
        v = ctrl.to_result(ft, value)
        if v is not None:
            out.append(
                {"from_name": cname, "to_name": obj, "type": ctrl.result_type, "value": v}
                | org(name)
            )
    return out


def _entities_to_results(
    ft: FieldType,
    name: str,
    value: list[dict],
    obj: str,
    org: dict[str, str],
    placeholders: bool,
) -> list[dict[str, Any]]:
    box_name, box_ft, subs = _entity_parts(ft)
    labels = list(getattr(box_ft.spec, "labels", []) or []) if box_ft else []
    out: list[dict[str, Any]] = []
    cname = control_name(name)
    for i, ent in enumerate(value):
        rid = f"{cname}-{ft.entity_id(ent, i)}".replace(" ", "_")  # type: ignore[attr-defined]
        boxes = ent.get(box_name) if box_name else None
        box = boxes[0] if boxes else None
        if box is None and box_name and not placeholders:
            continue
        geom = _geom(box) if box else _geom(placeholder_box(i))
        label = (box or {}).get("label") or (labels[0] if labels else name)
        out.append(
            {
                "id": rid,
                "from_name": cname,
                "to_name": obj,
                "type": "rectanglelabels",
                "value": geom | {"rectanglelabels": [label]},
            }
            | org
        )
        for sub, st in subs.items():
            if ent.get(sub) is None:
                continue
            ctrl = control_for(st)
            v = ctrl.to_result(st, ent[sub])
            if v is None:
                continue
            out.append(
                {
                    "id": rid,
                    "from_name": control_name(f"{name}.{sub}"),
                    "to_name": obj,
                    "type": ctrl.result_type,
                    "value": geom | v,
                }
                | org
            )
    return out


# -- results -> values ------------------------------------------------------------------------
@dataclass
class Converted:
    """Field values read back from one annotation, with per-field origins and problems."""

    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _merge_origin(a: str | None, b: str | None) -> str | None:
    rank = {None: 0, "prediction": 1, "prediction-changed": 2, "manual": 3}
    return a if rank.get(a, 3) >= rank.get(b, 3) else b


def results_to_values(project: Any, results: list[dict[str, Any]]) -> Converted:
    """Label Studio result items -> normalized top-level values (each type's own rules).

    A malformed result (unknown ``from_name``, wrong value shape, value outside the field)
    is reported in ``problems`` and skipped; the other fields are still read. Fields without a
    result are missing (``None``), except boxes and entity lists, which are empty lists.
    """
    conv = Converted()
    types = project.field_types
    scalars: dict[str, Any] = {}
    boxes: dict[str, list[dict]] = {}
    regions: dict[str, dict[str, dict[str, Any]]] = {}  # entity list -> region id -> raw fields
    for k, res in enumerate(results or []):
        if not isinstance(res, dict):
            conv.problems.append(f"result {k}: not an object")
            continue
        fname = str(res.get("from_name", ""))
        path = field_path(fname)
        head, _, sub = path.partition(".")
        ft = types.get(head)
        if ft is None or (sub and sub not in getattr(ft, "subfields", {})):
            conv.problems.append(f"result {k}: unknown from_name {fname!r}")
            continue
        val = res.get("value")
        if not isinstance(val, dict):
            conv.problems.append(f"result {k} ({fname}): value is not an object")
            continue
        origin = res.get("origin")
        try:
            if ft.name == "entity_list":
                rid = str(res.get("id") or f"r{k}")
                ent = regions.setdefault(head, {}).setdefault(rid, {})
                if not sub:
                    ent["__box__"] = _box_from(ft, val)
                else:
                    st = ft.subfields[sub]  # type: ignore[attr-defined]
                    ent[sub] = st.normalize(control_for(st).from_result(st, val))
            elif ft.name == "region":
                boxes.setdefault(head, []).append(_box_from(ft, val))
            else:
                raw = control_for(ft).from_result(ft, val)
                scalars[head] = ft.normalize(raw)
        except FieldValueError as exc:
            conv.problems.append(f"result {k} ({fname}): {exc.message}")
            continue
        conv.origins[head] = _merge_origin(conv.origins.get(head), origin) or "manual"
    for name, ft in types.items():
        try:
            if ft.name == "entity_list":
                conv.values[name] = _read_entities(ft, regions.get(name, {}))
            elif ft.name == "region":
                conv.values[name] = ft.normalize(boxes.get(name, []))
            else:
                conv.values[name] = scalars.get(name)
        except FieldValueError as exc:
            conv.problems.append(f"{name}: {exc.message}")
            conv.values[name] = None
    return conv


def _read_entities(ft: FieldType, regions: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    box_name, _box_ft, _subs = _entity_parts(ft)
    key = getattr(ft.spec, "key", None)
    ents = []
    for rid, raw in regions.items():
        box = raw.pop("__box__", None)
        ent = dict(raw)
        if box_name and box is not None and not is_placeholder(box):
            ent[box_name] = [box]
        if key and ent.get(key) is None:
            ent[key] = f"ls-{rid}"
        ents.append(ent)
    return ft.normalize(ents) or []
