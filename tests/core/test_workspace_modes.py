"""Every file truthline and the servers it starts create under a workspace is private by its
own mode (issue 27): no group or other bits, whatever the user's umask (here 0022, the
usual one), so a copied, archived or re-permissioned workspace leaks no token.

The loop's parts are run through the real command line (init, import, prefill, Label Studio
serve from a copied world-readable template, accounts, push, labels, pull, stop), then the
workspace is walked with nothing excluded. ``loose_modes`` is the walk: the demo's workspace
(reports, release) can be checked with it too.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from truthline.annotate._server import CREDENTIALS_NAME, free_port
from truthline.annotate.server_env import ensure_template
from truthline.workspace import keep_private, make_private


def loose_modes(root: Path) -> list[str]:
    """Paths under ``root`` (itself included; links not followed) with group/other bits."""
    out = []
    for p in (root, *root.rglob("*")):
        if p.is_symlink():
            continue
        mode = stat.S_IMODE(p.lstat().st_mode)
        if mode & 0o077:
            out.append(f"{oct(mode)} {p.relative_to(root)}")
    return out


def truthline(ws: Path, *args: str) -> dict | list | str:
    """``truthline -w WS ARGS`` under the usual 0022 umask; its JSON output when it has one."""
    proc = subprocess.run(
        [sys.executable, "-m", "truthline", "-w", str(ws), *args],
        capture_output=True,
        text=True,
        timeout=600,
        umask=0o022,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return proc.stdout


def label_every_task(ws: Path, url: str, email: str) -> None:
    """``email`` answers every pushed task through Label Studio's API."""
    from sqlalchemy import select

    from truthline.annotate import submit_annotation, user_client
    from truthline.annotate._users import USERS_FILE
    from truthline.store import tables
    from truthline.workspace import Workspace

    w = Workspace.from_env(ws)
    project = w.project()
    with w.store.begin() as conn:
        tasks = [r.ls_task_id for r in conn.execute(select(tables.ls_tasks.c.ls_task_id))]
    with user_client(url, email, ws / "secrets" / USERS_FILE) as client:
        for t in tasks:
            submit_annotation(client, project, t, {"scene_type": "yard", "worker_count": 1}, 3.0)
    w.store.close()


def test_keep_private_and_make_private(tmp_path: Path):
    old = os.umask(0o022)
    try:
        keep_private()
        (tmp_path / "f").write_text("x")
        (tmp_path / "d").mkdir()
        assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o700
        os.umask(0o027)
        keep_private()  # a stricter umask than ours is kept: 027 | 077
        assert os.umask(0o022) == 0o077
        tree = tmp_path / "copied"
        (tree / "sub").mkdir(parents=True)
        (tree / "sub" / "a.toml").write_text("x")
        for p, mode in ((tree, 0o755), (tree / "sub", 0o775), (tree / "sub" / "a.toml", 0o4754)):
            p.chmod(mode)
        (tree / "link").symlink_to("/etc/hostname")
        make_private(tree)
        assert loose_modes(tree) == []
        assert stat.S_IMODE((tree / "sub" / "a.toml").stat().st_mode) == 0o4700
        assert stat.S_IMODE(Path("/etc/hostname").stat().st_mode) & 0o004  # never followed
    finally:
        os.umask(old)


@pytest.mark.labelstudio
def test_the_loop_leaves_no_file_others_can_read(tmp_path: Path):
    from truthline.simulate._scene import write_dataset

    ws = tmp_path / "ws"
    clips = tmp_path / "clips"  # the user's media, outside the workspace: left as they are
    csv = write_dataset(clips, n_clips=4, seed=5, size=(160, 90))
    truthline(ws, "init", "steel-safety", "--json")
    truthline(ws, "items", "import", str(clips), "--metadata", str(csv), "--json")
    truthline(ws, "prefill", "run", "-m", "simulated:steel-v1", "--json")
    # Label Studio's data dir from the migrated template, left readable by all as a server
    # started by hand under umask 022 (or by an older truthline) leaves it: the template
    # itself is private since its server runs under PRIVATE_UMASK
    tpl = ensure_template()
    shutil.copytree(tpl, ws / "label-studio")
    for p in [ws / "label-studio", *(ws / "label-studio").rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() else 0o644)
    (ws / "secrets").mkdir(mode=0o700, exist_ok=True)  # as `serve` keeps it
    shutil.copy(tpl / CREDENTIALS_NAME, ws / "secrets" / CREDENTIALS_NAME)  # 0600 there
    assert any("label_studio.sqlite3" in p for p in loose_modes(ws / "label-studio"))
    port, mport = free_port(), free_port()
    try:
        info = truthline(
            ws, "annotate", "serve", "--port", str(port), "--media-port", str(mport), "--json"
        )
        assert isinstance(info, dict) and info["started"] is True
        truthline(ws, "annotate", "users", "add", "una@example.com", "--json")
        truthline(ws, "annotate", "push", "--arm", "blind", "--split", "0.5", "--json")
        truthline(ws, "annotate", "push", "--arm", "anchored", "--json")
        label_every_task(ws, info["url"], "una@example.com")
        truthline(ws, "annotate", "pull", "--json")
    finally:
        truthline(ws, "annotate", "stop", "--json")
    made = {str(p.relative_to(ws)) for p in ws.rglob("*")}
    for expect in (
        "truthline.db",
        "secrets/label_studio.json",
        "secrets/label_studio_users.json",
        "label-studio/label_studio.sqlite3",
        "label-studio/server.log",
        "label-studio/media.log",
        "label-studio/truthline.json",
        "projects/steel-safety/project.toml",
    ):
        assert expect in made, sorted(made)
    assert loose_modes(ws) == []
