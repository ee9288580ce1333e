"""Labels made outside Label Studio (Prodigy, CVAT, spreadsheets) as one long table.

Columns: ``item, field, annotator, value`` (required) and ``arm, tier, shown_prediction,
model_version, lead_time, expert, flagged`` (optional). ``field`` is a top-level field
(``worker_count``, or ``workers`` with a JSON list) or an entity decision path
(``workers[P1].action``, keyed entity lists). Values are JSON or plain text and are
normalized by the field type. Every problem is reported with its line and column, and
nothing is written unless the whole table is valid. Re-importing replaces, never duplicates.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from truthline._limits import input_file
from truthline._names import annotator_problem
from truthline.errors import FieldValueError, TruthlineError
from truthline.fields import EntityList
from truthline.project import Project
from truthline.store import Store, json_hash, now, tables
from truthline.vocab import Arm

REQUIRED = ("item", "field", "annotator", "value")
OPTIONAL = ("arm", "tier", "shown_prediction", "model_version", "lead_time", "expert", "flagged")
ARMS = tuple(Arm)
"""The arms an import table may name (every arm)."""
_PATH = re.compile(r"^(?P<list>[A-Za-z_][\w]*)\[(?P<id>[^\]]+)\]\.(?P<sub>[A-Za-z_][\w]*)$")


class ImportTableError(TruthlineError):
    """Every problem of an import table, each with its line and column."""

    def __init__(self, file: str, problems: list[tuple[int, str, str]]):
        self.problems = problems
        shown = [f"{file}:{line}: column {col!r}: {msg}" for line, col, msg in problems[:50]]
        more = f"\n... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__("\n".join(shown) + more)


@dataclass
class ImportReport:
    rows: int = 0
    annotations: int = 0
    predictions: int = 0
    expert_reviews: int = 0
    items_created: int = 0
    replaced: int = 0
    arms_assigned: int = 0
    """Items given a blind/anchored arm assignment (blind when any tier-1 label is blind)."""
    annotators: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def _read(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    input_file(path, "label table")
    if path.suffix.lower() in (".parquet", ".pq"):
        import pandas as pd
        import pyarrow.parquet as pq

        try:
            _distinct_columns(path, list(pq.read_schema(path).names))
            df = pd.read_parquet(path)
        except TruthlineError:
            raise
        except Exception as exc:  # pyarrow raises its own types for a damaged file
            raise TruthlineError(
                f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]}); "
                "export the table again or save it as CSV"
            ) from exc
        cols = [str(c) for c in df.columns]
        _distinct_columns(path, cols)
        rows = []
        for k, rec in enumerate(df.to_dict(orient="records")):
            rows.append((k + 2, {c: _cell(v) for c, v in rec.items()}))
        return cols, rows
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            cols = list(reader.fieldnames or [])
            _distinct_columns(path, cols)
            rows = [(reader.line_num, dict(r)) for r in reader]
            _no_nul(path, cols, rows)
            return cols, rows
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise TruthlineError(
            f"{path}:{line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}); "
            "save the table as UTF-8 CSV"
        ) from exc
    except csv.Error as exc:
        raise TruthlineError(f"{path}: not a readable CSV table ({exc})") from exc


def _distinct_columns(path: Path, cols: list[str]) -> None:
    """Two columns of one name: a reader keeps only one of them, silently."""
    first: dict[str, int] = {}
    for i, c in enumerate(cols, start=1):
        if c in first:
            raise TruthlineError(
                f"{path}:1: column {c!r} is given twice (columns {first[c]} and {i}); "
                "rename or remove one"
            )
        first[c] = i


def _no_nul(path: Path, cols: list[str], rows: list[tuple[int, dict[str, str]]]) -> None:
    """A NUL byte is never text a label tool meant: a truncated or binary file."""
    if any("\0" in c for c in cols):
        raise TruthlineError(f"{path}:1: a NUL byte in the header; is this a CSV text file?")
    for line, r in rows:
        for col, v in r.items():
            if isinstance(v, str) and "\0" in v:
                raise TruthlineError(
                    f"{path}:{line}: column {col!r}: a NUL byte; is this a CSV text file?"
                )


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v != v:
        return ""
    if isinstance(v, list | dict):
        return json.dumps(v)
    if hasattr(v, "tolist"):
        return json.dumps(v.tolist())
    return str(v)


def _parse(text: str) -> Any:
    text = text.strip()
    if text == "":
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def import_table(
    store: Store, project: Project, path: Path, *, create_items: bool = False
) -> ImportReport:
    """Load a long label table into the store (all-or-nothing). Item keys the project does
    not have are refused unless ``create_items``: a typo would become a phantom item
    carrying a label."""
    cols, rows = _read(path)
    problems: list[tuple[int, str, str]] = []
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise ImportTableError(str(path), [(1, c, "required column is missing") for c in missing])
    known = (*REQUIRED, *OPTIONAL)
    unknown = [c for c in cols if c not in known]
    if unknown:  # a misspelt optional column (``expret``) would silently drop its values
        raise ImportTableError(
            str(path),
            [(1, c, f"unknown column (known: {', '.join(known)})") for c in unknown],
        )
    if not rows:
        raise TruthlineError(f"{path}: the table has a header but no rows; nothing to import")
    first_line: dict[tuple[str, str, str, str, str], int] = {}
    # (item, annotator, arm, tier) -> {"values": {field: value}, "entities": ..., meta}
    anns: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    preds: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    experts: dict[str, dict[str, Any]] = defaultdict(dict)

    def put(target: dict[Any, Any], line: int, col: str, fld: str, raw: str) -> None:
        try:
            m = _PATH.match(fld)
            if m:
                lst = project.field_types.get(m["list"])
                if not isinstance(lst, EntityList):
                    raise KeyError(f"{m['list']!r} is not an entity list of the project")
                if not lst.spec.key:
                    raise KeyError(
                        f"entity list {m['list']!r} has no key; give the whole list as JSON "
                        f"in field {m['list']!r}"
                    )
                ft = project.field(fld)
                val = ft.normalize(_parse(raw))
                ents = target.setdefault(("entities", m["list"]), {})
                ent = ents.setdefault(m["id"], {lst.spec.key: m["id"]})
                ent[m["sub"]] = val
            else:
                ft = project.field(fld)
                if "." in fld:
                    raise KeyError(f"use a decision path such as workers[P1].action, not {fld!r}")
                target[fld] = ft.normalize(_parse(raw))
        except KeyError as exc:
            known = ", ".join(project.field_types)
            problems.append((line, "field", f"{exc.args[0]} (top-level fields: {known})"))
        except FieldValueError as exc:
            problems.append((line, col, str(exc)))

    for line, r in rows:
        item = (r.get("item") or "").strip()
        who = (r.get("annotator") or "").strip()
        fld = (r.get("field") or "").strip()
        if not item:
            problems.append((line, "item", "empty item key"))
        if not who:
            problems.append((line, "annotator", "empty annotator"))
        elif (bad_who := annotator_problem(who)) is not None:  # too long, control characters
            problems.append((line, "annotator", bad_who))
        if not fld:
            problems.append((line, "field", "empty field"))
            continue
        arm = (r.get("arm") or "").strip() or (
            "anchored" if (r.get("shown_prediction") or "").strip() else "blind"
        )
        if arm not in ARMS:
            problems.append((line, "arm", f"{arm!r} is not one of {', '.join(ARMS)}"))
        tier_text = (r.get("tier") or "").strip() or ("2" if arm == "review" else "1")
        dup_key = (item, fld, who, arm, tier_text)
        if dup_key in first_line:  # last-wins would silently drop a label
            problems.append(
                (
                    line,
                    "field",
                    f"duplicate of line {first_line[dup_key]} (same item, field, annotator, "
                    "arm and tier); keep one of them",
                )
            )
        else:
            first_line[dup_key] = line
        if tier_text not in ("1", "2"):
            problems.append(
                (line, "tier", f"tier must be 1 (annotator) or 2 (expert), got {tier_text!r}")
            )
            tier_text = "1"
        lead_text = (r.get("lead_time") or "").strip()
        lead = None
        if lead_text:
            try:
                lead = float(lead_text)
                if lead < 0:
                    raise ValueError
            except ValueError:
                problems.append((line, "lead_time", f"expected seconds >= 0, got {lead_text!r}"))
        key = (item, who, arm, int(tier_text))
        a = anns.setdefault(key, {"lead": None, "flagged": False, "skipped": set(), "values": {}})
        a["lead"] = a["lead"] if lead is None else lead
        flag_text = (r.get("flagged") or "").strip().casefold()
        if flag_text in ("1", "true", "yes", "y"):
            a["flagged"] = True
        elif flag_text not in ("", "0", "false", "no", "n"):
            problems.append((line, "flagged", f"expected true/false, got {flag_text!r}"))
        value = r.get("value") or ""
        if value.strip() == "":
            a["skipped"].add(fld.split("[")[0])
        else:
            put(a["values"], line, "value", fld, value)
        shown = (r.get("shown_prediction") or "").strip()
        if shown:
            ver = (r.get("model_version") or "").strip() or "import"
            put(preds[(item, ver)], line, "shown_prediction", fld, shown)
            a["version"] = ver
        exp = (r.get("expert") or "").strip()
        if exp:
            put(experts[item], line, "expert", fld, exp)
    if problems:
        raise ImportTableError(str(path), sorted(problems))
    return _write(store, project, path, anns, preds, experts, create_items, len(rows))


def _assemble(target: dict[Any, Any]) -> dict[str, Any]:
    out = {k: v for k, v in target.items() if isinstance(k, str)}
    for k, ents in target.items():
        if isinstance(k, tuple) and k[0] == "entities":
            out[k[1]] = list(ents.values())
    return out


def _write(
    store: Store,
    project: Project,
    path: Path,
    anns: dict,
    preds: dict,
    experts: dict,
    create_items: bool,
    n_rows: int,
) -> ImportReport:
    t = tables
    rep = ImportReport(rows=n_rows)
    ts = now()
    src = path.stem
    keys = {k[0] for k in anns} | {k[0] for k in preds} | set(experts)
    ids = store.item_ids_by_key(project.name)
    missing = sorted(keys - set(ids))
    if missing and not create_items:
        shown = ", ".join(repr(k) for k in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise TruthlineError(
            f"{path}: {len(missing)} item key(s) not in project {project.name!r}: {shown}{more}; "
            "fix the keys, import the items first (truthline items import), or pass "
            "--create-items to create them as items without media"
        )
    store.upsert_project(project)
    with store.begin() as conn:
        if missing:
            conn.execute(
                t.items.insert(),
                [
                    dict(
                        project=project.name,
                        key=k,
                        media_kind="external",
                        media=[],
                        media_root="",
                        content_hash=json_hash(["external", project.name, k]),
                        meta={"source": f"import:{src}"},
                        created_at=ts,
                        updated_at=ts,
                    )
                    for k in missing
                ],
            )
            rep.items_created = len(missing)
    ids = store.item_ids_by_key(project.name)
    pred_ids: dict[tuple[str, str], int] = {}
    with store.begin() as conn:
        for (item, ver), target in preds.items():
            values = _assemble(target)
            row = conn.execute(
                select(t.predictions.c.id, t.predictions.c["values"]).where(
                    t.predictions.c.project == project.name,
                    t.predictions.c.item_id == ids[item],
                    t.predictions.c.model_version == ver,
                )
            ).first()
            if row:
                conn.execute(
                    t.predictions.update()
                    .where(t.predictions.c.id == row[0])
                    .values(values={**row[1], **values})
                )
                pred_ids[(item, ver)] = row[0]
            else:
                res = conn.execute(
                    t.predictions.insert().values(
                        project=project.name,
                        item_id=ids[item],
                        model_version=ver,
                        values=values,
                        status="parsed",
                        simulated=False,
                        created_at=ts,
                    )
                )
                pred_ids[(item, ver)] = int(res.inserted_primary_key[0])  # type: ignore[index]
            rep.predictions += 1
        batches: list[tuple[str, list[dict[str, Any]]]] = []
        for (item, who, arm, tier), a in anns.items():
            sid = f"import:{src}:{item}:{who}:{arm}:{tier}"
            ver = a.get("version")
            values = _assemble(a["values"])
            batches.append(
                (
                    sid,
                    _rows(
                        project,
                        ids[item],
                        who,
                        arm,
                        tier,
                        values,
                        a,
                        sid,
                        pred_ids.get((item, ver)),
                        ver,
                        ts,
                    ),
                )
            )
        for item, target in experts.items():
            sid = f"import:{src}:{item}:expert:review:2"
            a = {"lead": None, "flagged": False, "skipped": set()}
            batches.append(
                (
                    sid,
                    _rows(
                        project,
                        ids[item],
                        "expert",
                        "review",
                        2,
                        _assemble(target),
                        a,
                        sid,
                        None,
                        None,
                        ts,
                    ),
                )
            )
            rep.expert_reviews += 1
        for sid, rows in batches:
            gone = conn.execute(
                t.annotations.delete().where(t.annotations.c.source_id == sid)
            ).rowcount
            rep.replaced += 1 if gone else 0
            if rows:
                conn.execute(t.annotations.insert(), rows)
        rep.annotations = len(anns)
        rep.arms_assigned = _assign_arms(conn, project, path, anns, ids, ts)
    rep.annotators = sorted({k[1] for k in anns})
    return rep


def _assign_arms(
    conn: Any, project: Project, path: Path, anns: dict, ids: dict[str, int], ts: Any
) -> int:
    """Record each imported item's arm, as the audit and gold read it: ``blind`` when any
    tier-1 label of the item is blind (the rule finalize uses), else ``anchored``. Without
    it the blind gold slice would drop expert values on blind items. Existing assignments
    are permanent: one that disagrees with the table is an error naming the item."""
    t = tables
    arm_of: dict[str, str] = {}
    for item, _who, arm, tier in anns:
        if tier != 1 or arm not in ("blind", "anchored"):
            continue
        if arm == "blind" or item not in arm_of:
            arm_of[item] = arm
    if not arm_of:
        return 0
    have = dict(
        conn.execute(
            select(t.arm_assignments.c.item_id, t.arm_assignments.c.arm).where(
                t.arm_assignments.c.project == project.name
            )
        ).all()
    )
    clash = sorted(k for k, arm in arm_of.items() if have.get(ids[k], arm) != arm)
    if clash:
        k = clash[0]
        raise TruthlineError(
            f"{path}: item {k!r} is labelled in the {arm_of[k]} arm but was assigned to the "
            f"{have[ids[k]]} arm ({len(clash)} such item(s)); fix the arm column"
        )
    new = [
        dict(
            project=project.name,
            item_id=ids[k],
            arm=arm,
            seed=project.audit.seed,
            weight=1.0,
            created_at=ts,
        )
        for k, arm in sorted(arm_of.items())
        if ids[k] not in have
    ]
    if new:
        conn.execute(t.arm_assignments.insert(), new)
    return len(new)


def _rows(
    project: Project,
    item_id: int,
    who: str,
    arm: str,
    tier: int,
    values: dict[str, Any],
    a: dict[str, Any],
    sid: str,
    pred_id: int | None,
    version: str | None,
    ts: Any,
) -> list[dict[str, Any]]:
    base = dict(
        project=project.name,
        item_id=item_id,
        annotator=who,
        arm=arm,
        tier=tier,
        lead_time=a["lead"],
        flagged=a["flagged"],
        source="import",
        source_id=sid,
        shown_prediction_id=pred_id,
        model_version=version,
        origin="prediction" if pred_id else "manual",
        annotated_at=ts,
        stored_at=ts,
    )
    out = [dict(base, field_path=f, value=v, skipped=False) for f, v in values.items()]
    out += [
        dict(base, field_path=f, value=None, skipped=True)
        for f in sorted(a["skipped"])
        if f not in values
    ]
    return out
