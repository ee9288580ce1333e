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
from truthline.models._scope import RunScope

_Stat = tuple[str, int, int]
"""What names one version of a file for the process: (path, size, mtime_ns)."""
_HASHES: dict[_Stat, str] = {}


def _stat(path: Path) -> _Stat:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise TruthlineError(f"{path}: cannot read image ({exc.strerror})") from None
    return (str(path), st.st_size, st.st_mtime_ns)


def image_hash(path: Path) -> str:
    """SHA-256 of a file's bytes, memoized per (path, size, mtime) for the process."""
    return _hash(path, _stat(path))


def _hash(path: Path, stat: _Stat) -> str:
    h = _HASHES.get(stat)
    if h is None:
        data = read_source(path)
        h = _HASHES[stat] = hashlib.sha256(data).hexdigest()
        if len(data) <= KEEP_MAX_BYTES:
            HELD.put(stat, data)
    return h


HELD_MAX_BYTES = 32 << 20


class _Held:
    """Small sources' bytes read to hash them, held until they are sent (``source``).

    Why: a run hashes every image for its answer keys before the first request, then
    reads each image again to send it; for a thumbnail the second read and hash cost as
    much as the send. Bytes are held only while a run lives (``holds_sources``; the last to
    end releases what is left, e.g. images whose answers were stored). Keys are made in
    request order and images sent in about that order, so once ``max_bytes`` are held new
    ones are not (dropping the oldest would drop the next to be sent); what is not held is
    read again."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.size = 0
        self._data: dict[_Stat, bytes] = {}
        self.scope = RunScope(lambda: None, self._release)
        self._lock = self.scope.lock  # a run ending must not race a put

    def put(self, stat: _Stat, data: bytes) -> None:
        with self._lock:
            if (
                self.scope.depth
                and stat not in self._data
                and self.size + len(data) <= self.max_bytes
            ):
                self._data[stat] = data
                self.size += len(data)

    def take(self, stat: _Stat) -> bytes | None:
        with self._lock:
            data = self._data.pop(stat, None)
            if data is not None:
                self.size -= len(data)
            return data

    def _release(self) -> None:
        self._data.clear()
        self.size = 0


HELD = _Held(HELD_MAX_BYTES)
holds_sources = HELD.scope
"""Decorates a model run's coroutine function: while it lives, ``HELD`` keeps the bytes of
the sources it hashes until it sends them."""


def source(path: Path) -> tuple[str, bytes | None]:
    """``(sha256, bytes)`` of a source: the bytes when the file is small enough to be sent
    as it is (``KEEP_MAX_BYTES``), taken from ``HELD`` when hashing it left them there, else
    read and hashed (a file changed since it was hashed is kept under the hash of what was
    read); None for a bigger file (read only if it must be re-encoded)."""
    stat = _stat(path)
    data = HELD.take(stat)
    if data is not None:  # what was hashed (the memo may have been emptied meanwhile)
        return _HASHES.get(stat) or hashlib.sha256(data).hexdigest(), data
    if stat[1] > KEEP_MAX_BYTES:
        return _hash(path, stat), None
    data = read_source(path)
    return hashlib.sha256(data).hexdigest(), data


def read_source(path: Path) -> bytes:
    """A source file's bytes; an unreadable one is an error naming it."""
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TruthlineError(f"{path}: cannot read image ({exc.strerror})") from None


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
