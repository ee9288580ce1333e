"""The blind arm on its own Label Studio instance (``annotate serve --blind-instance``).

Label Studio Community lets every account of an instance read every project of it, so a
blind annotator with an account beside the anchored project can open its predictions. A
second instance, with its own data dir (``<workspace>/label-studio-blind``), admin login
and token (``secrets/label_studio_blind.json``) and annotator accounts
(``secrets/label_studio_blind_users.json``), holds only blind projects: its annotators have
no account where a prediction exists. ``push --arm blind`` goes there, ``pull`` reads both
instances, and ``users add --arm blind`` creates accounts only there (an email with an
account on the other instance is refused, both ways).
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from sqlalchemy import select

from truthline.annotate._client import LSClient
from truthline.annotate._local import Target, read_state_file
from truthline.annotate._server import Credentials, LocalServer
from truthline.errors import TruthlineError
from truthline.store import tables

BLIND_DIR = "label-studio-blind"
BLIND_CREDENTIALS = "label_studio_blind.json"
BLIND_USERS_FILE = "label_studio_blind_users.json"


def blind_data_dir(ws: Any) -> Path:
    return Path(ws.root) / BLIND_DIR


def blind_creds_path(ws: Any) -> Path:
    return Path(ws.secrets_dir) / BLIND_CREDENTIALS


def blind_users_path(ws: Any) -> Path:
    return Path(ws.secrets_dir) / BLIND_USERS_FILE


def _state_path(ws: Any) -> Path:
    return blind_data_dir(ws) / "truthline.json"


def blind_state(ws: Any) -> dict[str, Any]:
    """``{"url", "port"}`` of the blind instance once served, else empty."""
    return read_state_file(
        _state_path(ws),
        "the blind instance's state",
        blind_data_dir(ws),
        "truthline annotate serve --blind-instance",
        keys=("url", "port"),
    )


def has_blind_instance(ws: Any) -> bool:
    """Whether the workspace's blind arm lives on its own instance (served once)."""
    return bool(blind_state(ws))


def serve_blind(ws: Any, *, port: int, progress: bool = True) -> dict[str, Any]:
    """Start (or reuse) the blind instance; its URL, whether it was started, its admin."""
    server = LocalServer(blind_data_dir(ws), port=port)
    cpath = blind_creds_path(ws)
    creds = Credentials.load(cpath)
    if creds is None:
        creds = Credentials.new(server.url)
        creds.save(cpath)
    url, started = server.start(creds, progress=progress)
    if creds.url != url:
        creds.url = url
        creds.save(cpath)
    _state_path(ws).write_text(json.dumps({"url": url, "port": port}, indent=2))
    return {"url": url, "started": started, "admin": creds.email, "credentials_file": str(cpath)}


def stop_blind(ws: Any) -> bool:
    state = blind_state(ws)
    if not state:
        return False
    return LocalServer(blind_data_dir(ws), port=int(state["port"])).stop()


def blind_target(ws: Any, main: Target) -> Target:
    """A client of the running blind instance, with the main instance's media server."""
    state = blind_state(ws)
    creds = Credentials.load(blind_creds_path(ws))
    server = LocalServer(blind_data_dir(ws), port=int(state.get("port") or 0))
    if not state or creds is None or not server.is_up():
        raise TruthlineError(
            "the blind arm's Label Studio instance is not running; start both with "
            "`truthline annotate serve --blind-instance`"
        )
    return Target(LSClient(state["url"], creds.token), main.media_base, main.media_root)


def pushed_to(store: Any, project: str, url: str) -> bool:
    """Whether anything of ``project`` was pushed to the server at ``url``."""
    lp = tables.ls_projects
    with store.begin() as conn:
        return (
            conn.execute(
                select(lp.c.id).where(lp.c.project == project, lp.c.server_url == url).limit(1)
            ).first()
            is not None
        )


def merge_reports(reports: list[Any]) -> Any:
    """One pull report for several instances: counts added, lists joined."""
    from truthline.annotate._pull import PullReport

    out = PullReport()
    for rep in reports:
        for f in fields(PullReport):
            mine, theirs = getattr(out, f.name), getattr(rep, f.name)
            setattr(out, f.name, mine + theirs)
    return out


def other_instance_users(client: LSClient, users_file: Path) -> dict[int, str]:
    """The accounts of the other instance: its users, and those its password file names."""
    out = dict(client.users())
    if users_file.is_file():
        known = json.loads(users_file.read_text(encoding="utf-8"))
        out |= {-k - 1: e for k, e in enumerate(known) if isinstance(e, str)}
    return out


def refuse_other_instance(emails: list[str], others: dict[int, str], where: str) -> None:
    """Refuse emails that have an account on the other instance (``where`` names it)."""
    taken = {e.casefold() for e in others.values()}
    clash = [e for e in emails if e.casefold() in taken]
    if clash:
        raise TruthlineError(
            f"{', '.join(clash)} already ha{'s' if len(clash) == 1 else 've'} an account on "
            f"{where}; a blind annotator must have no account on the instance holding "
            "predictions (and an anchored or review annotator none on the blind one). "
            "Use another email; no account was created"
        )
