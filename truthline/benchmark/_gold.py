"""Gold as the benchmark sees it: decision-level values with provenance, sliced by origin.

Gold is read in one place, beside finalize that writes it (``truthline.audit._gold``): the
latest-snapshot rule, prefix lookup, slices and the loader. This module names them for the
benchmark's own modules.
"""

from __future__ import annotations

from truthline.audit._gold import Gold, GoldItem, latest_snapshot, load_gold

__all__ = ["Gold", "GoldItem", "latest_snapshot", "load_gold"]
