"""The user's path through the CLI against a real server: serve (reusing a copied migrated
data dir), push both arms, add an annotator, label a task in headless Chromium, pull, stop.
The screenshot of the anchored task with its prefill is saved under artifacts/."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from truthline.annotate import LSClient
from truthline.annotate._server import CREDENTIALS_NAME, free_port
from truthline.annotate._users import USERS_FILE
from truthline.annotate.server_env import ensure_template
from truthline.cli import app
from truthline.store import tables

pytestmark = [pytest.mark.labelstudio, pytest.mark.browser]
CHROMIUM = "/usr/bin/chromium"


def run(ws, *args: str) -> tuple[str, dict | list | None]:
    res = CliRunner().invoke(app, ["-w", str(ws.root), *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    try:
        return res.output, json.loads(res.output)
    except json.JSONDecodeError:
        return res.output, None


def test_cli_serve_push_label_in_browser_pull(steel_ws, dataset, artifacts_dir: Path, tmp_path):
    ws, _project, preds = steel_ws
    # the workspace's data dir starts as a copy of the migrated template (as after a first serve)
    tpl = ensure_template()
    shutil.copytree(tpl, ws.root / "label-studio")
    shutil.copy(tpl / CREDENTIALS_NAME, ws.secrets_dir / CREDENTIALS_NAME)
    token = json.loads((ws.secrets_dir / CREDENTIALS_NAME).read_text())["token"]
    port, mport = free_port(), free_port()
    outputs = []
    try:
        out, info = run(
            ws,
            "annotate",
            "serve",
            "--port",
            str(port),
            "--media-port",
            str(mport),
            "--media-root",
            str(dataset[0]),
            "--json",
        )
        outputs.append(out)
        assert info["url"] == f"http://127.0.0.1:{port}" and info["started"] is True
        out, again = run(
            ws,
            "annotate",
            "serve",
            "--port",
            str(port),
            "--media-port",
            str(mport),
            "--media-root",
            str(dataset[0]),
            "--json",
        )
        outputs.append(out)
        assert again["started"] is False  # reused
        out, blind = run(
            ws, "annotate", "push", "--arm", "blind", "--split", "0.5", "--seed", "5", "--json"
        )
        outputs.append(out)
        out, anch = run(ws, "annotate", "push", "--arm", "anchored", "--json")
        outputs.append(out)
        assert blind["created"] == 4 and anch["created"] == 4 and anch["predictions"] == 4
        out, _users = run(ws, "annotate", "users", "add", "ann1@example.com")
        outputs.append(out)
        assert "ann1@example.com: created" in out
        password = json.loads((ws.secrets_dir / USERS_FILE).read_text())["ann1@example.com"][
            "password"
        ]
        assert password not in out

        with ws.store.begin() as conn:
            lt = conn.execute(
                select(tables.ls_tasks)
                .where(tables.ls_tasks.c.ls_project_id == anch["ls_project_id"])
                .order_by(tables.ls_tasks.c.id)
            ).first()
        shot = artifacts_dir / "ls-anchored-task.png"
        with LSClient(info["url"], token) as admin:
            data = admin.get(f"/api/tasks/{lt.ls_task_id}")["data"]
        assert len(data["frames"]) == 8 and data["image"] == data["frames"][4]
        shown = _label_in_browser(
            info["url"],
            "ann1@example.com",
            password,
            anch["ls_project_id"],
            lt.ls_task_id,
            shot,
            tmp_path,
        )
        assert shot.stat().st_size > 10_000
        # the annotator sees the whole clip (every frame, as thumbnails) and the key frame
        assert set(data["frames"]) <= shown, sorted(shown)

        out, rep = run(ws, "annotate", "pull", "--json")
        outputs.append(out)
        assert rep["new"] == 1 and rep["problems"] == []
        with ws.store.begin() as conn:
            rows = [dict(r._mapping) for r in conn.execute(select(tables.annotations))]
        assert {r["annotator"] for r in rows} == {"ann1@example.com"}
        assert {r["arm"] for r in rows} == {"anchored"} and {r["item_id"] for r in rows} == {
            lt.item_id
        }
        by = {r["field_path"]: r for r in rows}
        # submitted from the prefill untouched: kept, and Label Studio says so too
        assert by["scene_type"]["kept"] is True and by["workers"]["kept"] is True
        assert by["scene_type"]["value"] == preds[lt.item_id]["scene_type"]
        assert by["scene_type"]["parent_prediction"] is not None
        assert by["scene_type"]["origin"] == "prediction"
    finally:
        out, stopped = run(ws, "annotate", "stop", "--json")
        outputs.append(out)
    assert stopped["label_studio"] is True
    for text in outputs:
        assert token not in text
    for log in (ws.root / "label-studio").glob("*.log"):
        assert token not in log.read_text(errors="replace")


def _label_in_browser(url, email, password, pid, task_id, shot: Path, tmp: Path) -> set[str]:
    """Log in, open the task, screenshot it, submit; returns the URLs of the images loaded."""
    from playwright.sync_api import sync_playwright

    assert os.path.exists(CHROMIUM), "Debian chromium is required (scripts/test.sh installs it)"
    env = {
        "HOME": str(tmp),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "XDG_CONFIG_HOME": str(tmp / "cfg"),
    }
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            env=env,
            viewport={"width": 1400, "height": 1000},
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        page = ctx.new_page()
        page.goto(f"{url}/user/login/")
        page.fill("input[name=email]", email)
        page.fill("input[name=password]", password)
        page.click("button[type=submit], input[type=submit]")
        page.wait_for_url(lambda u: "/user/login" not in u, timeout=60_000)
        page.goto(f"{url}/projects/{pid}/data?task={task_id}")
        page.wait_for_selector("img", timeout=60_000)
        page.wait_for_timeout(3000)
        page.screenshot(path=str(shot), full_page=False)
        # only images the browser actually decoded: the media server's CORS answer to
        # Label Studio's origin is what lets the labeling page load them
        shown = set(
            page.eval_on_selector_all(
                "img", "els => els.filter(e => e.complete && e.naturalWidth > 0).map(e => e.src)"
            )
        )
        page.get_by_role("button", name="Submit").click()
        page.wait_for_timeout(3000)
        ctx.close()
    return shown
