"""Markdown and HTML from one ``Report`` through the package's jinja2 templates."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from truthline.report._model import Figure, Paragraph, Report, Section, Table


def _inline(text: Any) -> Markup:
    """Escape, then the two inline marks the reports use: ``**bold**`` and `` `code` ``."""
    t = str(escape(str(text)))
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    return Markup(re.sub(r"`(.+?)`", r"<code>\1</code>", t))


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("truthline.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("html.j2",), default=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["inline"] = _inline
    env.filters["md_cell"] = _md_cell
    return env


@dataclass
class _View:
    """What a template sees of one block (tables already with their n column)."""

    kind: str
    text: str = ""
    title: str = ""
    href: str | None = None
    data_uri: str = ""
    columns: list[str] | None = None
    rows: list[list[str]] | None = None
    notes: list[str] | None = None
    n_index: int = -1


def _view(b: Paragraph | Table | Figure) -> _View:
    if isinstance(b, Paragraph):
        return _View("paragraph", text=b.text)
    if isinstance(b, Figure):
        return _View("figure", title=b.title, href=b.href, data_uri=b.data_uri)
    cols, rows = b.display()
    return _View("table", columns=cols, rows=rows, notes=b.notes, n_index=cols.index(b.n_column))


def _blocks(s: Section) -> list[_View]:
    """The section's blocks as shown: empty paragraphs dropped, the thin-design note of its
    sources under its first table (or last, as a paragraph, when it has no table)."""
    blocks = [_view(b) for b in s.blocks if not (isinstance(b, Paragraph) and not b.text)]
    note = s.note
    if note:
        table = next((v for v in blocks if v.kind == "table"), None)
        if table is not None:
            table.notes = [note, *(table.notes or [])]
        else:
            blocks.append(_View("paragraph", text=note))
    return blocks


def _context(report: Report) -> dict[str, Any]:
    sections = []
    for i, s in enumerate(report.sections, 1):
        blocks = _blocks(s)
        sections.append({"title": s.title, "level": s.level, "anchor": i, "blocks": blocks})
    view = {
        "title": report.title,
        "simulated": report.simulated,
        "intro": [p for p in report.intro if p],
        "sections": sections,
    }
    return {"report": view, "glossary": report.glossary}


def render_markdown(report: Report) -> str:
    """The report as Markdown (figures linked where a copy was saved beside it)."""
    text = _env().get_template("report.md.j2").render(**_context(report))
    return re.sub(r"\n{3,}", "\n\n", text)


def render_html(report: Report) -> str:
    """The report as one self-contained HTML file: styles inline, figures as data URIs."""
    return _env().get_template("report.html.j2").render(**_context(report))
