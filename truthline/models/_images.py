"""Images per the declared image policy: resized to a max side, JPEG at a quality, hashed.

The cache key uses the hash of the source file (the policy is part of the settings), so
re-encoding never changes which answer a request maps to.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError

_HASHES: dict[tuple[str, int, int], str] = {}


def image_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, memoized per (path, size, mtime) for the process."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise TruthlineError(f"{path}: cannot read image ({exc.strerror})") from None
    key = (str(path), st.st_size, st.st_mtime_ns)
    h = _HASHES.get(key)
    if h is None:
        h = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        _HASHES[key] = h
    return h


def encode_image(path: Path, policy: dict[str, Any] | None = None) -> bytes:
    """JPEG bytes of ``path`` with its longer side at most ``max_side`` pixels."""
    from PIL import Image

    policy = policy or {}
    max_side = int(policy.get("max_side", 1024))
    quality = int(policy.get("jpeg_quality", 85))
    try:
        with Image.open(path) as src:
            im = src.convert("RGB")
            if max(im.size) > max_side:
                im.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=quality)
    except OSError as exc:
        raise TruthlineError(f"{path}: cannot encode image ({exc})") from None
    return buf.getvalue()


def data_url(path: Path, policy: dict[str, Any] | None = None) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(encode_image(path, policy)).decode()


def load_pil(path: Path, policy: dict[str, Any] | None = None):
    """A PIL image resized per the policy (local models)."""
    from PIL import Image

    return Image.open(io.BytesIO(encode_image(path, policy))).convert("RGB")
