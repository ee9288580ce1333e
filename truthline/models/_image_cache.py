"""Each image encoded once: in memory for the process, on disk in the workspace (issue 28).

The same item image goes to every model, prompt variant and rerun. Decoding, resizing and
re-encoding it as JPEG each time (``encode_image``) was the runner's largest CPU cost per
sample beyond the HTTP client, so a source that already fits the policy is sent as it is
(``_images.KEEP_MAX_BYTES``) and the encoded bytes are kept, keyed by what decides them:
the SHA-256 of the source file and a tag of the encoder (``max_side``, ``jpeg_quality``,
the Pillow version, ``ENCODER``). A changed file or policy is another key; ``detail`` is
not part of it (it does not change the bytes). What comes back is exactly what
``encode_image`` returns for that file and policy.

On disk: ``<workspace>/image-cache/<sha[:2]>/<sha>.<tag>.img``, folders 0700, files 0600,
each written to a temporary file and renamed into place, the payload behind its own
SHA-256 (a torn or altered file is re-encoded, never sent). The folder is bounded
(``max_disk_bytes``, default 2 GiB; the least recently used files go first) and
``clear_image_cache`` empties it; deleting it by hand is safe too. Only images that took
``DISK_MIN_ENCODE_S`` or more to encode are kept there (a tiny image is cheaper to encode
again than to write and read back), and never a source sent as it is (the file is its own
copy).

What is kept instead is the verdict that a source is sent as it is: ``kept-sources.txt``
in the folder, one ``<sha>.<tag>`` line per source that fit its policy and decoded whole
(``_images.keeps``: a full decode, ~0.07 ms for a 32-pixel PNG, ~2 to 5% of a request's
CPU, paid once per image per process before this). A later process reads the file once
and sends those sources without decoding them again; the verdict is about those exact
bytes (their hash) under that encoder (its tag), so it never goes stale. Lines are
appended in batches (``VERDICTS_PER_WRITE``, and the rest on ``flush``); one lost in a
crash only costs a decode. Past ``MAX_VERDICT_BYTES`` the file starts over.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from truthline.models._images import (
    KEEP_MAX_BYTES,
    image_hash,
    keeps,
    mime_of,
    read_source,
    reencode,
    source,
)

ENCODER = 2
"""Bump when ``encode_image`` changes the bytes it makes: old cache entries then miss (an
answer's key holds the source's hash and the policy, not these bytes: stored answers stay
found). 2: a source that already fits the policy is sent as it is."""

CACHE_DIR = "image-cache"
DEFAULT_DISK_BYTES = 2 << 30
DEFAULT_MEMORY_BYTES = 256 << 20
DISK_MIN_ENCODE_S = 0.001
"""Only an image whose encode took at least this long is kept on disk: writing an entry
costs ~0.4 ms and reading one ~0.07 ms, so a thumbnail that encodes in 0.2 ms is cheaper to
encode again than to keep (a camera frame or a render, 10-50 ms, is kept)."""
_DIGEST = 32
VERDICTS = "kept-sources.txt"
VERDICTS_PER_WRITE = 256
MAX_VERDICT_BYTES = 32 << 20
_VERDICTS: dict[Path, set[str]] = {}
"""Per cache folder, the sources known to be sent as they are (read once per process)."""
_VERDICTS_LOCK = threading.Lock()


def default_image_cache_dir(store: Any) -> Path | None:
    """``image-cache/`` beside a SQLite store file (the workspace), else under
    ``$TRUTHLINE_WORKSPACE``; None (memory only) when neither is known."""
    url = str(getattr(store, "url", "") or "")
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :].split("?", 1)[0]
        if path and path != ":memory:":
            return Path(path).parent / CACHE_DIR
        return None
    ws = os.environ.get("TRUTHLINE_WORKSPACE")
    return Path(ws) / CACHE_DIR if ws else None


_TAGS: dict[tuple[int, int], str] = {}


def encoder_tag(policy: dict[str, Any] | None) -> str:
    """What decides the encoded bytes besides the source file, as 16 hex digits."""
    policy = policy or {}
    params = (int(policy.get("max_side", 1024)), int(policy.get("jpeg_quality", 85)))
    tag = _TAGS.get(params)
    if tag is None:
        import PIL

        ident = json.dumps([ENCODER, KEEP_MAX_BYTES, *params, PIL.__version__])
        tag = _TAGS[params] = hashlib.sha256(ident.encode()).hexdigest()[:16]
    return tag


class _Memory:
    """The process's encoded images (data URLs), least recently used dropped past a size."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.size = 0
        self._urls: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> str | None:
        with self._lock:
            url = self._urls.get(key)
            if url is not None:
                self._urls.move_to_end(key)
            return url

    def put(self, key: tuple[str, str], url: str) -> None:
        if len(url) > self.max_bytes:
            return
        with self._lock:
            old = self._urls.pop(key, None)
            self.size += len(url) - (len(old) if old is not None else 0)
            self._urls[key] = url
            while self.size > self.max_bytes:
                _, gone = self._urls.popitem(last=False)
                self.size -= len(gone)

    def clear(self) -> None:
        with self._lock:
            self._urls.clear()
            self.size = 0


MEMORY = _Memory(DEFAULT_MEMORY_BYTES)
"""Shared by every cache of the process: one encode per image across models and runs."""


class ImageCache:
    """Encoded images of one workspace (``folder``; None: memory only).

    ``stats`` counts where each image came from: ``memory``, ``kept`` (the source sent as it
    is), ``disk`` or ``encoded``."""

    def __init__(
        self,
        folder: Path | None = None,
        *,
        max_disk_bytes: int = DEFAULT_DISK_BYTES,
        min_encode_s: float | None = None,
    ):
        self.folder = folder
        self.max_disk_bytes = max_disk_bytes
        self.min_encode_s = DISK_MIN_ENCODE_S if min_encode_s is None else min_encode_s
        self.stats = {"memory": 0, "kept": 0, "disk": 0, "encoded": 0}
        self._disk_size: int | None = None
        self._dirs: set[Path] = set()
        self._lock = threading.Lock()
        self._new_verdicts: list[str] = []

    def data_url(self, path: Path, policy: dict[str, Any] | None = None) -> str:
        """``data:<mime>;base64,...`` of ``encode_image(path, policy)``."""
        tag = encoder_tag(policy)
        key = (image_hash(path), tag)
        url = MEMORY.get(key)
        if url is not None:
            self.stats["memory"] += 1
            return url
        blob = None
        sha, data = source(path)  # a small file's bytes: it may be sent as it is
        key = (sha, tag)
        if data is not None:
            verdict = f"{sha}.{tag}"
            known = self.folder is not None and verdict in self._verdicts()
            if known or keeps(data, path, policy):
                blob = data
                self.stats["kept"] += 1
                if not known and self.folder is not None:
                    self._remember(verdict)
        if blob is None:
            blob = self._from_disk(key)
        if blob is None:
            if data is None:
                data = read_source(path)
                key = (hashlib.sha256(data).hexdigest(), tag)
            t0 = time.perf_counter()
            blob = reencode(data, path, policy)
            self.stats["encoded"] += 1
            if time.perf_counter() - t0 >= self.min_encode_s:
                self._to_disk(key, blob)
        url = f"data:{mime_of(blob)};base64," + base64.b64encode(blob).decode("ascii")
        MEMORY.put(key, url)
        return url

    def image_bytes(self, path: Path, policy: dict[str, Any] | None = None) -> bytes:
        """``encode_image(path, policy)``, from the cache when it holds it."""
        return base64.b64decode(self.data_url(path, policy).partition(",")[2])

    def flush(self) -> None:
        """Write the verdicts not yet written (a backend's ``aclose``)."""
        with self._lock:
            new, self._new_verdicts = self._new_verdicts, []
        if not new or self.folder is None:
            return
        try:
            _private_dir(self.folder)
            fd = os.open(self.folder / VERDICTS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError:
            return  # a cache that cannot be written: the sources are decoded again next time
        with contextlib.suppress(OSError), os.fdopen(fd, "a", encoding="ascii") as fh:
            fh.write("".join(f"{v}\n" for v in new))

    # -- reading and disk ----------------------------------------------------------------
    def _verdicts(self) -> set[str]:
        assert self.folder is not None
        known = _VERDICTS.get(self.folder)
        if known is None:
            with _VERDICTS_LOCK:
                known = _VERDICTS.get(self.folder)
                if known is None:
                    known = _VERDICTS[self.folder] = _read_verdicts(self.folder / VERDICTS)
        return known

    def _remember(self, verdict: str) -> None:
        self._verdicts().add(verdict)
        with self._lock:
            self._new_verdicts.append(verdict)
            full = len(self._new_verdicts) >= VERDICTS_PER_WRITE
        if full:
            self.flush()

    def _file(self, key: tuple[str, str]) -> Path | None:
        if self.folder is None:
            return None
        sha, tag = key
        return self.folder / sha[:2] / f"{sha}.{tag}.img"

    def _from_disk(self, key: tuple[str, str]) -> bytes | None:
        f = self._file(key)
        if f is None:
            return None
        try:
            blob = f.read_bytes()
        except OSError:
            return None
        digest, payload = blob[:_DIGEST], blob[_DIGEST:]
        if len(blob) <= _DIGEST or hashlib.sha256(payload).digest() != digest:
            with contextlib.suppress(OSError):  # torn or altered: encode again
                f.unlink()
            return None
        with contextlib.suppress(OSError):  # its use time, for the size bound
            os.utime(f)
        self.stats["disk"] += 1
        return payload

    def _to_disk(self, key: tuple[str, str], payload: bytes) -> None:
        """Write one entry atomically (0600); a cache that cannot be written is skipped
        (the run still sends the image it just encoded)."""
        f = self._file(key)
        if f is None:
            return
        blob = hashlib.sha256(payload).digest() + payload
        try:
            if f.parent not in self._dirs:  # one check per folder, not two stats per image
                _private_dir(f.parent)
                self._dirs.add(f.parent)
            fd, tmp = tempfile.mkstemp(dir=f.parent, prefix=".tmp-", suffix=".img")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(blob)
                os.replace(tmp, f)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            self._dirs.discard(f.parent)  # deleted by hand meanwhile: made again next time
            return
        with self._lock:
            if self._disk_size is None:
                self._disk_size = _folder_size(self.folder)
            else:
                self._disk_size += len(blob)
            if self._disk_size > self.max_disk_bytes:
                self._disk_size = _prune(self.folder, int(self.max_disk_bytes * 0.9))


def _read_verdicts(file: Path) -> set[str]:
    """The verdicts a cache folder holds; a file past ``MAX_VERDICT_BYTES`` starts over."""
    try:
        if file.stat().st_size > MAX_VERDICT_BYTES:
            file.unlink()
            return set()
        return set(file.read_text(encoding="ascii", errors="replace").split())
    except OSError:
        return set()


def _private_dir(path: Path) -> None:
    for d in (path.parent, path):
        if not d.is_dir():
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            d.chmod(0o700)


def _entries(folder: Path | None) -> list[os.DirEntry]:
    if folder is None or not folder.is_dir():
        return []
    out: list[os.DirEntry] = []
    for sub in os.scandir(folder):
        if sub.is_dir(follow_symlinks=False):
            out += [e for e in os.scandir(sub.path) if e.is_file(follow_symlinks=False)]
    return out


def _folder_size(folder: Path | None) -> int:
    return sum(e.stat().st_size for e in _entries(folder))


def _prune(folder: Path | None, target: int) -> int:
    """Delete the least recently used entries until the folder holds at most ``target``
    bytes; returns what it then holds."""
    entries = sorted(((e.stat(), e.path) for e in _entries(folder)), key=lambda x: x[0].st_mtime)
    size = sum(st.st_size for st, _ in entries)
    for st, path in entries:
        if size <= target:
            break
        with contextlib.suppress(OSError):
            os.unlink(path)
            size -= st.st_size
    return size


def clear_image_cache(folder: Path | None) -> tuple[int, int]:
    """Empty a workspace's image cache (and the process's memory of encoded images);
    returns ``(files, bytes)`` removed."""
    MEMORY.clear()
    files = size = 0
    if folder is not None:
        _VERDICTS.pop(folder, None)
        with contextlib.suppress(OSError):
            n = (folder / VERDICTS).stat().st_size
            (folder / VERDICTS).unlink()
            files += 1
            size += n
    for e in _entries(folder):
        with contextlib.suppress(OSError):
            n = e.stat().st_size
            os.unlink(e.path)
            files += 1
            size += n
    return files, size


_DEFAULT = ImageCache()


def memory_cache() -> ImageCache:
    """The process's cache without a folder (callers that know no workspace)."""
    return _DEFAULT


__all__ = [
    "ImageCache",
    "clear_image_cache",
    "default_image_cache_dir",
    "encoder_tag",
    "memory_cache",
]
