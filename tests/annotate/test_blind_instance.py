"""Blind stays blind (issue 26): `annotate serve --blind-instance` runs the blind arm on a
Label Studio of its own. Blind tasks go there, blind annotators get accounts only there
(an email with an account on the other instance is refused), a blind annotator labels in
headless Chromium on it with the media loading, cannot log in where predictions exist,
and pull reads both instances."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from truthline.annotate import LSClient
from truthline.annotate._blind import BLIND_CREDENTIALS, BLIND_DIR, BLIND_USERS_FILE
from truthline.annotate._server import CREDENTIALS_NAME, free_port, health
from truthline.annotate._users import USERS_FILE, user_token
from truthline.annotate.server_env import ensure_template
from truthline.cli import app
from truthline.errors import TruthlineError
from truthline.store import tables

from .test_annotate_cli import CHROMIUM, run

pytestmark = [pytest.mark.labelstudio, pytest.mark.browser]


def _label_blind_task(url, email, password, pid, task_id, shot: Path, tmp: Path) -> set[str]:
    """Log in, open the blind task, pick scene type "yard", screenshot, submit; the URLs of
    the images the browser decoded."""
    from playwright.sync_api import sync_playwright

    env = {"HOME": str(tmp), "XDG_CACHE_HOME": str(tmp / "cache"), "XDG_CONFIG_HOME": str(tmp)}
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            env=env,
            viewport={"width": 1400, "height": 1000},
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
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
        page.locator("input[type=radio][name=yard]").first.check()  # scene type "yard"
        page.screenshot(path=str(shot), full_page=False)
        shown = set(
            page.eval_on_selector_all(
                "img", "els => els.filter(e => e.complete && e.naturalWidth > 0).map(e => e.src)"
            )
        )
        page.get_by_role("button", name="Submit").click()
        page.wait_for_timeout(3000)
        ctx.close()
    return shown


def test_blind_arm_on_its_own_instance(steel_ws, dataset, artifacts_dir: Path, tmp_path):
    ws, _project, _preds = steel_ws
    tpl = ensure_template()  # both data dirs start migrated (as after a first serve)
    shutil.copytree(tpl, ws.root / "label-studio")
    shutil.copytree(tpl, ws.root / BLIND_DIR)
    ws.secrets_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(tpl / CREDENTIALS_NAME, ws.secrets_dir / CREDENTIALS_NAME)
    shutil.copy(tpl / CREDENTIALS_NAME, ws.secrets_dir / BLIND_CREDENTIALS)
    port, bport, mport = free_port(), free_port(), free_port()
    main_url, blind_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{bport}"
    try:
        _, info = run(
            ws,
            "annotate",
            "serve",
            "--port",
            str(port),
            "--media-port",
            str(mport),
            "--media-root",
            str(dataset[0]),
            "--blind-instance",
            "--blind-port",
            str(bport),
            "--json",
        )
        assert info["url"] == main_url and info["blind_instance"]["url"] == blind_url
        assert health(main_url) and health(blind_url)
        assert info["media_origins"] == [main_url, blind_url]

        _, blind = run(
            ws, "annotate", "push", "--arm", "blind", "--split", "0.5", "--seed", "5", "--json"
        )
        _, anch = run(ws, "annotate", "push", "--arm", "anchored", "--json")
        assert blind["created"] == 4 and anch["predictions"] == 4
        assert blind["project_url"].startswith(blind_url)
        assert anch["project_url"].startswith(main_url)
        with ws.store.begin() as conn:
            servers = {r.arm: r.server_url for r in conn.execute(select(tables.ls_projects))}
        assert servers == {"blind": blind_url, "anchored": main_url}

        # blind annotators: accounts on the blind instance only
        out, _ = run(ws, "annotate", "users", "add", "--arm", "blind", "bea@example.com")
        assert "bea@example.com: created" in out
        out, _ = run(ws, "annotate", "users", "add", "ann@example.com")
        assert "ann@example.com: created" in out
        for args in (["bea@example.com"], ["--arm", "blind", "ann@example.com"]):
            res = CliRunner().invoke(app, ["-w", str(ws.root), "annotate", "users", "add", *args])
            assert res.exit_code != 0 and "already has an account" in str(res.exception)
        tok = json.loads((ws.secrets_dir / CREDENTIALS_NAME).read_text())["token"]
        with LSClient(main_url, tok) as main, LSClient(blind_url, tok) as bl:
            assert "bea@example.com" not in main.users().values()
            assert "ann@example.com" not in bl.users().values()
        bea_pw = json.loads((ws.secrets_dir / BLIND_USERS_FILE).read_text())["bea@example.com"][
            "password"
        ]
        assert "bea@example.com" not in json.loads((ws.secrets_dir / USERS_FILE).read_text())
        with pytest.raises(TruthlineError, match="cannot log in"):
            user_token(main_url, "bea@example.com", bea_pw)  # no account where predictions are
        bea = LSClient(blind_url, user_token(blind_url, "bea@example.com", bea_pw))
        projects = bea.get("/api/projects/", page_size=100)
        projects = projects.get("results", projects) if isinstance(projects, dict) else projects
        # everything bea can read: the blind project, without a single prediction
        assert [p["id"] for p in projects] == [blind["ls_project_id"]]
        assert projects[0]["total_predictions_number"] == 0
        with ws.store.begin() as conn:
            btask_ids = [
                r.ls_task_id
                for r in conn.execute(
                    select(tables.ls_tasks.c.ls_task_id).where(
                        tables.ls_tasks.c.server_url == blind_url
                    )
                )
            ]
        assert len(btask_ids) == 4
        assert all(bea.get(f"/api/tasks/{t}")["predictions"] == [] for t in btask_ids)

        with ws.store.begin() as conn:
            lt = conn.execute(
                select(tables.ls_tasks)
                .where(
                    tables.ls_tasks.c.ls_project_id == blind["ls_project_id"],
                    tables.ls_tasks.c.server_url == blind_url,
                )
                .order_by(tables.ls_tasks.c.id)
            ).first()
        with LSClient(blind_url, tok) as bl:
            data = bl.get(f"/api/tasks/{lt.ls_task_id}")["data"]
        shot = artifacts_dir / "ls-blind-instance-task.png"
        shown = _label_blind_task(
            blind_url,
            "bea@example.com",
            bea_pw,
            blind["ls_project_id"],
            lt.ls_task_id,
            shot,
            tmp_path,
        )
        # the media server answers the blind instance's origin: the frames load there
        assert set(data["frames"]) <= shown, sorted(shown)

        _, rep = run(ws, "annotate", "pull", "--json")
        assert rep["new"] == 1 and rep["exposure_violations"] == [], rep
        assert {p["arm"] for p in rep["projects"]} == {"blind", "anchored"}
        with ws.store.begin() as conn:
            rows = [dict(r._mapping) for r in conn.execute(select(tables.annotations))]
        assert {r["annotator"] for r in rows} == {"bea@example.com"}
        assert {r["value"] for r in rows if r["field_path"] == "scene_type"} == {"yard"}
        assert {r["arm"] for r in rows} == {"blind"}
        assert all(r["source_id"].endswith(f"@127.0.0.1:{bport}") for r in rows)
    finally:
        _, stopped = run(ws, "annotate", "stop", "--json")
    assert stopped["label_studio"] and stopped["blind_instance"]
    assert not health(main_url) and not health(blind_url)
