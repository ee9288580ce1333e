"""The host's handle on one long-lived Blender worker process (in the scenes venv).

Jobs go in as JSON lines on the worker's stdin; results come back as JSON lines on a
separate pipe (Blender writes render progress and driver noise to stdout/stderr, which a
thread drains, filters and keeps the tail of for error messages). A worker that dies or
overruns its timeout is killed; the job fails with a :class:`WorkerError` naming it, and the
next job starts a fresh worker. Python's numpy 2 never meets bpy's numpy<2: the worker sees
only the ``truthline`` package (through a one-link folder on its ``PYTHONPATH``), never the
host's site-packages.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import re
import select
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from truthline.scenes._types import WorkerError

log = logging.getLogger("truthline.scenes.worker")

NOISE = re.compile(
    r"CUEW|cuew|EGL|egl_|Fra:\d|Reloading external|^\s*$|Saved: '|Time: \d|"
    r"Color management: |Read prefs|Blender quit|Warning: Falling back to the standard locale"
)
"""Worker log lines that say nothing (CUDA/EGL probing, render progress, save notices)."""

_PKG_DIR = Path(__file__).resolve().parents[1]  # the truthline package
_MISSING = (
    "the scenes environment is missing or broken ({venv}); create it with "
    "`python -m truthline.scenes.env --ensure`"
)


class WorkerClient:
    """One Blender worker. ``request(job)`` sends a job and returns its result dict."""

    def __init__(
        self,
        python: Path | str | None = None,
        *,
        timeout_s: float = 900.0,
        start_timeout_s: float = 180.0,
        log_lines: int = 60,
    ):
        self._python = Path(python) if python else None
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.blender_version = ""
        self.restarts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._rfd: int | None = None
        self._buf = b""
        self._tail: collections.deque[str] = collections.deque(maxlen=log_lines)
        self._shim: tempfile.TemporaryDirectory[str] | None = None
        self._drain: threading.Thread | None = None

    # -- process life ------------------------------------------------------------------
    def _python_exe(self) -> Path:
        if self._python is None:
            from truthline.scenes import env

            # only the interpreter's presence here (importing bpy to check costs ~1 s); a
            # venv without bpy fails at start-up with the same hint
            if not env.python_exe().exists():
                raise WorkerError(_MISSING.format(venv=env.venv_dir()))
            self._python = env.python_exe()
        return self._python

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the worker and wait for its ready line (bpy imported)."""
        if self.alive:
            return
        self.close()
        exe = self._python_exe()
        self._shim = tempfile.TemporaryDirectory(prefix="truthline-worker-")
        os.symlink(_PKG_DIR, Path(self._shim.name) / "truthline")
        rfd, wfd = os.pipe()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(
            PYTHONPATH=self._shim.name,
            PYTHONNOUSERSITE="1",
            PYTHONUNBUFFERED="1",
            OPENCV_IO_ENABLE_OPENEXR="1",
        )
        try:
            self._proc = subprocess.Popen(
                [str(exe), "-m", "truthline.scenes.worker", str(wfd)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(wfd,),
                env=env,
                cwd=self._shim.name,
                start_new_session=True,
            )
        finally:
            os.close(wfd)
        self._rfd, self._buf = rfd, b""
        self._tail.clear()
        self._drain = threading.Thread(target=self._drain_logs, args=(self._proc,), daemon=True)
        self._drain.start()
        try:
            ready = self._read_line(self.start_timeout_s, what="worker start-up")
        except WorkerError as exc:
            if "No module named 'bpy'" in str(exc):
                raise WorkerError(_MISSING.format(venv=exe.parent.parent)) from None
            raise
        self.blender_version = str(ready.get("blender_version", ""))

    def _drain_logs(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            if NOISE.search(line):
                continue
            self._tail.append(line)
            log.debug("%s", line)

    def close(self, *, kill: bool = False) -> None:
        """Stop the worker (politely, then by force; at once with ``kill``) and release its
        pipes."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                if not kill and proc.poll() is None and proc.stdin is not None:
                    proc.stdin.write(b'{"op": "exit"}\n')
                    proc.stdin.flush()
                    proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for f in (proc.stdin, proc.stdout):
                if f is not None:
                    f.close()
        if self._drain is not None:
            self._drain.join(timeout=2)
            self._drain = None
        if self._rfd is not None:
            os.close(self._rfd)
            self._rfd = None
        if self._shim is not None:
            self._shim.cleanup()
            self._shim = None

    def __enter__(self) -> WorkerClient:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ----------------------------------------------------------------------
    def log_tail(self, n: int = 12) -> str:
        return "\n".join(list(self._tail)[-n:])

    def _read_line(self, timeout_s: float, what: str) -> dict[str, Any]:
        assert self._rfd is not None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(f"{what}: no answer from the Blender worker within {timeout_s:.0f} s")
            ready, _, _ = select.select([self._rfd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(self._rfd, 1 << 16)
                if not chunk:  # the worker closed its end: it died
                    code = self._proc.wait(timeout=10) if self._proc else None
                    self._fail(f"{what}: the Blender worker died (exit code {code})")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def _fail(self, msg: str) -> None:
        tail = self.log_tail()
        self.close(kill=True)  # hung or dead: asking it to exit would only wait
        self.restarts += 1
        raise WorkerError(msg + (f"; last worker log lines:\n{tail}" if tail else ""))

    def request(self, job: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send one job; return its result (``ok`` False carries the scene's own error).

        Raises :class:`WorkerError` when the worker crashes or times out (it is restarted on
        the next request)."""
        self.start()
        assert self._proc is not None and self._proc.stdin is not None
        name = f"scene job {job.get('job_id') or job.get('op', '?')}"
        if job.get("env"):
            name += f" ({job['env']})"
        try:
            self._proc.stdin.write((json.dumps(job) + "\n").encode())
            self._proc.stdin.flush()
        except OSError:
            self._fail(f"{name}: the Blender worker is gone")
        return self._read_line(timeout_s or self.timeout_s, what=name)
