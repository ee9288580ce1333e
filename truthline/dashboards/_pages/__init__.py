"""The built-in pages; importing this package registers them."""

from truthline.dashboards._pages import audit, overview  # noqa: F401
