"""Real photos for RealityBench's three matched documentation questions (seed §5, App. F,
Table 14): a user's own photos with their own ground truth join the proof-of-work benchmark
project beside the rendered frames, and model rankings on the two are compared.

* ``import_photos``: photos in a folder and a CSV (``file, answer`` and optional ``scene``,
  ``notes``) become items with ``source = real`` (renders carry ``source = render``, the
  project's ``[benchmark] transfer_column``); the answer is checked by the question's field
  type and becomes gold (provenance ``photo-gt``) in a snapshot that keeps every gold value
  already there, so renders and photos are scored in one run by the same field contract:
  tape reading within 1/8 in, the visible face right when it names any labelled side, the
  damage severity on the scale.
* ``photo_transfer``: per matched question, each model's score on rendered frames (on
  scorer-accepted frames, as documentation is scored) and on real photos, and their rank
  agreement: Spearman rho and Pearson r with p-values (as the paper reports them) and the
  rank-confidence-set intervals (METRICS.md §6).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from truthline.errors import FieldValueError, TruthlineError

SOURCE_COLUMN = "source"
REAL = "real"
RENDER = "render"
PHOTO_PROVENANCE = "photo-gt"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff")
GOLD_POLICY = {
    "source": "truthline.systems.realitybench._photos",
    "real photos": "the user's ground truth (photos CSV)",
    "kept": "every gold value of the project's latest snapshot",
}


@dataclass(frozen=True)
class Question:
    """A matched documentation question: its field, the rendered environment asking it, and
    how an answer on a real photo is judged (the field type's own comparison)."""

    name: str
    field: str
    environment: str
    criterion: str


QUESTIONS = {
    q.name: q
    for q in (
        Question("tape_reading", "tape_reading", "tape_gap", "within 1/8 inch"),
        Question("visible_face", "visible_face", "vehicle_face", "names any labelled side"),
        Question("damage_severity", "damage_severity", "damage_view", "on the severity scale"),
    )
}


def question(name: str) -> Question:
    if name not in QUESTIONS:
        raise TruthlineError(
            f"--question {name!r}: not a matched question; use {', '.join(QUESTIONS)}"
        )
    return QUESTIONS[name]


# -- reading the user's ground truth -------------------------------------------------------------
_FRACTION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)\s*[ -]\s*)?(\d+)\s*/\s*(\d+)\s*$")
_INCH = re.compile(r'\s*(?:"|in\.?|inch(?:es)?)\s*$', re.IGNORECASE)


def _tape_value(raw: str) -> float | str:
    """``12.5``, ``12 1/2``, ``12-1/2``, ``3/8``, with an optional ``in`` / ``"``."""
    text = _INCH.sub("", raw.strip())
    m = _FRACTION.match(text)
    if m:
        whole, num, den = m.groups()
        if int(den) == 0:
            raise ValueError(f"{raw!r}: a fraction with denominator 0")
        return float(whole or 0) + int(num) / int(den)
    return text


def parse_answer(q: Question, ft: Any, raw: str) -> Any:
    """The answer of one photo in the field's normal form; ValueError says why not."""
    if not raw.strip():
        raise ValueError("empty answer")
    value: Any = _tape_value(raw) if q.name == "tape_reading" else raw
    if q.name == "visible_face" and isinstance(value, str):
        value = [v for v in re.split(r"[;,|/+]| and ", value) if v.strip()]
    try:
        out = ft.normalize(value)
    except FieldValueError as exc:
        raise ValueError(str(exc).split(": ", 1)[-1]) from None
    if out is None or out == []:
        raise ValueError("empty answer")
    return out


@dataclass(frozen=True)
class PhotoRow:
    """One photo of the CSV: its file, item key, answer (normal form), scene and notes."""

    file: Path
    key: str
    answer: Any
    scene: str
    notes: str


def _safe(stem: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("_") or "photo"


def read_answers(csv_path: Path, photo_dir: Path, q: Question, project: Any) -> list[PhotoRow]:
    """The CSV's rows, every problem named by file, row and column (nothing is imported
    while one remains)."""
    if not csv_path.is_file():
        raise TruthlineError(f"{csv_path}: no answers CSV (columns: file, answer[, scene, notes])")
    ft = project.field(q.field)
    problems: list[str] = []
    rows: list[PhotoRow] = []
    seen: dict[str, int] = {}
    with csv_path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        cols = [c.strip() for c in reader.fieldnames or []]
        missing = [c for c in ("file", "answer") if c not in cols]
        if missing:
            raise TruthlineError(
                f"{csv_path}: missing column(s) {', '.join(missing)} (columns: file, answer"
                "[, scene, notes])"
            )
        for rowno, raw_row in enumerate(reader, start=2):
            row = {(k or "").strip(): (v or "").strip() for k, v in raw_row.items()}
            name = row.get("file", "")
            where = f"{csv_path}: row {rowno}"
            if not name:
                problems.append(f"{where}, column 'file': empty")
                continue
            path = photo_dir / name
            if not path.is_file():
                problems.append(f"{where}, column 'file': no photo {name!r} in {photo_dir}")
                continue
            if path.suffix.lower() not in IMAGE_SUFFIXES:
                problems.append(f"{where}, column 'file': {name!r} is not an image")
                continue
            key = f"{REAL}/{q.name}/{_safe(Path(name).with_suffix('').as_posix())}"
            if key in seen:
                problems.append(f"{where}, column 'file': {name!r} repeats row {seen[key]}")
                continue
            seen[key] = rowno
            try:
                answer = parse_answer(q, ft, row.get("answer", ""))
            except ValueError as exc:
                problems.append(f"{where}, column 'answer' ({q.field}): {exc}")
                continue
            scene = row.get("scene") or Path(name).stem
            rows.append(PhotoRow(path, key, answer, f"{REAL}:{scene}", row.get("notes", "")))
    if problems:
        head = "\n".join(problems[:50])
        more = f"\n... and {len(problems) - 50} more" if len(problems) > 50 else ""
        raise TruthlineError(f"photo answers (nothing was imported):\n{head}{more}")
    if not rows:
        raise TruthlineError(f"{csv_path}: no photo rows")
    return rows


# -- import ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PhotoImport:
    """What ``import_photos`` did: the items (keys) of one question and the gold snapshot
    holding them beside the project's earlier gold."""

    question: str
    field: str
    project: str
    keys: list[str]
    scenes: int
    gold_snapshot: str
    gold_values: int

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "items": len(self.keys)}


def latest_gold_rows(store: Any, project: str) -> list[tuple[int, str, Any, str]]:
    """Every gold row of the project's latest snapshot (none when it has no gold)."""
    from sqlalchemy import select

    from truthline.store import resolve_snapshot, tables

    g = tables.gold
    with store.begin() as conn:
        snap = resolve_snapshot(conn, project, None)
        if snap is None:
            return []
        rows = conn.execute(
            select(g.c.item_id, g.c.field_path, g.c.value, g.c.provenance).where(
                g.c.snapshot == snap
            )
        ).all()
    return [(int(i), str(f), v, str(p)) for i, f, v, p in rows]


def import_photos(
    ws: Any,
    photo_dir: Path | str,
    question_name: str,
    *,
    answers: Path | str | None = None,
    project: str | None = None,
) -> PhotoImport:
    """Import real photos for one matched question into the proof-of-work project (the
    template when missing): items keyed ``real/QUESTION/STEM`` with ``source = real``, the
    matched environment, scene (the CSV's, else the photo) as cluster, and the answer as
    gold beside every gold value already there. Idempotent; a re-import replaces that
    question's answers."""
    from truthline.audit._gold import write_known_truth
    from truthline.media import import_items
    from truthline.systems.realitybench._pow import BENCH_PROJECT

    q = question(question_name)
    photo_dir = Path(photo_dir)
    if not photo_dir.is_dir():
        raise TruthlineError(f"{photo_dir}: no such folder of photos")
    name = project or BENCH_PROJECT
    proj = (
        ws.init_project(BENCH_PROJECT, name=name)
        if name not in ws.project_names()
        else ws.registered(name)
    )
    if q.field not in proj.field_types:
        raise TruthlineError(f"project {name!r} has no field {q.field!r} for --question {q.name}")
    rows = read_answers(Path(answers) if answers else photo_dir / "answers.csv", photo_dir, q, proj)
    root = Path(ws.media_dir) / name
    dest_dir = root / REAL / q.name
    meta_rows = []
    for r in rows:
        dest = root / f"{r.key}{r.file.suffix.lower()}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists() or dest.read_bytes() != r.file.read_bytes():
            shutil.copyfile(r.file, dest)
        meta_rows.append(
            {
                "key": r.key,
                "environment": q.environment,
                "variant": REAL,
                "scene": r.scene,
                SOURCE_COLUMN: REAL,
                "question": q.name,
                "photo": r.file.name,
                "notes": r.notes,
                "sim_truth": json.dumps({q.field: r.answer}),
            }
        )
    csv_path = Path(ws.projects_dir) / name / f"photos-{q.name}.csv"
    pd.DataFrame(meta_rows).to_csv(csv_path, index=False)
    import_items(ws.store, proj, dest_dir, metadata=csv_path, media_root=root, progress=False)
    ids = ws.store.item_ids_by_key(name)
    prefix = f"{REAL}/{q.name}/"
    # this question's photos are replaced as a whole: one dropped from the CSV loses its gold
    stale = {i for k, i in ids.items() if k.startswith(prefix)}
    kept = [row for row in latest_gold_rows(ws.store, name) if row[0] not in stale]
    values = kept + [(ids[r.key], q.field, r.answer, PHOTO_PROVENANCE) for r in rows]
    snap = write_known_truth(ws.store, name, values, dict(GOLD_POLICY))
    return PhotoImport(
        q.name, q.field, name, [r.key for r in rows], len({r.scene for r in rows}), snap,
        len(values),
    )  # fmt: skip


# -- rank transfer per question ----------------------------------------------------------------------
@dataclass(frozen=True)
class QuestionTransfer:
    """Rank transfer between rendered frames and real photos for one matched question:
    ``result`` is the rank-transfer metric's result (Spearman rho as ``value`` with its
    interval, Pearson r, p-values, per-model scores and counts); ``note`` when it could not
    be computed."""

    question: str
    field: str
    result: dict[str, Any]

    @property
    def note(self) -> str | None:
        return self.result.get("note")

    def as_dict(self) -> dict[str, Any]:
        from truthline.benchmark._registry import plain

        return {"question": self.question, "field": self.field, **plain(self.result)}


def _source(meta: Any) -> str:
    """An item's source: renders imported before ``source`` was written count as renders."""
    return str((meta or {}).get(SOURCE_COLUMN) or RENDER)


def question_transfer(v: Any, q: Question) -> QuestionTransfer:
    """Rank transfer for one question on a run view: each model's documentation score on
    the question's field over scorer-accepted rendered frames, and over real photos."""
    from truthline.benchmark._across import ranked_models, set_scores, transfer
    from truthline.systems.realitybench._conditional import any_match_fields, doc_correct, verdicts

    count = ranked_models(v)
    labels = count.models
    accepted: set[str] = set()
    for lab in labels:
        ok = verdicts(v.entries[lab].decisions)
        accepted |= {i for i, yes in ok.items() if yes}
    any_fields = any_match_fields(v.project)

    def score(d: pd.DataFrame) -> np.ndarray:
        return doc_correct(d, any_fields)

    def keep(src: str) -> Any:
        def mask(b: pd.DataFrame) -> pd.Series:
            on = (b["field"] == q.field) & (b["meta"].map(_source) == src)
            if src == RENDER:  # documentation counts on scorer-accepted frames only
                on &= b["item_id"].astype(str).isin(accepted)
            return on

        return mask

    def has(lab: str, src: str) -> bool:
        d = v.entries[lab].decisions
        return bool(len(d)) and bool(keep(src)(d).any())

    both = [lab for lab in labels if has(lab, RENDER) and has(lab, REAL)]
    sides = [
        set_scores(v, both, src, keep(src), seed_offset=i, score=score)
        for i, src in enumerate((RENDER, REAL))
    ]
    res = transfer(sides[0], sides[1], count, seed=v.rs.seed, level=v.rs.level)
    return QuestionTransfer(q.name, q.field, {**res, "criterion": q.criterion})


def photo_transfer(
    store: Any,
    project: Any,
    run_id: str,
    questions: Sequence[str] | None = None,
    *,
    resamples: int | None = None,
) -> list[QuestionTransfer]:
    """Rank transfer between rendered frames and real photos for each matched question (all
    three unless named) in one run that answered both (Table 14)."""
    from truthline.benchmark._across import run_view

    qs = [question(n) for n in (questions or list(QUESTIONS))]
    v = run_view(store, project, run_id, resamples=resamples)
    return [question_transfer(v, q) for q in qs]
