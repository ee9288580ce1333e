"""A user's own problems (not generated): import, and pass annotations loaded from files.

``import_problems`` reads a table (CSV or JSONL) with one row per problem:
``problem_id`` (or ``parent_id``), ``image`` (a file path, relative to the table's folder
or ``image_root``), ``text``, and optionally ``question`` and ``domain``. Each diagram is
copied into ``<work>/images/`` (converted to PNG, its size measured) and the parents are
written to ``<work>/annotations.jsonl``, the input of ``passes push``. No answer or solution
column is read: the passes are answer-blind. The parent id is opaque
(``usr-<sha256(problem_id)[:10]>``; the user's id is kept as ``source_id`` on the private
side): a user's id is often a word of the problem text ("pulley"), and the leak check
refuses any parent id that reaches a public file. For the same reason annotators give
entities neutral keys (``e1``, ``e2``): an entity key that is a word of the text is refused.

``load_passes`` brings passes 1-3 and the pass-4 review in from files instead of a Label
Studio server: Label Studio's JSON export of the two projects (a list of tasks with their
``annotations``), or the same with one entry per annotation (``parent_id``,
``annotator``, ``result``). A task names its parent by ``parent_id`` (top level or in
``data``; the user's problem id or the opaque one) or by its ``problem_text`` when that is
unique. Results go through the same
converter and the same consolidation as ``passes pull``: an observation is verified only
when the annotator and a different reviewer both hold it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.systems.physalign._passes import (
    DRAFT,
    INPUT,
    PULLED,
    _consolidate,
    _problems,
    results_to_record,
)
from truthline.systems.physalign._records import read_jsonl, write_jsonl

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def import_problems(table: Path, work: Path, image_root: Path | None = None) -> dict[str, Any]:
    """A user's problem table -> ``<work>/annotations.jsonl`` and ``<work>/images/``."""
    from PIL import Image, UnidentifiedImageError

    from truthline.systems.physalign._reverify import read_rows

    table, work = Path(table), Path(work)
    root = Path(image_root) if image_root is not None else table.parent
    rows = read_rows(table)
    if not rows:
        raise TruthlineError(f"{table}: no problems")
    if (work / INPUT).is_file():
        raise TruthlineError(
            f"{work / INPUT}: this work folder already holds problems; import into a new --out"
        )
    (work / "images").mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    recs = []
    domains: dict[str, int] = {}
    for n, r in enumerate(rows, start=1):
        at = f"{table}:{n}"
        pid = str(r.get("problem_id") or r.get("parent_id") or "")
        if not _ID.match(pid):
            raise TruthlineError(
                f"{at}: field problem_id {pid!r}: letters, digits, '.', '_' or '-' (64 at most)"
            )
        if pid in seen:
            raise TruthlineError(f"{at}: field problem_id {pid!r} is already on row {seen[pid]}")
        seen[pid] = n
        for f in ("image", "text"):
            if not r.get(f):
                raise TruthlineError(f"{at}: field {f} is missing")
        src = root / str(r["image"])
        try:
            with Image.open(src) as im:
                im.load()
                rgb = im.convert("RGB")
        except FileNotFoundError:
            raise TruthlineError(f"{at}: field image: {src} does not exist") from None
        except (UnidentifiedImageError, OSError) as exc:
            raise TruthlineError(f"{at}: field image: {src} is not an image ({exc})") from None
        parent = "usr-" + hashlib.sha256(pid.encode()).hexdigest()[:10]
        rel = f"images/{parent}.png"
        rgb.save(work / rel, format="PNG")
        rec: dict[str, Any] = {
            "parent_id": parent,
            "source_id": pid,
            "image": {
                "image_id": f"{parent}-img",
                "path": rel,
                "width": rgb.width,
                "height": rgb.height,
            },
            "text": str(r["text"]),
        }
        for k in ("question", "domain"):
            if r.get(k):
                rec[k] = str(r[k])
        domains[rec.get("domain", "none")] = domains.get(rec.get("domain", "none"), 0) + 1
        recs.append(rec)
    write_jsonl(work / INPUT, recs)
    return {"problems": len(recs), "domains": domains, "file": str(work / INPUT)}


def _entries(path: Path) -> list[dict[str, Any]]:
    """One ``{parent_id?, problem_text?, annotator, result, created_at}`` per annotation."""
    path = Path(path)
    if not path.is_file():
        raise TruthlineError(f"{path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise TruthlineError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, list):
        raise TruthlineError(f"{path}: a JSON list of tasks (a Label Studio export) is expected")
    out = []
    for i, t in enumerate(data):
        if not isinstance(t, dict):
            raise TruthlineError(f"{path}: task {i}: a JSON object is expected")
        d = t.get("data") or {}
        anns = t.get("annotations") if "annotations" in t else [t]
        for a in anns or []:
            if a.get("was_cancelled"):
                continue
            by = a.get("annotator") or a.get("completed_by")
            if isinstance(by, dict):
                by = by.get("email")
            if not by:
                raise TruthlineError(
                    f"{path}: task {i}: field annotator is missing (who made the annotation)"
                )
            out.append(
                {
                    "where": f"{path}: task {i}",
                    "parent_id": t.get("parent_id") or d.get("parent_id"),
                    "problem_text": d.get("problem_text"),
                    "annotator": str(by),
                    "result": a.get("result") or [],
                    "created_at": str(a.get("created_at") or ""),
                }
            )
    return out


def _by_parent(
    path: Path, problems: dict[str, dict[str, Any]], alias: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """The latest annotation of each parent in a file (``alias``: user id -> parent id)."""
    by_text: dict[str, list[str]] = {}
    for pid, p in problems.items():
        by_text.setdefault(p["text"], []).append(pid)
    got: dict[str, dict[str, Any]] = {}
    for e in _entries(path):
        pid = alias.get(str(e["parent_id"]), e["parent_id"])
        if pid is None and e["problem_text"] is not None:
            match = by_text.get(e["problem_text"], [])
            if len(match) != 1:
                raise TruthlineError(
                    f"{e['where']}: its problem_text matches {len(match)} problems; give parent_id"
                )
            pid = match[0]
        if pid not in problems:
            raise TruthlineError(f"{e['where']}: field parent_id: no problem {pid!r} in this work")
        if pid not in got or e["created_at"] >= got[pid]["created_at"]:
            got[pid] = e
    return got


def load_passes(work: Path, observe: Path, review: Path | None = None) -> dict[str, Any]:
    """Passes 1-3 (and pass 4) from files -> the work folder's draft and pulled records."""
    work = Path(work)
    problems = {p["parent_id"]: p for p in _problems(work)}
    source = {
        r["parent_id"]: str(r["source_id"]) for r in read_jsonl(work / INPUT) if r.get("source_id")
    }
    alias = {v: k for k, v in source.items()}
    drafts: dict[str, dict[str, Any]] = {}
    for pid, e in sorted(_by_parent(observe, problems, alias).items()):
        drafts[pid] = results_to_record(problems[pid], e["result"]) | {
            "annotated_by": e["annotator"]
        }
        if pid in source:
            drafts[pid]["source_id"] = source[pid]
    write_jsonl(work / DRAFT, [drafts[p] for p in sorted(drafts)])
    out: dict[str, Any] = {
        "observe": {"parents": len(problems), "annotated": len(drafts), "file": str(work / DRAFT)}
    }
    if review is None:
        return out
    final = []
    n_verified = n_disputed = 0
    for pid, e in sorted(_by_parent(review, problems, alias).items()):
        if pid not in drafts:
            raise TruthlineError(f"{e['where']}: parent {pid} has no pass 1-3 annotation to review")
        annotator = drafts[pid]["annotated_by"]
        if e["annotator"] == annotator:
            raise TruthlineError(
                f"{e['where']}: parent {pid} was annotated and reviewed by {annotator}; pass 4 "
                "needs a second person"
            )
        reviewed = results_to_record(problems[pid], e["result"])
        rec = _consolidate(drafts[pid], reviewed, annotator, e["annotator"])
        if pid in source:
            rec["source_id"] = source[pid]
        obs = rec["pass4"]["observations"]
        n_verified += sum(o["review"]["status"] == "verified" for o in obs)
        n_disputed += sum(o["review"]["status"] == "disputed" for o in obs)
        rec["image"] = dict(
            rec["image"], path=os.path.relpath(work / rec["image"]["path"], (work / PULLED).parent)
        )
        final.append(rec)
    write_jsonl(work / PULLED, final)
    out["review"] = {
        "reviewed": len(final),
        "verified": n_verified,
        "disputed": n_disputed,
        "file": str(work / PULLED),
    }
    return out
