"""The media server serves registered item media only, to the Label Studio origin only,
with single HTTP ranges, streaming files instead of reading them whole (issue 12, blocker).

The layout reproduces the report: items from two folders make ``annotate serve`` pick
their common parent, which also holds the workspace (its store, Label Studio's data dir and
the secrets folder with the admin credentials and the annotators' passwords).
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import cv2
import numpy as np
import pytest
from sqlalchemy import delete

from truthline.annotate import MediaHTTPServer
from truthline.annotate._local import default_media_root
from truthline.annotate._media import parse_range
from truthline.annotate._push import _Urls
from truthline.annotate._server import Credentials, free_port, write_secret
from truthline.annotate._users import USERS_FILE
from truthline.media import import_items
from truthline.project import validate_data
from truthline.store import now, tables
from truthline.workspace import Workspace

LS = "http://127.0.0.1:18080"
VIDEO = bytes(range(256)) * 40  # 10,240 bytes, every offset distinguishable


def _png(path: Path, shade: int) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.full((20, 30, 3), shade, np.uint8))
    return path.read_bytes()


def register(ws: Workspace, root: Path, media: list[str], kind: str = "image") -> int:
    """An item row the way mining stores clip frames (paths relative to ``media_root``)."""
    with ws.store.begin() as conn:
        return conn.execute(
            tables.items.insert().values(
                project="photos",
                key=f"direct/{media[0]}",
                media_kind=kind,
                media=media,
                media_root=str(root),
                content_hash="0" * 64,
                meta={},
                created_at=now(),
                updated_at=now(),
            )
        ).inserted_primary_key[0]


@pytest.fixture
def site(tmp_path: Path):
    base = tmp_path / "site"
    ws = Workspace.from_env(base / "ws")
    project = validate_data(
        {"name": "photos", "media": "image", "fields": {"ok": {"type": "boolean"}}}, "inline"
    )
    ws.store.upsert_project(project)
    a, b = base / "photos_a", base / "photos_b"
    files = {
        "photos_a/img 1.png": _png(a / "img 1.png", 10),
        "photos_a/sub/img2.png": _png(a / "sub" / "img2.png", 20),
        "photos_b/näh 3.png": _png(b / "näh 3.png", 30),
    }
    import_items(ws.store, project, a, progress=False)
    import_items(ws.store, project, b, progress=False)
    # secrets, Label Studio's data and the store: all inside the common parent
    Credentials.new(LS).save(ws.secrets_dir / "label_studio.json")
    write_secret(ws.secrets_dir / USERS_FILE, '{"ann@example.com": {"password": "hunter2"}}')
    (ws.root / "label-studio").mkdir()
    (ws.root / "label-studio" / "label_studio.sqlite3").write_bytes(b"LS DATABASE")
    _png(a / "extra.png", 40)  # next to registered media, never imported
    (base / "videos").mkdir()
    (base / "videos" / "clip.mp4").write_bytes(VIDEO)
    register(ws, base / "videos", ["clip.mp4"], "video")
    # registered paths that lead into what must never be served
    os.symlink(ws.secrets_dir / "label_studio.json", a / "evil.png")
    os.symlink(ws.root / "truthline.db", a / "db.jpg")
    os.symlink(ws.root / "label-studio" / "label_studio.sqlite3", a / "ls.png")
    (a / "notes.txt").write_text("not media")
    register(ws, a, ["evil.png", "db.jpg", "ls.png", "notes.txt"])
    root = default_media_root(ws)
    assert root == base  # the common parent: the workspace is under the served root
    srv = MediaHTTPServer.for_workspace(ws, root, origins=[LS]).start_thread()
    try:
        yield ws, srv, files
    finally:
        srv.shutdown()
        srv.server_close()


def get(srv, path: str, method: str = "GET", **headers: str):
    c = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=10)
    try:
        c.request(method, path, headers=headers)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def raw(srv, request_line: bytes) -> bytes:
    with socket.create_connection(srv.server_address, timeout=10) as s:
        s.sendall(request_line + b"\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


def test_only_registered_media_is_served(site):
    ws, srv, files = site
    for rel, data in files.items():
        status, _, body = get(srv, "/" + _quote(rel))
        assert (status, body) == (200, data), rel
    secrets = [
        (ws.secrets_dir / "label_studio.json").read_bytes(),
        (ws.secrets_dir / USERS_FILE).read_bytes(),
    ]
    refused = [
        "/ws/secrets/label_studio.json",
        f"/ws/secrets/{USERS_FILE}",
        "/ws/truthline.db",
        "/ws/truthline.db-wal",
        "/ws/label-studio/label_studio.sqlite3",
        "/photos_a/extra.png",  # an unregistered file next to registered media
        "/photos_a/evil.png",  # registered, but a symlink to the admin credentials
        "/photos_a/db.jpg",  # registered, but the store
        "/photos_a/ls.png",  # registered, but Label Studio's database
        "/photos_a/notes.txt",  # registered, but not an image or a video
        "/photos_a",
        "/",
    ]
    for path in refused:
        status, _, body = get(srv, path)
        assert status == 404, path
        assert body == b"" and all(s not in body for s in secrets)


def _quote(rel: str) -> str:
    from urllib.parse import quote

    return quote(rel)


def test_traversal_and_encoded_paths_are_refused(site):
    ws, srv, _ = site
    ok = "/photos_a/img%201.png"
    assert get(srv, ok)[0] == 200
    for bad in [
        "/photos_a/../ws/secrets/label_studio.json",
        "/photos_a/%2e%2e/ws/secrets/label_studio.json",
        "/photos_a/%2E%2E%2Fws%2Fsecrets%2Flabel_studio.json",
        "/%2e%2e/site/ws/truthline.db",
        "/photos_a/./img%201.png",
        "/photos_a//img%201.png",
        f"/{ws.root}/truthline.db",
        "/%2F" + str(ws.root / "truthline.db").lstrip("/").replace("/", "%2F"),
        "/photos_a/img%25201.png",  # double-encoded
        "/photos_a/img%201.png%00.png",
        "/photos_a\\img%201.png",
        "/photos_a/img%201.png/",
        "/photos_a/%ff%fe.png",
    ]:
        assert get(srv, bad)[0] == 404, bad
    # request lines that an HTTP client library would normalise away
    for line in (
        b"GET /../ws/secrets/label_studio.json HTTP/1.1",
        b"GET /photos_a/../../site/ws/truthline.db HTTP/1.1",
        b"GET ws/truthline.db HTTP/1.1",
        b"GET http://127.0.0.1/ws/truthline.db HTTP/1.1",
    ):
        reply = raw(srv, line)
        assert reply.startswith(b"HTTP/1.1 404"), (line, reply[:40])
        assert b"token" not in reply and b"SQLite" not in reply
    # the query string is not part of the path
    assert get(srv, ok + "?v=1")[0] == 200


def test_range_requests_on_a_video(site):
    _, srv, _ = site
    n = len(VIDEO)
    cases = {
        "bytes=0-99": (0, 99),
        "bytes=100-": (100, n - 1),
        "bytes=-50": (n - 50, n - 1),
        "bytes=5-5": (5, 5),
        "bytes=10200-99999": (10200, n - 1),
        "bytes= 7 - 9": (7, 9),
    }
    for header, (first, last) in cases.items():
        status, h, body = get(srv, "/videos/clip.mp4", Range=header, Origin=LS)
        assert status == 206, header
        assert h["Content-Range"] == f"bytes {first}-{last}/{n}"
        assert int(h["Content-Length"]) == last - first + 1
        assert body == VIDEO[first : last + 1], header
        assert h["Access-Control-Allow-Origin"] == LS
    for header in ("bytes=10240-", "bytes=99999-100000", "bytes=-0"):
        status, h, body = get(srv, "/videos/clip.mp4", Range=header)
        assert (status, h["Content-Range"], body) == (416, f"bytes */{n}", b""), header
    # multi-range, malformed or other units: ignored, the whole file
    for header in ("bytes=0-1,5-6", "bytes=abc", "items=0-5", "bytes=9-2"):
        status, h, body = get(srv, "/videos/clip.mp4", Range=header)
        assert (status, body) == (200, VIDEO), header
        assert h["Accept-Ranges"] == "bytes" and "Content-Range" not in h
    status, h, body = get(srv, "/videos/clip.mp4", "HEAD", Range="bytes=0-99")
    assert (status, h["Content-Length"], body) == (206, "100", b"")
    _, h, _ = get(srv, "/videos/clip.mp4")
    assert h["Content-Type"] == "video/mp4"
    fresh = get(srv, "/videos/clip.mp4", Range="bytes=0-9", **{"If-Range": h["Last-Modified"]})
    stale = get(srv, "/videos/clip.mp4", Range="bytes=0-9", **{"If-Range": "Mon, 01 Jan 2001"})
    assert (fresh[0], stale[0], stale[2]) == (206, 200, VIDEO)


def test_parse_range_table():
    assert parse_range(None, 10) is None
    assert parse_range("bytes=0-", 0) is False
    assert parse_range("bytes=-5", 3) == (0, 2)
    assert parse_range("bytes=-", 10) is None
    assert parse_range("bytes=1-2-3", 10) is None


def test_cors_only_for_the_label_studio_origin(site):
    _, srv, _ = site
    path = "/photos_a/img%201.png"
    for origin in (LS, "http://localhost:18080"):
        status, h, _ = get(srv, path, Origin=origin)
        assert status == 200 and h["Access-Control-Allow-Origin"] == origin
        assert "Origin" in h["Vary"]
    for origin in (
        "http://evil.example",
        "http://127.0.0.1:18081",
        "null",
        "https://127.0.0.1:18080",
    ):
        status, h, _ = get(srv, path, Origin=origin)
        assert "Access-Control-Allow-Origin" not in h, origin
    assert "Access-Control-Allow-Origin" not in get(srv, path)[1]
    status, h, _ = get(
        srv, path, "OPTIONS", Origin=LS, **{"Access-Control-Request-Headers": "range"}
    )
    assert status == 204 and h["Access-Control-Allow-Origin"] == LS
    assert "Range" in h["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Origin" not in get(srv, path, "OPTIONS", Origin="http://x.y")[1]
    # a non-loopback Host is a DNS-rebinding page reaching 127.0.0.1: refused
    assert get(srv, path, Host="evil.example:8090")[0] == 403
    assert get(srv, path, Host=f"localhost:{srv.server_address[1]}")[0] == 200
    assert srv.server_address[0] == "127.0.0.1"


def test_a_large_file_is_streamed_not_read_whole(site):
    ws, srv, _ = site
    big = ws.root.parent / "videos" / "big.mp4"
    size = 64 << 20
    with big.open("wb") as fh:  # sparse: costs no disk
        fh.truncate(size)
    register(ws, big.parent, ["big.mp4"], "video")
    c = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=30)
    tracemalloc.start()
    try:
        c.request("GET", "/videos/big.mp4")
        r = c.getresponse()
        assert r.status == 200 and int(r.headers["Content-Length"]) == size
        got = 0
        while chunk := r.read(1 << 20):
            got += len(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        c.close()
    assert got == size
    # the server thread runs in this process: reading the file whole would allocate 64 MiB
    assert peak < 8 << 20, f"peak Python allocation {peak / 2**20:.1f} MiB"


def test_media_registered_or_removed_while_running(site):
    ws, srv, _ = site
    a = ws.root.parent / "photos_a"
    assert get(srv, "/photos_a/extra.png")[0] == 404
    item = register(ws, a, ["extra.png"])
    assert get(srv, "/photos_a/extra.png")[0] == 200
    srv.index.ttl = 0
    with ws.store.begin() as conn:
        conn.execute(delete(tables.items).where(tables.items.c.id == item))
    assert get(srv, "/photos_a/extra.png")[0] == 404


def test_push_urls_are_what_the_server_serves(site):
    ws, srv, files = site
    urls = _Urls(srv.url, srv.root)
    served = 0
    for it in ws.store.items("photos"):
        if it["key"].startswith("direct/"):
            continue
        for url in urls(it):
            status, _, body = get(srv, url.removeprefix(srv.url))
            assert status == 200 and body in files.values(), url
            served += 1
    assert served == len(files)


def test_media_server_command_line(site):
    ws, _, files = site
    port = free_port()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "truthline.annotate._media", "--workspace", str(ws.root)),
            *("--root", str(ws.root.parent), "--origin", LS, "--port", str(port)),
        ],
        env=os.environ | {"TRUTHLINE_DB": ws.url},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                time.sleep(0.2)

        class _Srv:
            server_address = ("127.0.0.1", port)

        status, h, body = get(_Srv, "/photos_a/img%201.png", Origin=LS)
        assert (status, body, h["Access-Control-Allow-Origin"]) == (
            200,
            files["photos_a/img 1.png"],
            LS,
        )
        assert get(_Srv, "/ws/secrets/label_studio.json")[0] == 404
    finally:
        proc.terminate()
        proc.wait(10)
