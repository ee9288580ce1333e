"""``benchmark export``: a release with public inputs kept apart from private targets.

Layout::

    release.json            format, tool version, gold snapshot, targets, file list
    SHA256SUMS              checksum of every file below
    DATASHEET.md            filled from the store (counts, strata, provenance, audit, exclusions)
    public/project/         the project definition and prompt templates (what a model is asked)
    public/media/           item media
    public/inputs.*         per item: id, media, public metadata, rendered prompt, candidates
    private/targets.*       per gold decision: item, path, value (the answers)
    private/provenance.*    per gold decision: provenance and sources; item arm and parent
    private/entities.*      alias -> entity maps (entity ids per item list) and parent membership
    private/simulated_truth.jsonl   known truth of SIMULATED items (simulations only)

``load_release`` reads a release back into a store (project, items, gold snapshot), so a
model can be rerun on it with ``run_benchmark`` and reach the same scores.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import func, select

from truthline import __version__
from truthline.benchmark._gold import load_gold
from truthline.benchmark._runner import _entity_ids, _public_item, targets_of
from truthline.errors import TruthlineError
from truthline.project import Project, load_project
from truthline.store import Store, json_hash, now, tables

FORMATS = ("jsonl", "parquet", "hf")


def _write_table(rows: list[dict[str, Any]], path: Path, fmt: str) -> Path:
    if fmt == "jsonl":
        target = path.with_suffix(".jsonl")
        with target.open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, sort_keys=True, default=str) + "\n")
        return target
    target = path.with_suffix(".parquet")
    df = pd.DataFrame(rows)
    for col in df.columns:  # text, nested and mixed values all travel as JSON text
        if not pd.api.types.is_numeric_dtype(df[col]):
            df[col] = df[col].map(lambda v: json.dumps(v, default=str))
    df.to_parquet(target, index=False)
    return target


def _read_table(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    df = pd.read_parquet(path)
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col]):
            df[col] = df[col].map(json.loads)
    return [{str(k): v for k, v in r.items()} for r in df.to_dict(orient="records")]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def export_release(
    store: Store,
    project: Project,
    out: Path,
    *,
    fmt: str = "jsonl",
    snapshot: str | None = None,
    slice_: str = "all",
    force: bool = False,
) -> dict[str, Any]:
    """Write a release folder; returns its ``release.json`` content."""
    from truthline.models import render_prompt

    if fmt not in FORMATS:
        raise TruthlineError(f"unknown export format {fmt!r} (use {', '.join(FORMATS)})")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TruthlineError(f"{out} is a file, not a folder; choose a new folder for the release")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise TruthlineError(f"{out} is not empty; choose a new folder or pass --force")
        shutil.rmtree(out)
    gold = load_gold(store, project.name, snapshot, slice_)
    if not gold.items:
        raise TruthlineError(f"gold snapshot {gold.snapshot[:12]} has no decisions to export")
    targets = targets_of(project, gold)
    tab_fmt = "jsonl" if fmt == "jsonl" else "parquet"
    pub, priv = out / "public", out / "private"
    if fmt == "hf":
        pub, priv = out / "public" / "data", out / "private" / "data"
    for d in (pub, priv, out / "public" / "media"):
        d.mkdir(parents=True, exist_ok=True)
    if project.root is None:
        raise TruthlineError(f"project {project.name!r} has no definition folder to export")
    shutil.copytree(
        project.root, out / "public" / "project", ignore=shutil.ignore_patterns("__pycache__")
    )
    inputs, targets_rows, prov_rows, ent_rows, truth_rows = [], [], [], [], []
    media_dir = out / "public" / "media"
    for it in gold.items:
        pub_item = _public_item(project, it)
        rel_media = []
        for m in it.media:
            src = Path(it.media_root) / m
            dest = media_dir / it.key / Path(m).name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
            rel_media.append(str(dest.relative_to(media_dir)))
        system, user = render_prompt(project, pub_item)
        inputs.append(
            {
                "item": it.key,
                "media": rel_media,
                "meta": pub_item["meta"],
                "system": system,
                "prompt": user,
                "candidates": _entity_ids(project, it),
            }
        )
        for path, value in it.values.items():
            targets_rows.append({"item": it.key, "path": path, "value": value})
            prov_rows.append(
                {"item": it.key, "path": path, "provenance": it.provenance[path], "arm": it.arm}
            )
        ent_rows.append(
            {"item": it.key, "parent": it.parent, "meta": it.meta, "ids": _entity_ids(project, it)}
        )
        if it.sim_truth is not None:
            truth_rows.append({"item": it.key, "truth": it.sim_truth})
    files = [
        _write_table(inputs, pub / "inputs", tab_fmt),
        _write_table(targets_rows, priv / "targets", tab_fmt),
        _write_table(prov_rows, priv / "provenance", tab_fmt),
        _write_table(ent_rows, priv / "entities", tab_fmt),
    ]
    if truth_rows:
        files.append(_write_table(truth_rows, priv / "simulated_truth", "jsonl"))
    sheet = datasheet(store, project, gold, targets)
    (out / "DATASHEET.md").write_text(_datasheet_md(sheet), encoding="utf-8")
    (out / "datasheet.json").write_text(json.dumps(sheet, indent=2, default=str), encoding="utf-8")
    if fmt == "hf":
        (out / "README.md").write_text(_hf_card(project, sheet), encoding="utf-8")
    release = {
        "format": fmt,
        "tool_version": __version__,
        "project": project.name,
        "gold_snapshot": gold.snapshot,
        "gold_slice": slice_,
        "targets": targets,
        "created_at": now().isoformat(),
        "tables": {p.stem: str(p.relative_to(out)) for p in files},
        "simulated": bool(truth_rows),
    }
    (out / "release.json").write_text(json.dumps(release, indent=2), encoding="utf-8")
    sums = sorted(
        (str(p.relative_to(out)), _sha256(p))
        for p in out.rglob("*")
        if p.is_file() and p.name != "SHA256SUMS"
    )
    (out / "SHA256SUMS").write_text("".join(f"{h}  {p}\n" for p, h in sums), encoding="utf-8")
    return release


def verify_release(path: Path) -> list[str]:
    """Files whose checksum does not match SHA256SUMS (empty list: the release is intact)."""
    path = Path(path)
    sums = path / "SHA256SUMS"
    if not sums.is_file():
        raise TruthlineError(f"{path} has no SHA256SUMS; is it a truthline release?")
    bad = []
    for line in sums.read_text(encoding="utf-8").splitlines():
        h, _, rel = line.partition("  ")
        f = path / rel
        if not f.is_file() or _sha256(f) != h:
            bad.append(rel)
    return bad


def datasheet(store: Store, project: Project, gold: Any, targets: list[str]) -> dict[str, Any]:
    """Datasheet facts from the store: counts, strata, provenance, audit summary, exclusions."""
    t = tables
    strata: dict[str, dict[str, int]] = {}
    for s in project.strata:
        counts: dict[str, int] = {}
        for it in gold.items:
            v = str(it.meta.get(s, ""))
            counts[v] = counts.get(v, 0) + 1
        strata[s] = counts
    with store.begin() as conn:
        ann = conn.execute(
            select(
                t.annotations.c.arm,
                t.annotations.c.tier,
                func.count(func.distinct(t.annotations.c.source_id)),
            )
            .where(t.annotations.c.project == project.name, t.annotations.c.deleted_at.is_(None))
            .group_by(t.annotations.c.arm, t.annotations.c.tier)
        ).all()
        excl = conn.execute(
            select(t.exclusions.c.annotator, t.exclusions.c.reason).where(
                t.exclusions.c.project == project.name, t.exclusions.c.active.is_(True)
            )
        ).all()
        n_items = conn.execute(
            select(func.count()).select_from(t.items).where(t.items.c.project == project.name)
        ).scalar_one()
        annotators = conn.execute(
            select(func.count(func.distinct(t.annotations.c.annotator))).where(
                t.annotations.c.project == project.name, t.annotations.c.deleted_at.is_(None)
            )
        ).scalar_one()
    return {
        "title": project.title or project.name,
        "description": project.description,
        "items_in_release": len(gold.items),
        "items_in_project": int(n_items),
        "items_not_released": int(n_items) - len(gold.items),
        "decisions": sum(len(it.values) for it in gold.items),
        "targets": targets,
        "strata": strata,
        "provenance": gold.counts(),
        "audit": {
            "annotations_by_arm_tier": {f"{a}/tier{tr}": int(n) for a, tr, n in ann},
            "annotators": int(annotators),
        },
        "exclusions": [{"annotator": a, "reason": r} for a, r in excl],
        "gold_snapshot": gold.snapshot,
        "simulated": any(it.sim_truth is not None for it in gold.items),
        "licence": "TO FILL: licence of the media and labels",
    }


def _datasheet_md(s: dict[str, Any]) -> str:
    lines = [f"# Datasheet: {s['title']}", "", s["description"] or "", ""]
    if s["simulated"]:
        lines += ["**Contains SIMULATED items** (generated scenes with known truth).", ""]
    lines += [
        "## Composition",
        "",
        f"- items in this release: {s['items_in_release']} (of {s['items_in_project']} in the project; "
        f"{s['items_not_released']} not released: no gold in the exported slice)",
        f"- gold decisions: {s['decisions']}; target fields: {', '.join(s['targets'])}",
        f"- gold snapshot: `{s['gold_snapshot']}`",
        "",
        "## Strata",
        "",
    ]
    for name, counts in s["strata"].items():
        lines.append(f"- {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    lines += ["", "## Provenance of gold decisions", ""]
    lines += [f"- {k}: {v}" for k, v in sorted(s["provenance"].items())]
    lines += ["", "## Audit summary", ""]
    lines += [
        f"- {k}: {v} annotations" for k, v in sorted(s["audit"]["annotations_by_arm_tier"].items())
    ]
    lines += [f"- annotators: {s['audit']['annotators']}", "", "## Exclusions", ""]
    lines += [f"- {e['annotator']}: {e['reason']}" for e in s["exclusions"]] or ["- none"]
    lines += ["", "## Licence", "", s["licence"], ""]
    lines += [
        "## Layout",
        "",
        "`public/` holds what a model may see (media, prompts, candidates, public metadata);",
        "`private/` holds the answers, provenance, entity maps and parent membership.",
        "Keep `private/` out of any training or prompting data. Verify with `SHA256SUMS`.",
        "",
    ]
    return "\n".join(lines)


def _hf_card(project: Project, s: dict[str, Any]) -> str:
    return (
        "---\n"
        f"pretty_name: {json.dumps(s['title'])}\n"
        "license: other\n"
        "configs:\n"
        "  - config_name: inputs\n"
        "    data_files: public/data/inputs.parquet\n"
        "---\n\n" + _datasheet_md(s)
    )


def load_release(
    path: Path, store: Store, *, workspace_projects: Path | None = None
) -> dict[str, Any]:
    """Load a release (public + private) into ``store``: project, items, one gold snapshot.

    Returns ``{"project": Project, "snapshot": hash}``; fails if a checksum is off."""
    path = Path(path)
    bad = verify_release(path)
    if bad:
        raise TruthlineError(f"release {path}: checksum mismatch in {', '.join(bad[:5])}")
    rel = json.loads((path / "release.json").read_text(encoding="utf-8"))
    proj_dir = path / "public" / "project"
    if workspace_projects is not None:
        dest = workspace_projects / rel["project"]
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(proj_dir, dest)
        proj_dir = dest
    project = load_project(proj_dir)
    store.upsert_project(project, str(project.source))
    tabs = {k: path / v for k, v in rel["tables"].items()}
    inputs = _read_table(tabs["inputs"])
    ents = {r["item"]: r for r in _read_table(tabs["entities"])}
    truth = (
        {r["item"]: r["truth"] for r in _read_table(tabs["simulated_truth"])}
        if "simulated_truth" in tabs
        else {}
    )
    prov = {(r["item"], r["path"]): r for r in _read_table(tabs["provenance"])}
    media_root = str((path / "public" / "media").resolve())
    ts = now()
    ids: dict[str, int] = {}
    with store.begin() as conn:
        for r in inputs:
            e = ents[r["item"]]
            existing = conn.execute(
                select(tables.items.c.id).where(
                    tables.items.c.project == project.name, tables.items.c.key == r["item"]
                )
            ).first()
            if existing is not None:
                ids[r["item"]] = int(existing[0])
                continue
            ids[r["item"]] = int(
                conn.execute(  # type: ignore[index]
                    tables.items.insert().values(
                        project=project.name,
                        key=r["item"],
                        media_kind=project.media,
                        media=r["media"],
                        media_root=media_root,
                        content_hash=json_hash([r["item"], r["media"]]),
                        meta=e["meta"],
                        parent=e["parent"],
                        sim_truth=truth.get(r["item"]),
                        created_at=ts,
                        updated_at=ts,
                    )
                ).inserted_primary_key[0]
            )
        snap = rel["gold_snapshot"]
        have = conn.execute(
            select(tables.gold_snapshots.c.hash).where(tables.gold_snapshots.c.hash == snap)
        ).first()
        if have is None:
            conn.execute(
                tables.gold_snapshots.insert().values(
                    hash=snap,
                    project=project.name,
                    policy={"release": str(path)},
                    counts={},
                    created_at=ts,
                )
            )
            arms: dict[int, str] = {}
            for t in _read_table(tabs["targets"]):
                p = prov[(t["item"], t["path"])]
                conn.execute(
                    tables.gold.insert().values(
                        snapshot=snap,
                        project=project.name,
                        item_id=ids[t["item"]],
                        field_path=t["path"],
                        value=t["value"],
                        provenance=p["provenance"],
                        sources=[],
                    )
                )
                if p.get("arm"):
                    arms[ids[t["item"]]] = p["arm"]
            for iid, arm in arms.items():
                conn.execute(
                    tables.arm_assignments.insert().values(
                        project=project.name,
                        item_id=iid,
                        arm=arm,
                        seed=0,
                        weight=1.0,
                        created_at=ts,
                    )
                )
    return {"project": project, "snapshot": snap, "items": len(ids)}
