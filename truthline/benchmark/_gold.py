"""Gold as the benchmark sees it: decision-level values with provenance, sliced by origin.

Gold is read and written in one place, beside finalize (``truthline.audit._gold``): the
latest-snapshot rule, prefix lookup, slices, the loader and the one snapshot writer
(``insert_snapshot``, which ``load_release`` uses for a release's gold). This module names
them for the benchmark's own modules.
"""

from __future__ import annotations

from truthline.audit._gold import Gold, GoldItem, insert_snapshot, latest_snapshot, load_gold

__all__ = ["Gold", "GoldItem", "insert_snapshot", "latest_snapshot", "load_gold"]
