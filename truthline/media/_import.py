"""Importing media into a project: files → items, metadata CSV → strata, corrupt media skipped.

Items are identified by a key (path relative to the media root, without extension; a
folder for ``frames`` projects) and a content hash. Re-importing the same media is a
no-op; changed metadata is updated; an unreadable file is recorded with its reason and
the import goes on. Two files that would share a key (``a.jpg`` and ``a.png``), a metadata
CSV naming one item twice, and changed pixels under an item that already has labels,
predictions or results are refused before anything is written: media never change under
existing labels.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from truthline._limits import input_file
from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.store import Store, now, tables

IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}
VIDEO_EXTS = {".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".mpg", ".mpeg"}


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_image(path: Path) -> str | None:
    """None if the image decodes, else the reason it does not."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.verify()
        with Image.open(path) as im:
            im.load()
    except Exception as exc:
        return f"unreadable image: {type(exc).__name__}: {exc}"
    return None


def check_video(path: Path) -> str | None:
    import cv2

    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            return "unreadable video: cannot open the container"
        ok, frame = cap.read()
        if not ok or frame is None:
            return "unreadable video: no decodable frame"
    finally:
        cap.release()
    return None


@dataclass
class Candidate:
    key: str
    media: list[Path]
    meta: dict[str, Any] = field(default_factory=dict)
    parent: str | None = None
    sim_truth: Any = None


@dataclass
class ImportReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }


def discover(project: Project, path: Path, root: Path) -> list[Candidate]:
    """Find items under ``path`` according to the project's media kind."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    exts = VIDEO_EXTS if project.media == "video" else IMAGE_EXTS
    media = [p for p in files if p.suffix.lower() in exts]
    out: list[Candidate] = []
    if project.media == "frames":
        groups: dict[Path, list[Path]] = {}
        for p in media:
            groups.setdefault(p.parent, []).append(p)
        for folder, frames in sorted(groups.items()):
            key = folder.relative_to(root).as_posix() if folder != root else folder.name
            out.append(Candidate(key=key, media=sorted(frames)))
    else:
        for p in media:
            out.append(Candidate(key=p.relative_to(root).with_suffix("").as_posix(), media=[p]))
    _distinct_keys(out, root)
    return out


def _problems(what: str, problems: list[str]) -> str:
    """One problem as one line; several under a heading, at most 50 of them."""
    if len(problems) == 1:
        return f"{problems[0]} (nothing was imported)"
    head = "\n".join(problems[:50])
    more = f"\n... and {len(problems) - 50} more" if len(problems) > 50 else ""
    return f"{what} problems (nothing was imported):\n{head}{more}"


MAX_KEY = 500
"""items.key is String(500)."""


def _distinct_keys(candidates: list[Candidate], root: Path) -> None:
    """Every item key names exactly one item: ``a.jpg`` and ``a.png`` would both be ``a``."""
    seen: dict[str, Candidate] = {}
    problems: list[str] = []
    for c in candidates:
        shown = c.media[0].relative_to(root).as_posix() if c.media else c.key
        if _CONTROL.search(shown):
            problems.append(
                f"{shown!r}: the file name holds a line break or another control character; "
                "rename it"
            )
            continue
        if len(c.key) > MAX_KEY:
            problems.append(
                f"{shown}: its item key is {len(c.key)} characters (at most {MAX_KEY}); "
                "shorten the path below the media root"
            )
        first = seen.get(c.key)
        if first is None:
            seen[c.key] = c
            continue
        a = first.media[0].relative_to(root).as_posix()
        problems.append(
            f"{a} and {shown} would both be item {c.key!r}; rename one of them "
            "(keys are paths without the extension)"
        )
    if problems:
        raise TruthlineError(_problems("media", problems))


def read_metadata(
    csv_path: Path, project: Project, candidates: list[Candidate], root: Path
) -> None:
    """Attach metadata CSV rows to candidates; every problem names its row and column."""
    by_key = {c.key: c for c in candidates}
    by_path = {m.relative_to(root).as_posix(): c for c in candidates for m in c.media}
    problems: list[str] = []
    try:
        input_file(csv_path, "metadata CSV")
        fh = csv_path.open(newline="", encoding="utf-8-sig")
    except OSError as exc:
        raise TruthlineError(f"{csv_path}: cannot read the metadata CSV: {exc.strerror}") from None
    except TruthlineError as exc:
        raise TruthlineError(f"cannot read the metadata CSV: {exc}") from None
    try:
        with fh:
            _read_rows(fh, csv_path, project, by_key, by_path, root, problems)
    except UnicodeDecodeError as exc:
        raise TruthlineError(
            f"{csv_path}: not UTF-8 text (byte {exc.start}); save the metadata CSV as UTF-8"
        ) from None
    except csv.Error as exc:
        raise TruthlineError(f"{csv_path}: not a readable CSV file: {exc}") from None
    if problems:
        raise TruthlineError(_problems("metadata", problems))


def _read_rows(
    fh: Any,
    csv_path: Path,
    project: Project,
    by_key: dict[str, Candidate],
    by_path: dict[str, Candidate],
    root: Path,
    problems: list[str],
) -> None:
    first_row: dict[str, int] = {}
    reader = csv.DictReader(fh)
    if reader.fieldnames is None:
        raise TruthlineError(f"{csv_path}: empty file; a metadata CSV needs a header row")
    cols = list(reader.fieldnames)
    _header_ok(csv_path, cols)
    id_col = next(
        (c for c in ("key", "item", "item_id", "path", "file", "clip") if c in cols), None
    )
    if id_col is None:
        raise TruthlineError(
            f"{csv_path}: no identifying column; add one named 'key' or 'path' (relative to the media root)"
        )
    missing = [s for s in project.strata if s not in cols]
    if missing:
        raise TruthlineError(
            f"{csv_path}: missing strata column(s) {', '.join(missing)} declared in the project's 'strata'"
        )
    for rowno, row in enumerate(reader, start=2):
        if None in row:
            problems.append(f"{csv_path}: row {rowno}: more cells than the header has columns")
            continue
        nul = next((c for c, v in row.items() if "\0" in (v or "")), None)
        if nul is not None:
            problems.append(
                f"{csv_path}: row {rowno}, column {nul!r}: a NUL byte; is this a CSV text file?"
            )
            continue
        ident = (row.get(id_col) or "").strip()
        if not ident:
            problems.append(f"{csv_path}: row {rowno}, column {id_col!r}: empty")
            continue
        if _CONTROL.search(ident):
            problems.append(
                f"{csv_path}: row {rowno}, column {id_col!r}: {ident!r} holds a line break or "
                "another control character; no item key or file name may"
            )
            continue
        matches = _matches(ident, by_key, by_path)
        if len(matches) > 1:
            problems.append(
                f"{csv_path}: row {rowno}, column {id_col!r}: {ident!r} matches "
                f"{len(matches)} items ({', '.join(repr(c.key) for c in matches)}); "
                "give the file's path with its extension"
            )
            continue
        cand = matches[0] if matches else None
        if cand is None:
            problems.append(
                f"{csv_path}: row {rowno}, column {id_col!r}: no media item {ident!r} under {root}"
            )
            continue
        if cand.key in first_row:
            problems.append(
                f"{csv_path}: rows {first_row[cand.key]} and {rowno} both describe item "
                f"{cand.key!r}; keep one row per item"
            )
            continue
        first_row[cand.key] = rowno
        for s in project.strata:
            if not (row.get(s) or "").strip():
                problems.append(
                    f"{csv_path}: row {rowno}, column {s!r}: empty value for a declared stratum"
                )
        meta = {k: v for k, v in row.items() if k not in (id_col, "sim_truth") and v is not None}
        if "sim_truth" in row and (row["sim_truth"] or "").strip():
            try:
                cand.sim_truth = json.loads(row["sim_truth"])
            except json.JSONDecodeError as exc:
                problems.append(
                    f"{csv_path}: row {rowno}, column 'sim_truth': invalid JSON ({exc.msg})"
                )
        cand.meta = meta
        if project.cluster and meta.get(project.cluster):
            if len(meta[project.cluster]) > MAX_KEY:
                problems.append(
                    f"{csv_path}: row {rowno}, column {project.cluster!r}: a cluster id of "
                    f"{len(meta[project.cluster])} characters (at most {MAX_KEY})"
                )
            cand.parent = meta[project.cluster]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""Characters no item key or media file name may hold: a line break would split the key
across lines in every CSV, log and listing it is written to."""


def _header_ok(csv_path: Path, cols: list[str]) -> None:
    """Refuse a header a reader would silently mangle: two columns of one name (the later
    one wins) or a NUL byte (a binary or truncated file)."""
    first: dict[str, int] = {}
    for i, c in enumerate(cols, start=1):
        if "\0" in c:
            raise TruthlineError(
                f"{csv_path}: row 1, column {i}: a NUL byte in the header; is this a CSV text file?"
            )
        if c in first:
            raise TruthlineError(
                f"{csv_path}: row 1: column {c!r} is given twice (columns {first[c]} and {i}); "
                "rename or remove one"
            )
        first[c] = i


def _matches(
    ident: str, by_key: dict[str, Candidate], by_path: dict[str, Candidate]
) -> list[Candidate]:
    """Every item a metadata identifier may name: its key, its media path, or its path
    without the extension (``a.v1`` is item ``a.v1`` and, less its suffix, item ``a``)."""
    try:
        bare = Path(ident).with_suffix("").as_posix()
    except ValueError:  # no file name to take a suffix from ('.', '/')
        bare = ident
    found: list[Candidate] = []
    for c in (by_key.get(ident), by_path.get(ident), by_key.get(bare)):
        if c is not None and all(c is not f for f in found):
            found.append(c)
    return found


def import_items(
    store: Store,
    project: Project,
    path: str | Path,
    *,
    metadata: str | Path | None = None,
    media_root: str | Path | None = None,
    progress: bool = True,
) -> ImportReport:
    """Import every media item under ``path`` into ``project`` (idempotent)."""
    path = Path(path).resolve()
    if not path.exists():
        raise TruthlineError(f"{path}: no such file or folder")
    root = Path(media_root).resolve() if media_root else (path if path.is_dir() else path.parent)
    try:
        path.relative_to(root)
    except ValueError:
        raise TruthlineError(
            f"{path} is not inside the media root {root}; pass --media-root"
        ) from None
    candidates = discover(project, path, root)
    if not candidates:
        kinds = "videos" if project.media == "video" else "images"
        raise TruthlineError(f"{path}: no {kinds} found for a {project.media!r} project")
    if metadata:
        read_metadata(Path(metadata), project, candidates, root)

    report = ImportReport()
    checker = check_video if project.media == "video" else check_image
    from rich.progress import Progress

    checked: list[tuple[Candidate, list[str], str]] = []
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("checking media", total=len(candidates))
        for cand in candidates:
            bar.advance(task)
            bad = next(((m, r) for m in cand.media if (r := checker(m))), None)
            rel = [m.relative_to(root).as_posix() for m in cand.media]
            if bad:
                relp = bad[0].relative_to(root).as_posix()
                report.skipped.append((relp, bad[1]))
                _record_skip(store, project.name, relp, bad[1])
                continue
            hashes = [file_hash(m) for m in cand.media]
            chash = (
                hashes[0]
                if len(hashes) == 1
                else hashlib.sha256("".join(hashes).encode()).hexdigest()
            )
            checked.append((cand, rel, chash))
    _refuse_changed_media(store, project.name, checked)
    for cand, rel, chash in checked:
        _clear_skip(store, project.name, rel)  # readable now: drop an earlier skip record
        _upsert(store, project, cand, rel, str(root), chash, report)
    return report


# Rows that mean someone (a model, an annotator, a benchmark) already saw an item's media.
_USES = (
    ("annotations", tables.annotations),
    ("predictions", tables.predictions),
    ("model responses", tables.responses),
    ("Label Studio tasks", tables.ls_tasks),
    ("gold values", tables.gold),
    ("benchmark results", tables.run_results),
)


def _refuse_changed_media(
    store: Store, project: str, checked: list[tuple[Candidate, list[str], str]]
) -> None:
    """Changed pixels under an item that already has labels, predictions or results would
    silently change what those rows describe: refuse, naming the items, before any write."""
    t = tables.items
    with store.begin() as conn:
        old = {
            k: (i, h)
            for i, k, h in conn.execute(
                select(t.c.id, t.c.key, t.c.content_hash).where(t.c.project == project)
            )
        }
        changed = {
            old[c.key][0]: (c, rel) for c, rel, h in checked if c.key in old and old[c.key][1] != h
        }
        if not changed:
            return
        uses: dict[int, list[str]] = {}
        ids = list(changed)
        for what, table in _USES:
            for chunk in range(0, len(ids), 500):
                rows = conn.execute(
                    select(table.c.item_id, func.count())
                    .where(table.c.item_id.in_(ids[chunk : chunk + 500]))
                    .group_by(table.c.item_id)
                )
                for item_id, n in rows:
                    uses.setdefault(item_id, []).append(f"{n} {what}")
    if not uses:
        return  # nothing was built on the old media yet: replacing it loses nothing
    lines = [
        f"item {changed[i][0].key!r} ({', '.join(changed[i][1])}): its media changed, and it "
        f"already has {', '.join(u)}"
        for i, u in sorted(uses.items())
    ]
    head = "\n".join(lines[:20])
    more = f"\n... and {len(lines) - 20} more" if len(lines) > 20 else ""
    raise TruthlineError(
        f"media changed under existing labels (nothing was imported):\n{head}{more}\n"
        "restore the original files, or give the new media a new file name so they are "
        "imported as new items"
    )


def _record_skip(store: Store, project: str, path: str, reason: str) -> None:
    t = tables.skipped_media
    with store.begin() as conn:
        row = conn.execute(select(t.c.id).where(t.c.project == project, t.c.path == path)).first()
        if row:
            conn.execute(t.update().where(t.c.id == row[0]).values(reason=reason, created_at=now()))
        else:
            conn.execute(
                t.insert().values(project=project, path=path, reason=reason, created_at=now())
            )


def _clear_skip(store: Store, project: str, paths: list[str]) -> None:
    t = tables.skipped_media
    with store.begin() as conn:
        conn.execute(t.delete().where(t.c.project == project, t.c.path.in_(paths)))


def _upsert(
    store: Store,
    project: Project,
    cand: Candidate,
    rel: list[str],
    root: str,
    chash: str,
    report: ImportReport,
) -> None:
    t = tables.items
    ts = now()
    with store.begin() as conn:
        row = conn.execute(
            select(t).where(t.c.project == project.name, t.c.key == cand.key)
        ).first()
        values = dict(
            media_kind=project.media,
            media=rel,
            media_root=root,
            content_hash=chash,
            meta=cand.meta,
            parent=cand.parent,
        )
        if cand.sim_truth is not None:
            values["sim_truth"] = cand.sim_truth
        if row is None:
            conn.execute(
                t.insert().values(
                    project=project.name, key=cand.key, created_at=ts, updated_at=ts, **values
                )
            )
            report.added += 1
            return
        old = dict(row._mapping)
        if not cand.meta and old["meta"]:
            values["meta"] = old["meta"]  # re-import without a CSV keeps the metadata
            values["parent"] = old["parent"]
        if all(old.get(k) == v for k, v in values.items()):
            report.unchanged += 1
            return
        conn.execute(t.update().where(t.c.id == old["id"]).values(updated_at=ts, **values))
        report.updated += 1
