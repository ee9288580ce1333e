"""The built-in pages; importing this package registers them."""

from truthline.dashboards._pages import (  # noqa: F401
    agreement,
    audit,
    benchmark,
    lineage,
    overview,
    samples,
)
