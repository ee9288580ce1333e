"""Import tables: compiled probes as items of a ``physics-diagrams`` project, targets as labels.

``metadata.csv`` (for ``truthline items import <release>/import/views --media-root
<release>/import --metadata ...``; ``import/views`` holds the exported probes' views only)
has one row per probe: the item is the folder ``views/<probe id>/`` holding its two
images in the order they are sent, ``1-diagram.png`` (the full diagram) and ``2-view.png``
(the localized view: anchor and candidate views drawn on it; seeds/002 App. C.2 sends both),
the public inputs the template declares (``probe_type``, ``problem_text``,
``question``, ``anchor``, ``candidates`` alias -> ``{"bbox": [x, y, w, h]}`` (and
``"polyline"``) in display order; no ``label_xy``: the anchor box says where the label is, and a
column empty for text anchors would be mixed-type), the cluster (an opaque group id, never the parent id),
the eligibility sets and K, and ``sim_truth`` (for SIMULATED models only: the targets under
the project's field names, and under ``_probe`` the frozen nearest-region alias a SIMULATED
model with a nearest-region bias falls back to).
``labels.csv`` (for ``truthline audit import-table``) holds the targets: each blind
verifier's answer (tier 1, blind arm) and the final decision as an expert value (tier 2),
so ``audit finalize`` makes the decided target gold with provenance. Only probes in the
screening state ``approved`` are exported: withheld and undecided ones are left out, a
corrected target is held back until a fresh blind verification of the corrected value
approved it, and a risk-isolated probe stays out (both counted and named). Before
verification ``--unverified`` exports the compiled targets as the generator's (named so).
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
from truthline.systems.physalign._screening import screen

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
    read_field: str = "read",
    ground_field: str = "owner",
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
    diagrams: dict[str, Path] = {}  # item key -> the probe's full diagram
    withheld = pending = 0
    held: list[str] = []  # corrected targets not yet re-verified blind
    isolated: list[str] = []  # approved, but risk-isolated (a shared-source correction)
    states = None if unverified else screen(release).state
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
            if decision == "corrected_regenerated" and not reverified(rev or {}):
                held.append(pid)
                continue
            if states is not None and states[pid] == "risk_isolated":
                isolated.append(pid)
                continue
        final = (rev or {}).get("final") or {}
        role = final.get("role") or _role(priv)
        read_t = (
            final["read"] if "read" in final else (priv["targets"].get("read") or {}).get("text")
        )
        key = f"views/{pid}"
        diagrams[key] = release / "public" / pub["problem"]["images"][0]["path"]
        meta_rows.append(
            _meta_row(priv, pub, rules, membership, key, {read_field: read_t, ground_field: role})
        )
        label_rows += _label_rows(key, rev, read_field, ground_field, read_t, role, unverified)
    if project is not None:
        _check_labels(project, release, label_rows)
    _write_views(release, out, meta_rows, diagrams)
    _write_csv(out / "metadata.csv", meta_rows)
    _write_csv(out / "labels.csv", label_rows)
    return {
        "metadata": str(out / "metadata.csv"),
        "labels": str(out / "labels.csv"),
        "items": len(meta_rows),
        "label_rows": len(label_rows),
        "withheld": withheld,
        "pending": pending,
        "held_corrections": len(held),
        "held_probe_ids": sorted(held),
        "risk_isolated": len(isolated),
        "isolated_probe_ids": sorted(isolated),
        "verified": not unverified,
        "media_root": str(out),
        "media": str(out / "views"),
    }


def _meta_row(
    priv: dict[str, Any],
    pub: dict[str, Any],
    rules: dict[str, Any],
    membership: dict[str, Any],
    key: str,
    truth: dict[str, Any],
) -> dict[str, Any]:
    """One probe's metadata row: its public inputs, eligibility, design columns and the
    SIMULATED answerers' known truth (``truth``: read and ground field -> target)."""
    anchor = pub["evidence"][0]
    cands = {c["alias"]: _geometry(c) for c in pub["candidates"]}  # display order
    el = priv["eligibility"]
    return {
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
        "sim_truth": json.dumps(
            {**truth, "_probe": {"nearest": priv["baseline"].get("nearest_alias")}}
        ),
    }


def _label_rows(
    key: str,
    rev: dict[str, Any] | None,
    read_field: str,
    ground_field: str,
    read_t: str | None,
    role: str,
    unverified: bool,
) -> list[dict[str, Any]]:
    """A probe's labels: the generator's (unverified) or each blind answer as a tier-1
    label and the decision as the expert value."""
    if unverified:
        gen = "generator@physalign.local"
        rows = [_label(key, ground_field, gen, role, 2, "review", True)]
        if read_t:
            rows.append(_label(key, read_field, gen, read_t, 2, "review", True))
        return rows
    rows = []
    for b in (rev or {}).get("blind", []):
        ans = b.get("answer") or {}
        if ans.get("role"):
            rows.append(_label(key, ground_field, b["reviewer"], ans["role"], 1, "blind", False))
        if read_t and ans.get("read"):
            rows.append(_label(key, read_field, b["reviewer"], ans["read"], 1, "blind", False))
    decided = (rev or {}).get("decided_by")
    # approved directly (no decider named): both blind reviewers agreed
    by = decided if isinstance(decided, str) else "physalign:blind-agreement"
    rows.append(_label(key, ground_field, by, role, 2, "review", True))
    if read_t:
        rows.append(_label(key, read_field, by, read_t, 2, "review", True))
    return rows


def _check_labels(project: Any, release: Path, label_rows: list[dict[str, Any]]) -> None:
    """Every label value against its field type, before anything is written."""
    from truthline.errors import FieldValueError

    for r in label_rows:
        try:
            project.field_types[r["field"]].normalize(r["value"])
        except FieldValueError as exc:
            raise TruthlineError(
                f"{release / 'private' / 'targets.jsonl'}: item {r['item']}: field "
                f"{r['field']}: {exc.message} (project {project.name!r}); nothing was written"
            ) from None


def _write_views(
    release: Path, out: Path, meta_rows: list[dict[str, Any]], diagrams: dict[str, Path]
) -> None:
    """The exported probes' images only (a withheld probe's view never becomes an item), in
    the order they are sent: the full diagram, then the localized view."""
    views = out / "views"
    if views.is_dir():
        shutil.rmtree(views)
    views.mkdir(parents=True)
    for r in meta_rows:
        folder = out / r["key"]
        folder.mkdir(parents=True)
        shutil.copyfile(diagrams[r["key"]], folder / "1-diagram.png")
        shutil.copyfile(release / "public" / f"{r['key']}.png", folder / "2-view.png")


def reverified(row: dict[str, Any]) -> bool:
    """A corrected target enters the release only after a fresh blind verification of the
    corrected value approved it (``row["reverify"]["status"] == "approved"``)."""
    return (row.get("reverify") or {}).get("status") == "approved"


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
