"""The media server Label Studio's labeling page loads task media from (127.0.0.1 only).

It serves **registered item media only**: a URL path is looked up in an index built from the
store's ``items`` table (imported items and mined clip frames alike: each item's ``media``
paths relative to its ``media_root``), never mapped onto the file system, so ``..``, encoded
or absolute paths and unregistered files next to the media are simply unknown (404). Even a
registered path is refused when it resolves (symlinks followed) into the workspace's
``secrets/`` folder, Label Studio's data dir or the store's database files, or to anything
but an image or video file.

CORS: ``Access-Control-Allow-Origin`` names the Label Studio origin the server was started
for (its ``127.0.0.1``/``localhost`` spellings) and only when the request comes from it; other
origins get no CORS header. A ``Host`` that is not a loopback name is refused (DNS rebinding).
Single HTTP ranges are answered with 206 (video seeking), unsatisfiable ones with 416, and
files are sent with ``socket.sendfile`` — never read into memory whole.

Every connection has a read timeout (``read_timeout``, 30 s by default; the command line's
``--read-timeout`` or ``TRUTHLINE_MEDIA_READ_TIMEOUT``): each connection holds a thread, so
an idle or stalled client is closed instead of holding one forever. The same timeout bounds
each write to a client that stopped reading.

The URL of a file is its path relative to the served root (``media_rel``), the same string
``push`` puts into the tasks.
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import mimetypes
import os
import posixpath
import re
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO, Literal
from urllib.parse import quote, unquote, urlsplit

from sqlalchemy import func, select

from truthline.media import IMAGE_EXTS, VIDEO_EXTS
from truthline.store import Store, tables

MEDIA_EXTS = frozenset(IMAGE_EXTS | VIDEO_EXTS)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
READ_TIMEOUT = 30.0
"""Seconds a connection may stay silent (or not read what is sent) before it is closed."""
READ_TIMEOUT_ENV = "TRUTHLINE_MEDIA_READ_TIMEOUT"


_URL_SAFE = re.compile(r"[A-Za-z0-9_.~/-]*")
"""Characters ``urllib.parse.quote`` leaves as they are: such a path is its own URL path
(quoting every frame of every task was a tenth of push's own CPU)."""


def media_url(base: str, rel: str) -> str:
    path = rel if _URL_SAFE.fullmatch(rel) else quote(rel)
    return f"{base.rstrip('/')}/{path}"


def item_prefix(served_root_real: Path, item_root: str | Path) -> str | None:
    """The URL prefix of an item media root under the served root ('' or 'a/b/'), or None."""
    real = Path(os.path.realpath(item_root))
    try:
        rel = real.relative_to(served_root_real).as_posix()
    except ValueError:
        return None
    return "" if rel == "." else rel + "/"


def media_rel(prefix: str, name: str) -> str | None:
    """The URL path (relative to the served root) of media ``name`` of an item, or None."""
    rel = posixpath.normpath(prefix + name)
    if rel in (".", "..") or rel.startswith(("../", "/")):
        return None
    return rel


def origin_of(url: str) -> str:
    """``scheme://host:port`` of a URL, lower-cased (how browsers send ``Origin``)."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc}".lower()


def allowed_origins(urls: Iterable[str]) -> frozenset[str]:
    """The origins of ``urls``; a loopback one also under its other loopback names."""
    out: set[str] = set()
    for url in urls:
        o = origin_of(url)
        parts = urlsplit(o)
        out.add(o)
        if parts.hostname in ("127.0.0.1", "localhost"):
            port = f":{parts.port}" if parts.port else ""
            out |= {f"{parts.scheme}://127.0.0.1{port}", f"{parts.scheme}://localhost{port}"}
    return frozenset(out)


class MediaIndex:
    """URL path -> registered media file, from the ``items`` table.

    Rebuilt when the items change (row count, last id or last update differ): checked on
    every miss and at most every ``ttl`` seconds on hits, so media imported or removed while
    the server runs are picked up without a restart.
    """

    def __init__(self, store: Store, root: Path, *, ttl: float = 2.0):
        self.store = store
        self.root = Path(os.path.realpath(root))
        self.ttl = ttl
        self._files: dict[str, Path] = {}
        self._stamp: tuple[Any, ...] | None = None
        self._checked = float("-inf")
        self._lock = threading.Lock()

    def _fingerprint(self) -> tuple[Any, ...]:
        t = tables.items
        with self.store.begin() as conn:
            row = conn.execute(
                select(func.count(), func.max(t.c.id), func.max(t.c.updated_at))
            ).one()
        return tuple(row)

    def _rebuild(self) -> None:
        t = tables.items
        with self.store.begin() as conn:
            rows = conn.execute(select(t.c.media_root, t.c.media)).all()
        prefixes: dict[str, str | None] = {}
        files: dict[str, Path] = {}
        for root, media in rows:
            if root not in prefixes:
                prefixes[root] = item_prefix(self.root, root)
            prefix = prefixes[root]
            if prefix is None:
                continue
            real_root = self.root / prefix
            for name in media or []:
                rel = media_rel(prefix, str(name))
                if rel is not None:
                    files[rel] = real_root / name
        self._files = files

    def refresh(self, *, force: bool = False) -> None:
        with self._lock:
            t = time.monotonic()
            if not force and t - self._checked < self.ttl:
                return
            self._checked = t
            stamp = self._fingerprint()
            if stamp != self._stamp:
                self._rebuild()
                self._stamp = stamp

    def lookup(self, rel: str) -> Path | None:
        """The registered file whose URL path is ``rel`` (already percent-decoded)."""
        self.refresh()
        hit = self._files.get(rel)
        if hit is None:
            self.refresh(force=True)
            hit = self._files.get(rel)
        return hit

    def __len__(self) -> int:
        self.refresh()
        return len(self._files)


def parse_range(header: str | None, size: int) -> tuple[int, int] | Literal[False] | None:
    """A single ``bytes=`` range as inclusive (first, last); None = serve the whole file;
    False = unsatisfiable (416). Malformed or multi-range headers are ignored (RFC 9110 14.2).
    """
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first_s, dash, last_s = spec.strip().partition("-")
    first_s, last_s = first_s.strip(), last_s.strip()
    if (
        not dash
        or not (first_s.isdigit() or first_s == "")
        or not (last_s.isdigit() or last_s == "")
    ):
        return None
    if first_s == "":
        if last_s == "":
            return None
        n = int(last_s)  # suffix: the last n bytes
        if n == 0 or size == 0:
            return False
        return max(0, size - n), size - 1
    first = int(first_s)
    if last_s and int(last_s) < first:
        return None
    if first >= size:
        return False
    last = int(last_s) if last_s else size - 1
    return first, min(last, size - 1)


class _Handler(BaseHTTPRequestHandler):
    server: MediaHTTPServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # an idle or stalled connection is closed (handle_one_request catches the timeout)
        self.connection.settimeout(self.server.read_timeout)

    def log_message(self, format: str, *args: object) -> None:  # quiet: paths only in 404s
        pass

    def _cors(self) -> None:
        origin = self.headers.get("Origin")
        self.send_header("Vary", "Origin")
        if origin and origin.lower() in self.server.origins:
            self.send_header("Access-Control-Allow-Origin", origin)
            self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "Range")
            self.send_header(
                "Access-Control-Expose-Headers", "Content-Range, Accept-Ranges, Content-Length"
            )

    def _host_ok(self) -> bool:
        host = self.headers.get("Host")
        if host is None:  # HTTP/1.0 without Host: not a browser
            return True
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return name.lower() in LOOPBACK_HOSTS

    def _empty(self, code: int, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self._cors()
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_OPTIONS(self) -> None:
        if not self._host_ok():
            self._empty(403)
            return
        self._empty(204)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        if not self._host_ok():
            self._empty(403)
            return
        fh = self.server.open_media(self.path)
        if fh is None:
            self._empty(404)
            return
        with fh:
            st = os.fstat(fh.fileno())
            size = st.st_size
            modified = email.utils.formatdate(st.st_mtime, usegmt=True)
            rng = parse_range(self.headers.get("Range"), size)
            if_range = self.headers.get("If-Range")
            if rng is not None and if_range is not None and if_range.strip() != modified:
                rng = None  # the client's copy is stale: send the whole file
            common = {
                "Accept-Ranges": "bytes",
                "Last-Modified": modified,
                "Cache-Control": "max-age=3600",
            }
            if rng is False:
                self._empty(416, common | {"Content-Range": f"bytes */{size}"})
                return
            ctype = mimetypes.guess_type(fh.name)[0] or "application/octet-stream"
            if rng is None:
                first, count = 0, size
                self.send_response(200)
            else:
                first, last = rng
                count = last - first + 1
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
            self._cors()
            for k, v in common.items():
                self.send_header(k, v)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(count))
            self.end_headers()
            if body and count:
                self.wfile.flush()
                # streamed by the kernel (or in chunks where sendfile is unavailable)
                self.connection.sendfile(fh, first, count)


class MediaHTTPServer(ThreadingHTTPServer):
    """Registered media of ``store`` under ``root``, to Label Studio at ``origins``.

    ``deny``: folders and files never served even when registered media resolve into them
    (the workspace's secrets, Label Studio's data dir, the store's database files).
    ``read_timeout``: seconds a connection may stay idle before it is closed.
    """

    daemon_threads = True

    def __init__(
        self,
        store: Store,
        root: Path,
        *,
        origins: Sequence[str],
        port: int = 0,
        deny: Iterable[Path] = (),
        read_timeout: float = READ_TIMEOUT,
    ):
        self.read_timeout = check_read_timeout(read_timeout)
        self.root = Path(os.path.realpath(root))
        self.index = MediaIndex(store, self.root)
        self.origins = allowed_origins(origins)
        self.deny = tuple(Path(os.path.realpath(p)) for p in deny)
        super().__init__(("127.0.0.1", port), _Handler)

    @classmethod
    def for_workspace(
        cls,
        ws: Any,
        root: Path,
        *,
        origins: Sequence[str],
        port: int = 0,
        read_timeout: float = READ_TIMEOUT,
    ) -> MediaHTTPServer:
        """A server for a workspace: its store, with its secrets and databases denied."""
        return cls(
            ws.store,
            root,
            origins=origins,
            port=port,
            deny=workspace_deny(ws),
            read_timeout=read_timeout,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def denied(self, real: Path) -> bool:
        return any(real == d or d in real.parents for d in self.deny)

    def open_media(self, url_path: str) -> BinaryIO | None:
        """The registered regular media file ``url_path`` names, opened; None -> 404."""
        path = url_path.split("?", 1)[0].split("#", 1)[0]
        if not path.startswith("/"):
            return None
        rel = unquote(path[1:])  # decoded once; invalid UTF-8 becomes U+FFFD (unknown)
        if not rel or "\x00" in rel:
            return None
        registered = self.index.lookup(rel)
        if registered is None:
            return None
        real = Path(os.path.realpath(registered))
        if self.denied(real) or real.suffix.lower() not in MEDIA_EXTS:
            return None
        try:
            fh = open(real, "rb")  # noqa: SIM115 - handed to the caller, closed there
        except OSError:
            return None
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            fh.close()
            return None
        return fh

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that stops reading mid-video (or stalls past the timeout) is normal;
        anything else is logged."""
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)

    def start_thread(self) -> MediaHTTPServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self


def check_read_timeout(value: Any, what: str = "read_timeout") -> float:
    """A positive, finite number of seconds; else a one-line error naming ``what``."""
    import math

    from truthline.errors import TruthlineError

    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0:
        raise TruthlineError(
            f"{what}: {value!r} is not a positive number of seconds; give one, e.g. 30"
        )
    return seconds


def _default_read_timeout() -> float:
    """``TRUTHLINE_MEDIA_READ_TIMEOUT`` when set, else ``READ_TIMEOUT``."""
    raw = os.environ.get(READ_TIMEOUT_ENV, "").strip()
    return check_read_timeout(raw, READ_TIMEOUT_ENV) if raw else READ_TIMEOUT


def workspace_deny(ws: Any) -> list[Path]:
    """What a workspace's media server never serves: secrets, Label Studio's data, the store."""
    root = Path(ws.root)
    deny = [root / "secrets", root / "label-studio"]
    url = str(ws.url)
    if url.startswith("sqlite:///"):
        db = Path(url.removeprefix("sqlite:///"))
        if db.name and str(db) != ":memory:":
            deny += [db.with_name(db.name + s) for s in ("", "-wal", "-shm", "-journal")]
    return deny


def main(argv: list[str] | None = None) -> int:
    from truthline.errors import TruthlineError
    from truthline.workspace import Workspace

    ap = argparse.ArgumentParser(
        description="Serve a workspace's registered item media to Label Studio (127.0.0.1). "
        "The store URL comes from TRUTHLINE_DB (default: the workspace's SQLite file)."
    )
    ap.add_argument("--workspace", required=True, type=Path)
    ap.add_argument("--root", required=True, type=Path, help="folder the URL paths start at")
    ap.add_argument(
        "--origin", required=True, action="append", help="Label Studio URL (repeatable)"
    )
    ap.add_argument("--port", type=int, default=8090)
    ap.add_argument(
        "--read-timeout",
        type=float,
        default=None,
        help=f"seconds an idle connection is kept (default {READ_TIMEOUT:g}, or {READ_TIMEOUT_ENV})",
    )
    args = ap.parse_args(argv)
    os.umask(0o077)  # whatever it may write is private, whoever started it
    try:
        timeout = (
            _default_read_timeout()
            if args.read_timeout is None
            else check_read_timeout(args.read_timeout, "--read-timeout")
        )
        ws = Workspace.from_env(args.workspace)
        srv = MediaHTTPServer.for_workspace(
            ws, args.root, origins=args.origin, port=args.port, read_timeout=timeout
        )
    except (TruthlineError, OSError) as exc:
        print(f"error: {exc}")
        return 1
    with contextlib.suppress(KeyboardInterrupt):
        srv.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
