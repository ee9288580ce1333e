"""Generated problems have exact truth; the compiler's records fit the spec's schemas, aliases
are drawn once, and the leak check refuses any private value in public output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from truthline.errors import TruthlineError
from truthline.systems.physalign import (
    LeakError,
    RecordError,
    compile_release,
    generate,
    leak_check_release,
    nearest,
    read_jsonl,
    render_prompt,
    validate,
)
from truthline.systems.physalign._render import render_scene
from truthline.systems.physalign._scenes import DOMAINS, build_scene


def test_generate_is_seeded_and_byte_stable(generated: Path, tmp_path: Path):
    again = tmp_path / "again"
    generate(12, 1, again)
    for name in ("annotations.jsonl", "problems.jsonl", "generated.json"):
        assert (again / name).read_bytes() == (generated / name).read_bytes()
    for img in sorted((generated / "images").iterdir()):
        assert (again / "images" / img.name).read_bytes() == img.read_bytes()
    other = tmp_path / "other"
    generate(12, 2, other)
    assert (other / "annotations.jsonl").read_bytes() != (
        generated / "annotations.jsonl"
    ).read_bytes()
    with pytest.raises(TruthlineError, match="another generation"):
        generate(5, 1, generated)  # a folder holding another generation is refused


@pytest.mark.parametrize("domain", DOMAINS)
def test_label_boxes_are_exact(domain: str, tmp_path: Path):
    """Removing one label changes pixels only inside that label's recorded pixel box."""
    scene = build_scene(domain, np.random.default_rng([5, 1]))
    boxes = render_scene(scene, tmp_path / "full.png")
    full = np.asarray(Image.open(tmp_path / "full.png").convert("L"), dtype=int)
    for k, (lab, box) in enumerate(zip(scene.labels, boxes, strict=True)):
        scene_wo = build_scene(domain, np.random.default_rng([5, 1]))
        del scene_wo.labels[k]
        render_scene(scene_wo, tmp_path / "wo.png")
        wo = np.asarray(Image.open(tmp_path / "wo.png").convert("L"), dtype=int)
        ys, xs = np.nonzero(np.abs(full - wo) > 0)
        assert len(xs), f"label {lab.text!r} drew nothing"
        x, y, w, h = box
        assert xs.min() >= x and xs.max() < x + w, lab.text
        assert ys.min() >= y and ys.max() < y + h, lab.text


def test_truth_records_are_consistent(generated: Path):
    recs = read_jsonl(generated / "annotations.jsonl")
    assert len(recs) == 12 and {r["domain"] for r in recs} == set(DOMAINS)
    for r in recs:
        labels = [p for p in r["pass1"]["primitives"] if p["kind"] == "text_label"]
        assert labels and all(p["transcription"] for p in labels)
        for m in r["pass3"]["text_mentions"]:
            assert r["text"][m["start"] : m["end"]] == m["text"]
        # the generated literals keep signs, subscripts and units as printed
    texts = {
        p["transcription"] for r in recs for p in r["pass1"]["primitives"] if p["transcription"]
    }
    assert (
        any("−" in t for t in texts)
        and any("_" in t for t in texts)
        and any("kg" in t for t in texts)
    )
    assert "F'" in texts


@pytest.fixture
def release(generated: Path, tmp_path: Path) -> Path:
    out = tmp_path / "rel"
    compile_release(generated / "annotations.jsonl", out, seed=7)
    return out


def test_compiled_records_fit_the_schemas_and_the_truth(release: Path, generated: Path):
    pub = read_jsonl(release / "public" / "probes.jsonl")
    priv = {p["probe_id"]: p for p in read_jsonl(release / "private" / "targets.jsonl")}
    assert {p["probe_type"] for p in pub} == {"T02-single", "T03-image", "T03-text"}
    truth = {r["parent_id"]: r for r in read_jsonl(generated / "annotations.jsonl")}
    for p in pub:
        validate(p, "public", "test")
        validate(priv[p["probe_id"]], "private", "test")
        q = priv[p["probe_id"]]
        assert len(p["candidates"]) >= 2
        aliases = [c["alias"] for c in p["candidates"]]
        assert sorted(aliases) == sorted(q["alias_map"])
        role = q["targets"].get("owner") or q["targets"]["referent"]
        # the target alias maps to the entity the generator's observation names
        rec = truth[q["parent_id"]]
        obs = next(
            o for o in rec["pass4"]["observations"] if o["obs_id"] == q["source_links"]["obs_id"]
        )
        assert q["alias_map"][role["aliases"][0]] == obs["entity_id"]
        a = p["evidence"][0]
        if a["kind"] == "text_span":
            assert p["problem"]["text"][a["start"] : a["end"]] == a["text"]
        if p["probe_type"] == "T03-image":
            prim = next(
                x for x in rec["pass1"]["primitives"] if x["prim_id"] == obs["subject"]["prim_id"]
            )
            assert q["targets"]["read"]["text"] == prim["transcription"]
            assert a["bbox"] == prim["geometry"]["bbox"]
        else:
            assert q["targets"]["read"] is None
        if "plus_gt" in p["conditions"]:
            assert p["evidence"][0]["kind"] == "image_region" and q["eligibility"]["P"]
        assert q["eligibility"]["H_hard"] == (
            q["eligibility"]["H"] and q["baseline"]["nearest_alias"] != role["aliases"][0]
        )
        assert nearest(p)[1] == q["baseline"]["nearest_alias"]
    members = json.loads((release / "private" / "membership.json").read_text())
    assert sorted(x for m in members.values() for x in m["probe_ids"]) == sorted(priv)
    # the hard subset is not empty: some labels sit nearer a region they do not belong to
    assert any(q["eligibility"]["H_hard"] for q in priv.values())
    # public files hold opaque ids only
    assert not any("par0" in f.name for f in (release / "public").rglob("*"))


def test_aliases_drawn_once_and_reused(release: Path, generated: Path, tmp_path: Path):
    before = (release / "private" / "aliases.json").read_text()
    pub_before = (release / "public" / "probes.jsonl").read_text()
    compile_release(generated / "annotations.jsonl", release, seed=7)
    assert (release / "private" / "aliases.json").read_text() == before
    assert (release / "public" / "probes.jsonl").read_text() == pub_before
    # a stored alias map wins over a fresh draw (what reviewers saw never changes)
    stored = json.loads(before)
    key = next(iter(stored))
    amap = stored[key]["alias_map"]
    flipped = dict(zip(sorted(amap), [amap[a] for a in sorted(amap)][::-1], strict=True))
    stored[key] = {"alias_map": flipped, "order": stored[key]["order"]}
    (release / "private" / "aliases.json").write_text(json.dumps(stored))
    compile_release(generated / "annotations.jsonl", release, seed=7)
    priv = next(p for p in read_jsonl(release / "private" / "targets.jsonl") if p["key"] == key)
    assert priv["alias_map"] == flipped
    with pytest.raises(TruthlineError, match="--seed 7"):
        compile_release(generated / "annotations.jsonl", release, seed=8)


def test_leak_check_catches_each_kind_of_private_value(release: Path, tmp_path: Path):
    assert leak_check_release(release)["probes"] > 0
    priv = read_jsonl(release / "private" / "targets.jsonl")
    l_probe = next(p for p in priv if p["eligibility"]["L"])
    ent = next(iter(l_probe["alias_map"].values()))
    cases = {
        "entity id": lambda p: p["candidates"][0].update(description=f"the {ent}"),
        "parent id": lambda p: p["problem"].update(question=f"see {l_probe['parent_id']}"),
        "private key": lambda p: p["problem"].update(alias_map={"E1": "x"}),
        "reading target": lambda p: p.update(
            question=p["question"] + " " + l_probe["targets"]["read"]["text"]
        ),
    }
    for what, poke in cases.items():
        bad = tmp_path / what.replace(" ", "_")
        shutil.copytree(release, bad)
        rows = read_jsonl(bad / "public" / "probes.jsonl")
        for r in rows:
            if r["probe_id"] == l_probe["probe_id"]:
                poke(r)
        (bad / "public" / "probes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        with pytest.raises(LeakError, match=l_probe["probe_id"]):
            leak_check_release(bad)
    # a public file named after a parent is a leak too
    bad = tmp_path / "name"
    shutil.copytree(release, bad)
    (bad / "public" / "views" / f"{l_probe['parent_id']}.png").write_bytes(b"x")
    with pytest.raises(LeakError, match="file name"):
        leak_check_release(bad)


def test_prompts_carry_plus_gt_only_when_admissible(release: Path):
    pub = read_jsonl(release / "public" / "probes.jsonl")
    with_gt = [p for p in pub if "plus_gt" in p["conditions"]]
    assert with_gt and all(p["probe_type"] != "T03-text" for p in with_gt)
    p = with_gt[0]
    text = p["conditions"]["plus_gt"]["local_reading"][0]["text"]
    assert "Given as truth" in render_prompt(p, "plus_gt") and text in render_prompt(p, "plus_gt")
    assert "Given as truth" not in render_prompt(p, "base")


def test_compiler_refuses_pass5_and_dangling_ids(gen_copy: Path, tmp_path: Path):
    recs = read_jsonl(gen_copy / "annotations.jsonl")
    recs[2]["pass5"] = {"analysis_only": True, "solution_steps": []}
    (gen_copy / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(RecordError, match=r"annotations.jsonl:3 \(parent par003\): field pass5"):
        compile_release(gen_copy / "annotations.jsonl", tmp_path / "r1", seed=1)
    del recs[2]["pass5"]
    recs[1]["pass4"]["observations"][0]["entity_id"] = "nope"
    (gen_copy / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(
        RecordError, match=r":2 .*pass4.observations\[0\].entity_id: unknown entity"
    ):
        compile_release(gen_copy / "annotations.jsonl", tmp_path / "r2", seed=1)
    assert not (tmp_path / "r2" / "public").exists()  # nothing public written


def test_withheld_and_disputed_observations_are_not_compiled(gen_copy: Path, tmp_path: Path):
    recs = read_jsonl(gen_copy / "annotations.jsonl")
    n_obs = sum(len(r["pass4"]["observations"]) for r in recs)
    recs[0]["pass4"]["observations"][0]["review"]["status"] = "disputed"
    (gen_copy / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    info = compile_release(gen_copy / "annotations.jsonl", tmp_path / "r", seed=1)
    assert info["probes"] + info["skipped"] == n_obs
    skipped = read_jsonl(tmp_path / "r" / "private" / "skipped.jsonl")
    assert {"parent": "par001", "obs": "par001.o1", "reason": "review disputed"} in skipped


def test_leak_check_renders_the_projects_own_prompts(release: Path, tmp_path: Path):
    """The benchmark's template, rendered for every exported probe, carries no private value;
    a template that prints a poisoned metadata cell is caught, naming the probe."""
    import csv

    from truthline.project import load_project
    from truthline.systems.physalign import write_import_tables
    from truthline.workspace import templates_dir

    write_import_tables(release, unverified=True)
    project = load_project(templates_dir() / "physics-diagrams")
    info = leak_check_release(release, project=project)
    assert info["project_prompts"] == info["probes"]

    priv = next(
        p for p in read_jsonl(release / "private" / "targets.jsonl") if p["eligibility"]["L"]
    )
    meta = release / "import" / "metadata.csv"
    rows = list(csv.DictReader(meta.open(encoding="utf-8")))
    for r in rows:
        r["hint"] = priv["targets"]["read"]["text"] if r["key"].endswith(priv["probe_id"]) else ""
    with meta.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    leaky = tmp_path / "leaky"
    shutil.copytree(templates_dir() / "physics-diagrams", leaky)
    with (leaky / "prompts" / "user.md").open("a", encoding="utf-8") as fh:
        fh.write('\nHint: {{ item.meta.get("hint", "") }}\n')
    with pytest.raises(
        LeakError, match=f"benchmark prompt of probe {priv['probe_id']}: the reading target"
    ):
        leak_check_release(release, project=load_project(leaky))
