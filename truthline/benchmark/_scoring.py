"""Scoring one model answer against one item's gold decisions (METRICS.md §5).

Each gold decision is scored on its own with its field type's ``agree`` / ``credit``;
entity lists are aligned with ``EntityList.align`` between the answer and gold before
per-subfield comparison; extra predicted entities cost nothing per field but count as
false positives for detection (F2). A model failure arrives as an empty answer: every
decision is wrong and stays in the denominator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from truthline.fields import EntityList
from truthline.project import Project

_ENTITY_PATH = re.compile(r"^(?P<name>[^\[\].]+)\[(?P<eid>[^\]]*)\]\.(?P<sub>.+)$")


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
    # scalar targets
    for path in targets:
        if "." in path or path not in gold or gold[path] is None:
            continue
        ft = project.field(path)
        g, p = gold[path], values.get(path)
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
