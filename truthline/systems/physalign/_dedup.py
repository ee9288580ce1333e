"""Exact-input deduplication and split propagation before the parent-disjoint split (seeds/002 §A.1).

The paper's merge "deduplicates exactly identical public inputs and propagates split
assignments ... through original-image hashes". Here an *exact input* is what a model is
shown, minus what the compiler draws per parent: the original image's bytes (sha256), the
problem text and question, the probe type and question, the evidence anchor's geometry or
span, and the candidates' view geometry as a set. Aliases, display order and the opaque ids
are drawn per parent, so two parents holding the same diagram and text yield probes that
differ only in those; they are still the same input and are collapsed to one (the first by
parent id). Parents that share an original image (or a collapsed duplicate) form one split
group, so no duplicate can cross dev/test.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEDUP_FILE = "private/dedup.json"
DEDUP_RULE = "exact-input/v1"


def image_hash(path: Path | None, fallback: str) -> str:
    """sha256 of the original image's bytes; the record's own image id when no file is at hand."""
    if path is not None and Path(path).is_file():
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return "id:" + fallback


def _geometry(view: dict[str, Any]) -> dict[str, Any]:
    return {k: view[k] for k in ("kind", "bbox", "polyline", "start", "end", "text") if k in view}


def input_key(pub: dict[str, Any], img_hash: str) -> str:
    """The exact-input key of a public probe (alias-, order- and id-independent)."""
    prob = pub["problem"]
    cands = sorted(
        json.dumps(sorted(json.dumps(_geometry(v), sort_keys=True) for v in c["views"]))
        for c in pub["candidates"]
    )
    body = {
        "image": img_hash,
        "text": prob["text"],
        "problem_question": prob.get("question"),
        "probe_type": pub["probe_type"],
        "question": pub["question"],
        "anchors": [_geometry(a) for a in pub["evidence"]],
        "candidates": cands,
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Dedup:
    """What the merge found: kept probe -> dropped duplicates, and the parents' split groups."""

    duplicates: dict[str, list[str]] = field(default_factory=dict)
    groups: list[list[str]] = field(default_factory=list)
    image_hashes: dict[str, str] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return sum(len(v) for v in self.duplicates.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": DEDUP_RULE,
            "dropped": self.dropped,
            "duplicates": self.duplicates,
            "linked_parent_groups": [g for g in self.groups if len(g) > 1],
            "image_hashes": self.image_hashes,
        }


def dedup(
    public: list[dict[str, Any]], private: list[dict[str, Any]], image_hashes: dict[str, str]
) -> tuple[list[int], Dedup]:
    """Indices of the probes to keep, and the duplicates and split groups found."""
    order = sorted(
        range(len(public)), key=lambda i: (private[i]["parent_id"], public[i]["probe_id"])
    )
    first: dict[str, int] = {}
    dups: dict[str, list[str]] = {}
    keep: list[int] = []
    parent = {p: p for p in sorted({x["parent_id"] for x in private})}

    def find(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for i in order:
        par = private[i]["parent_id"]
        key = input_key(public[i], image_hashes.get(par, "id:" + par))
        if key in first:
            kept = first[key]
            dups.setdefault(public[kept]["probe_id"], []).append(public[i]["probe_id"])
            union(private[kept]["parent_id"], par)
        else:
            first[key] = i
            keep.append(i)
    by_hash: dict[str, str] = {}
    for par in parent:
        h = image_hashes.get(par)
        if h is None:
            continue
        if h in by_hash:
            union(by_hash[h], par)
        else:
            by_hash[h] = par
    groups: dict[str, list[str]] = {}
    for par in parent:
        groups.setdefault(find(par), []).append(par)
    return sorted(keep), Dedup(
        dups, sorted(sorted(g) for g in groups.values()), dict(sorted(image_hashes.items()))
    )
