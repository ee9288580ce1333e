"""Reading the per-parent annotation records (spec §3) with errors that name file, line and field.

The compiler trusts nothing it reads: every id a pass-4 observation points to must exist in
passes 1-3 of the same record, and a record that still carries pass 5 (solution alignment)
is refused, because pass 5 never supplies or corrects targets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError


class RecordError(TruthlineError):
    """An annotation record is malformed; the message names file, line, parent and field."""


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file; a bad line is named by number."""
    path = Path(path)
    if not path.is_file():
        raise RecordError(f"{path}: no such file")
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise RecordError(f"{path}:{n}: not JSON ({exc}); fix or remove the line") from None
            if not isinstance(row, dict):
                raise RecordError(f"{path}:{n}: a JSON object per line is expected")
            rows.append(row)
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write atomically (a crash leaves the old file, never half a new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    tmp.replace(path)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordError(f"{path}: no such file") from None
    except ValueError as exc:
        raise RecordError(f"{path}: not JSON ({exc})") from None


def _need(rec: dict, dotted: str, where: str, kind: type | tuple[type, ...]) -> Any:
    cur: Any = rec
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise RecordError(f"{where}: field {dotted} is missing")
        cur = cur[part]
    if not isinstance(cur, kind):
        raise RecordError(f"{where}: field {dotted} has the wrong type ({type(cur).__name__})")
    return cur


def check_record(rec: dict[str, Any], where: str) -> None:
    """Refuse a record the compiler cannot trust (``where`` is e.g. ``file:line``)."""
    pid = rec.get("parent_id")
    where = f"{where} (parent {pid})" if pid else where
    if "pass5" in rec:
        raise RecordError(
            f"{where}: field pass5 is present; solution alignment never feeds the compiler. "
            "Keep pass 5 in its own file and compile from passes 1-4 only"
        )
    _need(rec, "parent_id", where, str)
    _need(rec, "text", where, str)
    for f in ("image_id", "path"):
        _need(rec, f"image.{f}", where, str)
    for f in ("width", "height"):
        _need(rec, f"image.{f}", where, (int, float))
    prims = {p.get("prim_id"): p for p in _need(rec, "pass1.primitives", where, list)}
    ents = {e.get("entity_id"): e for e in _need(rec, "pass2.entities", where, list)}
    mentions = {m.get("mention_id"): m for m in _need(rec, "pass3.text_mentions", where, list)}
    for i, p in enumerate(prims.values()):
        bbox = (p.get("geometry") or {}).get("bbox")
        if not (isinstance(bbox, list) and len(bbox) == 4):
            raise RecordError(
                f"{where}: field pass1.primitives[{i}].geometry.bbox: 4 numbers expected"
            )
    for i, e in enumerate(ents.values()):
        for v in e.get("view_prim_ids") or []:
            if v not in prims:
                raise RecordError(
                    f"{where}: field pass2.entities[{i}].view_prim_ids: unknown primitive {v!r}"
                )
    text = rec["text"]
    for i, m in enumerate(mentions.values()):
        s, e = m.get("start"), m.get("end")
        if not (isinstance(s, int) and isinstance(e, int) and text[s:e] == m.get("text")):
            raise RecordError(
                f"{where}: field pass3.text_mentions[{i}]: text[start:end] != text "
                f"({m.get('text')!r}); the exact-span invariant is broken"
            )
    for i, o in enumerate(_need(rec, "pass4.observations", where, list)):
        at = f"{where}: field pass4.observations[{i}]"
        subj = o.get("subject") or {}
        if subj.get("kind") == "image_primitive" and subj.get("prim_id") not in prims:
            raise RecordError(f"{at}.subject.prim_id: unknown primitive {subj.get('prim_id')!r}")
        if subj.get("kind") == "text_span" and subj.get("mention_id") not in mentions:
            raise RecordError(
                f"{at}.subject.mention_id: unknown mention {subj.get('mention_id')!r}"
            )
        if subj.get("kind") not in ("image_primitive", "text_span"):
            raise RecordError(f"{at}.subject.kind: image_primitive or text_span expected")
        if o.get("entity_id") not in ents:
            raise RecordError(f"{at}.entity_id: unknown entity {o.get('entity_id')!r}")


def read_records(path: Path) -> list[dict[str, Any]]:
    """Annotation records, each checked; two records of one parent are refused."""
    rows = read_jsonl(path)
    seen: dict[str, int] = {}
    for n, rec in enumerate(rows, start=1):
        check_record(rec, f"{path}:{n}")
        if rec["parent_id"] in seen:
            raise RecordError(
                f"{path}:{n}: parent {rec['parent_id']} already has a record on line "
                f"{seen[rec['parent_id']]}; keep one record per parent"
            )
        seen[rec["parent_id"]] = n
    return rows
