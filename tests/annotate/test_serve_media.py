"""`annotate serve` end to end (real Label Studio, the media server as its own process):
task media URLs that push wrote are served to Label Studio's origin; the workspace's secrets
and store are not, even with the widest media root; an older media server is replaced."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from truthline.annotate import LSClient
from truthline.annotate._server import CREDENTIALS_NAME, _pid_alive, free_port
from truthline.annotate.server_env import ensure_template
from truthline.cli import app

pytestmark = pytest.mark.labelstudio


def run(ws, *args: str) -> dict:
    res = CliRunner().invoke(app, ["-w", str(ws.root), *args, "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def fetch(url: str, origin: str | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, headers={"Origin": origin} if origin else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_serve_media_to_label_studio_only(steel_ws, tmp_path: Path):
    ws, _project, _preds = steel_ws
    tpl = ensure_template()
    shutil.copytree(tpl, ws.root / "label-studio")
    shutil.copy(tpl / CREDENTIALS_NAME, ws.secrets_dir / CREDENTIALS_NAME)
    token = json.loads((ws.secrets_dir / CREDENTIALS_NAME).read_text())["token"]
    port, mport = free_port(), free_port()
    serve = ("annotate", "serve", "--port", str(port), "--media-port", str(mport))
    try:
        # the widest root there is: only registered media may come out of it
        info = run(ws, *serve, "--media-root", "/")
        ls_url = info["url"]
        blind = run(ws, "annotate", "push", "--arm", "blind", "--split", "0", "--seed", "5")
        assert blind["created"] == 8
        with LSClient(ls_url, token) as admin:
            tasks = admin.get("/api/tasks/", project=blind["ls_project_id"], page_size=100)
        frames = tasks["tasks"][0]["data"]["frames"]
        assert len(frames) == 8 and all(f.startswith(info["media_base"]) for f in frames)
        status, h, body = fetch(frames[0], origin=ls_url)
        assert status == 200 and body[:2] == b"\xff\xd8"  # a JPEG frame
        assert h["Access-Control-Allow-Origin"] == ls_url
        assert "Access-Control-Allow-Origin" not in fetch(frames[0], "http://evil.example")[1]
        base = info["media_base"]
        for secret in (
            ws.secrets_dir / CREDENTIALS_NAME,
            ws.root / "truthline.db",
            ws.root / "label-studio" / "label_studio.sqlite3",
        ):
            status, _, body = fetch(f"{base}{secret}", origin=ls_url)
            assert status == 404 and token.encode() not in body, secret

        # a media server started by an older truthline (no version in the state) is replaced
        state_file = ws.root / "label-studio" / "truthline.json"
        state = json.loads(state_file.read_text())
        old_pid = state.pop("media_server") and state["media_pid"]
        state_file.write_text(json.dumps(state))
        again = run(ws, *serve, "--media-root", "/")
        assert again["started"] is False and again["media_pid"] != old_pid
        assert not _pid_alive(old_pid) and _pid_alive(again["media_pid"])
        assert fetch(frames[0], origin=ls_url)[0] == 200
    finally:
        stopped = run(ws, "annotate", "stop")
    assert stopped == {"label_studio": True, "media_server": True, "blind_instance": False}
