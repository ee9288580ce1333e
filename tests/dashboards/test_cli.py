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


def test_host_binds_where_the_user_says():
    assert "--server.address 127.0.0.1" in " ".join(streamlit_command(8765))
    assert "--server.address 0.0.0.0" in " ".join(streamlit_command(8765, host="0.0.0.0"))
    r = _cli("dashboard", "--help")
    assert "--host" in r.stdout and "127.0.0.1" in r.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_json_stdout_is_only_json_and_host_is_honoured(loop_ws):
    """Issue 14: `dashboard --json` printed Streamlit's banner on stdout after the JSON.
    A real server is started (on --host 127.0.0.1, explicitly), reached, then stopped."""
    import json
    import signal
    import time
    import urllib.request

    port = _free_port()
    cmd = [sys.executable, "-m", "truthline", "--workspace", str(loop_ws.root), "dashboard"]
    proc = subprocess.Popen(
        [*cmd, "--json", "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2):
                    break
            except OSError:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.5)
        else:
            raise AssertionError("streamlit did not answer within 90 s")
        time.sleep(1)  # Streamlit prints its banner once the server is up
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    info = json.loads(out)  # the whole of stdout is one JSON document
    assert info["url"] == f"http://127.0.0.1:{port}" and info["host"] == "127.0.0.1"
    assert info["port"] == port and info["pid"] > 0
    assert "You can now view" in err  # the banner went to stderr
