"""The page registry: a dashboard page is one decorated render function.

A new page (for a project-specific view, say) is one decorator away::

    @page("Drift", order=50)
    def drift(ctx: Context) -> None: ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from truthline.dashboards._context import Context

Render = Callable[["Context"], None]


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
