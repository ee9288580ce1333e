"""The model-answer contract (METRICS.md §5), shared by prefill and benchmark scoring.

A reply is read under one **answer grammar**, the one the question declares:

* ``json`` (the default; the only grammar that can carry several fields): exactly one JSON
  object, or exactly one fenced code block holding only that object. Duplicate keys and
  several candidate objects are rejected; extra keys are ignored.
* ``label``: a bare label such as ``A``, ``walking`` or ``guard up`` (SynDORBench's open
  action answer). Outer whitespace is dropped, inner runs of whitespace become one space and
  case is folded; what remains must be one line of letters, digits, spaces, ``_``, ``-``,
  ``'`` and ``/``, so ``walking.``, ``Answer: walking``, ``**walking**`` or a JSON object
  are grammar failures, not answers.
* ``digit``: a bare integer (``1``/``0`` for SynDORBench's presence question): optional
  outer whitespace, an optional ``-``, digits and nothing else, so ``1.``, ``"1"`` and
  ``Answer: 1`` are grammar failures.
* ``boxed``: a worked solution whose final answer is the content of its **last**
  ``\\boxed{...}`` (braces nested inside are kept: ``\\boxed{\\frac{1}{2}}`` is
  ``\\frac{1}{2}``), the original-problem contract of seeds/002 App. B.4; no boxed answer
  is a grammar failure (``no_boxed``). :func:`last_boxed` is the one extractor.
* ``text``: free-form prose (a mapped prompt variant's open description, seeds/001 App.
  E.2's V2): the whole reply, outer whitespace dropped; only an empty reply fails. No
  field declares it; it is never scored as it stands: a mapper model maps it to the
  fields first (``truthline.benchmark._mapper``). :func:`describe_answer` writes values
  in a fixed prose form and :func:`read_description` reads that form back.

A field declares its grammar in the project (``[fields.present] answer = "digit"``); it is
the grammar of a question that asks that field alone. A question asking several fields is
answered in ``json``. :func:`parse_answer` is the one parser (runner and prefill call it);
a reply that does not match raises ``AnswerFormatError`` with a machine-readable reason
(the share that match is the benchmark's answer-grammar match rate, ``format_rate``).
:func:`parse_fields` then validates every field on its own, so a bad field never zeroes
a correct sibling; :func:`render_answer` is the inverse, for backends that answer from
known values (SIMULATED models, rules, detectors).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from truthline.errors import AnswerFormatError, FieldValueError
from truthline.fields._base import FieldType

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)\n?[ \t]*```", re.S)
_LABEL = re.compile(r"[^\W_][\w '/-]*")
_DIGIT = re.compile(r"-?[0-9]+")

GRAMMARS: dict[str, frozenset[str] | None] = {
    "json": None,
    "label": frozenset({"single_choice", "text", "boolean"}),
    "digit": frozenset({"boolean", "number"}),
    "boxed": frozenset({"text", "number", "single_choice", "multi_choice"}),
}
"""Answer grammars and the field types each can carry (None: every type)."""
_ATTR = "answer_grammar"

FREE_FORM = "text"
"""The grammar of a free-form (mapped) variant's question. No field declares it (a field's
own bare answer is a ``label``): the benchmark binds it to the question's one prose field
(:func:`bind_free_form`)."""


def bind_free_form(ft: FieldType) -> None:
    """Read answers to ``ft`` (a text field asked alone) as free-form prose."""
    setattr(ft, _ATTR, FREE_FORM)


def _no_dup_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise AnswerFormatError("duplicate_key", f"key {k!r} appears twice")
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise AnswerFormatError("non_finite", f"{name} is not JSON (strict RFC 8259)")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_dup_keys, parse_constant=_no_constant)
"""Built once (a third of a small answer's parse was building it); it keeps no state."""


def _loads_object(text: str) -> dict[str, Any]:
    text = text.strip()
    try:
        obj, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError as exc:
        raise AnswerFormatError(
            "unparseable", f"not valid JSON ({exc.msg} at char {exc.pos})"
        ) from None
    rest = text[end:].strip()
    if rest:
        if rest.startswith("{"):
            raise AnswerFormatError("multiple_objects", "more than one JSON object in the answer")
        raise AnswerFormatError("unparseable", f"text after the JSON object: {rest[:40]!r}")
    if not isinstance(obj, dict):
        raise AnswerFormatError(
            "not_an_object", f"expected a JSON object, got {type(obj).__name__}"
        )
    return obj


def parse_json_answer(text: str | None) -> dict[str, Any]:
    """The single JSON object of an answer, or AnswerFormatError with a machine-readable reason."""
    if text is None or not text.strip():
        raise AnswerFormatError("empty", "the answer is empty")
    stripped = text.strip()
    if stripped.startswith("{"):
        return _loads_object(stripped)
    blocks = _FENCE.findall(stripped)
    if len(blocks) > 1:
        raise AnswerFormatError("multiple_objects", f"{len(blocks)} fenced blocks in the answer")
    if len(blocks) == 1:
        m = _FENCE.search(stripped)
        assert m is not None
        if m.group(1).lower() not in ("", "json"):
            raise AnswerFormatError("fence_language", f"a {m.group(1)!r} block, not json")
        if stripped[: m.start()].strip() or stripped[m.end() :].strip():
            raise AnswerFormatError("unparseable", "text outside the fenced block")
        return _loads_object(blocks[0][1])
    raise AnswerFormatError("unparseable", "no JSON object or fenced block found")


def parse_fields(
    fields: Mapping[str, FieldType], obj: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Validate each declared top-level field independently.

    Returns ``(values, errors)``: ``values`` maps every declared field path to its
    normalized value (``None`` when missing or invalid); ``errors`` explains each field
    that was missing or invalid. Keys the schema does not declare are ignored.
    """
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for path, ft in fields.items():
        key = path if path in obj else next((k for k in _alt_keys(ft) if k in obj), None)
        if key is None:
            values[path] = None
            errors[path] = "missing"
            continue
        try:
            values[path] = ft.normalize(obj[key])
        except FieldValueError as exc:
            values[path] = None
            errors[path] = exc.message
    return values, errors


def _alt_keys(ft: FieldType) -> list[str]:
    """The field's declared other answer keys (``answer_keys``; none for most fields)."""
    return list(getattr(ft.spec, "answer_keys", None) or [])


# -- answer grammars --------------------------------------------------------------------------
def bind_grammar(ft: FieldType, grammar: str) -> None:
    """Bind a field's declared answer grammar (the project loader does, after checking it
    with :func:`grammar_problem`)."""
    problem = grammar_problem(ft.name, grammar)
    if problem:
        raise ValueError(problem)
    setattr(ft, _ATTR, grammar)


def grammar_problem(field_type_name: str, grammar: Any) -> str | None:
    """Why ``grammar`` cannot be a field of type ``field_type_name``'s answer grammar
    (None: it can)."""
    if grammar not in GRAMMARS:
        return f"unknown answer grammar {grammar!r} (known: {', '.join(GRAMMARS)})"
    types = GRAMMARS[grammar]
    if types is not None and field_type_name not in types:
        return (
            f"a {field_type_name} field cannot be answered as a bare {grammar} "
            f"(the {grammar} grammar carries {', '.join(sorted(types))} fields)"
        )
    return None


def field_grammar(ft: FieldType) -> str:
    """The answer grammar a field declares (``json`` unless it declares another)."""
    return str(getattr(ft, _ATTR, "json"))


def request_grammar(fields: Mapping[str, FieldType]) -> str:
    """The grammar of a question asking ``fields``: the field's own when it asks one field,
    ``json`` (the only grammar naming its fields) when it asks several."""
    if len(fields) == 1:
        return field_grammar(next(iter(fields.values())))
    return "json"


_BOXED = re.compile(r"\\boxed\s*\{")


def last_boxed(text: str | None) -> str | None:
    """The content of the last complete ``\\boxed{...}`` of ``text`` (outer whitespace
    dropped), braces matched so nested groups stay inside; None without one. A box left
    open (a truncated reply) is not an answer; ``\\{`` and ``\\}`` are literal braces."""
    if not text:
        return None
    found: str | None = None
    for m in _BOXED.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            c = text[i]
            if c == "\\" and i + 1 < len(text) and text[i + 1] in "{}":
                i += 2
                continue
            depth += c == "{"
            depth -= c == "}"
            i += 1
        if depth == 0:
            found = text[m.end() : i - 1].strip()
    return found


def parse_bare(grammar: str, text: str | None) -> Any:
    """The value of a bare ``label`` (str, normalised) or ``digit`` (int) reply, or of a
    ``boxed`` one (the last box's content), or AnswerFormatError (reason ``empty``,
    ``not_a_label``, ``not_a_digit`` or ``no_boxed``)."""
    if text is None or not text.strip():
        raise AnswerFormatError("empty", "the answer is empty")
    stripped = text.strip()
    if grammar == "boxed":
        boxed = last_boxed(stripped)
        if boxed is None:
            raise AnswerFormatError("no_boxed", "no complete \\boxed{...} final answer")
        return boxed
    if grammar == "digit":
        if not _DIGIT.fullmatch(stripped):
            raise AnswerFormatError("not_a_digit", f"not a bare integer: {stripped[:40]!r}")
        return int(stripped)
    if grammar == "label":
        label = " ".join(stripped.split()).casefold()
        if "\n" in stripped or not _LABEL.fullmatch(label):
            raise AnswerFormatError("not_a_label", f"not a bare label: {stripped[:40]!r}")
        return label
    if grammar == FREE_FORM:
        return stripped
    raise AnswerFormatError("grammar", f"{grammar!r} is not a bare answer grammar")


def parse_answer(fields: Mapping[str, FieldType], text: str | None) -> dict[str, Any]:
    """The answer object of a reply to a question asking ``fields``, read under the
    question's grammar (:func:`request_grammar`): the JSON object, or ``{field: value}`` of a
    bare reply. Raises AnswerFormatError when the reply does not match the grammar."""
    grammar = request_grammar(fields)
    if grammar == "json":
        return parse_json_answer(text)
    return {next(iter(fields)): parse_bare(grammar, text)}


def render_answer(fields: Mapping[str, FieldType], values: Mapping[str, Any]) -> str:
    """The reply text giving ``values`` in the grammar of a question asking ``fields`` (the
    inverse of :func:`parse_answer`), for backends that answer from known values."""
    grammar = request_grammar(fields)
    if grammar == "json":
        return json.dumps({k: values[k] for k in fields if k in values})
    value = values.get(next(iter(fields)))
    if value is None:
        return ""
    if grammar == "digit":
        return str(int(value))
    if grammar == "boxed":
        return f"\\boxed{{{value}}}"
    return str(value)


# -- prose ------------------------------------------------------------------------------------
_SCALAR_LINE = re.compile(r"^The (?P<label>.+?) is (?P<value>.*)\.$")
_ENTITY_LINE = re.compile(r"^(?P<noun>\S+) (?P<eid>\S+): (?P<body>.*)\.$")


def _label(name: str) -> str:
    return name.replace("_", " ")


def _noun(list_name: str) -> str:
    """``workers`` -> ``Worker``: what one entity of a list is called in prose."""
    word = list_name[:-1] if list_name.endswith("s") and len(list_name) > 1 else list_name
    return _label(word).capitalize().replace(" ", "-")


def _class_names(ft: FieldType) -> dict[str, str]:
    """Taxonomy code -> class name of a choice field (prose names the class, not its code)."""
    tax = ft.taxonomies.get(getattr(ft.spec, "taxonomy", None) or "")
    return {c.code: c.name for c in tax.classes if c.name} if tax is not None else {}


def _prose_value(ft: FieldType, value: Any) -> str:
    from truthline.fields._scalar import Boolean

    if isinstance(ft, Boolean):
        return "yes" if value else "no"
    if isinstance(value, list):
        names = _class_names(ft)
        return ", ".join(_label(names.get(str(v), str(v))) for v in value) or "none"
    if isinstance(value, str):
        names = _class_names(ft)
        text = names.get(value, value if ft.categories() is None else _label(value))
        return " ".join(text.replace(";", ",").split()).rstrip(".")
    return str(value)


def _prosable(ft: FieldType) -> bool:
    """Fields prose can carry: not geometry (a region's box is no sentence)."""
    return ft.name != "region"


def describe_answer(fields: Mapping[str, FieldType], values: Mapping[str, Any]) -> str:
    """A deterministic plain-text description of ``values`` (one line per scalar field and
    per entity): the free-form form of an answer, e.g. ``The worker count is 2.`` and
    ``Worker P1: action is walking; helmet is worn; safety violation is no.``. Class codes
    are written as their taxonomy names and choices with spaces, so the text names no code
    a mapper could copy. :func:`read_description` reads it back."""
    lines: list[str] = []
    for name, ft in fields.items():
        value = values.get(name)
        subs = getattr(ft, "subfields", None)
        if subs is None:
            if value is not None and value != "" and _prosable(ft):
                lines.append(f"The {_label(name)} is {_prose_value(ft, value)}.")
            continue
        key = getattr(ft.spec, "key", None)
        for i, ent in enumerate(value or []):
            if not isinstance(ent, Mapping):
                continue
            eid = str(ent.get(key) if key else i + 1).replace(" ", "_")
            parts = [
                f"{_label(sub)} is {_prose_value(sft, ent[sub])}"
                for sub, sft in subs.items()
                if sub != key and ent.get(sub) not in (None, "") and _prosable(sft)
            ]
            lines.append(f"{_noun(name)} {eid}: {'; '.join(parts) or 'present'}.")
    return "\n".join(lines)


def _read_value(ft: FieldType, text: str) -> Any:
    from truthline.fields._scalar import Boolean, Number

    if isinstance(ft, Boolean):
        return {"yes": True, "no": False}.get(text, text)
    if isinstance(ft, Number):
        try:
            return int(text) if re.fullmatch(r"-?\d+", text) else float(text)
        except ValueError:
            return text
    cats = ft.categories()
    if cats is None:
        return text
    spaced = {_label(str(c)).casefold(): c for c in cats}
    names = {n.casefold(): c for c, n in _class_names(ft).items()}

    def one(t: str) -> Any:
        k = t.strip().casefold()
        return names.get(k, spaced.get(k, t.strip()))

    if ft.name == "multi_choice":
        return [] if text == "none" else [one(t) for t in text.split(",")]
    return one(text)


def read_description(fields: Mapping[str, FieldType], text: str) -> dict[str, Any]:
    """The answer values a :func:`describe_answer` text gives (raw: ``parse_fields``
    validates them); lines it does not recognise are ignored."""
    out: dict[str, Any] = {}
    by_label = {_label(n): n for n, ft in fields.items() if getattr(ft, "subfields", None) is None}
    lists = {_noun(n): n for n, ft in fields.items() if getattr(ft, "subfields", None) is not None}
    for line in (x.strip() for x in text.splitlines()):
        m = _SCALAR_LINE.match(line)
        if m and m["label"] in by_label:
            name = by_label[m["label"]]
            out[name] = _read_value(fields[name], m["value"])
            continue
        m = _ENTITY_LINE.match(line)
        if not m or m["noun"] not in lists:
            continue
        name = lists[m["noun"]]
        ft = fields[name]
        subs = getattr(ft, "subfields", {})
        key = getattr(ft.spec, "key", None)
        ent: dict[str, Any] = {key: m["eid"]} if key else {}
        sub_by_label = {_label(s): s for s in subs}
        for part in m["body"].split("; "):
            label, sep, value = part.partition(" is ")
            if sep and label in sub_by_label:
                sub = sub_by_label[label]
                ent[sub] = _read_value(subs[sub], value)
        out.setdefault(name, []).append(ent)
    return out
