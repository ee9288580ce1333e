"""Test requests against the tiny project (``tiny`` fixture): one builder, so the tests of
the model layer differ only in what they ask, not in how a request is spelled."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from truthline.models import ModelRequest

SETTINGS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 64}


def tiny_request(
    tiny: Any,
    user: str,
    images: Sequence[Path] = (),
    *,
    system: str | None = "be brief",
    settings: dict[str, Any] | None = None,
) -> ModelRequest:
    """A benchmark request of the tiny project (no item), asking its fields."""
    return ModelRequest(
        project="tiny",
        item_id=None,
        purpose="benchmark",
        system=system,
        user=user,
        images=list(images),
        fields=tiny.field_types,
        settings=dict(SETTINGS if settings is None else settings),
    )


def numbered(tiny: Any, images: Sequence[Path], i: int) -> ModelRequest:
    """Request ``i``: its own prompt, the images taken in turn."""
    return tiny_request(tiny, f"What is it? #{i}", [images[i % len(images)]])
