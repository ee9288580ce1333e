"""Reading a rendered report back: links, tables with their n column, visible numbers."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser


class _Page(HTMLParser):
    """Links, images, tables (cells with their class) and visible text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.tags: Counter[str] = Counter()
        self.tables: list[list[list[tuple[str, str]]]] = []
        self.text: list[str] = []
        self._skip = 0
        self._cell: list[str] | None = None
        self._cls = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] += 1
        for k in ("src", "href"):
            if a.get(k) is not None:
                self.refs.append((tag, k, a[k] or ""))
        if tag in ("style", "title", "script", "figcaption"):
            self._skip += 1
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell, self._cls = [], a.get("class") or ""

    def handle_endtag(self, tag):
        if tag in ("style", "title", "script", "figcaption"):
            self._skip -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(("".join(self._cell).strip(), self._cls))
            self._cell = None

    def handle_data(self, data):
        if self._skip:
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def page(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    return p


NUM = re.compile(r"[-+]?\d+(?:\.\d+)?")


def md_numbers(md: str) -> Counter[str]:
    body = "\n".join(x for x in md.splitlines() if not x.startswith("|---") and "](" not in x)
    return Counter(NUM.findall(body))


def html_numbers(html: str) -> Counter[str]:
    return Counter(NUM.findall("\n".join(page(html).text)))
