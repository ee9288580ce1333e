"""`truthline dashboard`: options, clear errors, and the exact Streamlit command line."""

from __future__ import annotations

import socket
import subprocess
import sys

from truthline.dashboards import app_path, streamlit_command


def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "truthline", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_help_lists_the_options():
    r = _cli("dashboard", "--help")
    assert r.returncode == 0
    for opt in ("--port", "--project", "--json"):
        assert opt in r.stdout


def test_streamlit_runs_headless_on_loopback_without_usage_stats():
    cmd = streamlit_command(8765)
    joined = " ".join(cmd)
    assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[4] == str(app_path())
    assert "--server.address 127.0.0.1" in joined
    assert "--server.port 8765" in joined
    assert "--server.headless true" in joined
    assert "--browser.gatherUsageStats false" in joined
    assert app_path().is_file()


def test_no_store_is_exit_1_with_what_to_do(tmp_path):
    r = _cli("--workspace", str(tmp_path / "empty"), "dashboard")
    assert r.returncode == 1
    assert "no store at" in r.stderr and "truthline demo" in r.stderr


def test_unknown_project_is_exit_1(loop_ws):
    r = _cli("--workspace", str(loop_ws.root), "dashboard", "--project", "nope")
    assert r.returncode == 1
    assert "no project 'nope'" in r.stderr and "steel-safety" in r.stderr


def test_busy_port_is_exit_1(loop_ws):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = _cli("--workspace", str(loop_ws.root), "dashboard", "--port", str(port))
    assert r.returncode == 1
    assert f"port {port}" in r.stderr and "in use" in r.stderr


def test_bad_port_is_a_usage_error():
    r = _cli("dashboard", "--port", "70000")
    assert r.returncode == 2
