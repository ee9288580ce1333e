"""The probe compiler (spec §4): reviewed pass-4 observations -> public and private probe records.

One probe per verified observation: an image-anchored reference is a T02-single, a text
reference a T02-single on a span, an image-anchored ownership a T03-image, a text one a
T03-text. Candidates are the target plus type-compatible entities (a declared table);
aliases (E1..EK) and the display order are drawn ONCE from a per-probe RNG seeded with
``sha256(release seed | parent | anchor | type)`` and stored in ``private/aliases.json``; a
rerun reuses what is stored, so the alias a reviewer or a model saw never changes. Public
records hold opaque ids only; the parent, entity ids and the alias map stay private, and
``leak_check`` refuses the release if any of them reaches a public file or a rendered prompt.
Exact-input duplicates are collapsed before the parent-disjoint split, and parents sharing
an original image share a split (``_dedup``; counted in ``private/dedup.json``).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from truthline.benchmark._scoring import READ_RULES
from truthline.errors import TruthlineError
from truthline.systems.physalign._dedup import DEDUP_FILE, DEDUP_RULE, Dedup, dedup, image_hash
from truthline.systems.physalign._generate import opaque
from truthline.systems.physalign._leak import leak_check_release, occurs
from truthline.systems.physalign._nearest import RULE as NEAREST_RULE
from truthline.systems.physalign._nearest import nearest
from truthline.systems.physalign._records import read_json, read_records, write_json, write_jsonl
from truthline.systems.physalign._schemas import validate

COMPILER = "physalign-compiler/1"
MAX_K = 5

QUESTIONS = {
    "T02-single": "Which candidate entity does the mention at R1 refer to?",
    "T03-image": "What is the content at R1, and to which candidate entity does it belong?",
    "T03-text": "To which candidate entity does the quantity at R1 belong?",
}
ALIAS_INSTRUCTION = "one candidate alias (E1, E2, ...) exactly as listed"
OUTPUT_SCHEMAS = {
    "T02-single": {"referent": ALIAS_INSTRUCTION},
    "T03-image": {
        "read": "the literal content at R1, exactly as shown (no conversion)",
        "owner": ALIAS_INSTRUCTION,
    },
    "T03-text": {"owner": ALIAS_INSTRUCTION},
}
ROLE_FIELD = {"T02-single": "referent", "T03-image": "owner", "T03-text": "owner"}
# quantity kind -> entity kinds that may own it (spec §4.3: a declared table)
COMPAT: dict[str, list[str]] = {
    "mass": ["object"],
    "tension": ["connector", "object"],
    "force": ["force", "object", "connector"],
    "length": ["object", "connector", "support", "point"],
    "angle": ["support", "object", "connector", "force"],
    "friction_coefficient": ["support", "object"],
    "velocity": ["object", "force"],
    "resistance": ["object"],
    "voltage": ["object"],
    "current": ["connector", "object"],
    "power": ["object"],
    "magnification": ["object"],
    "other": ["object", "connector", "support", "force", "field", "point"],
}
ALIAS_TOKEN = re.compile(r"\b[ERV]\d+\b")
RELATION_WORDS = re.compile(r"\b(owner|owns|belongs?|quantity_of|refers?_to|names)\b", re.I)
SPLIT_DEV_SHARE = 0.2


@dataclass
class Release:
    """A compiled release in memory: what ``write_release`` puts on disk."""

    seed: int
    public: list[dict[str, Any]] = field(default_factory=list)
    private: list[dict[str, Any]] = field(default_factory=list)
    membership: dict[str, Any] = field(default_factory=dict)
    aliases: dict[str, Any] = field(default_factory=dict)
    rules: dict[str, Any] = field(default_factory=dict)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    images: dict[str, Path] = field(default_factory=dict)  # image id -> source file
    dedup: Dedup = field(default_factory=Dedup)  # exact-input duplicates and split groups


def probe_rng(seed: int, parent: str, anchor_key: str, ptype: str) -> np.random.Generator:
    """The per-probe RNG of spec §4.3: ``sha256(release_seed|parent|anchor key|type)``."""
    h = hashlib.sha256(f"{seed}|{parent}|{anchor_key}|{ptype}".encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "big"))


def _probe_type(obs: dict[str, Any]) -> str:
    image = obs["subject"]["kind"] == "image_primitive"
    if obs["kind"] == "reference":
        return "T02-single"
    return "T03-image" if image else "T03-text"


def _quantity_kind(rec: dict[str, Any], obs: dict[str, Any]) -> str:
    subj = obs["subject"]
    key = subj.get("prim_id") or subj.get("mention_id")
    for q in rec["pass3"]["quantities"]:
        for ev in q.get("evidence") or []:
            if (ev.get("prim_id") or ev.get("mention_id")) == key:
                return str(q.get("quantity_kind") or "other")
    return "other"


def _views(rec: dict[str, Any], ent: dict[str, Any], image_id: str) -> list[dict[str, Any]]:
    prims = {p["prim_id"]: p for p in rec["pass1"]["primitives"]}
    out = []
    for pid in ent.get("view_prim_ids") or []:
        g = prims[pid]["geometry"]
        v: dict[str, Any] = {"kind": "image_region", "image_id": image_id, "bbox": g["bbox"]}
        if g.get("polyline"):
            v["polyline"] = g["polyline"]
        out.append(v)
    return out


def _describe(views: list[dict[str, Any]]) -> str:
    """Neutral: geometry only, never a name, kind or relation (spec §4.3)."""
    x, y, w, h = views[0]["bbox"]
    return f"region centred at ({x + w / 2:.0f}, {y + h / 2:.0f}) px"


def compile_records(
    records: list[dict[str, Any]],
    *,
    seed: int,
    stored_aliases: dict[str, Any] | None = None,
    image_root: Path | None = None,
    max_k: int = MAX_K,
) -> Release:
    """Compile annotation records into a release (in memory)."""
    stored = dict(stored_aliases or {})
    rel = Release(seed=seed, aliases=dict(stored))  # drawn once: stored entries are kept
    hashes: dict[str, str] = {}
    for rec in records:
        parent = rec["parent_id"]
        image_id = opaque("img-", COMPILER, seed, parent, rec["image"]["image_id"])
        src = None if image_root is None else Path(image_root) / rec["image"]["path"]
        if src is not None:
            rel.images[image_id] = src
        hashes[parent] = image_hash(src, rec["image"]["image_id"])
        image = {
            "image_id": image_id,
            "path": f"images/{image_id}.png",
            "width": rec["image"]["width"],
            "height": rec["image"]["height"],
        }
        prims = {p["prim_id"]: p for p in rec["pass1"]["primitives"]}
        mentions = {m["mention_id"]: m for m in rec["pass3"]["text_mentions"]}
        ents = {e["entity_id"]: e for e in rec["pass2"]["entities"]}
        for obs in rec["pass4"]["observations"]:
            status = (obs.get("review") or {}).get("status")
            if status != "verified":
                rel.skipped.append(
                    {"parent": parent, "obs": obs.get("obs_id"), "reason": f"review {status}"}
                )
                continue
            probe = _compile_one(
                rec, obs, parent, image, prims, mentions, ents, seed, stored, max_k, rel
            )
            if probe is not None:
                pub, priv, key = probe
                rel.public.append(pub)
                rel.private.append(priv)
                rel.aliases[key] = {
                    "alias_map": priv["alias_map"],
                    "order": [c["alias"] for c in pub["candidates"]],
                }
    _dedup(rel, hashes)
    _split(rel)
    rel.rules = {
        "compiler": COMPILER,
        "release_seed": seed,
        "max_k": max_k,
        "compatibility": COMPAT,
        "nearest_rule": NEAREST_RULE,
        "read_rules": list(READ_RULES),
        "alias_rng": "sha256(release_seed|parent|anchor key|type) -> numpy default_rng",
        "split": {"by": "parent", "dev_share": SPLIT_DEV_SHARE, "linked_by": DEDUP_RULE},
        "dedup": DEDUP_RULE,
    }
    return rel


def _dedup(rel: Release, hashes: dict[str, str]) -> None:
    """Collapse exact-input duplicates before the split (kept: the first by parent id)."""
    keep, found = dedup(rel.public, rel.private, hashes)
    kept_of = {d: k for k, ds in found.duplicates.items() for d in ds}
    for priv in rel.private:
        if priv["probe_id"] in kept_of:
            rel.skipped.append(
                {
                    "parent": priv["parent_id"],
                    "obs": priv["source_links"].get("obs_id"),
                    "reason": f"exact-input duplicate of probe {kept_of[priv['probe_id']]}",
                }
            )
    rel.public = [rel.public[i] for i in keep]
    rel.private = [rel.private[i] for i in keep]
    rel.dedup = found


def _compile_one(
    rec: dict[str, Any],
    obs: dict[str, Any],
    parent: str,
    image: dict[str, Any],
    prims: dict[str, Any],
    mentions: dict[str, Any],
    ents: dict[str, Any],
    seed: int,
    stored: dict[str, Any],
    max_k: int,
    rel: Release,
) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    ptype = _probe_type(obs)
    subj = obs["subject"]
    anchor_key = subj.get("prim_id") or subj["mention_id"]
    key = f"{parent}|{anchor_key}|{ptype}"
    target = ents[obs["entity_id"]]

    def skip(reason: str) -> None:
        rel.skipped.append({"parent": parent, "obs": obs.get("obs_id"), "reason": reason})

    if ptype == "T02-single":
        kinds = [target["kind"]]
    else:
        kinds = COMPAT.get(_quantity_kind(rec, obs), COMPAT["other"])
    # an entity whose own view is the anchor cannot be its own referent or owner candidate
    pool = sorted(
        e["entity_id"]
        for e in ents.values()
        if e["kind"] in kinds
        and e["entity_id"] != target["entity_id"]
        and anchor_key not in (e.get("view_prim_ids") or [])
        and e.get("view_prim_ids")
    )
    if not target.get("view_prim_ids"):
        skip("target has no image view (no distinguishable public representation)")
        return None
    rng = probe_rng(seed, parent, anchor_key, ptype)
    if len(pool) > max_k - 1:
        pool = sorted(rng.choice(pool, size=max_k - 1, replace=False).tolist())
    chosen = sorted([target["entity_id"], *pool])
    if len(chosen) < 2:
        skip("fewer than 2 type-compatible candidates")
        return None
    old = stored.get(key)
    if old and sorted(old["alias_map"].values()) == chosen:
        alias_map = dict(old["alias_map"])
        order = list(old["order"])
    else:
        perm = rng.permutation(len(chosen))
        alias_map = {f"E{k + 1}": chosen[int(perm[k])] for k in range(len(chosen))}
        order = [f"E{int(k) + 1}" for k in rng.permutation(len(chosen))]
    if subj["kind"] == "image_primitive":
        p = prims[anchor_key]
        anchor: dict[str, Any] = {
            "anchor_id": "R1",
            "kind": "image_region",
            "image_id": image["image_id"],
            "bbox": p["geometry"]["bbox"],
        }
    else:
        m = mentions[anchor_key]
        anchor = {
            "anchor_id": "R1",
            "kind": "text_span",
            "start": m["start"],
            "end": m["end"],
            "text": m["text"],
        }
    probe_id = opaque("pa-", seed, parent, anchor_key, ptype)
    candidates, vn = [], 0
    for alias in order:
        views = _views(rec, ents[alias_map[alias]], image["image_id"])
        for v in views:
            vn += 1
            v["view_id"] = f"V{vn}"
        candidates.append({"alias": alias, "views": views, "description": _describe(views)})
    problem: dict[str, Any] = {"text": rec["text"], "images": [image]}
    if rec.get("question"):
        problem["question"] = rec["question"]
    pub: dict[str, Any] = {
        "schema_version": "physalign.public/1",
        "probe_id": probe_id,
        "probe_type": ptype,
        "problem": problem,
        "evidence": [anchor],
        "candidates": candidates,
        "question": QUESTIONS[ptype],
        "output_schema": dict(OUTPUT_SCHEMAS[ptype]),
        "localized_views": [{"view_id": "LV1", "path": f"views/{probe_id}.png"}],
        "conditions": {"base": {"local_reading": None}},
    }
    target_alias = next(a for a, e in alias_map.items() if e == target["entity_id"])
    transcription = (
        prims[anchor_key].get("transcription") if anchor["kind"] == "image_region" else None
    )
    legible = bool(prims[anchor_key].get("legible")) if anchor["kind"] == "image_region" else False
    readable = bool(transcription) and legible
    admissible, why = _plus_gt_admissible(pub, transcription, legible, rec, ents)
    if admissible:
        pub["conditions"]["plus_gt"] = {
            "local_reading": [{"anchor_id": "R1", "text": transcription}]
        }
    in_l = ptype == "T03-image" and readable and not occurs(str(transcription), rec["text"])
    applicable, predicted = nearest(pub)
    role = {"entity_ids": [target["entity_id"]], "aliases": [target_alias], "set_valued": False}
    targets: dict[str, Any] = {ROLE_FIELD[ptype]: role}
    targets["read"] = (
        {"text": transcription, "rules": list(READ_RULES)}
        if ptype == "T03-image" and readable
        else None
    )
    priv: dict[str, Any] = {
        "schema_version": "physalign.private/1",
        "probe_id": probe_id,
        "parent_id": parent,
        "probe_type": ptype,
        "targets": targets,
        "alias_map": alias_map,
        "eligibility": {
            "G": True,
            "L": in_l,
            "P": admissible,
            "H": applicable,
            "H_hard": applicable and predicted != target_alias,
            "random_eligible": True,
        },
        "baseline": {"K": len(chosen), "nearest_rule": NEAREST_RULE, "nearest_alias": predicted},
        "source_links": {
            "obs_id": obs.get("obs_id"),
            "subject": dict(subj),
            "relation": obs.get("relation"),
            "quantity_kind": None if ptype == "T02-single" else _quantity_kind(rec, obs),
            "plus_gt": why,
        },
        "domain": rec.get("domain"),
        "key": key,
    }
    return pub, priv, key


def _plus_gt_admissible(
    pub: dict[str, Any],
    transcription: str | None,
    legible: bool,
    rec: dict[str, Any],
    ents: dict[str, Any],
) -> tuple[bool, str]:
    """Spec §5 checks 1-7 for supplying the anchor's own literal reading (model-independent)."""
    if pub["evidence"][0]["kind"] != "image_region":
        return False, "text anchor: already public (check 7)"
    if not transcription or not legible:
        return False, "no verified legible transcription (check 2)"
    if ALIAS_TOKEN.search(transcription) or RELATION_WORDS.search(transcription):
        return False, "reading holds an alias token or relation word (check 3)"
    names = [e.get("internal_name") for e in ents.values()] + list(ents)
    if any(n and n in transcription for n in names):
        return False, "reading holds an entity name (check 3)"
    if any(transcription in c.get("description", "") for c in pub["candidates"]):
        return False, "reading occurs in a candidate description (check 5)"
    return True, "admissible"


def _split(rel: Release) -> None:
    """Parent-disjoint split, seeded: every probe of a parent shares the parent's split, and
    parents linked by an original-image hash or a collapsed duplicate share one split."""
    parents = sorted({p["parent_id"] for p in rel.private})
    present = set(parents)
    groups = [g2 for g in rel.dedup.groups if (g2 := [p for p in g if p in present])]
    grouped = {p for g in groups for p in g}
    groups += [[p] for p in parents if p not in grouped]
    groups.sort(key=lambda g: g[0])
    rng = np.random.default_rng([rel.seed, 7])
    n_dev = round(SPLIT_DEV_SHARE * len(parents))
    split: dict[str, str] = {}
    n = 0
    for i in rng.permutation(len(groups)):
        side = "dev" if n < n_dev else "test"
        for p in groups[int(i)]:
            split[p] = side
            n += 1
    rel.membership = {
        p: {
            "split": split[p],
            "probe_ids": sorted(x["probe_id"] for x in rel.private if x["parent_id"] == p),
        }
        for p in parents
    }


def compile_release(
    annotations: Path, out: Path, *, seed: int, image_root: Path | None = None
) -> dict[str, Any]:
    """Read annotation records, compile, check for leaks and write the release tree."""
    annotations = Path(annotations)
    records = read_records(annotations)
    out = Path(out)
    alias_file = out / "private" / "aliases.json"
    stored = read_json(alias_file) if alias_file.is_file() else {}
    rules_file = out / "private" / "rules.json"
    if rules_file.is_file():
        old_seed = read_json(rules_file).get("release_seed")
        if old_seed != seed:
            raise TruthlineError(
                f"{rules_file}: this release was compiled with --seed {old_seed}; aliases are "
                f"drawn once, so recompile with --seed {old_seed} or into a new --out folder"
            )
    rel = compile_records(
        records, seed=seed, stored_aliases=stored, image_root=image_root or annotations.parent
    )
    where = str(out / "public" / "probes.jsonl")
    for pub, priv in zip(rel.public, rel.private, strict=True):
        validate(pub, "public", where)
        validate(priv, "private", str(out / "private" / "targets.jsonl"))
    leak_check_release(rel, records)  # before anything public is written
    write_release(rel, out, records)
    leak_check_release(out)  # and what landed on disk
    counts = {t: sum(1 for p in rel.public if p["probe_type"] == t) for t in QUESTIONS}
    elig = {
        k: sum(1 for p in rel.private if p["eligibility"][k])
        for k in ("G", "L", "P", "H", "H_hard")
    }
    return {
        "out": str(out),
        "probes": len(rel.public),
        "parents": len(rel.membership),
        "types": counts,
        "eligibility": elig,
        "skipped": len(rel.skipped),
        "deduplicated": rel.dedup.dropped,
        "linked_parent_groups": sum(1 for g in rel.dedup.groups if len(g) > 1),
        "seed": seed,
    }


def write_release(rel: Release, out: Path, records: list[dict[str, Any]]) -> None:
    from truthline.systems.physalign._render import render_view

    pub_dir, priv_dir = out / "public", out / "private"
    for image_id, src in rel.images.items():
        dest = pub_dir / "images" / f"{image_id}.png"
        if not src.is_file():
            raise TruthlineError(f"{src}: the diagram of image {image_id} is missing")
        if not dest.is_file() or dest.read_bytes() != src.read_bytes():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
    for pub in rel.public:
        img = pub_dir / pub["problem"]["images"][0]["path"]
        render_view(img, pub, pub_dir / pub["localized_views"][0]["path"])
    write_jsonl(pub_dir / "probes.jsonl", rel.public)
    write_jsonl(priv_dir / "targets.jsonl", rel.private)
    write_json(priv_dir / "membership.json", rel.membership)
    write_json(priv_dir / "aliases.json", rel.aliases)
    write_json(priv_dir / "rules.json", rel.rules)
    write_jsonl(priv_dir / "annotations.jsonl", records)
    write_jsonl(priv_dir / "skipped.jsonl", rel.skipped)
    write_json(out / DEDUP_FILE, rel.dedup.as_json())
