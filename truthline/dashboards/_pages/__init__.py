"""The built-in pages; importing this package registers them."""

from truthline.dashboards._pages import agreement, audit, benchmark, overview, samples  # noqa: F401
