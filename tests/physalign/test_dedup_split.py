"""Exact-input dedup before the parent-disjoint split (seeds/002 §A.1): a parent copied under a
new id with the same image bytes and text collapses into the original (counted, named), and
parents sharing an original image stay in one split even when their texts differ."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from truthline.systems.physalign import compile_release, read_jsonl
from truthline.systems.physalign._compile import compile_records
from truthline.systems.physalign._dedup import input_key
from truthline.systems.physalign._records import read_json


def _copy(rec: dict, new: str, image_path: str, text: str | None = None) -> dict:
    """The record under parent id ``new`` (every id renamed), pointing at ``image_path``."""
    old = rec["parent_id"]
    out = json.loads(
        json.dumps(rec).replace(f'"{old}.', f'"{new}.').replace(f'"{old}"', f'"{new}"')
    )
    out["image"] = dict(out["image"], path=image_path, image_id=f"img-{new}")
    if text is not None:  # a different text: not the same input, same image
        out["text"] = text
        out["pass3"]["text_mentions"] = []
        out["pass4"]["observations"] = [
            o for o in out["pass4"]["observations"] if o["subject"]["kind"] == "image_primitive"
        ]
    return out


def _setup(work: Path) -> list[dict]:
    """parC: an exact copy of the first parent; parB: the same image bytes, another text."""
    recs = read_jsonl(work / "annotations.jsonl")
    a = recs[0]
    src = work / a["image"]["path"]
    # the same bytes under other names: the path is not the key
    shutil.copyfile(src, work / "images" / "copy_c.png")
    shutil.copyfile(src, work / "images" / "copy_b.png")
    c = _copy(a, "parC", "images/copy_c.png")  # exact copy: every probe is a duplicate
    b = _copy(a, "parB", "images/copy_b.png", text=a["text"] + " (A variant of the text.)")
    recs += [c, b]
    (work / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return recs


def test_exact_duplicates_collapse_and_linked_parents_share_a_split(gen_copy: Path):
    recs = _setup(gen_copy)
    a = recs[0]["parent_id"]
    # a seed where, without the image link (parB's image one byte longer), parB and A land
    # in different splits
    other = gen_copy.parent / "other"
    shutil.copytree(gen_copy, other)
    img_b = other / "images" / "copy_b.png"
    img_b.write_bytes(img_b.read_bytes() + b"\0")
    unlinked_seed = None
    for seed in range(1, 40):
        rel = compile_records(recs, seed=seed, image_root=other)
        if rel.membership[a]["split"] != rel.membership["parB"]["split"]:
            unlinked_seed = seed
            break
    assert unlinked_seed is not None
    info = compile_release(gen_copy / "annotations.jsonl", gen_copy / "release", seed=unlinked_seed)
    n_a = sum(1 for o in recs[0]["pass4"]["observations"] if o["review"]["status"] == "verified")
    skipped = read_jsonl(gen_copy / "release" / "private" / "skipped.jsonl")
    dup_rows = [s for s in skipped if s["reason"].startswith("exact-input duplicate of probe")]
    private = read_jsonl(gen_copy / "release" / "private" / "targets.jsonl")
    a_probes = {p["probe_id"] for p in private if p["parent_id"] == a}
    # every probe of the exact copy collapsed into one of A's, named in the reason
    assert info["deduplicated"] == len(dup_rows) == len(a_probes) > 0
    assert len(a_probes) <= n_a
    assert {s["parent"] for s in dup_rows} == {"parC"}
    assert {s["reason"].rsplit(" ", 1)[1] for s in dup_rows} == a_probes
    membership = read_json(gen_copy / "release" / "private" / "membership.json")
    assert "parC" not in membership and "parB" in membership
    # the image link keeps parB with A although that seed splits them when unlinked
    assert membership["parB"]["split"] == membership[a]["split"]
    dedup = read_json(gen_copy / "release" / "private" / "dedup.json")
    assert dedup["dropped"] == len(a_probes)
    assert [a, "parB", "parC"] in dedup["linked_parent_groups"]
    assert info["linked_parent_groups"] == 1
    # no two released probes have the same exact input, so none crosses dev/test
    public = read_jsonl(gen_copy / "release" / "public" / "probes.jsonl")
    hashes = dedup["image_hashes"]
    parent_of = {p["probe_id"]: p["parent_id"] for p in private}
    keys = [input_key(p, hashes[parent_of[p["probe_id"]]]) for p in public]
    assert len(keys) == len(set(keys))


def test_without_duplicates_the_split_is_unchanged(generated: Path):
    """Linking changes nothing when no parent shares an image: the seeded split is as before
    (the first 20% of a seeded permutation of parents are dev)."""
    import numpy as np

    recs = read_jsonl(generated / "annotations.jsonl")
    rel = compile_records(recs, seed=4, image_root=generated)
    assert rel.dedup.dropped == 0 and all(len(g) == 1 for g in rel.dedup.groups)
    parents = sorted(rel.membership)
    order = [parents[int(i)] for i in np.random.default_rng([4, 7]).permutation(len(parents))]
    n_dev = round(0.2 * len(parents))
    assert {p for p in parents if rel.membership[p]["split"] == "dev"} == set(order[:n_dev])
