"""Scoring one model answer against one item's gold decisions (METRICS.md §5).

Each gold decision is scored on its own with its field type's ``agree`` / ``credit``;
entity lists are aligned with ``EntityList.align`` between the answer and gold before
per-subfield comparison; extra predicted entities cost nothing per field but count as
false positives for detection (F2). A model failure arrives as an empty answer: every
decision is wrong and stays in the denominator.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from truthline.fields import EntityList
from truthline.project import Project
from truthline.project._model import ReadRule

_ENTITY_PATH = re.compile(r"^(?P<name>[^\[\].]+)\[(?P<eid>[^\]]*)\]\.(?P<sub>.+)$")


READ_RULES: tuple[str, ...] = get_args(ReadRule)
"""PHYSALIGN.md §6.3's normalization rules, in the order N applies them (then ``ws`` again)."""

_SUB = str.maketrans("₀₁₂₃₄₅₆₇₈₉₊₋", "0123456789+-")
_SUP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_SUB_RUN = re.compile("[₀-₉₊₋]+")
_SUP_RUN = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+")
_BRACED = re.compile(r"([_^])\{([^{}]*)\}")


def _script(mark: str, body: str) -> str:
    """One canonical form of a sub/superscript: bare for one character, braced otherwise."""
    return f"{mark}{body}" if len(body) == 1 else f"{mark}{{{body}}}"


def read_normal_form(text: str, rules: Sequence[str]) -> str:
    """N(text) of PHYSALIGN.md §6.3: the declared rules in the spec's order, then ``ws``.
    Digits, sign, case, units and the presence of a sub/superscript stay significant."""
    out = text
    for rule in [r for r in READ_RULES if r in rules] + (["ws"] if "ws" in rules else []):
        if rule == "nfc":
            out = unicodedata.normalize("NFC", out)
        elif rule == "ws":
            out = re.sub(r"\s+", " ", out).strip()
        elif rule == "math_delims":
            m = re.fullmatch(r"\s*(?:\$(.*)\$|\\\((.*)\\\))\s*", out, re.S)
            if m:
                out = m.group(1) if m.group(1) is not None else m.group(2)
        elif rule == "subsup_braces":
            out = _SUB_RUN.sub(lambda m: _script("_", m.group(0).translate(_SUB)), out)
            out = _SUP_RUN.sub(lambda m: _script("^", m.group(0).translate(_SUP)), out)
            out = _BRACED.sub(lambda m: _script(m.group(1), m.group(2)), out)
        elif rule == "unicode_minus":
            out = out.replace("\u2212", "-")
        elif rule == "num_unit_space":
            out = re.sub(r"(\d)\s*([^\W\d_])", r"\1 \2", out)
        elif rule == "eq_space":
            out = re.sub(r"\s*=\s*", " = ", out)
    return out


def leaf_of(path: str) -> str:
    """``workers[P1].action`` -> ``workers.action``; scalar paths are unchanged."""
    m = _ENTITY_PATH.match(path)
    return f"{m['name']}.{m['sub']}" if m else path


def answer_fields(project: Project, targets: Iterable[str]) -> list[str]:
    """Top-level fields a model must answer to be scored on ``targets``."""
    out: list[str] = []
    for t in targets:
        top = t.split(".", 1)[0]
        if top not in out:
            out.append(top)
    return out


def score_answer(
    project: Project,
    gold: Mapping[str, Any],
    provenance: Mapping[str, str],
    values: Mapping[str, Any] | None,
    targets: Iterable[str],
    confidence: str | None = None,
) -> dict[str, Any]:
    """Score normalized top-level ``values`` (None = model failure) against gold decisions.

    Returns ``{"decisions": [...], "entities": {list: {tp, fp, fn}}}``; each decision is
    ``{path, field, entity, gold, pred, correct, credit, provenance}``. When ``confidence``
    names an entity subfield (``workers.confidence``), each decision of that list also
    carries the matched predicted entity's stated ``confidence`` (raw), so calibration is
    per entity rather than per answer.
    """
    values = values or {}
    targets = list(targets)
    target_set = set(targets)
    decisions: list[dict[str, Any]] = []
    entities: dict[str, dict[str, int]] = {}
    read_field, read_rules = project.benchmark.read_field, project.benchmark.read_rules
    # scalar targets
    for path in targets:
        if "." in path or path not in gold or gold[path] is None:
            continue
        ft: Any = project.field(path)
        g, p = gold[path], values.get(path)
        if path == read_field and read_rules:
            ft = _ReadEquality(read_rules)
        decisions.append(_decision(ft, path, path, None, g, p, provenance.get(path, "")))
    # entity-list targets: rebuild gold entities from their decisions, align, compare
    lists = {t.split(".", 1)[0] for t in targets if "." in t}
    for name in sorted(lists):
        el = project.field_types.get(name)
        if not isinstance(el, EntityList):
            continue
        gold_ents: dict[str, dict[str, Any]] = {}
        for path, v in gold.items():
            m = _ENTITY_PATH.match(path)
            if m and m["name"] == name:
                gold_ents.setdefault(m["eid"], {})[m["sub"]] = v
        for eid in gold.get(name) or []:  # membership may name entities without decisions
            gold_ents.setdefault(str(eid), {})
        if not gold_ents and name not in gold:
            continue
        eids = list(gold_ents)
        glist = []
        for eid in eids:
            ent = dict(gold_ents[eid])
            if el.spec.key:
                ent[el.spec.key] = el.subfields[el.spec.key].normalize(eid)
            glist.append(ent)
        plist = [e for e in (values.get(name) or []) if isinstance(e, dict)]
        pairs = el.align(plist, glist)
        matched = {j: i for i, j in pairs if i is not None and j is not None}
        entities[name] = {
            "tp": len(matched),
            "fp": sum(1 for i, j in pairs if j is None and i is not None),
            "fn": sum(1 for i, j in pairs if i is None and j is not None),
        }
        conf_sub = confidence.split(".", 1)[1] if confidence and "." in confidence else None
        if conf_sub is not None and confidence and confidence.split(".", 1)[0] != name:
            conf_sub = None
        for j, eid in enumerate(eids):
            pent = plist[matched[j]] if j in matched else {}
            for sub, ft in el.subfields.items():
                leaf = f"{name}.{sub}"
                if leaf not in target_set or sub == el.spec.key:
                    continue
                path = f"{name}[{eid}].{sub}"
                g = gold_ents[eid].get(sub)
                if g is None:
                    continue
                dec = _decision(ft, path, leaf, eid, g, pent.get(sub), provenance.get(path, ""))
                if conf_sub is not None:
                    dec["confidence"] = pent.get(conf_sub)
                decisions.append(dec)
    return {"decisions": decisions, "entities": entities}


class _ReadEquality:
    """``agree``/``credit`` of a reading under N (PHYSALIGN.md §6.3): exact after the
    declared rules, no partial credit."""

    def __init__(self, rules: Sequence[str]):
        self.rules = list(rules)

    def agree(self, p: Any, g: Any) -> bool:
        return read_normal_form(str(p), self.rules) == read_normal_form(str(g), self.rules)

    def credit(self, p: Any, g: Any) -> float:
        return float(self.agree(p, g))


def _decision(
    ft: Any, path: str, leaf: str, eid: str | None, g: Any, p: Any, prov: str
) -> dict[str, Any]:
    return {
        "path": path,
        "field": leaf,
        "entity": eid,
        "gold": g,
        "pred": p,
        "correct": bool(p is not None and ft.agree(p, g)),
        "credit": float(ft.credit(p, g)) if p is not None else 0.0,
        "provenance": prov,
    }
