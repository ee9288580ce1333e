"""Images per the declared image policy: sent as they are when they already fit it, else
resized to a max side and JPEG-encoded at a quality; hashed.

The cache key uses the hash of the source file (the policy is part of the settings), so
re-encoding never changes which answer a request maps to. ``data_url`` and ``load_pil``
encode each (file, policy) once per process (``_image_cache``); backends bound to a
workspace also keep the encoded bytes on disk there.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from collections.abc import Iterator
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


KEEP_MAX_BYTES = 512 << 10
"""A source at most this big that already fits the policy is sent as it is (a minimal client's
bytes, as Inspect AI sends a file): re-encoding it would cost CPU and fidelity (a second JPEG
generation, ringing on line art) and save little. A bigger file is re-encoded to keep each
request small (a photo-like 1024 px PNG is ~1-3 MB; its JPEG ~0.2 MB)."""
_KEPT = ("JPEG", "PNG")
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_ORIENTATION = 0x0112


def mime_of(blob: bytes) -> str:
    """The media type of bytes ``encode_image`` made (a kept PNG, else JPEG)."""
    return "image/png" if blob[:8] == _PNG_MAGIC else "image/jpeg"


def encode_image(path: Path, policy: dict[str, Any] | None = None) -> bytes:
    """The bytes sent for ``path``: the file itself when it already fits the policy (see
    ``encode_bytes``), else a JPEG with its longer side at most ``max_side`` pixels."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TruthlineError(f"{path}: cannot encode image ({exc})") from None
    return encode_bytes(data, path, policy)


def _fits(src: Any, max_side: int) -> bool:
    """Whether the opened source already is what a re-encode would make it, but for
    compression: JPEG or PNG (every OpenAI-compatible server takes both), longer side within
    ``max_side``, 8-bit RGB or grey with no transparency, one frame, and no EXIF rotation (a
    server honouring it would show what a re-encode, which drops it, does not)."""
    if src.format not in _KEPT or max(src.size) > max_side:
        return False
    if src.mode not in ("RGB", "L") or "transparency" in src.info:
        return False
    if getattr(src, "n_frames", 1) != 1:
        return False
    if src.format == "PNG" and (not src.tile or src.tile[0][3] != src.mode):
        return False  # 16-bit samples (raw mode RGB;16B): PIL reads them as 8-bit RGB
    return src.format != "JPEG" or src.getexif().get(_ORIENTATION, 1) == 1


def encode_bytes(data: bytes, path: Path, policy: dict[str, Any] | None = None) -> bytes:
    """``encode_image`` of a file's bytes already read (``path`` names it in errors); returns
    ``data`` itself when the source is kept."""
    return data if keeps(data, path, policy) else reencode(data, path, policy)


def keeps(data: bytes, path: Path, policy: dict[str, Any] | None = None) -> bool:
    """Whether these source bytes are sent as they are (at most ``KEEP_MAX_BYTES`` and
    ``_fits``); a corrupt file that would be is refused, naming ``path``."""
    if len(data) > KEEP_MAX_BYTES:
        return False
    with _opened(data, path) as src:
        if not _fits(src, int((policy or {}).get("max_side", 1024))):
            return False
        src.load()  # a truncated or corrupt file fails here, as its re-encode would
        return True


def reencode(data: bytes, path: Path, policy: dict[str, Any] | None = None) -> bytes:
    """A JPEG of the source at the policy's side and quality, whether or not it fits (what
    every image cost before sources were kept; bench/runner_overhead.py's reference row)."""
    with _opened(data, path) as src:
        return _jpeg(src, policy)


@contextlib.contextmanager
def _opened(data: bytes, path: Path) -> Iterator[Any]:
    """The source opened by PIL; any decode error it raises becomes one naming ``path``."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as src:
            yield src
    except (OSError, SyntaxError) as exc:  # PIL: SyntaxError for a broken PNG chunk
        raise TruthlineError(f"{path}: cannot encode image ({exc})") from None


def _jpeg(src: Any, policy: dict[str, Any] | None) -> bytes:
    from PIL import Image

    policy = policy or {}
    max_side = int(policy.get("max_side", 1024))
    im = src.convert("RGB")
    if max(im.size) > max_side:
        im.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=int(policy.get("jpeg_quality", 85)))
    return buf.getvalue()


def data_url(path: Path, policy: dict[str, Any] | None = None) -> str:
    """``data:<mime>;base64,...`` of ``encode_image(path, policy)``, encoded once per
    process."""
    from truthline.models._image_cache import memory_cache

    return memory_cache().data_url(path, policy)


def load_pil(path: Path, policy: dict[str, Any] | None = None, cache: Any = None):
    """A PIL image resized per the policy (local models); ``cache``: an ``ImageCache``."""
    from PIL import Image

    from truthline.models._image_cache import memory_cache

    blob = (cache or memory_cache()).image_bytes(path, policy)
    return Image.open(io.BytesIO(blob)).convert("RGB")
