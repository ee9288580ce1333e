"""Browser harness: `truthline dashboard` as a subprocess, Debian Chromium driven by Playwright.

No browser is downloaded: Playwright (from pip) drives ``/usr/bin/chromium``
(``apt-get install -y chromium``). Screenshots go to ``artifacts/dashboards/`` (gitignored),
which CI keeps as artifacts.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts" / "dashboards"
CHROMIUM = os.environ.get("TRUTHLINE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dashboard_server(workspace: Path, *, timeout: float = 90) -> Iterator[str]:
    """Start ``truthline --workspace W dashboard --port P``; yield its URL; stop it after."""
    port = free_port()
    env = dict(
        os.environ, HOME=str(workspace.parent), XDG_CACHE_HOME=str(workspace.parent / ".cache")
    )
    log = workspace.parent / f"dashboard-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "truthline",
                "--workspace",
                str(workspace),
                "dashboard",
                "--port",
                str(port),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"dashboard exited with {proc.returncode}:\n{log.read_text()}"
                    )
                try:
                    with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"dashboard not healthy after {timeout}s:\n{log.read_text()}"
                    )
                time.sleep(0.5)
            yield url
        finally:
            os.killpg(proc.pid, 15)  # the CLI and the streamlit child it started
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()


@contextmanager
def browser(profile: Path):
    """A headless Chromium page (1400x900) from Playwright driving the Debian binary."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield ctx.pages[0] if ctx.pages else ctx.new_page()
        finally:
            ctx.close()


def open_page(page, url: str, heading: str, *, charts: int = 0, timeout_ms: int = 90_000) -> None:
    """Open ``url``, wait until ``heading`` and at least ``charts`` plotly charts are drawn."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
    page.get_by_role("heading", name=heading).first.wait_for(timeout=timeout_ms)
    if charts:
        page.wait_for_function(
            f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {charts}",
            timeout=timeout_ms,
        )
    # Streamlit shows a "Running..." status while the script is still executing.
    page.wait_for_function(
        "!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout_ms
    )
    page.wait_for_timeout(500)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    # Streamlit scrolls inside its main container: grow the viewport to show the whole page.
    height = page.evaluate(
        "Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"], section.main')]"
        ".map(e => e.scrollHeight), 900)"
    )
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 12000)})
    page.wait_for_timeout(300)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 900})
    return path
