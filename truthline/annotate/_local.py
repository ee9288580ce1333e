"""The workspace's own Label Studio: data dir, credentials file, media server, client.

Layout: ``<workspace>/label-studio/`` (Label Studio's data dir, server log, pid files,
``truthline.json`` with ports and the media root) and ``<workspace>/secrets/label_studio.json``
(admin login and API token, 0600).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from truthline.annotate._client import LSClient
from truthline.annotate._server import (
    CREDENTIALS_NAME,
    Credentials,
    LocalServer,
    _pid_alive,
    port_in_use,
)
from truthline.errors import TruthlineError

# bumped when the media server's behaviour changes: `serve` replaces an older running one
MEDIA_SERVER_VERSION = 3


@dataclass
class Target:
    """Where push/pull go: a Label Studio URL with a token, and how tasks reach media."""

    client: LSClient
    media_base: str | None
    media_root: Path | None


def data_dir(ws: Any) -> Path:
    return Path(ws.root) / "label-studio"


def creds_path(ws: Any) -> Path:
    return Path(ws.secrets_dir) / CREDENTIALS_NAME


def _state_path(ws: Any) -> Path:
    return data_dir(ws) / "truthline.json"


def read_state_file(
    p: Path, what: str, folder: Path, serve: str, keys: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A server state file truthline wrote (empty when absent); a damaged one, or one
    lacking ``keys``, is refused with how to recover (``serve``: the command to rerun)."""
    if not p.is_file():
        return {}
    try:
        state = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        state = None
    if not isinstance(state, dict) or any(k not in state for k in keys):
        raise TruthlineError(
            f"{p} is not {what} truthline writes; stop any Label Studio started from "
            f"{folder} by its pid (server.pid), delete {p.name}, and run `{serve}` again"
        )
    return state


def read_state(ws: Any) -> dict[str, Any]:
    return read_state_file(
        _state_path(ws), "the server state", data_dir(ws), "truthline annotate serve"
    )


def default_media_root(ws: Any, project: str | None = None) -> Path:
    """The one media root the project's items use, else the workspace's media folder."""
    from sqlalchemy import select

    from truthline.store import tables

    roots: list[str] = []
    try:
        q = select(tables.items.c.media_root).distinct()
        if project:
            q = q.where(tables.items.c.project == project)
        with ws.store.begin() as conn:
            roots = [r[0] for r in conn.execute(q) if r[0]]  # a system's units have none
    except Exception:
        roots = []
    if len(roots) == 1:
        return Path(roots[0])
    if len(roots) > 1:
        common = Path(os.path.commonpath(roots))
        if common != Path("/"):
            return common
    return Path(ws.media_dir)


def serve(
    ws: Any,
    *,
    port: int = 8080,
    media_port: int = 8090,
    media_root: Path | None = None,
    progress: bool = True,
    extra_origins: tuple[str, ...] = (),
    ls_database: str | None = None,
) -> dict[str, Any]:
    """Start (or reuse) the workspace's Label Studio and media server; ``extra_origins``
    (the blind instance's URL) may load media too."""
    if media_port == port:
        raise TruthlineError(
            f"--media-port {media_port} is Label Studio's --port too; give them different ports"
        )
    if media_root is not None and not Path(media_root).is_dir():
        raise TruthlineError(
            f"--media-root {media_root} is not a folder; give the folder holding the items' media"
        )
    ddir = data_dir(ws)
    from truthline.annotate._ls_database import LSDatabase

    db = LSDatabase.parse(ls_database) if ls_database else None  # PostgreSQL: a team's setup
    server = LocalServer(ddir, port=port, database=db)
    cpath = creds_path(ws)
    creds = Credentials.load(cpath)
    if creds is None:
        creds = Credentials.new(server.url)
        creds.save(cpath)
    url, started = server.start(creds, progress=progress)
    if creds.url != url:
        creds.url = url
        creds.save(cpath)
    root = Path(media_root or default_media_root(ws)).resolve()
    if media_root is None:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TruthlineError(
                f"cannot create the media folder {root} ({exc.strerror}); pass --media-root DIR"
            ) from None
    state = read_state(ws)
    mpid = int(state.get("media_pid") or 0)
    media_running = bool(mpid) and _pid_alive(mpid)
    origins = [url, *extra_origins]
    if media_running and (
        state.get("media_root") != str(root)
        or state.get("media_port") != media_port
        or state.get("media_origins") != origins
        or state.get("media_server") != MEDIA_SERVER_VERSION
    ):
        _stop_pid(mpid, port=int(state.get("media_port") or 0))
        media_running = False
    if not media_running:
        if port_in_use(media_port):
            raise TruthlineError(
                f"media port {media_port} on 127.0.0.1 is taken; pass --media-port N"
            )
        log = (ddir / "media.log").open("ab")
        cmd = [sys.executable, "-m", "truthline.annotate._media", "--workspace", str(ws.root)]
        cmd += ["--root", str(root), "--port", str(media_port)]
        for o in origins:
            cmd += ["--origin", o]
        proc = subprocess.Popen(
            cmd,
            # the store URL (which may hold a password) goes by environment, not argv
            env=os.environ | {"TRUTHLINE_DB": str(ws.url)},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        mpid = proc.pid
        t0 = time.monotonic()
        while not port_in_use(media_port) and time.monotonic() - t0 < 15:
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        if proc.poll() is not None or not port_in_use(media_port):
            _stop_pid(proc.pid)
            raise TruthlineError(
                f"the media server did not start on 127.0.0.1:{media_port}; "
                f"see {ddir / 'media.log'}"
            )
    state = {
        "url": url,
        "port": port,
        "media_port": media_port,
        "media_root": str(root),
        "media_base": f"http://127.0.0.1:{media_port}",
        "media_pid": mpid,
        "media_origins": origins,
        "media_server": MEDIA_SERVER_VERSION,
    }
    _state_path(ws).write_text(json.dumps(state, indent=2))
    return state | {
        "started": started,
        "admin": creds.email,
        "credentials_file": str(cpath),
        "ls_database": server.database.shown if server.database else "sqlite",  # no password
    }


def _stop_pid(pid: int, port: int = 0) -> None:
    """SIGTERM ``pid`` and wait (5 s at most) until it is gone and, given its ``port``, until
    that port is free: a multithreaded server's main thread can be a zombie while its other
    threads still hold the listening socket."""
    import signal

    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    t0 = time.monotonic()
    while (_pid_alive(pid) or (port and port_in_use(port))) and time.monotonic() - t0 < 5:
        time.sleep(0.05)


def stop(ws: Any) -> dict[str, bool]:
    state = read_state(ws)
    server = LocalServer(data_dir(ws), port=int(state.get("port", 8080)))
    stopped = server.stop()
    media = False
    if state.get("media_pid") and _pid_alive(int(state["media_pid"])):
        _stop_pid(int(state["media_pid"]), port=int(state.get("media_port") or 0))
        media = True
    return {"label_studio": stopped, "media_server": media}


def target(
    ws: Any,
    *,
    url: str | None = None,
    media_base: str | None = None,
    media_root: Path | None = None,
) -> Target:
    """A client for ``url`` (token from LABEL_STUDIO_API_KEY) or the workspace's own server."""
    if url:
        token = os.environ.get("LABEL_STUDIO_API_KEY", "")
        if not token:
            raise TruthlineError("--url needs the API token in the LABEL_STUDIO_API_KEY variable")
        return Target(LSClient(url, token), media_base, media_root)
    state = read_state(ws)
    creds = Credentials.load(creds_path(ws))
    server = LocalServer(data_dir(ws), port=int(state.get("port", 8080)))
    if creds is None or not state or not server.is_up():
        raise TruthlineError(
            "the workspace's Label Studio is not running; start it with `truthline annotate serve` "
            "(or pass --url with LABEL_STUDIO_API_KEY for a team server)"
        )
    return Target(
        LSClient(state["url"], creds.token),
        media_base or state.get("media_base"),
        Path(media_root or state["media_root"]),
    )
