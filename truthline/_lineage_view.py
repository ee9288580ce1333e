"""``truthline items show``: a value's lineage (``truthline.store.Lineage``) as rich tables,
one per step of the loop, in the order the value went through them."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from truthline.store import Lineage


def _v(value: Any) -> str:
    """A stored value in one short line (JSON, so a string and a number stay apart)."""
    if value is None:
        return "-"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _t(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S") if at else "-"


def _table(console: Console, title: str, columns: list[str], rows: list[list[str]]) -> None:
    if not rows:
        console.print(f"[dim]{title}: none[/]")
        return
    table = Table(title=title, title_justify="left")
    for c in columns:  # fold, never cut: a lineage is read to the last character
        table.add_column(c, overflow="fold")
    for r in rows:
        table.add_row(*r)
    console.print(table)


def _annotation_rows(lin: Lineage) -> list[list[str]]:
    rows = []
    for a in lin.annotations:
        state = "deleted " + _t(a.deleted_at) if a.deleted_at else ("skipped" if a.skipped else "")
        kept = "" if a.kept is None else ("kept" if a.kept else "changed")
        rows.append(
            [
                a.annotator,
                f"{a.arm} / tier {a.tier}",
                a.field_path,
                _v(a.value),
                f"r{a.revision}",
                " ".join(x for x in (kept, state) if x) or "-",
                _t(a.stored_at),
                a.task_url or a.source_id,
            ]
        )
        for e in reversed(a.edits):
            rows.append(
                [
                    "",
                    "",
                    "  earlier",
                    _v(e.value),
                    f"r{e.revision}",
                    "skipped" if e.skipped else "-",
                    f"replaced {_t(e.replaced_at)}",
                    "",
                ]
            )
    return rows


def render_lineage(console: Console, lin: Lineage) -> None:
    """Print the lineage: prediction, exposure, annotations with edits, review, gold, scores."""
    console.print(
        f"[bold]{lin.project}[/] item [bold]{lin.key}[/] (id {lin.item_id})"
        + (f", field [bold]{lin.field}[/]" if lin.field else ", every field")
    )
    _table(
        console,
        "Prefill predictions",
        ["model version", "value", "status", "response", "at"],
        [
            [p.model_version, _v(p.value), p.status, str(p.response_id or "-"), _t(p.created_at)]
            for p in lin.predictions
        ],
    )
    _table(
        console,
        "Exposure (what each annotator was shown)",
        ["annotator", "arm", "shown prediction", "other", "Label Studio task", "at"],
        [
            [
                e.annotator,
                e.arm,
                f"{e.prediction_id} ({e.model_version})" if e.prediction_id else "none (blind)",
                _v(e.shown) if e.shown else "-",
                e.task_url or "-",
                _t(e.at),
            ]
            for e in lin.exposures
        ],
    )
    _table(
        console,
        "Annotations and their edits",
        ["annotator", "arm", "field", "value", "rev", "state", "stored", "source"],
        _annotation_rows(lin),
    )
    _table(
        console,
        "Review and adjudication",
        ["kind", "field", "status", "reason", "raised"],
        [[r.kind, r.field_path, r.status, r.reason, _t(r.created_at)] for r in lin.reviews],
    )
    _table(
        console,
        "Gold",
        ["snapshot", "field", "value", "provenance", "sources"],
        [
            [
                g.snapshot[:10] + (" (latest)" if g.latest else ""),
                g.field_path,
                _v(g.value),
                g.provenance,
                ", ".join(map(str, g.sources)) or "-",
            ]
            for g in lin.gold
        ],
    )
    _table(
        console,
        "Benchmark scores",
        ["run", "model", "decision", "gold", "answer", "score"],
        [
            [
                s.run_id
                + "".join(f" [{x}]" for x in (s.variant, s.condition) if x and x != "base"),
                s.model,
                s.path,
                _v(s.gold),
                _v(s.pred),
                "-" if s.credit is None else f"{s.credit:g}" + (" ok" if s.correct else " wrong"),
            ]
            for s in lin.scores
        ],
    )
