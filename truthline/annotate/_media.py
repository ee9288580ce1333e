"""A small static file server for task media: 127.0.0.1 only, the media root only, with CORS.

Label Studio's labeling page loads ``$image`` from another origin, so responses carry
``Access-Control-Allow-Origin: *`` (without it the page shows "There was an issue loading URL").
Paths are decoded once, must be relative, may not contain ``..`` segments, and must resolve
(symlinks followed) to a regular file inside the media root; anything else is a 404.
"""

from __future__ import annotations

import argparse
import contextlib
import mimetypes
import os
import posixpath
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit


def resolve_media(root: Path, url_path: str) -> Path | None:
    """The file under ``root`` that ``url_path`` names, or None when it is not allowed."""
    raw = unquote(urlsplit(url_path).path)
    if "\x00" in raw or "\\" in raw:
        return None
    rel = raw.lstrip("/")
    if not rel or rel.startswith("/"):
        return None
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    root_real = Path(os.path.realpath(root))
    target = Path(os.path.realpath(root_real / posixpath.join(*parts)))
    try:
        target.relative_to(root_real)
    except ValueError:
        return None
    return target if target.is_file() else None


def media_url(base: str, rel: str) -> str:
    return f"{base.rstrip('/')}/{quote(rel)}"


class _Handler(BaseHTTPRequestHandler):
    server: MediaHTTPServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")

    def do_OPTIONS(self) -> None:
        self.send_response(204)
        self._cors()
        self.end_headers()

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        path = resolve_media(self.server.root, self.path)
        if path is None:
            self.send_response(404)
            self._cors()
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = path.read_bytes()
        self.send_response(200)
        self._cors()
        self.send_header(
            "Content-Type", mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        )
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "max-age=3600")
        self.end_headers()
        if body:
            self.wfile.write(data)


class MediaHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path, port: int = 0):
        self.root = Path(root).resolve()
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start_thread(self) -> MediaHTTPServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Serve a media root to Label Studio (127.0.0.1).")
    ap.add_argument("--root", required=True, type=Path)
    ap.add_argument("--port", type=int, default=8090)
    args = ap.parse_args(argv)
    srv = MediaHTTPServer(args.root, args.port)
    with contextlib.suppress(KeyboardInterrupt):
        srv.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
