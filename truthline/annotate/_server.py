"""Starting, reusing and stopping a local Label Studio server (its own venv, bound to 127.0.0.1).

Label Studio pins Django and its own SDK, so it runs from a separate virtual environment
(see ``server_env``). The admin account and a legacy API token are generated once and kept in
a 0600 JSON file; the token goes to the server through the environment, never on a command
line, and is never printed. ``label-studio start`` silently moves to the next port when the
requested one is busy, so the port is checked first and a busy port is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from truthline.annotate._ls_database import DB_ENV_PREFIXES, LSDatabase
from truthline.annotate._ls_database import record as record_database
from truthline.annotate._ls_database import resolve as resolve_database
from truthline.errors import TruthlineError

ADMIN_EMAIL = "admin@truthline.local"
CREDENTIALS_NAME = "label_studio.json"


@dataclass
class Credentials:
    """The admin login of a Label Studio server (kept in a 0600 file)."""

    url: str
    email: str
    password: str
    token: str

    def __repr__(self) -> str:  # never show secrets in tracebacks or logs
        return f"Credentials(url={self.url!r}, email={self.email!r}, password=***, token=***)"

    @classmethod
    def new(cls, url: str) -> Credentials:
        return cls(
            url=url,
            email=ADMIN_EMAIL,
            password=secrets.token_urlsafe(18),
            token=secrets.token_hex(20),
        )

    def save(self, path: Path) -> None:
        write_secret(path, json.dumps(self.__dict__, indent=2))

    @classmethod
    def load(cls, path: Path) -> Credentials | None:
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**{k: str(data[k]) for k in ("url", "email", "password", "token")})
        except (ValueError, UnicodeDecodeError, KeyError, TypeError):
            raise TruthlineError(
                f"{path} is not the Label Studio credentials file truthline writes (JSON with "
                "url, email, password, token); restore it from a backup (the token in Label "
                "Studio's data dir still matches it)"
            ) from None


def write_secret(path: Path, text: str) -> None:
    """Write a file readable by its owner only (created 0600, never world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    path.chmod(0o600)


def server_env(
    data_dir: Path, creds: Credentials, database: LSDatabase | None = None
) -> dict[str, str]:
    """Environment that keeps Label Studio offline, headless and non-interactive; its
    database is SQLite in ``data_dir`` unless ``database`` names a PostgreSQL one."""
    drop = ("LABEL_STUDIO_", "DJANGO", *DB_ENV_PREFIXES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(
        LABEL_STUDIO_BASE_DATA_DIR=str(data_dir),
        LABEL_STUDIO_USERNAME=creds.email,
        LABEL_STUDIO_PASSWORD=creds.password,
        LABEL_STUDIO_USER_TOKEN=creds.token,
        LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN="true",
        LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="true",
        LATEST_VERSION_CHECK="false",
        SENTRY_DSN="",
        FRONTEND_SENTRY_DSN="",
        COLLECT_ANALYTICS="false",
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
    )
    if database is not None:
        env.update(database.env())
    return env


PRIVATE_UMASK = 0o077
"""The started server's umask: what it creates (database, uploads, exports) is 0600/0700."""

_SITECUSTOMIZE = """# written by truthline at every start (truthline.annotate._server): Django's storage
# chmods each file it saves (exports, uploads) to FILE_UPLOAD_PERMISSIONS, 0o644 by default,
# whatever the umask; Label Studio sets none, so the default is made private here
try:
    import django.conf.global_settings as _defaults
except ImportError:
    pass
else:
    _defaults.FILE_UPLOAD_PERMISSIONS = 0o600
    _defaults.FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
"""


def private_files_env(data_dir: Path) -> dict[str, str]:
    """Environment under which the files Label Studio saves through Django are 0600 in 0700
    folders: a ``sitecustomize`` (in ``<data_dir>/.truthline/``, first on PYTHONPATH)
    changes Django's default file modes before Label Studio's settings load."""
    folder = data_dir / ".truthline"
    write_secret(folder / "sitecustomize.py", _SITECUSTOMIZE)
    folder.chmod(0o700)
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": str(folder) + (os.pathsep + path if path else "")}


def sqlite_wal(db: Path) -> None:
    """Put Label Studio's SQLite database in WAL mode (kept in the file; created 0600 if new).

    In SQLite's default rollback-journal mode a pull's export (a long read) blocks every
    write; Label Studio's ``DatabaseIsLockedRetryMiddleware`` then re-runs a POST whose
    annotation was already committed before a later write of the same request hit "database
    is locked", so one POST answered 201 can leave two annotations (issue 27: 306 for 300
    posted while pulls ran). With WAL readers never block the writer."""
    import sqlite3

    if not db.exists():
        os.close(os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise TruthlineError(
            f"cannot put Label Studio's database {db} in WAL mode (SQLite answered {mode!r}); "
            "is it on a network file system? Keep the data dir on a local disk"
        )


def _make_private(tree: Path) -> None:
    """Strip group/other bits under ``tree`` (links not followed), see ``make_private``."""
    from truthline.workspace import make_private

    make_private(tree)


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def health(url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited child not yet reaped) is not alive
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


@dataclass
class LocalServer:
    """A Label Studio process whose data dir (SQLite, media, .env) lives in ``data_dir``."""

    data_dir: Path
    port: int = 8080
    venv: Path | None = None
    database: LSDatabase | None = None
    """PostgreSQL for Label Studio's data (a team's setup); None: the data dir's record
    (``_ls_database``), else SQLite in the data dir."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "server.pid"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "server.log"

    def pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if _pid_alive(pid) else None

    def running_port(self) -> int | None:
        try:
            return int(self.pid_file.read_text().split()[1])
        except (OSError, ValueError, IndexError):
            return None

    def is_up(self) -> bool:
        return self.pid() is not None and health(self.url)

    def start(
        self, creds: Credentials, *, progress: bool = True, timeout: float = 900
    ) -> tuple[str, bool]:
        """Start (or reuse) the server; returns ``(url, started)``. Blocks until ``/health``."""
        from truthline.annotate.server_env import ensure_venv, label_studio_command

        self.database = resolve_database(self.data_dir, self.database)
        pid = self.pid()
        if pid is not None:
            port = self.running_port() or self.port
            if port != self.port:
                raise TruthlineError(
                    f"Label Studio for {self.data_dir} already runs on port {port} (pid {pid}); "
                    f"stop it first (`truthline annotate stop`) or use --port {port}"
                )
            if health(self.url):
                return self.url, False
            self._wait(pid, progress, timeout, fresh=False)
            return self.url, False
        if port_in_use(self.port):
            raise TruthlineError(
                f"port {self.port} on 127.0.0.1 is taken by another program; Label Studio would "
                f"silently move to another port. Free it or pass --port N"
            )
        venv = ensure_venv(self.venv, progress=progress)
        if self.database is not None:
            self.database.ensure_exists()
            fresh = self.database.migrations_applied() == 0
            record_database(self.data_dir, self.database)
        else:
            fresh = not (self.data_dir / "label_studio.sqlite3").exists()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)
        _make_private(self.data_dir)  # a copied template or an older start left 0644 files
        if self.database is None:
            sqlite_wal(self.data_dir / "label_studio.sqlite3")
        log = os.fdopen(os.open(self.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
        cmd = [
            *label_studio_command(venv),  # bin/python -m label_studio.server: no shebang
            "start",
            "--no-browser",
            "--internal-host",
            "127.0.0.1",
            "-p",
            str(self.port),
            "--data-dir",
            str(self.data_dir),
        ]
        proc = subprocess.Popen(
            cmd,
            env=server_env(self.data_dir, creds, self.database) | private_files_env(self.data_dir),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=self.data_dir,
            umask=PRIVATE_UMASK,  # its SQLite file holds the admin token: 0600, whoever starts it
        )
        log.close()
        write_secret(self.pid_file, f"{proc.pid} {self.port}\n")
        self._log_offset = 0
        self._wait(proc.pid, progress, timeout, fresh=fresh)
        return self.url, True

    def _wait(self, pid: int, progress: bool, timeout: float, *, fresh: bool) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        t0 = time.monotonic()
        what = (
            "first start: applying ~400 database migrations (about 2 minutes)"
            if fresh
            else "starting Label Studio"
        )
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            disable=not progress,
            transient=True,
        ) as bar:
            task = bar.add_task(what)
            # without a terminal the spinner draws nothing: a line now and every 30 s, so a
            # first start piped to a file (or `| tee`) is not 2 silent minutes
            plain = progress and not bar.console.is_terminal
            said = t0
            if plain:
                bar.console.print(what, markup=False, highlight=False)
            while time.monotonic() - t0 < timeout:
                if plain and fresh and time.monotonic() - said >= 30:
                    said = time.monotonic()
                    bar.console.print(
                        f"  {self.migrations_applied()} of ~400 migrations applied "
                        f"({int(said - t0)} s)",
                        markup=False,
                        highlight=False,
                    )
                if not _pid_alive(pid):
                    raise TruthlineError(
                        f"Label Studio exited during start-up; see {self.log_file}:\n{self.log_tail()}"
                    )
                self._check_port()
                if health(self.url, timeout=1.0):
                    return
                if fresh:
                    n = self.migrations_applied()
                    bar.update(task, description=f"{what}: {n} of ~400 applied")
                time.sleep(0.5)
        raise TruthlineError(
            f"Label Studio did not answer {self.url}/health within {timeout:.0f} s; "
            f"see {self.log_file}"
        )

    def _check_port(self) -> None:
        """Refuse a server that moved to another port (``Port N is in use. Trying ...``)."""
        if re.search(rf"Port {self.port} is in use", self.log_tail(1 << 16)):
            self.stop()
            raise TruthlineError(
                f"port {self.port} was taken and Label Studio moved to another port; stopped it. "
                "Free the port or pass --port N"
            )

    def migrations_applied(self) -> int:
        """Rows in Django's migration table (Label Studio runs ``migrate`` with verbosity 0)."""
        import sqlite3

        if self.database is not None:
            return self.database.migrations_applied()

        db = self.data_dir / "label_studio.sqlite3"
        if not db.is_file():
            return 0
        try:
            with contextlib.closing(
                sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
            ) as c:
                return int(c.execute("SELECT count(*) FROM django_migrations").fetchone()[0])
        except sqlite3.Error:
            return 0

    def log_tail(self, size: int = 4000) -> str:
        try:
            with self.log_file.open("rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - size))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 20) -> bool:
        """Stop the server started from this data dir; True if one was running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        t0 = time.monotonic()
        while _pid_alive(pid) and time.monotonic() - t0 < timeout:
            time.sleep(0.2)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):  # reap it when it is our child
            os.waitpid(pid, os.WNOHANG)
        self.pid_file.unlink(missing_ok=True)
        return True


def server_info(server: LocalServer) -> dict[str, Any]:
    return {"url": server.url, "pid": server.pid(), "data_dir": str(server.data_dir)}
