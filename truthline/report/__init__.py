"""Reports: one model (``Report`` of ``Section``s holding ``Paragraph``, ``Table`` and
``Figure`` blocks) rendered to Markdown and self-contained HTML by the same jinja2
templates, with a glossary of every metric name shown. The audit and benchmark reports,
the paper systems' report sections and the dashboards' plug-in sections all build this
model; ``Section.of`` makes the usual section (text, figure, a table of row dicts with each
row's n, the thin-design note of the intervals it came from).
"""

from truthline.report._glossary import AUDIT_METRICS, GLOSSARY, Term, term
from truthline.report._model import Block, Figure, Paragraph, Report, Section, Table, cell
from truthline.report._render import render_html, render_markdown
from truthline.report._text import CONTRAST

__all__ = [
    "AUDIT_METRICS",
    "CONTRAST",
    "GLOSSARY",
    "Block",
    "Figure",
    "Paragraph",
    "Report",
    "Section",
    "Table",
    "Term",
    "cell",
    "render_html",
    "render_markdown",
    "term",
]
