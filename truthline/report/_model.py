"""The report model shared by the audit and benchmark reports.

Both reports are built as a ``Report`` (sections of paragraphs, tables and figures) and
rendered by the same templates, so Markdown and HTML always carry the same numbers and
every table shows how many units each row rests on.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from truthline.report._glossary import Term, term


@dataclass
class Paragraph:
    """Running text; ``**bold**`` and `` `code` `` are the only inline markup."""

    text: str


@dataclass
class Table:
    """A table whose every row states its n (the units its numbers rest on).

    ``n`` has one entry per row. When ``n_column`` is one of ``columns`` that column
    already shows n; otherwise an ``n`` column is added after the first one. ``notes``
    go under the table (e.g. the thin-design warning); ``metrics`` names the glossary
    entries of the numbers it shows.
    """

    columns: list[str]
    rows: list[list[Any]]
    n: list[int | str | None]
    notes: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    n_column: str = "n"

    def __post_init__(self) -> None:
        if len(self.n) != len(self.rows):
            raise ValueError(f"table {self.columns}: {len(self.rows)} rows but {len(self.n)} n")
        for name in self.metrics:
            term(name)  # unknown metric names fail here, not in a reader's hands
        self.notes = [x for x in self.notes if x]

    @classmethod
    def from_records(
        cls, records: list[dict[str, Any]], *, n_column: str = "n", metrics: list[str] | None = None
    ) -> Table:
        """A table of plain row dicts (columns in first-seen order, values kept as given);
        each row's n is its ``n_column`` value."""
        cols = list(dict.fromkeys(k for r in records for k in r))
        rows = [[r.get(c) for c in cols] for r in records]
        return cls(cols, rows, [r.get(n_column) for r in records], [], metrics or [], n_column)

    def display(self) -> tuple[list[str], list[list[str]]]:
        """Header and cells as shown, the n column included."""
        if self.n_column in self.columns:
            return list(self.columns), [[str(c) for c in r] for r in self.rows]
        cols = [self.columns[0], self.n_column, *self.columns[1:]]
        rows = [
            [str(r[0]), "–" if n is None else str(n), *(str(c) for c in r[1:])]
            for r, n in zip(self.rows, self.n, strict=True)
        ]
        return cols, rows

    def records(self) -> list[dict[str, str]]:
        cols, rows = self.display()
        return [dict(zip(cols, r, strict=True)) for r in rows]


@dataclass
class Figure:
    """A plot embedded in the HTML as a data URI (the file stays self-contained);
    ``href`` is where a copy was saved, for the Markdown to link to."""

    title: str
    data: bytes
    mime: str = "image/png"
    href: str | None = None

    @property
    def data_uri(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    @classmethod
    def from_matplotlib(
        cls, fig: Any, title: str, *, save_to: Path | None = None, href: str | None = None
    ) -> Figure:
        """PNG bytes of ``fig`` (closed afterwards), optionally also saved to ``save_to``."""
        import matplotlib.pyplot as plt

        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        data = buf.getvalue()
        if save_to is not None:
            Path(save_to).write_bytes(data)
        return cls(title, data, "image/png", href)


Block = Paragraph | Table | Figure


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)
    level: int = 2
    metrics: list[str] = field(default_factory=list)
    """Glossary entries named in the section's text (tables list their own)."""

    def __post_init__(self) -> None:
        for name in self.metrics:
            term(name)

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]

    @property
    def figures(self) -> list[Figure]:
        return [b for b in self.blocks if isinstance(b, Figure)]


@dataclass
class Report:
    title: str
    sections: list[Section]
    simulated: bool = False
    intro: list[str] = field(default_factory=list)

    def metric_names(self) -> list[str]:
        """Every glossary entry the report shows, in order of first appearance."""
        seen: dict[str, None] = {}
        for s in self.sections:
            for name in s.metrics:
                seen.setdefault(name)
            for t in s.tables:
                for name in t.metrics:
                    seen.setdefault(name)
        return list(seen)

    @property
    def glossary(self) -> list[Term]:
        return sorted((term(n) for n in self.metric_names()), key=lambda t: t.label.lower())
