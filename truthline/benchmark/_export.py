"""``benchmark export``: a release whose public half is a hub dataset, its private half apart.

Layout (``<out>`` is the release; upload ``<out>/public`` and nothing else)::

    release.json            format, tool version, gold snapshot, targets, split rule, files
    SHA256SUMS              checksum of every file of the release (public and private)
    DATASHEET.md            filled from the store (counts, strata, provenance, audit, exclusions)
    public/                 the folder one uploads (``datasets.load_dataset`` reads it)
      README.md             dataset card: YAML configs/splits/features, provenance, licence
      data/<split>-00000-of-00001.parquet   typed columns, images embedded (train/test)
      project/              the project definition and prompt templates (scoring contract)
      media/                video files (video projects only; images live in the Parquet)
      SHA256SUMS            checksums of the public files alone
    private/                never uploaded: sibling of public/, not inside it
      targets.*             per gold decision: item, path, value (exact, for reload)
      provenance.*          per gold decision: provenance, real sources, item arm
      entities.*            per item: full metadata, parent, entity ids, media names, split
      annotators.json       pseudonym -> annotator id
      pseudonym.key         the release's HMAC secret behind the pseudonyms (0600)
      simulated_truth.jsonl known truth of SIMULATED items (simulations only)
      test_answers.*        the test split's gold and provenance (``--hide-test-answers``)

Annotators appear in public files (card, ``provenance`` column) and the datasheet only as
pseudonyms. ``load_release`` reads a release back into a store (project, items, gold snapshot
under the release's hash, written by the audit's one gold writer), so a model can be rerun
on it with ``run_benchmark`` and reach the same scores. The export itself only reads gold.

The export streams (``_export_scan`` reads gold a chunk at a time, ``_export_write`` writes
rows as they come) and is atomic: the release appears at ``<out>`` only once complete.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import func, select

from truthline import __version__
from truthline._names import inside
from truthline.benchmark._card import dataset_card
from truthline.benchmark._export_scan import (
    ANSWER_COLUMNS,
    GoldScan,
    ReleasedItem,
    answer_types,
    gold_chunks,
    media_type,
    private_rows,
    public_columns,
    resolve,
    scan_gold,
)
from truthline.benchmark._export_write import (
    CompositionSum,
    SplitWriter,
    TableSink,
    check_destination,
    staged,
)
from truthline.benchmark._gold import Gold, GoldItem, insert_snapshot
from truthline.benchmark._release import (
    _fix_double,
    assign_splits,
    hf_feature,
    is_person,
    media_column,
    pseudonymizer,
    read_images,
    verify_files,
)
from truthline.benchmark._runner import _public_item, targets_of
from truthline.errors import TruthlineError
from truthline.project import Project, load_project
from truthline.store import Store, json_hash, now, tables

FORMATS = ("jsonl", "parquet", "hf")


def export_release(
    store: Store,
    project: Project,
    out: Path,
    *,
    fmt: str = "jsonl",
    snapshot: str | None = None,
    slice_: str = "all",
    force: bool = False,
    seed: int | None = None,
    test_fraction: float = 0.2,
    hide_test_answers: bool = False,
) -> dict[str, Any]:
    """Write a release folder; returns its ``release.json`` content.

    ``fmt`` is the format of the private tables (``jsonl``; ``parquet``/``hf``: Parquet);
    the public half is always the typed Parquet hub layout. ``seed`` (default: the
    project's benchmark seed) and ``test_fraction`` fix the cluster-aware train/test split.
    ``hide_test_answers``: the public test split keeps its inputs but not its answers
    (``gold`` and ``provenance`` are null there); they go to ``private/test_answers.*``.

    Memory stays flat in the number of items: gold is read twice, a chunk at a time (a
    first pass for the split and the column types, a second that writes), and the release
    is written into a hidden sibling of ``out`` renamed into place once complete."""
    if fmt not in FORMATS:
        raise TruthlineError(f"unknown export format {fmt!r} (use {', '.join(FORMATS)})")
    out = Path(out)
    check_destination(out, force)
    snap = resolve(store, project.name, snapshot)
    scan = scan_gold(store, project, snap, slice_)
    if not scan.keys:
        raise TruthlineError(f"gold snapshot {snap[:12]} has no decisions to export")
    if project.root is None:
        raise TruthlineError(f"project {project.name!r} has no definition folder to export")
    targets = (
        targets_of(project, Gold(project.name, snap, []))  # checks the declared fields
        if project.benchmark.target_fields
        else scan.seen_targets
    )
    seed = project.benchmark.seed if seed is None else seed
    split_of = assign_splits(scan.clusters, seed, test_fraction)
    job = _Export(store, project, project.root, scan, split_of, slice_, hide_test_answers)
    with staged(out, force) as tmp:
        info, files, names, comp = job.write(tmp, "jsonl" if fmt == "jsonl" else "parquet")
        split_rule = {
            "by": "cluster (the project's cluster column, else the item's parent, else the item)",
            "seed": seed,
            "test_fraction": test_fraction,
            "clusters": len(set(scan.clusters.values())),
            "items": info["splits"],
            "test_answers": "withheld" if hide_test_answers else "public",
        }
        sheet = _write_sheets(tmp, store, project, scan, targets, names, info, split_rule, comp)
        (tmp / "private" / "annotators.json").write_text(
            json.dumps(dict(sorted(names.people.items())), indent=2), encoding="utf-8"
        )
        release = {
            "format": fmt,
            "tool_version": __version__,
            "project": project.name,
            "gold_snapshot": snap,
            "gold_slice": slice_,
            "targets": targets,
            "created_at": now().isoformat(),
            "public": "public",
            "media_column": job.media_col,
            "splits": split_rule,
            "tables": {p.stem: str(p.relative_to(tmp)) for p in files},
            "simulated": scan.simulated,
            "licence": {"id": sheet["licence_id"], "source": sheet["licence_source"]},
        }
        (tmp / "release.json").write_text(json.dumps(release, indent=2), encoding="utf-8")
        _write_sums(tmp, tmp)
    return release


PRIVATE_TABLES = ("targets", "provenance", "entities", "simulated_truth", "test_answers")
"""The private tables, in the order ``release.json`` lists them (empty ones are left out)."""


@dataclass
class _Export:
    """The second pass: every item's public row and private records, written as read."""

    store: Store
    project: Project
    root: Path
    """The project's definition folder (shipped in ``public/project/``)."""
    scan: GoldScan
    split_of: dict[str, str]
    slice_: str
    hide: bool
    media_col: str = ""

    def __post_init__(self) -> None:
        self.media_col = media_column(self.project, self.scan.n_media)

    def schema(self) -> tuple[pa.Schema, dict[str, Any]]:
        """The public splits' schema (with the ``datasets`` features in its metadata) and
        the features, as ``write_splits`` derives them from the whole table."""
        scan, media_col = self.scan, self.media_col
        types = {"item": pa.string(), media_col: media_type(media_col, scan.n_media)}
        types |= scan.types
        if self.hide:
            shown = {k for k, split in self.split_of.items() if split != "test"}
            types |= answer_types(
                self.store, self.project, scan.snapshot, self.slice_, shown.__contains__
            )
        schema = pa.schema([(c, types[c]) for c in ["item", media_col, *scan.columns]])
        feats = {}
        for f in schema:
            if f.name == media_col and media_col != "video":
                feats[f.name] = (
                    {"_type": "Image"}
                    if media_col == "image"
                    else {"feature": {"_type": "Image"}, "_type": "List"}
                )
            else:
                feats[f.name] = hf_feature(f.type)
        for v in feats.values():
            _fix_double(v)
        meta = {b"huggingface": json.dumps({"info": {"features": feats}}).encode("utf-8")}
        return schema.with_metadata(meta), feats

    def write(
        self, root: Path, tab_fmt: str
    ) -> tuple[dict[str, Any], list[Path], _Pseudonyms, dict[str, Any]]:
        """Write ``root/public`` and ``root/private``; returns the splits' facts (what
        ``write_splits`` returned), the private tables, the pseudonyms, the composition."""
        public, priv = root / "public", root / "private"
        for d in (public, priv):
            d.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self.root, public / "project", ignore=shutil.ignore_patterns("__pycache__"))
        names = _Pseudonyms(pseudonymizer(_new_key(priv)))
        schema, feats = self.schema()
        data = inside(public, "data")
        data.mkdir(parents=True, exist_ok=True)
        sinks = {
            n: TableSink(
                priv / n, "jsonl" if n == "simulated_truth" else tab_fmt, self.scan.plan(n)
            )
            for n in PRIVATE_TABLES
        }
        comp = CompositionSum(self.project)
        try:
            with SplitWriter(data, schema) as splits:
                chunks = gold_chunks(self.store, self.project.name, self.scan.snapshot, self.slice_)
                for part in chunks:
                    counted = [self._item(rel, public, names, splits, sinks) for rel in part]
                    comp.add([it for it in counted if it is not None])
            files = [p for p in (sinks[n].close() for n in PRIVATE_TABLES) if p is not None]
        finally:
            for sink in sinks.values():
                sink.abort()
        info = {
            "features": feats,
            "splits": {s: n for s, n in splits.rows.items() if n},
            "num_bytes": {s: n for s, n in splits.nbytes.items() if splits.rows[s]},
            "items": self.scan.keys,
        }
        return info, files, names, comp.result()

    def _item(
        self,
        rel: ReleasedItem,
        public: Path,
        names: _Pseudonyms,
        splits: SplitWriter,
        sinks: dict[str, TableSink],
    ) -> GoldItem | None:
        """Write one item's public row and private records; the item back when its
        answers are public (counted in the composition), else ``None``."""
        from truthline.models import render_prompt

        it, project = rel.gold, self.project
        split = self.split_of.get(it.key)
        if split is None:
            raise TruthlineError(
                f"item {it.key!r} got gold while the release was being written; export again"
            )
        pub_item = _public_item(project, it)
        media = _publish_media(it, public, self.media_col)
        prompts = render_prompt(project, pub_item)
        columns = public_columns(project, rel, pub_item["meta"], prompts, names.public)
        public_names = [name for name, _ in media]
        cluster = self.scan.clusters[it.key]
        for table, row in private_rows(project, rel, split, cluster, public_names):
            sinks[table].add(row)
        hidden = self.hide and split == "test"
        if hidden:
            sinks["test_answers"].add(
                {"item": it.key, **{c: columns.get(c) for c in ANSWER_COLUMNS}}
            )
            for c in ANSWER_COLUMNS:
                columns[c] = None
        record, size = _media_record(it, media, self.media_col)
        splits.add(split, record | columns, size)
        return None if hidden else it


def _media_record(
    it: GoldItem, media: list[tuple[str, Path]], media_col: str
) -> tuple[dict[str, Any], int]:
    """The row's ``item`` and media cells (images read now, as the row is written) and
    the bytes read."""
    if media_col == "video":
        return {"item": it.key, media_col: [name for name, _ in media]}, 0
    imgs = []
    for name, p in media:
        try:
            imgs.append({"bytes": p.read_bytes(), "path": name})
        except OSError as e:
            raise TruthlineError(
                f"item {it.key!r}: cannot read its image {p}: {e.strerror or e}; restore the "
                "file or withdraw the item, then export again"
            ) from None
    size = sum(len(m["bytes"]) for m in imgs)
    return {"item": it.key, media_col: imgs[0] if media_col == "image" else imgs}, size


def _read_table(path: Path) -> list[dict[str, Any]]:
    """A private table's rows; JSON text cells decoded (a ``null`` stays ``None``: pandas
    would read a text column with gaps as NaN)."""
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    table = pq.read_table(path)
    text = [
        f.name
        for f in table.schema
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    rows = table.to_pylist()
    for r in rows:
        for c in text:
            r[c] = json.loads(r[c])
    return rows


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass
class _Pseudonyms:
    """Public names for gold sources: people become per-release pseudonyms (remembered, to
    write ``private/annotators.json``), roles and model specs stay as they are."""

    pseud: Callable[[str], str]
    people: dict[str, str] = field(default_factory=dict)
    """pseudonym -> annotator id"""

    def public(self, source: str) -> str:
        if not is_person(source):
            return source
        alias = self.pseud(source)
        self.people.setdefault(alias, source)
        return alias

    def scrub(self, text: str) -> str:
        """``text`` with every annotator id seen so far replaced by its pseudonym."""
        for alias, real in self.people.items():
            text = text.replace(real, alias)
        return text


def _new_key(priv: Path) -> bytes:
    """A fresh pseudonym secret, kept in ``private/pseudonym.key`` (0600)."""
    secret = secrets.token_bytes(32)
    key_file = priv / "pseudonym.key"
    key_file.touch(mode=0o600)
    key_file.write_text(secret.hex() + "\n", encoding="utf-8")
    return secret


def _publish_media(it: GoldItem, public: Path, media_col: str) -> list[tuple[str, Path]]:
    """(public name, source file) of the item's media; video files are copied into
    ``public/media/`` (images travel inside the Parquet)."""
    media = []
    for m in it.media:
        name = f"{it.key}/{Path(m).name}"
        src = Path(it.media_root) / m
        if media_col == "video":
            dest = inside(public, "media", *name.split("/"), what="media file")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
            name = f"media/{name}"
        media.append((name, src))
    return media


def _write_sheets(
    out: Path,
    store: Store,
    project: Project,
    scan: GoldScan,
    targets: list[str],
    names: _Pseudonyms,
    info: dict[str, Any],
    split_rule: dict[str, Any],
    comp: dict[str, Any],
) -> dict[str, Any]:
    """The dataset card (``public/README.md``, then public checksums) and the datasheet,
    with every annotator as a pseudonym; returns the datasheet. ``comp`` is its class
    table and annotation density, counted on the items whose answers are public."""
    sheet = datasheet(store, project, scan, targets)
    sheet |= comp
    sheet["composition_of"] = (
        "all released items"
        if comp["density"]["clips"] == len(scan.keys)
        else "train split only (test answers withheld)"
    )
    sheet["exclusions"] = [
        {"annotator": names.public(e["annotator"]), "reason": e["reason"]}
        for e in sheet["exclusions"]
    ]
    for e in sheet["exclusions"]:  # reasons may name people too
        e["reason"] = names.scrub(e["reason"])
    public = out / "public"
    (public / "README.md").write_text(dataset_card(sheet, info, split_rule), encoding="utf-8")
    _write_sums(public, public)
    (out / "DATASHEET.md").write_text(_datasheet_md(sheet), encoding="utf-8")
    (out / "datasheet.json").write_text(json.dumps(sheet, indent=2, default=str), encoding="utf-8")
    return sheet


def _write_sums(root: Path, where: Path) -> None:
    """``where/SHA256SUMS`` over every file under ``root`` (paths relative to ``root``)."""
    target = where / "SHA256SUMS"
    sums = sorted(
        (str(p.relative_to(root)), _sha256(p))
        for p in root.rglob("*")
        if p.is_file() and p != target
    )
    target.write_text("".join(f"{h}  {p}\n" for p, h in sums), encoding="utf-8")


def verify_release(path: Path) -> list[str]:
    """Every failing path of a release against its SHA256SUMS (mismatched, missing or not
    listed; empty list: the release is intact). One check, ``verify_files``, backs this and
    ``benchmark verify``."""
    return verify_files(Path(path)).failures


def datasheet(store: Store, project: Project, scan: GoldScan, targets: list[str]) -> dict[str, Any]:
    """Datasheet facts from the store: counts, strata, provenance, audit summary, exclusions."""
    t = tables
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
        "items_in_release": len(scan.keys),
        "items_in_project": int(n_items),
        "items_not_released": int(n_items) - len(scan.keys),
        "decisions": scan.decisions,
        "targets": targets,
        "strata": scan.strata,
        "provenance": scan.provenance,
        "audit": {
            "annotations_by_arm_tier": {f"{a}/tier{tr}": int(n) for a, tr, n in ann},
            "annotators": int(annotators),
        },
        "exclusions": [{"annotator": a, "reason": r} for a, r in excl],
        "gold_snapshot": scan.snapshot,
        "simulated": scan.simulated,
        **_licence(project),
    }


LICENCE_FILES = ("LICENSE", "LICENCE", "LICENSE.md", "LICENCE.md", "LICENSE.txt")


def _licence(project: Project) -> dict[str, str | None]:
    """The release's licence: a LICENSE file in the project folder (shipped in
    ``public/project/``) wins; else ``license`` in the project definition; else a marked gap
    to fill before publishing. ``licence_id`` is what the card's YAML declares (the hub's
    lower-case form of the SPDX id), ``licence_source`` where the licence came from."""
    declared = project.license
    f = next(
        (project.root / n for n in LICENCE_FILES if project.root and (project.root / n).is_file()),
        None,
    )
    if f is not None:
        first = next(
            (ln.strip() for ln in f.read_text(errors="replace").splitlines() if ln.strip()), ""
        )
        text = f"{first} (full text: `project/{f.name}`)."
        if declared and declared != "other":
            text += (
                f' The LICENSE file wins over `license = "{declared}"` in the project '
                "definition; make them agree before publishing."
            )
        return {
            "licence_id": "other",
            "licence": f"From the project's LICENSE file: {text}",
            "licence_source": f"project/{f.name}",
        }
    if declared == "other":
        return {
            "licence_id": "other",
            "licence": 'other (declared as `license = "other"` in the project definition; '
            "TO FILL: add a LICENSE file with the terms to the project folder and export again)",
            "licence_source": "project definition",
        }
    if declared:
        return {
            "licence_id": declared.lower(),
            "licence": f"{declared} (declared as `license` in the project definition; "
            f"https://spdx.org/licenses/{declared}.html).",
            "licence_source": "project definition",
        }
    return {
        "licence_id": "unknown",
        "licence": 'TO FILL: licence of the media and labels (set `license = "SPDX-ID"` in '
        "the project definition or add a LICENSE file to the project folder, and export again)",
        "licence_source": None,
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
        "`public/` is the folder to upload: typed Parquet splits (media, prompts, candidates,",
        "public metadata, gold with provenance and pseudonymous sources) and the dataset card.",
        "`private/` (a sibling, never inside `public/`) holds annotator ids, the pseudonym key,",
        "raw provenance, full metadata and parent membership. Verify with `SHA256SUMS`.",
        "",
    ]
    return "\n".join(lines)


def load_release(
    path: Path,
    store: Store,
    *,
    workspace_projects: Path | None = None,
    media_dir: Path | None = None,
) -> dict[str, Any]:
    """Load a release (public + private) into ``store``: project, items, one gold snapshot.

    Images travel inside the public Parquet; they are written out as files under
    ``media_dir`` (default ``<release>/media-cache``, outside both halves and the checksums)
    for the items' media root. Returns ``{"project": Project, "snapshot": hash}``; fails if
    a checksum is off."""
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
    media_root = _media_root(path, rel, media_dir)
    snap = rel["gold_snapshot"]
    with store.begin() as conn:
        ids = _insert_items(conn, project, tabs, media_root)
        have = conn.execute(
            select(tables.gold_snapshots.c.hash).where(tables.gold_snapshots.c.hash == snap)
        ).first()
        if have is None:
            _insert_gold(conn, project, snap, tabs, ids, str(path))
    return {"project": project, "snapshot": snap, "items": len(ids)}


def _media_root(path: Path, rel: dict[str, Any], media_dir: Path | None) -> str:
    """Where the reloaded items' media live: the public folder (video files), else the
    images written out of the Parquet into ``media_dir``."""
    public = path / rel.get("public", "public")
    if rel.get("media_column", "video") == "video":
        return str(public.resolve())
    cache = Path(media_dir) if media_dir is not None else path / "media-cache"
    for key, imgs in read_images(public, rel["media_column"]).items():
        for name, data in imgs:
            dest = inside(cache, *name.split("/"), what=f"image of item {key!r}")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
    return str(cache.resolve())


def _insert_items(
    conn: Any, project: Project, tabs: dict[str, Path], media_root: str
) -> dict[str, int]:
    """Item key -> store id for every released item (existing items are reused)."""
    truth = (
        {r["item"]: r["truth"] for r in _read_table(tabs["simulated_truth"])}
        if "simulated_truth" in tabs
        else {}
    )
    ts = now()
    ids: dict[str, int] = {}
    for r in _read_table(tabs["entities"]):
        existing = conn.execute(
            select(tables.items.c.id).where(
                tables.items.c.project == project.name, tables.items.c.key == r["item"]
            )
        ).first()
        if existing is not None:
            ids[r["item"]] = int(existing[0])
            continue
        ids[r["item"]] = int(
            conn.execute(
                tables.items.insert().values(
                    project=project.name,
                    key=r["item"],
                    media_kind=project.media,
                    media=r["media"],
                    media_root=media_root,
                    content_hash=json_hash([r["item"], r["media"]]),
                    meta=r["meta"],
                    parent=r["parent"],
                    sim_truth=truth.get(r["item"]),
                    created_at=ts,
                    updated_at=ts,
                )
            ).inserted_primary_key[0]
        )
    return ids


def _insert_gold(
    conn: Any,
    project: Project,
    snap: str,
    tabs: dict[str, Path],
    ids: dict[str, int],
    release: str,
) -> None:
    """The release's gold snapshot (written by the audit's one gold writer, under the
    release's own hash), its decisions with provenance, and the items' arms."""
    ts = now()
    prov = {(r["item"], r["path"]): r for r in _read_table(tabs["provenance"])}
    arms: dict[int, str] = {}
    rows: list[tuple[int, str, Any, str, list[str]]] = []
    for t in _read_table(tabs["targets"]):
        p = prov[(t["item"], t["path"])]
        rows.append((ids[t["item"]], t["path"], t["value"], p["provenance"], p.get("sources", [])))
        if p.get("arm"):
            arms[ids[t["item"]]] = p["arm"]
    insert_snapshot(conn, snap, project.name, {"release": release}, {}, rows, ts)
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
