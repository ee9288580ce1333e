"""Bad input to the annotate commands: one clear message, the documented exit code, and the
store, secrets and server state exactly as they were (issue 12). Run through the real entry
point (``truthline.cli.main``), so an unexpected exception fails the test as a traceback.

Servers here are real sockets: a closed port (nothing listening) and a web server that is
not Label Studio (answers HTML). No Label Studio is needed.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import select

from truthline.annotate._users import USERS_FILE
from truthline.cli import main
from truthline.store import tables
from truthline.workspace import Workspace

KEY = "LABEL_STUDIO_API_KEY"


class _Html(BaseHTTPRequestHandler):
    def log_message(self, *a: object) -> None:
        pass

    def _page(self) -> None:
        body = b"<html><body>Welcome to nginx!</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_DELETE = _page


@pytest.fixture(scope="module")
def html_server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Html)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def _closed() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def _garbage_creds(ws: Workspace) -> None:
    (ws.secrets_dir / "label_studio.json").write_text('{"url": "http://127.0.0.1:1", "tok')


def _garbage_state(ws: Workspace) -> None:
    (ws.root / "label-studio").mkdir(exist_ok=True)
    (ws.root / "label-studio" / "truthline.json").write_bytes(b"\xff\xfe not json")


def _garbage_users(ws: Workspace) -> None:
    (ws.secrets_dir / USERS_FILE).write_text('["ann@example.com"]')


def _a_file(ws: Workspace) -> None:
    (ws.root / "notes.txt").write_text("not a folder")


# (id, arguments, API key set?, setup, exit code, message fragment)
CASES = [
    ("users-malformed-email", ["users", "add", "not-an-email", "--url", "{closed}"], True, None, 1,
     "'not-an-email' is not an email address"),
    ("users-double-at", ["users", "add", "ok@example.com", "bob@@example.com", "--url", "{closed}"],
     True, None, 1, "'bob@@example.com' is not an email address"),
    ("users-unreachable-url", ["users", "add", "ann@example.com", "--url", "{closed}"], True, None,
     1, "is not answering"),
    ("users-not-label-studio", ["users", "add", "ann@example.com", "--url", "{html}"], True, None,
     1, "not JSON; is it a Label Studio server?"),
    ("users-corrupt-password-file", ["users", "add", "ann@example.com", "--url", "{closed}"], True,
     _garbage_users, 1, f"{USERS_FILE} is not the annotators' password file"),
    ("push-missing-api-key", ["push", "--arm", "blind", "--url", "{html}"], False, None, 1,
     "--url needs the API token in the LABEL_STUDIO_API_KEY variable"),
    ("push-url-not-a-url", ["push", "--arm", "blind", "--url", "notaurl"], True, None, 1,
     "'notaurl' is not the http(s) URL of a Label Studio server"),
    ("push-url-without-media-url", ["push", "--arm", "blind", "--url", "{html}"], True, None, 1,
     "--url needs --media-url and --media-root"),
    ("push-unreachable-url", ["push", "--arm", "blind", "{media}", "--url", "{closed}"], True,
     None, 1, "is not answering"),
    ("push-not-label-studio", ["push", "--arm", "blind", "{media}", "--url", "{html}"], True, None,
     1, "not JSON; is it a Label Studio server?"),
    ("push-split-above-1", ["push", "--arm", "blind", "--split", "1.5", "{media}", "--url",
     "{closed}"], True, None, 1, "--split must be between 0 and 1, got 1.5"),
    ("push-overlap-0", ["push", "--arm", "blind", "--overlap", "0", "{media}", "--url", "{closed}"],
     True, None, 1, "--overlap must be at least 1"),
    ("push-sample-0", ["push", "--arm", "review", "--sample", "0", "{media}", "--url", "{closed}"],
     True, None, 1, "--sample must be a positive number of items, got 0"),
    ("push-unknown-strategy", ["push", "--arm", "review", "--strategy", "worst", "{media}",
     "--url", "{closed}"], True, None, 1, "unknown --strategy 'worst'"),
    ("push-annotator-not-email", ["push", "--arm", "blind", "--annotators", "bob", "{media}",
     "--url", "{closed}"], True, None, 1, "'bob' is not an email address"),
    ("push-media-url-not-a-url", ["push", "--arm", "blind", "--media-url", "media/",
     "--media-root", "{ws}", "--url", "{closed}"], True, None, 1,
     "--media-url 'media/' is not an http(s) URL"),
    ("push-unknown-arm", ["push", "--arm", "nope"], True, None, 2, "'nope' is not one of"),
    ("pull-nothing-pushed", ["pull", "--url", "{closed}"], True, None, 1,
     "nothing pushed for project 'steel-safety'"),
    ("pull-corrupt-credentials", ["pull"], False, _garbage_creds, 1,
     "label_studio.json is not the Label Studio credentials file"),
    ("pull-corrupt-server-state", ["pull"], False, _garbage_state, 1,
     "truthline.json is not the server state truthline writes"),
    ("serve-media-root-is-a-file", ["serve", "--media-root", "{ws}/notes.txt"], False, _a_file, 1,
     "notes.txt is not a folder"),
    ("serve-same-ports", ["serve", "--port", "18123", "--media-port", "18123"], False, None, 1,
     "give them different ports"),
    ("serve-port-out-of-range", ["serve", "--port", "70000"], False, None, 2,
     "Invalid value for '--port'"),
]  # fmt: skip


def _snapshot(ws: Workspace) -> tuple:
    with ws.store.begin() as conn:
        rows = {
            # every command re-registers the project, which refreshes projects.updated_at
            t.name: [
                tuple(r)
                for r in conn.execute(
                    select(
                        *(c for c in t.c if not (t.name == "projects" and c.name == "updated_at"))
                    )
                )
            ]
            for t in tables.metadata.sorted_tables
        }
    files = {
        str(p.relative_to(ws.root)): p.read_bytes()
        for p in sorted(ws.root.rglob("*"))
        if p.is_file() and not p.name.startswith("truthline.db")
    }
    return rows, files


@pytest.mark.parametrize(("args", "key", "setup", "code", "fragment"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])  # fmt: skip
def test_bad_input_gives_one_clear_line(
    tmp_path: Path, html_server: str, monkeypatch, capsys, args, key, setup, code, fragment
):
    ws = Workspace.from_env(tmp_path / "ws")
    ws.init_project("steel-safety")
    if setup is not None:
        setup(ws)
    if key:
        monkeypatch.setenv(KEY, "0123456789abcdef")
    else:
        monkeypatch.delenv(KEY, raising=False)
    subst = {"{closed}": _closed(), "{html}": html_server}
    argv: list[str] = []
    for a in args:
        if a == "{media}":
            argv += ["--media-url", "http://127.0.0.1:1", "--media-root", str(ws.media_dir)]
        else:
            argv.append(subst.get(a, a.replace("{ws}", str(ws.root))))
    before = _snapshot(ws)
    monkeypatch.setattr(sys, "argv", ["truthline", "-w", str(ws.root), "annotate", *argv])
    with pytest.raises(SystemExit) as ended:
        main()
    out = capsys.readouterr()
    text = " ".join((out.err + out.out).split())  # the console wraps long lines
    assert ended.value.code == code, text
    assert fragment in text, text
    assert "Traceback" not in text
    if code == 1:
        assert text.startswith("error: ") and text.count("error: ") == 1, text
    assert _snapshot(ws) == before
    assert "0123456789abcdef" not in text


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 8 and len({c[0] for c in CASES}) == len(CASES)
