"""``physalign generate``: seeded diagram problems with exact ground truth, offline.

Each parent problem gets one diagram (``images/<image id>.png``, an opaque name) and one
annotation record in the §3 layout (passes 1-4, every observation marked ``verified`` by
the generator). The records are what careful annotators would produce, so they serve three
ways: as the known answers probes are compiled from, as the SIMULATED annotators' answers
when the passes run through Label Studio, and as the reference a pulled pass is compared to.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from truthline.errors import TruthlineError
from truthline.systems.physalign._records import write_jsonl
from truthline.systems.physalign._render import render_scene
from truthline.systems.physalign._scenes import (
    DOMAINS,
    HEIGHT,
    WIDTH,
    Scene,
    build_scene,
    poly_bbox,
)

GENERATOR = "physalign-generator/1"
ANNOTATIONS = "annotations.jsonl"
PROBLEMS = "problems.jsonl"
MANIFEST = "generated.json"


def opaque(prefix: str, *parts: Any, n: int = 10) -> str:
    """An id that names nothing: ``prefix`` + the first ``n`` hex digits of a sha256."""
    h = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()
    return f"{prefix}{h[:n]}"


def _prim_kind(shape_kind: str) -> str:
    return {"arrow": "arrow", "line": "line", "zigzag": "line"}.get(shape_kind, "shape")


def scene_record(
    scene: Scene, parent: str, image: dict[str, Any], boxes: list[list[float]]
) -> dict:
    """The §3 annotation record (passes 1-4) of a generated scene: the known truth."""
    prims: list[dict[str, Any]] = []
    ents: list[dict[str, Any]] = []
    eid = {e.key: f"{parent}.{e.key}" for e in scene.entities}
    for e in scene.entities:
        views = []
        for sh in e.shapes:
            pid = f"{parent}.p{len(prims) + 1}"
            geom: dict[str, Any] = {"bbox": [round(v, 2) for v in sh.bbox()]}
            poly = sh.polyline()
            if poly:
                geom = {"bbox": poly_bbox(poly), "polyline": poly}
            prims.append(
                {
                    "prim_id": pid,
                    "kind": _prim_kind(sh.kind),
                    "geometry": geom,
                    "transcription": None,
                    "legible": True,
                }
            )
            views.append(pid)
        ents.append(
            {
                "entity_id": eid[e.key],
                "kind": e.kind,
                "subkind": e.subkind,
                "internal_name": e.key,
                "view_prim_ids": views,
            }
        )
    refs: list[dict[str, Any]] = []
    quants: list[dict[str, Any]] = []
    obs: list[dict[str, Any]] = []
    review = {"status": "verified", "reviewers": ["generator"]}
    for lab, box in zip(scene.labels, boxes, strict=True):
        pid = f"{parent}.p{len(prims) + 1}"
        prims.append(
            {
                "prim_id": pid,
                "kind": "text_label",
                "geometry": {"bbox": box},
                "transcription": lab.text,
                "legible": True,
            }
        )
        subject = {"kind": "image_primitive", "prim_id": pid}
        if lab.relation == "names":
            refs.append({"prim_id": pid, "entity_id": eid[lab.entity], "relation": "names"})
            obs.append(
                {
                    "obs_id": f"{parent}.o{len(obs) + 1}",
                    "kind": "reference",
                    "subject": subject,
                    "entity_id": eid[lab.entity],
                    "relation": "names",
                    "review": dict(review),
                }
            )
        else:
            quants.append(
                {
                    "qty_id": f"{parent}.q{len(quants) + 1}",
                    "symbol_or_value": lab.text,
                    "quantity_kind": lab.quantity_kind,
                    "owner_id": eid[lab.entity],
                    "owner_relation": "quantity_of",
                    "evidence": [subject],
                }
            )
            obs.append(
                {
                    "obs_id": f"{parent}.o{len(obs) + 1}",
                    "kind": "ownership",
                    "subject": subject,
                    "entity_id": eid[lab.entity],
                    "relation": "quantity_of",
                    "review": dict(review),
                }
            )
    mentions: list[dict[str, Any]] = []
    for m in scene.mentions:
        mid = f"{parent}.t{len(mentions) + 1}"
        kind = "quantity" if m.kind == "quantity" else m.kind
        mentions.append(
            {
                "mention_id": mid,
                "start": m.start,
                "end": m.end,
                "text": m.text,
                "kind": kind,
                "entity": eid[m.entity],
            }
        )
        subject = {"kind": "text_span", "mention_id": mid}
        if m.kind == "quantity":
            quants.append(
                {
                    "qty_id": f"{parent}.q{len(quants) + 1}",
                    "symbol_or_value": m.text,
                    "quantity_kind": m.quantity_kind,
                    "owner_id": eid[m.entity],
                    "owner_relation": "quantity_of",
                    "evidence": [subject],
                }
            )
            obs.append(
                {
                    "obs_id": f"{parent}.o{len(obs) + 1}",
                    "kind": "ownership",
                    "subject": subject,
                    "entity_id": eid[m.entity],
                    "relation": "quantity_of",
                    "review": dict(review),
                }
            )
        else:
            obs.append(
                {
                    "obs_id": f"{parent}.o{len(obs) + 1}",
                    "kind": "reference",
                    "subject": subject,
                    "entity_id": eid[m.entity],
                    "relation": "refers_to",
                    "review": dict(review),
                }
            )
    return {
        "parent_id": parent,
        "image": image,
        "text": scene.text,
        "question": scene.question,
        "domain": scene.domain,
        "source": GENERATOR,
        "pass1": {"primitives": prims},
        "pass2": {"entities": ents, "references": refs},
        "pass3": {
            "text_mentions": mentions,
            "quantities": quants,
            "constraints": [],
            "query_targets": [],
        },
        "pass4": {"observations": obs},
    }


def generate(n: int, seed: int, out: Path) -> dict[str, Any]:
    """Write ``n`` problems (diagrams + truth records) under ``out``; same seed, same bytes.

    Refuses a folder that already holds a different generation: the truth records there may
    already have been pushed to Label Studio or compiled.
    """
    if n < 1:
        raise TruthlineError(f"--n must be at least 1 problem, got {n}")
    out = Path(out)
    manifest_path = out / MANIFEST
    want = {"generator": GENERATOR, "n": n, "seed": seed}
    if manifest_path.is_file():
        try:
            have = json.loads(manifest_path.read_text(encoding="utf-8"))
        except ValueError:
            have = None
        if not isinstance(have, dict) or {k: have.get(k) for k in want} != want:
            raise TruthlineError(
                f"{manifest_path}: this folder holds another generation "
                f"({have if isinstance(have, dict) else 'unreadable'}); give a new --out folder"
            )
    records, problems = [], []
    for k in range(n):
        parent = f"par{k + 1:03d}"
        domain = DOMAINS[k % len(DOMAINS)]
        rng = np.random.default_rng([seed, k])
        scene = build_scene(domain, rng)
        image_id = opaque("img-", GENERATOR, seed, parent)
        rel = f"images/{image_id}.png"
        boxes = render_scene(scene, out / rel)
        image = {"image_id": image_id, "path": rel, "width": WIDTH, "height": HEIGHT}
        records.append(scene_record(scene, parent, image, boxes))
        problems.append(
            {
                "parent_id": parent,
                "domain": domain,
                "image_id": image_id,
                "question": scene.question,
                "answer_inputs": scene.answer,
            }
        )
    write_jsonl(out / ANNOTATIONS, records)
    write_jsonl(out / PROBLEMS, problems)
    counts = {d: sum(1 for p in problems if p["domain"] == d) for d in DOMAINS}
    manifest = want | {
        "annotations": ANNOTATIONS,
        "problems": PROBLEMS,
        "images": n,
        "domains": counts,
        "labels": sum(p["kind"] == "text_label" for r in records for p in r["pass1"]["primitives"]),
        "note": "generated truth: every pass-4 observation is known, reviewed by the generator",
    }
    manifest_path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest | {"out": str(out)}
