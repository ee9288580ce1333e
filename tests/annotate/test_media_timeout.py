"""The media server closes idle connections (issue 27): each connection holds a thread, so a
client that connects and never sends (or never finishes) a request, or keeps an idle
keep-alive connection, is closed after the read timeout instead of holding a thread forever."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from truthline.annotate import MediaHTTPServer
from truthline.annotate._media import READ_TIMEOUT, main
from truthline.annotate._server import free_port
from truthline.errors import TruthlineError
from truthline.workspace import Workspace

LS = "http://127.0.0.1:18080"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = Workspace.from_env(tmp_path / "ws")
    (tmp_path / "media").mkdir()
    return ws


@pytest.fixture
def srv(ws: Workspace, tmp_path: Path):
    s = MediaHTTPServer.for_workspace(
        ws, tmp_path / "media", origins=[LS], read_timeout=0.5
    ).start_thread()
    try:
        yield s
    finally:
        s.shutdown()
        s.server_close()


def closed_after(sock: socket.socket, limit: float = 10.0) -> float:
    """Seconds until the server closes ``sock`` (reads and drops what it sends first)."""
    t0 = time.monotonic()
    sock.settimeout(limit)
    while sock.recv(65536):
        pass
    return time.monotonic() - t0


def handler_threads() -> int:
    return sum(1 for t in threading.enumerate() if "process_request" in t.name)


def test_an_idle_connection_is_closed_after_the_read_timeout(srv):
    with socket.create_connection(srv.server_address) as s:
        waited = closed_after(s)
    assert 0.4 <= waited < 5, waited


def test_a_request_never_finished_is_closed(srv):
    with socket.create_connection(srv.server_address) as s:
        s.sendall(b"GET /x.png HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no blank line: never ends
        waited = closed_after(s)
    assert waited < 5


def test_an_idle_keep_alive_connection_is_closed_after_its_response(srv):
    with socket.create_connection(srv.server_address) as s:
        s.sendall(b"GET /nothing.png HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        s.settimeout(10)
        first = s.recv(65536)
        assert first.startswith(b"HTTP/1.1 404")
        waited = closed_after(s)  # kept alive for the next request, then closed when idle
    assert waited < 5


def test_idle_connections_give_their_threads_back(srv):
    base = handler_threads()
    socks = [socket.create_connection(srv.server_address) for _ in range(8)]
    try:
        t0 = time.monotonic()  # the accept loop starts a thread per connection, soon after
        while handler_threads() <= base and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        assert handler_threads() > base  # each open connection holds a thread ...
        for s in socks:
            closed_after(s)
        t0 = time.monotonic()
        while handler_threads() > base and time.monotonic() - t0 < 5:
            time.sleep(0.05)
        assert handler_threads() == base  # ... and gives it back when closed for idling
    finally:
        for s in socks:
            s.close()


def test_the_default_timeout_and_bad_values(ws: Workspace, tmp_path: Path, capsys):
    s = MediaHTTPServer.for_workspace(ws, tmp_path / "media", origins=[LS])
    try:
        assert s.read_timeout == READ_TIMEOUT == 30.0
    finally:
        s.server_close()
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(TruthlineError, match=r"read_timeout: .* not a positive number"):
            MediaHTTPServer(ws.store, tmp_path / "media", origins=[LS], read_timeout=bad)
    common = ["--workspace", str(ws.root), "--root", str(tmp_path), "--origin", LS]
    assert main([*common, "--port", str(free_port()), "--read-timeout", "-1"]) == 1
    out = capsys.readouterr().out.strip()
    assert (
        out == "error: --read-timeout: -1.0 is not a positive number of seconds; give one, e.g. 30"
    )


def test_the_command_line_takes_the_timeout_from_the_environment(ws: Workspace, tmp_path: Path):
    cmd = [sys.executable, "-m", "truthline.annotate._media", "--workspace", str(ws.root)]
    cmd += ["--root", str(tmp_path / "media"), "--origin", LS]
    env = os.environ | {"TRUTHLINE_DB": ws.url}
    bad = subprocess.run(
        [*cmd, "--port", str(free_port())],
        env=env | {"TRUTHLINE_MEDIA_READ_TIMEOUT": "soon"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1
    assert bad.stdout.strip().splitlines() == [
        "error: TRUTHLINE_MEDIA_READ_TIMEOUT: 'soon' is not a positive number of seconds; "
        "give one, e.g. 30"
    ]
    port = free_port()
    proc = subprocess.Popen(
        [*cmd, "--port", str(port)],
        env=env | {"TRUTHLINE_MEDIA_READ_TIMEOUT": "0.5"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        t0 = time.monotonic()
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() - t0 < 30
                time.sleep(0.2)
        with s:
            assert closed_after(s) < 5
    finally:
        proc.terminate()
        proc.wait(10)
