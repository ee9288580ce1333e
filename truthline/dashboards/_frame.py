"""The app frame: page config, the sidebar, navigation, and the result cache every page uses."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import streamlit as st

from truthline.dashboards._context import Context, Source, load_project, read_only_store
from truthline.dashboards._queries import data_stamp
from truthline.dashboards._registry import Page, pages
from truthline.errors import TruthlineError
from truthline.store import Store

T = TypeVar("T")


@st.cache_resource(show_spinner=False)
def _store(url: str) -> Store:
    return read_only_store(url)


@st.cache_resource(show_spinner=False)
def _project(_store: Store, source: Source, name: str, stamp: Hashable):
    return load_project(_store, source, name)


@st.cache_data(show_spinner=False, ttl=3)
def _stamp(_store: Store, url: str, project: str) -> tuple[Any, ...]:
    return data_stamp(_store, project)


@st.cache_data(show_spinner=False, max_entries=256)
def _cached(
    key: str, url: str, project: str, stamp: tuple, parts: tuple, _fn: Callable[[], T]
) -> T:
    return _fn()


def cached(ctx: Context, key: str, fn: Callable[[], T], *parts: Hashable) -> T:
    """``fn()`` computed once per (key, store, project, data version, parts).

    The data version is a fingerprint of the project's rows, so a pull or a new run shows up
    without a restart; ``key`` names the computation (use the called function's dotted name).
    """
    stamp = _stamp(ctx.store, ctx.source.url, ctx.name)
    return _cached(key, ctx.source.url, ctx.name, stamp, tuple(parts), fn)


def _pick_project(store: Store, source: Source) -> str:
    names = store.project_names()
    if source.project:
        if source.project not in names:
            raise TruthlineError(
                f"no project {source.project!r} in the store at {source.shown_url} "
                f"(have: {', '.join(names) or 'none'})"
            )
        return source.project
    if not names:
        raise TruthlineError(
            f"no project in the store at {source.shown_url}; start one with "
            "`truthline init steel-safety` (or `truthline demo`)"
        )
    if len(names) == 1:
        return names[0]
    return str(st.sidebar.selectbox("Project", names, key="project"))


def context() -> Context:
    """Open the store and project named by the environment; stop the page with a clear error."""
    try:
        source = Source.from_env()
        store = _store(source.url)
        name = _pick_project(store, source)
        project = _project(store, source, name, _stamp(store, source.url, name))
    except TruthlineError as exc:
        st.error(str(exc))
        st.stop()
        raise  # unreachable; keeps type checkers content
    return Context(source=source, store=store, project=project)


def _sidebar(ctx: Context) -> None:
    with st.sidebar:
        st.caption(f"project **{ctx.name}**")
        st.caption(f"store `{ctx.source.shown_url}`")
        if st.button("Refresh data", help="Drop cached results and read the store again."):
            st.cache_data.clear()
            st.rerun()


def _page_fn(p: Page, ctx: Context) -> Callable[[], None]:
    def run() -> None:
        p.render(ctx)

    run.__name__ = p.url_path.replace("-", "_")
    return run


def main(page: str | None = None) -> None:
    """Entry point of the Streamlit script; ``page`` picks the default page (tests, bench)."""
    st.set_page_config(page_title="truthline", layout="wide")
    ctx = context()
    registered = pages()
    default = page or registered[0].url_path
    nav = st.navigation(
        [
            st.Page(
                _page_fn(p, ctx),
                title=p.title,
                icon=p.icon,
                url_path=p.url_path,
                default=p.url_path == default,
            )
            for p in registered
        ]
    )
    _sidebar(ctx)
    nav.run()
