"""Reports: one model (``Report`` of ``Section``s holding ``Paragraph``, ``Table`` and
``Figure`` blocks) rendered to Markdown and self-contained HTML by the same jinja2
templates, with a glossary of every metric name shown. The audit and benchmark reports
both build this model.
"""

from truthline.report._glossary import AUDIT_METRICS, GLOSSARY, Term, term
from truthline.report._model import Block, Figure, Paragraph, Report, Section, Table
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
    "render_html",
    "render_markdown",
    "term",
]
