"""`truthline dashboard`: start the Streamlit pages (headless, 127.0.0.1, usage stats off)."""

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

from truthline._cli_common import JsonOpt, ProjectOpt, console, print_json, state
from truthline.errors import TruthlineError

ADDRESS = "127.0.0.1"


def app_path() -> Path:
    """The Streamlit script of the dashboards."""
    return Path(__file__).with_name("_app.py")


def streamlit_command(port: int) -> list[str]:
    """The exact ``streamlit run`` command line (headless, loopback only, no usage stats)."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_path()),
        "--server.address",
        ADDRESS,
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


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((ADDRESS, port))
        except OSError:
            return False
    return True


def dashboard(
    ctx: typer.Context,
    port: Annotated[
        int, typer.Option("--port", help="Port on 127.0.0.1.", min=1, max=65535)
    ] = 8501,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Start the dashboards on http://127.0.0.1:PORT and serve until Ctrl-C.

    Pages: Overview, Agreement, Provenance audit, Benchmark. They only read the store.
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
    if not _port_free(port):
        raise TruthlineError(f"port {port} on {ADDRESS} is in use; pass --port with a free one")
    env = dict(os.environ)
    env["TRUTHLINE_WORKSPACE"] = str(ws.root)
    if ws.db_url:
        env["TRUTHLINE_DB"] = ws.db_url
    if project:
        env["TRUTHLINE_PROJECT"] = project
    env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] = "false"
    url = f"http://{ADDRESS}:{port}"
    info: dict[str, object] = {"url": url, "workspace": str(ws.root), "project": project}
    proc = subprocess.Popen(streamlit_command(port), env=env)
    info["pid"] = proc.pid
    if as_json:
        print_json(info)
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
