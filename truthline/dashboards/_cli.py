"""`truthline dashboard`: start the Streamlit pages (headless, usage stats off; bound to
127.0.0.1 unless ``--host`` says otherwise, for a team server)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from truthline._cli_common import JsonOpt, ProjectOpt, console, err_console, print_json, state
from truthline.errors import TruthlineError

ADDRESS = "127.0.0.1"
"""The default bind address: loopback only. ``--host`` binds elsewhere on request."""


def app_path() -> Path:
    """The Streamlit script of the dashboards."""
    return Path(__file__).with_name("_app.py")


def streamlit_command(port: int, host: str = ADDRESS) -> list[str]:
    """The exact ``streamlit run`` command line (headless, on ``host``, no usage stats)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path()),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
        "--global.developmentMode",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def dashboard(
    ctx: typer.Context,
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on.", min=1, max=65535)
    ] = 8501,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to bind (default 127.0.0.1, this machine only). For a team server "
            "pass the machine's address or 0.0.0.0; the pages have no login of their own.",
        ),
    ] = ADDRESS,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Start the dashboards on http://HOST:PORT (127.0.0.1 by default) and serve until Ctrl-C.

    Pages: Overview, Agreement, Provenance audit, Benchmark. They only read the store.
    With --json, stdout carries only the JSON line of url/pid; Streamlit's own output goes
    to stderr.
    """
    st = state(ctx)
    ws = st.ws
    if not ws.db_url and not (ws.root / "truthline.db").is_file():
        raise TruthlineError(
            f"no store at {ws.root / 'truthline.db'}; run `truthline demo --workspace {ws.root}` "
            "or `truthline init steel-safety` first (or pass --workspace / --db)"
        )
    names = ws.store.project_names()
    if project is not None and project not in names:
        raise TruthlineError(
            f"no project {project!r} in the store (have: {', '.join(names) or 'none'})"
        )
    if not _port_free(host, port):
        raise TruthlineError(
            f"port {port} on {host} is in use or cannot be bound there; pass --port with a "
            "free one (or --host with an address of this machine)"
        )
    env = dict(os.environ)
    env["TRUTHLINE_WORKSPACE"] = str(ws.root)
    if ws.db_url:
        env["TRUTHLINE_DB"] = ws.db_url
    if project:
        env["TRUTHLINE_PROJECT"] = project
    env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] = "false"
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{port}"
    info: dict[str, object] = {
        "url": url,
        "host": host,
        "port": port,
        "workspace": str(ws.root),
        "project": project,
    }
    # --json: stdout is for the JSON alone, so Streamlit's banner and logs go to stderr
    sys.stdout.flush()
    proc = subprocess.Popen(
        streamlit_command(port, host), env=env, stdout=sys.stderr if as_json else None
    )
    info["pid"] = proc.pid
    if not _is_loopback(host):
        err_console.print(
            f"[yellow]warning[/] the dashboards listen on {host}: anyone who can reach this "
            "machine on that address can read the project (there is no login)"
        )
    if as_json:
        print_json(info)
        sys.stdout.flush()
    else:
        console.print(f"[green]dashboards[/] at {url}  (Ctrl-C stops them)")
    rc, stopped = _serve(proc)
    if stopped:
        raise typer.Exit(0)
    if rc != 0:
        raise TruthlineError(f"streamlit exited with status {rc}")


def _serve(proc: subprocess.Popen[bytes]) -> tuple[int, bool]:
    """Wait for Streamlit; SIGTERM or SIGINT to us is passed on to it and awaited, so no
    server is left listening. Returns its exit status and whether we were told to stop."""
    got: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        got.append(signum)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    deadline: float | None = None
    try:
        while True:
            try:
                return proc.wait(timeout=0.5), bool(got)
            except subprocess.TimeoutExpired:
                pass
            if got and deadline is None:
                deadline = time.monotonic() + 10
            if deadline is not None and time.monotonic() > deadline:
                proc.kill()  # Streamlit ignored SIGTERM for 10 s
    finally:
        for s, h in old.items():
            signal.signal(s, h)
