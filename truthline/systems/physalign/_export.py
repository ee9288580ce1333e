"""Import tables: compiled probes as items of a ``physics-diagrams`` project, targets as labels.

``metadata.csv`` (for ``truthline items import <release>/import/views --media-root
<release>/import --metadata ...``; ``import/views`` holds the exported probes' views only)
has one row per probe: the localized view is the item's
image, the public inputs the template declares (``probe_type``, ``problem_text``,
``question``, ``anchor``, ``candidates`` alias -> ``{"bbox": [x, y, w, h]}`` (and
``"polyline"``) in display order; no ``label_xy``: the anchor box says where the label is, and a
column empty for text anchors would be mixed-type), the cluster (an opaque group id, never the parent id),
the eligibility sets and K, and ``sim_truth`` (for SIMULATED models only).
``labels.csv`` (for ``truthline audit import-table``) holds the targets: each blind
verifier's answer (tier 1, blind arm) and the final decision as an expert value (tier 2),
so ``audit finalize`` makes the decided target gold with provenance. Withheld probes are
left out; before verification ``--unverified`` exports the compiled targets as the
generator's (named so) instead.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.systems.physalign._generate import opaque
from truthline.systems.physalign._records import read_json, read_jsonl

DECIDED = ("approved_direct", "approved_adjudicated", "corrected_regenerated")


def _geometry(cand: dict[str, Any]) -> dict[str, Any]:
    """A candidate's first image view as the template's public input: ``{"bbox": [x, y, w,
    h]}`` plus ``"polyline"`` for a cable or an arrow (what the nearest-region rule uses)."""
    v = next(v for v in cand["views"] if v.get("bbox"))
    out: dict[str, Any] = {"bbox": v["bbox"]}
    if v.get("polyline"):
        out["polyline"] = v["polyline"]
    return out


def _role(priv: dict[str, Any]) -> str:
    t = priv["targets"]
    role = t.get("owner") or t.get("referent")
    return str(role["aliases"][0])


def write_import_tables(
    release: Path,
    *,
    read_field: str = "reading",
    ground_field: str = "candidate",
    unverified: bool = False,
    project: Any = None,
) -> dict[str, Any]:
    """Write ``<release>/import/metadata.csv`` and ``labels.csv``; returns counts and paths.

    Given the target ``project``, its [benchmark] read/ground fields are used and every
    label value is checked against the field type first (nothing is written on a misfit)."""
    release = Path(release)
    if project is not None:
        read_field = project.benchmark.read_field or read_field
        ground_field = project.benchmark.ground_field or ground_field
        for f in (read_field, ground_field):
            if f not in project.field_types:
                raise TruthlineError(
                    f"project {project.name!r} has no field {f!r}; declare it or pass the "
                    "project's reading and candidate fields"
                )
    public = {p["probe_id"]: p for p in read_jsonl(release / "public" / "probes.jsonl")}
    private = read_jsonl(release / "private" / "targets.jsonl")
    membership = read_json(release / "private" / "membership.json")
    rules = read_json(release / "private" / "rules.json")
    review_path = release / "private" / "review.jsonl"
    reviews = {r["probe_id"]: r for r in read_jsonl(review_path)} if review_path.is_file() else {}
    if not unverified and not reviews:
        raise TruthlineError(
            f"{review_path}: no verification decisions yet; run `truthline physalign verify "
            "pull` (and adjudicate), or pass --unverified to export the compiled targets"
        )
    out = release / "import"
    out.mkdir(parents=True, exist_ok=True)
    meta_rows, label_rows = [], []
    withheld = pending = 0
    for priv in private:
        pid = priv["probe_id"]
        pub = public[pid]
        rev = reviews.get(pid)
        if not unverified:
            decision = (rev or {}).get("decision")
            if decision == "withheld":
                withheld += 1
                continue
            if decision not in DECIDED:
                pending += 1
                continue
        anchor = pub["evidence"][0]
        cands = {c["alias"]: _geometry(c) for c in pub["candidates"]}  # display order
        final = (rev or {}).get("final") or {}
        role = final.get("role") or _role(priv)
        read_t = (
            final["read"] if "read" in final else (priv["targets"].get("read") or {}).get("text")
        )
        el = priv["eligibility"]
        key = f"views/{pid}"
        meta_rows.append(
            {
                "key": key,
                "probe_type": priv["probe_type"],
                "domain": priv.get("domain") or "",
                "problem": opaque("grp-", rules["release_seed"], priv["parent_id"]),
                "split": membership[priv["parent_id"]]["split"],
                "problem_text": pub["problem"]["text"],
                "question": pub["question"],
                "anchor": json.dumps({k: v for k, v in anchor.items() if k != "image_id"}),
                "candidates": json.dumps(cands),
                "K": priv["baseline"]["K"],
                "in_L": int(el["L"]),
                "in_P": int(el["P"]),
                "in_H": int(el["H"]),
                "in_H_hard": int(el["H_hard"]),
                "nearest_alias": priv["baseline"].get("nearest_alias") or "",
                "sim_truth": json.dumps({read_field: read_t, ground_field: role}),
            }
        )
        if unverified:
            label_rows.append(
                _label(key, ground_field, "generator@physalign.local", role, 2, "review", True)
            )
            if read_t:
                label_rows.append(
                    _label(key, read_field, "generator@physalign.local", read_t, 2, "review", True)
                )
            continue
        for b in (rev or {}).get("blind", []):
            ans = b.get("answer") or {}
            if ans.get("role"):
                label_rows.append(
                    _label(key, ground_field, b["reviewer"], ans["role"], 1, "blind", False)
                )
            if read_t and ans.get("read"):
                label_rows.append(
                    _label(key, read_field, b["reviewer"], ans["read"], 1, "blind", False)
                )
        who = (rev or {}).get("decided_by")
        if not isinstance(who, str):  # approved directly: both blind reviewers agreed
            who = "physalign:blind-agreement"
        label_rows.append(_label(key, ground_field, who, role, 2, "review", True))
        if read_t:
            label_rows.append(_label(key, read_field, who, read_t, 2, "review", True))
    if project is not None:
        from truthline.errors import FieldValueError

        for r in label_rows:
            try:
                project.field_types[r["field"]].normalize(r["value"])
            except FieldValueError as exc:
                raise TruthlineError(
                    f"{release / 'private' / 'targets.jsonl'}: item {r['item']}: field "
                    f"{r['field']}: {exc.message} (project {project.name!r}); nothing was written"
                ) from None
    # the exported probes' views only: a withheld probe's view never becomes an item
    views = out / "views"
    if views.is_dir():
        shutil.rmtree(views)
    views.mkdir(parents=True)
    for r in meta_rows:
        shutil.copyfile(release / "public" / f"{r['key']}.png", out / f"{r['key']}.png")
    _write_csv(out / "metadata.csv", meta_rows)
    _write_csv(out / "labels.csv", label_rows)
    return {
        "metadata": str(out / "metadata.csv"),
        "labels": str(out / "labels.csv"),
        "items": len(meta_rows),
        "label_rows": len(label_rows),
        "withheld": withheld,
        "pending": pending,
        "verified": not unverified,
        "media_root": str(out),
        "media": str(views),
    }


def _label(item: str, fld: str, who: str, value: str, tier: int, arm: str, expert: bool) -> dict:
    """A long-table row; a decision also fills ``expert`` (the value audit finalize trusts)."""
    return {
        "item": item,
        "field": fld,
        "annotator": who,
        "value": value,
        "tier": tier,
        "arm": arm,
        "expert": value if expert else "",
    }


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        if rows:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    tmp.replace(path)
