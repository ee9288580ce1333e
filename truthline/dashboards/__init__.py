"""Dashboards: thin Streamlit pages over the store (overview, agreement, provenance audit, benchmark).

Pages only read: they call the same functions as the CLI (``truthline.stats``,
``truthline.audit``, ``truthline.benchmark``) and cache the results per data version.

Public API: ``page`` (register a page), ``pages``, ``chart`` (a chart with table view and
CSV download), ``cached``, ``Context``, ``read_only_store``, ``app_path``,
``streamlit_command``, and the Overview queries ``loop_funnel``, ``model_costs``,
``label_studio_links``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from truthline._lazy import lazy_exports

# public name -> defining module, imported on first use: importing a submodule (the
# stage's CLI for `--help`) loads none of the others (issue 28)
_EXPORTS = {
    "Context": "truthline.dashboards._context",
    "Source": "truthline.dashboards._context",
    "read_only_store": "truthline.dashboards._context",
    "label_studio_links": "truthline.dashboards._queries",
    "loop_funnel": "truthline.dashboards._queries",
    "model_costs": "truthline.dashboards._queries",
    "Page": "truthline.dashboards._registry",
    "get_page": "truthline.dashboards._registry",
    "page": "truthline.dashboards._registry",
    "pages": "truthline.dashboards._registry",
}
_lazy_getattr, _lazy_dir = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from truthline.dashboards._context import Context, Source, read_only_store
    from truthline.dashboards._queries import label_studio_links, loop_funnel, model_costs
    from truthline.dashboards._registry import Page, get_page, page, pages


def app_path():
    from truthline.dashboards._cli import app_path as _p

    return _p()


def streamlit_command(port: int, host: str = "127.0.0.1") -> list[str]:
    from truthline.dashboards._cli import streamlit_command as _c

    return _c(port, host)


def __getattr__(name: str):
    if name in ("chart", "cached"):  # these import streamlit
        from truthline.dashboards import _charts, _frame

        return {"chart": _charts.chart, "cached": _frame.cached}[name]
    return _lazy_getattr(name)


def __dir__() -> list[str]:
    return sorted([*_lazy_dir(), "app_path", "cached", "chart", "streamlit_command"])


__all__ = [
    "Context",
    "Page",
    "Source",
    "app_path",
    "cached",
    "chart",
    "get_page",
    "label_studio_links",
    "loop_funnel",
    "model_costs",
    "page",
    "pages",
    "read_only_store",
    "streamlit_command",
]
