"""Observational annotation passes (spec §3, §14) as Label Studio projects, pulled back as records.

Two projects per work folder, both with the passes 1-4 config:

* ``observe`` (passes 1-3): one task per parent with the diagram and the problem text only,
  never the question's answer or a solution. Annotators draw regions (text labels with
  their literal transcription and legibility; entity views with an entity key), spans in
  the text, and relations: ``names``, ``refers_to``, ``quantity_of``, ``view_of``.
* ``review`` (pass 4): the pulled pass 1-3 annotation is imported as a *prediction*; a second
  person keeps, fixes or deletes. An observation (relation) is ``verified`` when both the
  annotator and the reviewer hold it, ``disputed`` when only one does; only verified ones
  reach the compiler.

Both are Label Studio project kinds (``physalign.observe``, ``physalign.review``) pushed and
pulled through the store (``truthline.annotate.push_units`` / ``pull_units``); the exposure
log records, for every pass 4 reviewer, the pass 1-3 annotation they were shown.

Pixels <-> Label Studio percent use the image's ``original_width/height``. Pulled records go
to ``<work>/passes/draft.jsonl`` (passes 1-3) and ``<work>/passes/annotations.jsonl`` (with
pass 4), the compiler's input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from truthline.annotate import (
    LSClient,
    ProjectKind,
    ReadBack,
    UnitAnnotation,
    ls_project_row,
    project_kind,
    pull_units,
    push_units,
    stored_annotations,
)
from truthline.errors import TruthlineError
from truthline.store import Store
from truthline.systems.physalign._ls import (
    POLY_LABELS,
    RECT_LABELS,
    annotator_of,
    data_uri,
    export_tasks,
    label_config,
    migrate_state,
    passes_scope,
    pushed_tasks,
    simulated_users,
    submitted,
)
from truthline.systems.physalign._records import read_jsonl, read_records, write_jsonl
from truthline.systems.physalign._scenes import poly_bbox

INPUT = "annotations.jsonl"
DRAFT = "passes/draft.jsonl"
PULLED = "passes/annotations.jsonl"
STAGES = ("observe", "review")
_KIND_OF_LABEL = {v: k for k, v in RECT_LABELS.items()} | {v: k for k, v in POLY_LABELS.items()}
_SPAN_KIND = {
    "entity_mention": "entity_mention",
    "quantity_mention": "quantity",
    "constraint": "constraint",
    "query_target": "query_target",
}
_SPAN_LABEL = {v: k for k, v in _SPAN_KIND.items()}


def _problems(work: Path) -> list[dict[str, Any]]:
    """The parents to annotate: id, image and text only (answer-blind inputs)."""
    path = Path(work) / INPUT
    recs = read_jsonl(path)
    for n, r in enumerate(recs, start=1):
        for f in ("parent_id", "text", "image"):
            if not r.get(f):
                raise TruthlineError(
                    f"{path}:{n}: field {f} is missing (each parent needs an id, its text and its image)"
                )
    return [
        {
            "parent_id": r["parent_id"],
            "image": r["image"],
            "text": r["text"],
            "question": r.get("question"),
            "domain": r.get("domain"),
        }
        for r in recs
    ]


# -- pixels <-> Label Studio results ------------------------------------------------------------
def _pct_box(bbox: list[float], w: float, h: float) -> dict[str, float]:
    x, y, bw, bh = bbox
    return {
        "x": x / w * 100,
        "y": y / h * 100,
        "width": bw / w * 100,
        "height": bh / h * 100,
        "rotation": 0,
    }


def _px_box(v: dict[str, Any], w: float, h: float) -> list[float]:
    return [
        round(v["x"] * w / 100, 2),
        round(v["y"] * h / 100, 2),
        round(v["width"] * w / 100, 2),
        round(v["height"] * h / 100, 2),
    ]


def record_to_results(rec: dict[str, Any], *, with_relations: bool = True) -> list[dict[str, Any]]:
    """A §3 record as Label Studio results (how a careful annotator would draw it)."""
    W, H = float(rec["image"]["width"]), float(rec["image"]["height"])
    parent = rec["parent_id"]

    def rid(full_id: str) -> str:
        return full_id[len(parent) + 1 :] if full_id.startswith(parent + ".") else full_id

    ents_of: dict[str, dict[str, Any]] = {}
    for e in rec["pass2"]["entities"]:
        for v in e.get("view_prim_ids") or []:
            ents_of[v] = e
    quantity_kind: dict[str, str] = {}
    for q in rec["pass3"]["quantities"]:
        for ev in q.get("evidence") or []:
            quantity_kind[ev.get("prim_id") or ev.get("mention_id")] = (
                q.get("quantity_kind") or "other"
            )
    out: list[dict[str, Any]] = []
    img = {
        "to_name": "image",
        "original_width": int(W),
        "original_height": int(H),
        "image_rotation": 0,
    }
    for p in rec["pass1"]["primitives"]:
        r = rid(p["prim_id"])
        g = p["geometry"]
        ent = ents_of.get(p["prim_id"])
        if g.get("polyline"):
            kind = ent["kind"] if ent else "object"
            geo: dict[str, Any] = {
                "points": [[x / W * 100, y / H * 100] for x, y in g["polyline"]],
                "closed": False,
            }
            out.append(
                {
                    "id": r,
                    "from_name": "line_region",
                    "type": "polygonlabels",
                    **img,
                    "value": geo | {"polygonlabels": [POLY_LABELS[kind]]},
                }
            )
        else:
            geo = _pct_box(g["bbox"], W, H)
            label = (
                "text_label"
                if p["kind"] == "text_label"
                else (RECT_LABELS[ent["kind"]] if ent else "other_primitive")
            )
            out.append(
                {
                    "id": r,
                    "from_name": "region",
                    "type": "rectanglelabels",
                    **img,
                    "value": geo | {"rectanglelabels": [label]},
                }
            )
        if p["kind"] == "text_label":
            out.append(
                {
                    "id": r,
                    "from_name": "transcription",
                    "type": "textarea",
                    **img,
                    "value": geo | {"text": [p["transcription"] or ""]},
                }
            )
            out.append(
                {
                    "id": r,
                    "from_name": "legible",
                    "type": "choices",
                    **img,
                    "value": geo
                    | {"choices": ["legible" if p.get("legible") else "partly_illegible"]},
                }
            )
            if p["prim_id"] in quantity_kind:
                out.append(
                    {
                        "id": r,
                        "from_name": "quantity_kind",
                        "type": "choices",
                        **img,
                        "value": geo | {"choices": [quantity_kind[p["prim_id"]]]},
                    }
                )
        if ent is not None:
            out.append(
                {
                    "id": r,
                    "from_name": "entity_key",
                    "type": "textarea",
                    **img,
                    "value": geo | {"text": [ent["internal_name"]]},
                }
            )
    for m in rec["pass3"]["text_mentions"]:
        r = rid(m["mention_id"])
        span = {"start": m["start"], "end": m["end"], "text": m["text"]}
        out.append(
            {
                "id": r,
                "from_name": "span",
                "to_name": "text",
                "type": "labels",
                "value": span | {"labels": [_SPAN_LABEL[m["kind"]]]},
            }
        )
        if m["mention_id"] in quantity_kind:
            out.append(
                {
                    "id": r,
                    "from_name": "quantity_kind",
                    "to_name": "text",
                    "type": "choices",
                    "value": span | {"choices": [quantity_kind[m["mention_id"]]]},
                }
            )
    if with_relations:
        first_view = {
            e["entity_id"]: rid(e["view_prim_ids"][0])
            for e in rec["pass2"]["entities"]
            if e.get("view_prim_ids")
        }
        for o in rec["pass4"]["observations"]:
            subj = o["subject"]
            src = rid(subj.get("prim_id") or subj["mention_id"])
            out.append(
                {
                    "type": "relation",
                    "from_id": src,
                    "to_id": first_view[o["entity_id"]],
                    "direction": "right",
                    "labels": [o["relation"]],
                }
            )
    return out


def results_to_record(problem: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """Label Studio results of one parent -> a §3 record (passes 1-3 and draft observations)."""
    parent = problem["parent_id"]
    W, H = float(problem["image"]["width"]), float(problem["image"]["height"])
    regions: dict[str, dict[str, Any]] = {}
    relations: list[tuple[str, str, str]] = []
    for r in results:
        if r.get("type") == "relation":
            for lab in r.get("labels") or []:
                relations.append((str(r["from_id"]), str(r["to_id"]), lab))
            continue
        reg = regions.setdefault(str(r["id"]), {})
        v = r.get("value") or {}
        t = r.get("type")
        if t == "rectanglelabels":
            reg.update(obj="image", label=v["rectanglelabels"][0], bbox=_px_box(v, W, H))
        elif t == "polygonlabels":
            pts = [[round(x * W / 100, 2), round(y * H / 100, 2)] for x, y in v["points"]]
            reg.update(obj="image", label=v["polygonlabels"][0], polyline=pts, bbox=poly_bbox(pts))
        elif t == "labels":
            reg.update(
                obj="text",
                label=v["labels"][0],
                start=int(v["start"]),
                end=int(v["end"]),
                text=v.get("text"),
            )
        elif r.get("from_name") == "transcription":
            reg["transcription"] = "\n".join(v.get("text") or [])
        elif r.get("from_name") == "entity_key":
            reg["entity_key"] = "\n".join(v.get("text") or []).strip()
        elif r.get("from_name") == "legible":
            reg["legible"] = (v.get("choices") or [""])[0] == "legible"
        elif r.get("from_name") == "quantity_kind":
            reg["quantity_kind"] = (v.get("choices") or ["other"])[0]
    # entities: entity regions grouped by entity key; view_of merges a view into its entity
    key_of: dict[str, str] = {}
    for r_id, reg in regions.items():
        if reg.get("label") in _KIND_OF_LABEL:
            key_of[r_id] = reg.get("entity_key") or r_id
    for a, b, lab in relations:
        if lab == "view_of" and a in key_of and b in key_of:
            old = key_of[a]
            for k, v in key_of.items():
                if v == old:
                    key_of[k] = key_of[b]
    entities: dict[str, dict[str, Any]] = {}
    for r_id in regions:
        if r_id not in key_of:
            continue
        key = key_of[r_id]
        e = entities.setdefault(
            key,
            {
                "entity_id": f"{parent}.{key}",
                "kind": _KIND_OF_LABEL[regions[r_id]["label"]],
                "subkind": None,
                "internal_name": key,
                "view_prim_ids": [],
            },
        )
        e["view_prim_ids"].append(f"{parent}.{r_id}")
    prims = []
    for r_id, reg in regions.items():
        if reg.get("obj") != "image":
            continue
        lab = reg["label"]
        kind = (
            "text_label"
            if lab == "text_label"
            else "arrow"
            if lab == "entity_force_arrow"
            else "line"
            if "polyline" in reg
            else "other"
            if lab == "other_primitive"
            else "shape"
        )
        geom: dict[str, Any] = {"bbox": reg["bbox"]}
        if "polyline" in reg:
            geom["polyline"] = reg["polyline"]
        prims.append(
            {
                "prim_id": f"{parent}.{r_id}",
                "kind": kind,
                "geometry": geom,
                "transcription": reg.get("transcription") if kind == "text_label" else None,
                "legible": bool(reg.get("legible", kind != "text_label")),
            }
        )
    ent_of_region = {r_id: entities[k]["entity_id"] for r_id, k in key_of.items()}
    mentions: list[dict[str, Any]] = []
    refs: list[dict[str, Any]] = []
    quants: list[dict[str, Any]] = []
    obs: list[dict[str, Any]] = []
    owner_of_span: dict[str, str] = {}
    for a, b, lab in relations:
        if lab in ("refers_to", "quantity_of") and b in ent_of_region:
            owner_of_span[a] = ent_of_region[b]
    for r_id, reg in regions.items():
        if reg.get("obj") == "text":
            mentions.append(
                {
                    "mention_id": f"{parent}.{r_id}",
                    "start": reg["start"],
                    "end": reg["end"],
                    "text": reg["text"],
                    "kind": _SPAN_KIND.get(reg["label"], reg["label"]),
                    "entity": owner_of_span.get(r_id),
                }
            )
    for a, b, lab in relations:
        if lab == "view_of" or a not in regions or b not in ent_of_region:
            continue
        src = regions[a]
        subject = (
            {"kind": "image_primitive", "prim_id": f"{parent}.{a}"}
            if src.get("obj") == "image"
            else {"kind": "text_span", "mention_id": f"{parent}.{a}"}
        )
        ent = ent_of_region[b]
        if lab == "names":
            refs.append({"prim_id": f"{parent}.{a}", "entity_id": ent, "relation": "names"})
        if lab == "quantity_of":
            quants.append(
                {
                    "qty_id": f"{parent}.q{len(quants) + 1}",
                    "symbol_or_value": src.get("transcription") or src.get("text"),
                    "quantity_kind": src.get("quantity_kind") or "other",
                    "owner_id": ent,
                    "owner_relation": "quantity_of",
                    "evidence": [subject],
                }
            )
        obs.append(
            {
                "obs_id": f"{parent}.o{len(obs) + 1}",
                "kind": "ownership" if lab == "quantity_of" else "reference",
                "subject": subject,
                "entity_id": ent,
                "relation": lab,
            }
        )
    rec = {
        "parent_id": parent,
        "image": problem["image"],
        "text": problem["text"],
        "pass1": {"primitives": prims},
        "pass2": {"entities": list(entities.values()), "references": refs},
        "pass3": {
            "text_mentions": mentions,
            "quantities": quants,
            "constraints": [],
            "query_targets": [],
        },
        "pass4": {"observations": obs},
    }
    for k in ("question", "domain"):
        if problem.get(k):
            rec[k] = problem[k]
    return rec


# -- the two Label Studio project kinds ----------------------------------------------------
@dataclass
class PassesContext:
    """What the passes kinds need: the work folder, its parents (answer-blind inputs) and,
    for the review, the pulled drafts and where each came from in the store."""

    work: Path
    problems: dict[str, dict[str, Any]]
    drafts: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: dict[str, UnitAnnotation] = field(default_factory=dict)


@project_kind("physalign.observe")
class ObserveKind(ProjectKind):
    """Passes 1-3, answer-blind: the diagram and the problem text; read back as a §3 record."""

    fields = ("record", "submitted_at")
    stage = "observe"

    def label_config(self, context: Any) -> str:
        return label_config("observational_passes_1_4")

    def settings(self, context: Any) -> dict[str, Any]:
        return {
            "show_collab_predictions": self.stage == "review",
            "expert_instruction": _INSTRUCTIONS[self.stage],
            "show_instruction": True,
        }

    def task(self, context: PassesContext, unit: dict[str, Any]) -> dict[str, Any]:
        return {
            "data": {
                "problem_text": unit["text"],
                "image": data_uri(context.work / unit["image"]["path"]),
            }
        }

    def read(self, context: PassesContext, key: str, annotation: dict[str, Any]) -> ReadBack:
        rec = results_to_record(context.problems[key], annotation.get("result") or [])
        return ReadBack({"record": rec, "submitted_at": str(annotation.get("created_at"))})


@project_kind("physalign.review")
class ReviewKind(ObserveKind):
    """Pass 4: the pulled pass 1-3 annotation shown as a prediction to keep, fix or delete.
    The exposure log records that annotation (by its store source id) for every reviewer."""

    tier = 2
    stage = "review"

    def task(self, context: PassesContext, unit: dict[str, Any]) -> dict[str, Any]:
        t = super().task(context, unit)
        t["predictions"] = [
            {
                "model_version": "pass 1-3 draft",
                "result": record_to_results(context.drafts[unit["parent_id"]]),
            }
        ]
        return t

    def shown(self, context: PassesContext, key: str, unit: Any) -> list[dict[str, Any]]:
        return [draft_shown(context.drafts.get(key), context.sources.get(key))]


def draft_shown(draft: dict[str, Any] | None, src: UnitAnnotation | None) -> dict[str, Any]:
    """The exposure entry of a pass 1-3 draft shown to a pass 4 reviewer."""
    return {
        "kind": "annotation",
        "stage": "observe",
        "shown_as": "prediction",
        "annotator": src.annotator if src else (draft or {}).get("annotated_by"),
        "source_id": src.source_id if src else None,
        "file": DRAFT,
    }


def _latest(anns: list[UnitAnnotation]) -> UnitAnnotation | None:
    """The latest submission (Label Studio's ``created_at``, then annotation id)."""
    done = [a for a in anns if not a.skipped and a.values.get("record") is not None]
    done.sort(key=lambda a: (str(a.values.get("submitted_at")), int(a.ls_annotation_id or 0)))
    return done[-1] if done else None


def _observe_sources(store: Store, client: LSClient, work: Path) -> dict[str, UnitAnnotation]:
    """Parent -> the observe annotation its draft came from (the latest one pulled)."""
    scope = passes_scope(work)
    row = ls_project_row(store, client.url, scope.name, "observe")
    if row is None:
        return {}
    by: dict[str, list[UnitAnnotation]] = {}
    for a in stored_annotations(store, client.url, scope, int(row.ls_project_id)):
        by.setdefault(a.key, []).append(a)
    return {k: latest for k, anns in by.items() if (latest := _latest(anns)) is not None}


def _migrate(store: Store, client: LSClient, work: Path) -> None:
    """A work folder's legacy ``label_studio.json`` into the store (once)."""
    drafts_file = Path(work) / DRAFT
    drafts = {r["parent_id"]: r for r in read_jsonl(drafts_file)} if drafts_file.is_file() else {}

    def shown(url: str, slot: str, cohort: str, key: str) -> list[dict[str, Any]] | None:
        return [draft_shown(drafts.get(key), None)] if slot == "review" else None

    migrate_state(store, work, passes_scope(work), shown)


# -- push / pull ------------------------------------------------------------------------------
def push_passes(
    store: Store, client: LSClient, work: Path, stage: str = "observe"
) -> dict[str, Any]:
    """Create the stage's project if needed and import the tasks it lacks (through the
    store: a rerun imports nothing twice)."""
    if stage not in STAGES:
        raise TruthlineError(f"unknown --stage {stage!r} (use observe or review)")
    work = Path(work)
    client.whoami()
    _migrate(store, client, work)
    problems = _problems(work)
    drafts: dict[str, dict[str, Any]] = {}
    if stage == "review":
        path = work / DRAFT
        if not path.is_file():
            raise TruthlineError(
                f"{path}: no pulled pass 1-3 annotations; run `physalign passes pull` first"
            )
        drafts = {r["parent_id"]: r for r in read_jsonl(path)}
    units = {p["parent_id"]: p for p in problems if stage != "review" or p["parent_id"] in drafts}
    ctx = PassesContext(
        work,
        {p["parent_id"]: p for p in problems},
        drafts,
        _observe_sources(store, client, work) if stage == "review" else {},
    )
    title = "PhysAlign passes 1-3" if stage == "observe" else "PhysAlign pass 4 review"
    rep = push_units(
        store,
        client,
        f"physalign.{stage}",
        ctx,
        units,
        scope=passes_scope(work),
        slot=stage,
        title=f"{title} ({work.name})",
    )
    return {
        "created": rep.created,
        "existing": rep.existing,
        "recovered": rep.recovered,
        "stage": stage,
        "ls_project_id": rep.ls_project_id,
        "project_url": rep.project_url,
        "tasks": len(units),
    }


_INSTRUCTIONS = {
    "observe": "Passes 1-3 (observational, answer-blind): box every text label and write it "
    "literally (no unit conversion), mark legibility; box or trace every physical entity and "
    "give it an entity key that is not a word of the problem text (e.g. blk_left); mark text "
    "mentions and quantities; link label->entity (names), mention->entity (refers_to), "
    "quantity->owner (quantity_of: the owner may be a force or a cable, not only a body).",
    "review": "Pass 4 (review): the pass 1-3 annotation is shown as a prediction. Keep what is "
    "right, fix or delete what is wrong, then submit. Only observations you keep are verified.",
}


def pull_passes(store: Store, client: LSClient, work: Path) -> dict[str, Any]:
    """Pull passes 1-3 (and pass 4 reviews, when pushed) into the store and the work
    folder's records. What the store's reconciliation found (annotations deleted in Label
    Studio, foreign tasks, a deleted project) is added to a stage's summary when there is
    any."""
    work = Path(work)
    _migrate(store, client, work)
    scope = passes_scope(work)
    problems = {p["parent_id"]: p for p in _problems(work)}
    ctx = PassesContext(work, problems)
    out: dict[str, Any] = {}
    obs = pull_units(store, client, "physalign.observe", ctx, scope=scope, slot="observe")
    drafts: dict[str, dict[str, Any]] = {}
    annotators: dict[str, str] = {}
    for parent in sorted({a.key for a in obs.annotations}):
        ann = _latest(obs.of(parent))  # the latest submission of the task
        if ann is None or parent not in problems:
            continue
        drafts[parent] = dict(ann.values["record"])
        annotators[parent] = ann.annotator
        drafts[parent]["annotated_by"] = annotators[parent]
    write_jsonl(work / DRAFT, [drafts[p] for p in sorted(drafts)])
    out["observe"] = {
        "parents": len(problems),
        "annotated": len(drafts),
        "file": str(work / DRAFT),
    } | obs.changes()
    if ls_project_row(store, client.url, scope.name, "review") is None:
        return out
    rev = pull_units(store, client, "physalign.review", ctx, scope=scope, slot="review")
    final: list[dict[str, Any]] = []
    n_verified = n_disputed = 0
    for parent in sorted({a.key for a in rev.annotations}):
        ann = _latest(rev.of(parent))
        if ann is None or parent not in drafts:
            continue
        reviewer = ann.annotator
        reviewed = dict(ann.values["record"])
        rec = _consolidate(drafts[parent], reviewed, annotators[parent], reviewer)
        n_verified += sum(o["review"]["status"] == "verified" for o in rec["pass4"]["observations"])
        n_disputed += sum(o["review"]["status"] == "disputed" for o in rec["pass4"]["observations"])
        final.append(rec)
    final.sort(key=lambda r: r["parent_id"])
    for rec in final:  # image paths relative to the pulled file's own folder
        rec["image"] = dict(
            rec["image"], path=os.path.relpath(work / rec["image"]["path"], (work / PULLED).parent)
        )
    write_jsonl(work / PULLED, final)
    out["review"] = {
        "reviewed": len(final),
        "verified": n_verified,
        "disputed": n_disputed,
        "file": str(work / PULLED),
    } | rev.changes()
    return out


def _consolidate(
    draft: dict[str, Any], reviewed: dict[str, Any], annotator: str, reviewer: str
) -> dict:
    """G_obs: the reviewer's regions, with each observation verified iff both people hold it."""

    def key(o: dict[str, Any]) -> tuple[str, str, str]:
        s = o["subject"]
        return (s.get("prim_id") or s.get("mention_id"), o["entity_id"], o["relation"])

    in_draft = {key(o) for o in draft["pass4"]["observations"]}
    in_review = {key(o) for o in reviewed["pass4"]["observations"]}
    rec = dict(reviewed)
    obs = []
    for o in reviewed["pass4"]["observations"]:
        both = key(o) in in_draft
        o = dict(
            o,
            review={
                "status": "verified" if both else "disputed",
                "reviewers": [annotator, reviewer] if both else [reviewer],
            },
        )
        obs.append(o)
    # what the reviewer deleted stays on record as disputed (it never reaches the compiler)
    dropped = [o for o in draft["pass4"]["observations"] if key(o) not in in_review]
    known_prims = {p["prim_id"] for p in rec["pass1"]["primitives"]}
    known_mentions = {m["mention_id"] for m in rec["pass3"]["text_mentions"]}
    known_ents = {e["entity_id"] for e in rec["pass2"]["entities"]}
    for o in dropped:
        s = o["subject"]
        if (s.get("prim_id") in known_prims or s.get("mention_id") in known_mentions) and o[
            "entity_id"
        ] in known_ents:
            obs.append(
                dict(
                    o,
                    obs_id=f"{rec['parent_id']}.o{len(obs) + 1}",
                    review={"status": "disputed", "reviewers": [annotator]},
                )
            )
    rec["pass4"] = {"observations": obs}
    rec["annotated_by"] = annotator
    rec["reviewed_by"] = reviewer
    return rec


def simulate_passes(
    store: Store,
    admin: LSClient,
    work: Path,
    stage: str,
    emails: list[str],
    secrets_file: Path,
    *,
    drop_every: int = 0,
) -> dict[str, Any]:
    """SIMULATED annotators answer from the generator's truth (for tests and demos only).

    ``observe``: the annotator draws the truth record. ``review``: the reviewer keeps the
    draft but deletes every ``drop_every``-th relation (0: none), so disputes happen.
    A task the user already annotated is left alone (a rerun never repeats an annotation).
    """
    from truthline.annotate import user_client

    work = Path(work)
    _migrate(store, admin, work)
    pushed = pushed_tasks(store, admin, passes_scope(work), stage)
    if pushed is None:
        raise TruthlineError(
            f"nothing pushed for stage {stage!r} to {admin.url}; run `physalign passes push --stage {stage}`"
        )
    ls_pid, tasks = pushed
    simulated_users(admin, emails, secrets_file, store=store, scope=passes_scope(work))
    truth = {r["parent_id"]: r for r in read_records(work / INPUT)}
    drafts = {r["parent_id"]: r for r in read_jsonl(work / DRAFT)} if stage == "review" else {}
    done = {
        tid: {annotator_of(a) for a in submitted(t)}
        for tid, t in export_tasks(admin, ls_pid).items()
    }
    posted = 0
    for k, (parent, tid) in enumerate(sorted(tasks.items())):
        who = emails[k % len(emails)]
        if who in done.get(int(tid), set()):
            continue
        if stage == "observe":
            result = record_to_results(truth[parent])
        else:
            result = record_to_results(drafts[parent])
            if drop_every:
                rels = [i for i, r in enumerate(result) if r.get("type") == "relation"]
                gone = set(rels[drop_every - 1 :: drop_every])
                result = [r for i, r in enumerate(result) if i not in gone]
        user_client(admin.url, who, secrets_file).post(
            f"/api/tasks/{tid}/annotations/",
            {"result": result, "lead_time": 30.0, "was_cancelled": False},
        )
        posted += 1
    return {"stage": stage, "posted": posted, "simulated": True, "annotators": emails}
