"""The dashboards' registries: pages, and sections other packages add to a page.

A new page (for a project-specific view, say) is one decorator away::

    @page("Drift", order=50)
    def drift(ctx: Context) -> None: ...

A paper system adds tables to the Benchmark page without importing streamlit (only this
package does): it registers ``fn(ctx, run_ids) -> list[truthline.report.Section]`` under a
name in the entry-point group ``truthline.dashboard_sections`` (or with
``@dashboard_section.register(name)``), returning no sections when the runs are not its
kind; the page renders each section's paragraphs, tables and figures (``render_sections``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from truthline._registry import Registry

if TYPE_CHECKING:
    from truthline.dashboards._context import Context
    from truthline.report import Section

Render = Callable[["Context"], None]
SectionFn = Callable[[Any, Sequence[str]], "list[Section]"]

dashboard_section: Registry[SectionFn] = Registry(
    "dashboard section", entry_point_group="truthline.dashboard_sections"
)
"""Sections of the Benchmark page contributed by other packages (name -> ``fn(ctx,
run_ids)``), shown after the built-in ones in name order."""


@dataclass(frozen=True)
class Page:
    title: str
    url_path: str
    order: int
    icon: str | None
    render: Render


_PAGES: dict[str, Page] = {}


def page(
    title: str, *, order: int = 100, url_path: str | None = None, icon: str | None = None
) -> Callable[[Render], Render]:
    """Register ``fn(ctx)`` as a dashboard page (``url_path`` defaults to the lower-case title)."""

    def deco(fn: Render) -> Render:
        path = url_path or title.lower().replace(" ", "-")
        _PAGES[path] = Page(title=title, url_path=path, order=order, icon=icon, render=fn)
        return fn

    return deco


def pages() -> list[Page]:
    """Registered pages in display order (importing the built-in ones first)."""
    import truthline.dashboards._pages  # noqa: F401  (registers the built-in pages)

    return sorted(_PAGES.values(), key=lambda p: (p.order, p.title))


def get_page(url_path: str) -> Page:
    known = {p.url_path: p for p in pages()}
    if url_path not in known:
        raise KeyError(f"no dashboard page {url_path!r} (have: {', '.join(known)})")
    return known[url_path]


def benchmark_sections(ctx: Context, run_ids: Sequence[str]) -> list[Section]:
    """Every registered dashboard section's sections for these runs (plug-ins load here)."""
    return [s for _, fn in dashboard_section.items() for s in fn(ctx, list(run_ids))]
