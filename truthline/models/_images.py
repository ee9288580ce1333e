"""Images per the declared image policy: resized to a max side, JPEG at a quality, hashed.

The cache key uses the hash of the source file (the policy is part of the settings), so
re-encoding never changes which answer a request maps to. ``data_url`` and ``load_pil``
encode each (file, policy) once per process (``_image_cache``); backends bound to a
workspace also keep the encoded bytes on disk there.
"""

from __future__ import annotations

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
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TruthlineError(f"{path}: cannot encode image ({exc})") from None
    return encode_bytes(data, path, policy)


def encode_bytes(data: bytes, path: Path, policy: dict[str, Any] | None = None) -> bytes:
    """``encode_image`` of a file's bytes already read (``path`` names it in errors)."""
    from PIL import Image

    policy = policy or {}
    max_side = int(policy.get("max_side", 1024))
    quality = int(policy.get("jpeg_quality", 85))
    try:
        with Image.open(io.BytesIO(data)) as src:
            im = src.convert("RGB")
            if max(im.size) > max_side:
                im.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=quality)
    except OSError as exc:
        raise TruthlineError(f"{path}: cannot encode image ({exc})") from None
    return buf.getvalue()


def data_url(path: Path, policy: dict[str, Any] | None = None) -> str:
    """``data:image/jpeg;base64,...`` of ``encode_image(path, policy)``, encoded once per
    process."""
    from truthline.models._image_cache import memory_cache

    return memory_cache().data_url(path, policy)


def load_pil(path: Path, policy: dict[str, Any] | None = None, cache: Any = None):
    """A PIL image resized per the policy (local models); ``cache``: an ``ImageCache``."""
    from PIL import Image

    from truthline.models._image_cache import memory_cache

    jpeg = (cache or memory_cache()).jpeg(path, policy)
    return Image.open(io.BytesIO(jpeg)).convert("RGB")
