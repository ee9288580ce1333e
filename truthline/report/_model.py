"""The report model shared by the audit and benchmark reports, the paper systems' report
sections and the dashboards' plug-in sections.

Every report is built as a ``Report`` (``Section``s of paragraphs, tables and figures) and
rendered by the same templates, so Markdown and HTML always carry the same numbers and
every table shows how many units each row rests on. ``Section.of`` builds the usual
section from plain data: a text, a figure, a table of row dicts with each row's n, and the
results its intervals came from (their thin-design warnings become one note).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable, Sequence
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
    data: list[dict[str, Any]] = field(default_factory=list, repr=False, compare=False)
    """The rows as given to ``from_rows`` (plain values, before they became cells): what a
    dashboard puts in a dataframe."""

    def __post_init__(self) -> None:
        if len(self.n) != len(self.rows):
            raise ValueError(f"table {self.columns}: {len(self.rows)} rows but {len(self.n)} n")
        for name in self.metrics:
            term(name)  # unknown metric names fail here, not in a reader's hands
        self.notes = [x for x in self.notes if x]

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[dict[str, Any]],
        *,
        n: Sequence[int | str | None] | None = None,
        metrics: Iterable[str] = (),
        n_column: str = "n",
    ) -> Table:
        """A table of plain row dicts (columns in first-seen order) shown as report cells
        (``cell``: floats to 3 decimals, ``None`` as ``—``); ``n`` is each row's n (``None``:
        not recorded; the rows' n are then all unknown). ``data`` keeps the rows as given."""
        cols = list(dict.fromkeys(k for r in rows for k in r))
        cells = [[cell(r.get(c)) for c in cols] for r in rows]
        ns: list[int | str | None] = list(n) if n else [None] * len(cells)
        return cls(cols, cells, ns, [], list(metrics), n_column, data=list(rows))

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


def cell(v: Any) -> str:
    """A table cell as a report shows it (the renderer escapes it for Markdown or HTML)."""
    if isinstance(v, float):
        return f"{v:.3f}"
    return "—" if v is None else str(v)


Block = Paragraph | Table | Figure


@dataclass
class Section:
    """One section of a report (and of a dashboard's plug-in sections, and what
    ``benchmark across`` prints): its blocks in order.

    ``sources`` is the plain data the section's intervals came from (CI dicts anywhere
    inside): their thin-design warnings are shown as one note under its first table, or as
    a last paragraph when it has none. ``Section.of`` builds the usual section; ``text``,
    ``table``, ``n`` and ``n_column`` read that shape back.
    """

    title: str
    blocks: list[Block] = field(default_factory=list)
    level: int = 2
    metrics: list[str] = field(default_factory=list)
    """Glossary entries of the numbers the section shows (its tables may list their own)."""
    sources: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.model()

    @classmethod
    def of(
        cls,
        title: str,
        text: str = "",
        table: Sequence[dict[str, Any]] = (),
        figure: Figure | None = None,
        sources: Iterable[Any] = (),
        *,
        n: Sequence[int | str | None] | None = None,
        metrics: Iterable[str] = (),
        n_column: str = "n",
        level: int = 2,
    ) -> Section:
        """A paragraph of ``text``, the ``figure`` (titled as the section) and a table of the
        row dicts ``table`` with each row's ``n`` (``Table.from_rows``); the thin-design note
        of ``sources`` goes under the table."""
        metrics = list(metrics)
        blocks: list[Block] = [Paragraph(text)] if text else []
        if figure is not None:
            figure.title = title
            blocks.append(figure)
        if table:
            blocks.append(Table.from_rows(table, n=n, metrics=metrics, n_column=n_column))
        return cls(title, blocks, level, metrics, list(sources))

    def model(self) -> Section:
        """The section itself, its metric names checked against the glossary (again: call it
        after changing ``metrics``)."""
        for name in self.metrics:
            term(name)
        return self

    @property
    def note(self) -> str:
        """The thin-design note of ``sources`` (``""`` when every design is adequate)."""
        from truthline.stats import design_note

        return design_note(self.sources)

    @property
    def tables(self) -> list[Table]:
        return [b for b in self.blocks if isinstance(b, Table)]

    @property
    def figures(self) -> list[Figure]:
        return [b for b in self.blocks if isinstance(b, Figure)]

    @property
    def figure(self) -> Figure | None:
        """Its first figure (``None``: none)."""
        f = self.figures
        return f[0] if f else None

    @property
    def text(self) -> str:
        """The text of its first paragraph (``""``: none)."""
        return next((b.text for b in self.blocks if isinstance(b, Paragraph)), "")

    @property
    def table(self) -> list[dict[str, Any]]:
        """The rows of its first table as given (``Table.data``; ``[]``: no table)."""
        t = self.tables
        return t[0].data if t else []

    @property
    def n(self) -> list[int | str | None]:
        """The n of each row of its first table."""
        t = self.tables
        return t[0].n if t else []

    @property
    def n_column(self) -> str:
        t = self.tables
        return t[0].n_column if t else "n"


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
