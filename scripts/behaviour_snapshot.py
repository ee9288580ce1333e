"""Behaviour snapshots: prove a refactor keeps every ``--json`` output and gold hash.

Why: a refactor is meant to move code, not change what truthline prints or which gold it
writes. This script runs the same three sequences against two source trees (before and after)
with one venv, and compares what came out byte for byte.

``capture --src DIR --out OUTDIR [--only demo,scenes,physalign]`` runs, each in a fresh
temporary workspace, with ``DIR`` first on ``PYTHONPATH`` (so ``python -m truthline`` imports
that tree, not the venv's editable install; the script checks it did):

* ``demo``: ``truthline demo --size small --json`` on a Label Studio seeded from the
  pre-migrated template (as tests/demo/test_demo.py does), free ports on 127.0.0.1;
* ``scenes``: ``truthline demo --scenes --json`` (renders in the scenes venv);
* ``physalign``: the README sequence of tests/physalign/test_cli.py::test_readme_demo_sequence
  (init, generate, passes, compile, verify, adjudicate, export, items import,
  audit import-table, audit finalize, physalign status), every command with ``--json``,
  against a Label Studio started from a copy of the template (tests/physalign/conftest.py).

What is compared (``compare A B``): every file under the capture dirs except those whose
top-level name starts with ``_``:

* ``<seq>/NN-<command>.json``: the command's stdout, after the normalization below;
* ``<seq>/NN-<command>.exit``: only when a command exited non-zero (its exit status);
* ``<seq>/gold-snapshots.json``: every row of the workspace store's ``gold_snapshots`` table
  (project, hash, policy, counts; ``created_at`` left out) with its number of ``gold`` rows,
  ordered by project and hash, JSON values re-dumped with sorted keys (the store's own key
  order is not behaviour; the hash, which is computed from the gold, is).

Not compared: ``_meta.json`` (source tree, interpreter, timings, and the sha256 of the venv's
truthline ``entry_points.txt`` before and after the capture: entry points come from the
installed dist-info, not from ``--src``), ``_raw/`` (stdout before normalization) and ``_logs/``
(stderr of every command).

What is normalized: only what differed between two captures of the same tree
(the pre-refactor tree, twice), in the one table ``NORMALIZE`` below; everything else is byte for byte:

* the sequence's temp workspace folder -> ``<WS>`` (a fresh mkdtemp per run);
* ``127.0.0.1:<the Label Studio port of this run>`` -> ``127.0.0.1:<LS_PORT>`` (a free port);
* the values of ``"export_seconds"`` and ``"render_seconds"`` -> ``"<SECONDS>"`` (durations);
* an ISO-8601 value of ``"created_at"`` -> ``"<TIMESTAMP>"`` (the demo release's creation time).

Label Studio project / task ids, gold hashes, run ids, metrics and every count were identical
across runs and are compared as they are. ``gold-snapshots.json`` goes through the same table.

Stdlib only. Servers started here are stopped in ``finally`` blocks (``truthline annotate
stop`` for the demo's own Label Studio; the server's ``stop()`` for PhysAlign's).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SEQUENCES = ("demo", "scenes", "physalign")


# -- normalization -----------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """One normalization: ``pattern`` (a regex; ``{name}`` fields, lower-case letters only so
    that ``{4}`` stays a quantifier, are filled with the run's regex-escaped values first)
    becomes ``repl``."""

    name: str
    pattern: str
    repl: str
    why: str


# THE table of what may differ between two runs of the same code, found by capturing
# the pre-refactor tree twice and diffing (nothing else differed). Applied in order to every captured
# stdout before it is written; nothing else is touched. ``{ws}`` is this sequence's fresh temp
# folder and ``{ls_port}`` the free port its Label Studio got (both regex-escaped); the other
# rules need no run value and match only the one JSON key each names.
NORMALIZE: tuple[Rule, ...] = (
    Rule("workspace", r"{ws}", "<WS>", "each sequence runs in a fresh mkdtemp folder"),
    Rule(
        "Label Studio port",
        r"127\.0\.0\.1:{ls_port}\b",
        "127.0.0.1:<LS_PORT>",
        "a free port per run (demo label_studio.url, project_url of every push)",
    ),
    Rule(
        "wall-clock seconds",
        r'"(export_seconds|render_seconds)": -?[0-9][0-9.eE+-]*',
        r'"\1": "<SECONDS>"',
        "durations: demo pull's export_seconds, demo --scenes' render_seconds",
    ),
    Rule(
        "creation time",
        r'"created_at": "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+)?"',
        '"created_at": "<TIMESTAMP>"',
        "the demo's export_summary.created_at (the release's creation time)",
    ),
)


def normalize(text: str, values: dict[str, str]) -> str:
    """Apply ``NORMALIZE`` with this run's values (rules whose value is unset are skipped)."""
    for rule in NORMALIZE:
        needed = re.findall(r"\{([a-z_]+)\}", rule.pattern)
        if any(not values.get(n) for n in needed):
            continue
        pat = rule.pattern
        for n in needed:
            pat = pat.replace("{" + n + "}", re.escape(values[n]))
        text = re.sub(pat, rule.repl, text)
    return text


# -- running -------------------------------------------------------------------------------
# Run in a subprocess with --src first on PYTHONPATH, so the tree under test does the seeding
# exactly as its own tests do (tests/demo/test_demo.py, tests/annotate/conftest.py).
SEED_DEMO = """
import sys
from pathlib import Path
from truthline.annotate._local import creds_path
from truthline.annotate._server import CREDENTIALS_NAME, Credentials
from truthline.annotate.server_env import copy_template
from truthline.workspace import Workspace
root = Path(sys.argv[1])
data = copy_template(root / "label-studio")
creds = Credentials.load(data / CREDENTIALS_NAME)
assert creds is not None, "the Label Studio template has no credentials"
creds.save(creds_path(Workspace.from_env(root)))
"""

START_LS = """
import json, sys
from pathlib import Path
from truthline.annotate._server import CREDENTIALS_NAME, Credentials, LocalServer
from truthline.annotate.server_env import copy_template
dest, port = Path(sys.argv[1]), int(sys.argv[2])
copy_template(dest)
creds = Credentials.load(dest / CREDENTIALS_NAME)
assert creds is not None, "the Label Studio template has no credentials"
server = LocalServer(dest, port=port)
server.start(creds, progress=False)
print(json.dumps({"url": server.url, "token": creds.token}))
"""

STOP_LS = """
import sys
from pathlib import Path
from truthline.annotate._server import LocalServer
print(LocalServer(Path(sys.argv[1])).stop())
"""

WHICH = "import truthline, sys; print(truthline.__file__)"

# Inherited variables that would change what truthline does (a workspace, a store, a key).
DROP_ENV = (
    "TRUTHLINE_WORKSPACE",
    "TRUTHLINE_DB",
    "TRUTHLINE_PROJECT",
    "TRUTHLINE_DEMO_WORKSPACE",
    "TRUTHLINE_DEBUG",
    "LABEL_STUDIO_API_KEY",
    "OPENAI_API_KEY",
    "PYTHONPATH",
    "PYTHONHOME",
)


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1 (all held open while picking)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def entry_points_digest(python: str) -> str:
    """sha256 of the venv's truthline entry_points.txt (plug-ins load from it, not --src)."""
    code = (
        "import hashlib; from importlib.metadata import distribution as d; "
        "t = d('truthline').read_text('entry_points.txt') or ''; "
        "print(hashlib.sha256(t.encode()).hexdigest())"
    )
    res = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd="/")
    return res.stdout.strip() or f"unreadable: {res.stderr.strip()[-300:]}"


@dataclass
class Runner:
    """Runs commands of one sequence and writes their normalized --json stdout."""

    python: str
    src: Path
    out: Path
    seq: str
    ws: Path
    values: dict[str, str] = field(default_factory=dict)
    n: int = 0
    failed: str = ""

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The test environment (scripts/test.sh): offline model libraries, --src first."""
        e = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
        e.update(
            PYTHONPATH=str(self.src),
            PATH=f"{Path(self.python).parent}{os.pathsep}{e.get('PATH', '')}",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            YOLO_OFFLINE="1",
            YOLO_VERBOSE="False",
            YOLO_AUTOINSTALL="False",
            YOLO_CONFIG_DIR=str(self.ws / "_cfg" / "yolo"),
            MPLCONFIGDIR=str(self.ws / "_cfg" / "mpl"),
            COLUMNS="120",
        )
        return e | (extra or {})

    def py(self, code: str, *args: str, timeout: float = 900) -> str:
        """Run a helper snippet with the --src tree; its stdout, or raise with its stderr."""
        res = subprocess.run(
            [self.python, "-c", code, *args],
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.ws,
            timeout=timeout,
        )
        if res.returncode != 0:
            raise RuntimeError(f"helper failed ({res.returncode}): {res.stderr[-3000:]}")
        return res.stdout

    def check_src(self) -> None:
        """Refuse to capture when ``python -m truthline`` would not import the --src tree."""
        got = Path(self.py(WHICH).strip()).resolve()
        want = (self.src / "truthline" / "__init__.py").resolve()
        if got != want:
            raise RuntimeError(f"truthline imports from {got}, not {want}")

    def tl(
        self, name: str, *args: str, env: dict[str, str] | None = None, timeout: float = 1800
    ) -> dict | None:
        """``python -m truthline ARGS``: stdout (normalized) to ``NN-name.json``; the parsed
        JSON, or None (and ``self.failed`` set) when it failed."""
        self.n += 1
        stem = f"{self.n:02d}-{name}"
        t0 = time.monotonic()
        try:
            res = subprocess.run(
                [self.python, "-m", "truthline", *args],
                capture_output=True,
                text=True,
                env=self.env(env),
                cwd=self.ws,
                timeout=timeout,
            )
            rc, stdout, stderr = res.returncode, res.stdout, res.stderr
        except subprocess.TimeoutExpired as exc:
            rc, stdout = 124, _text(exc.stdout)
            stderr = _text(exc.stderr) + f"\n[timed out after {timeout} s]"
        secs = time.monotonic() - t0
        write(self.out / "_raw" / self.seq / f"{stem}.json", stdout)
        write(self.out / "_logs" / self.seq / f"{stem}.stderr", stderr)
        write(self.out / self.seq / f"{stem}.json", normalize(stdout, self.values))
        print(f"  {self.seq}/{stem}: rc {rc}, {secs:.1f} s", flush=True)
        if rc != 0:
            write(self.out / self.seq / f"{stem}.exit", f"{rc}\n")
            self.failed = f"{stem} exited {rc}: {stderr.strip()[-1500:]}"
            return None
        try:
            return json.loads(stdout)
        except json.JSONDecodeError as exc:
            self.failed = f"{stem}: stdout is not JSON ({exc})"
            return None

    def gold(self, db: Path) -> None:
        """``gold-snapshots.json``: the store's gold snapshots (hashes) and their sizes."""
        rows: list[dict] = []
        if db.is_file():
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                counts = dict(
                    conn.execute("SELECT snapshot, count(*) FROM gold GROUP BY snapshot").fetchall()
                )
                for project, hsh, policy, cnt in conn.execute(
                    "SELECT project, hash, policy, counts FROM gold_snapshots "
                    "ORDER BY project, hash"
                ):
                    rows.append(
                        {
                            "project": project,
                            "hash": hsh,
                            "policy": json.loads(policy),
                            "counts": json.loads(cnt),
                            "gold_values": counts.get(hsh, 0),
                        }
                    )
        text = json.dumps({"store": db.name, "snapshots": rows}, indent=2, sort_keys=True)
        write(self.out / self.seq / "gold-snapshots.json", normalize(text + "\n", self.values))


def _text(b: bytes | str | None) -> str:
    if b is None:
        return ""
    return b if isinstance(b, str) else b.decode("utf-8", "replace")


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# -- the three sequences ---------------------------------------------------------------------
def run_demo(r: Runner) -> None:
    """``truthline demo --json`` (size small) on its own Label Studio, seeded as the tests do."""
    root = r.ws / "ws"
    port, media = free_ports(2)
    r.values["ls_port"] = str(port)  # the media port is in no stdout
    r.py(SEED_DEMO, str(root))
    try:
        # fmt: off
        r.tl("demo", "demo", "--workspace", str(root), "--size", "small", "--json",
             "--port", str(port), "--media-port", str(media))
        # fmt: on
    finally:  # never leave a Label Studio behind
        subprocess.run(
            [r.python, "-m", "truthline", "-w", str(root), "annotate", "stop"],
            capture_output=True,
            env=r.env(),
            cwd=r.ws,
            timeout=180,
        )
    r.gold(root / "truthline.db")


def run_scenes(r: Runner) -> None:
    """``truthline demo --scenes --json`` (renders the dori small grid in the scenes venv)."""
    root = r.ws / "ws"
    r.tl("demo-scenes", "demo", "--scenes", "--workspace", str(root), "--json")
    r.gold(root / "truthline.db")


def run_physalign(r: Runner) -> None:
    """The README sequence (tests/physalign/test_cli.py::test_readme_demo_sequence)."""
    ws, work, data = r.ws / "ws", r.ws / "pa", r.ws / "ls" / "data"
    (port,) = free_ports(1)
    r.values["ls_port"] = str(port)
    try:
        ls = json.loads(r.py(START_LS, str(data), str(port)).strip().splitlines()[-1])
        env = {"TRUTHLINE_WORKSPACE": str(ws), "LABEL_STUDIO_API_KEY": ls["token"]}
        url = ["--url", ls["url"]]
        _physalign_steps(lambda name, *a: r.tl(name, *a, "--json", env=env), work, url)
    finally:
        try:
            r.py(STOP_LS, str(data), timeout=120)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"  warning: stopping PhysAlign's Label Studio: {exc}", file=sys.stderr)
    r.gold(ws / "truthline.db")


def _physalign_steps(run: Callable[..., dict | None], work: Path, url: list[str]) -> None:
    """The commands, in the test's order; stops at the first failure (later ones need it)."""
    rel = str(work / "release")
    revs = ["--reviewer", "demo-a@physalign.local", "--reviewer", "demo-b@physalign.local"]
    adj = ["--adjudicator", "demo-adjudicator@physalign.local"]
    w = ["--work", str(work)]
    steps: list[tuple[str, list[str]]] = [
        ("init", ["init", "physics-diagrams"]),
        ("generate", ["physalign", "generate", "--n", "4", "--seed", "5", "--out", str(work),
                      "--no-compile"]),
        ("passes-push", ["physalign", "passes", "push", *w, *url]),
        ("passes-simulate", ["physalign", "passes", "simulate", *w, "--annotator",
                             "demo-ann@physalign.local", *url]),
        ("passes-pull", ["physalign", "passes", "pull", *w, *url]),
        ("passes-push-review", ["physalign", "passes", "push", *w, "--stage", "review", *url]),
        ("passes-simulate-review", ["physalign", "passes", "simulate", *w, "--stage", "review",
                                    "--annotator", "demo-rev@physalign.local", *url]),
        ("passes-pull-review", ["physalign", "passes", "pull", *w, *url]),
        ("compile", ["physalign", "compile", str(work / "passes" / "annotations.jsonl"),
                     "--out", rel, "--seed", "5"]),
        ("verify-push", ["physalign", "verify", "push", "--release", rel, *revs, *url]),
        ("verify-simulate", ["physalign", "verify", "simulate", "--release", rel, *revs,
                             "--wrong-every", "6", *url]),
        ("verify-pull", ["physalign", "verify", "pull", "--release", rel, *url]),
        ("adjudicate-push", ["physalign", "adjudicate", "push", "--release", rel, *url]),
        ("adjudicate-simulate", ["physalign", "adjudicate", "simulate", "--release", rel, *adj,
                                 "--withhold-every", "2", *url]),
        ("adjudicate-pull", ["physalign", "adjudicate", "pull", "--release", rel, *url]),
        ("export", ["physalign", "export", "--release", rel, "--project", "physics-diagrams"]),
    ]  # fmt: skip
    for name, args in steps:
        exp = run(name, *args)
        if exp is None:
            return
    assert exp is not None
    # these three take the export's paths, as the test does
    if run("items-import", "items", "import", exp["media"], "--media-root", exp["media_root"],
           "--metadata", exp["metadata"]) is None:  # fmt: skip
        return
    if run("audit-import-table", "audit", "import-table", exp["labels"]) is None:
        return
    if run("audit-finalize", "audit", "finalize") is None:
        return
    run("status", "physalign", "status", "--release", rel)


RUNNERS: dict[str, Callable[[Runner], None]] = {
    "demo": run_demo,
    "scenes": run_scenes,
    "physalign": run_physalign,
}


def capture(src: Path, out: Path, only: list[str], python: str) -> int:
    """Run the chosen sequences against ``src``; 0 when every command succeeded."""
    src = src.resolve()
    out = out.resolve()
    if out.exists() and any(out.iterdir()):
        print(f"error: {out} is not empty", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    meta: dict = {
        "src": str(src),
        "python": python,
        "entry_points_sha256_before": entry_points_digest(python),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "sequences": {},
    }
    rc = 0
    for seq in only:
        tmp = Path(tempfile.mkdtemp(prefix=f"tl-snap-{seq}-")).resolve()
        r = Runner(python, src, out, seq, tmp, values={"ws": str(tmp), "src": str(src)})
        print(f"{seq}: in {tmp}", flush=True)
        t0 = time.monotonic()
        error = ""
        try:
            r.check_src()
            RUNNERS[seq](r)
        except Exception as exc:  # report and go on with the next sequence
            error = f"{type(exc).__name__}: {exc}"
        secs = round(time.monotonic() - t0, 1)
        problem = error or r.failed
        meta["sequences"][seq] = {
            "seconds": secs,
            "commands": r.n,
            "failed": problem or None,
            "values": r.values,
        }
        print(f"{seq}: {'FAILED ' + problem if problem else 'ok'} ({secs} s)", flush=True)
        if problem:
            rc = 1
            write(out / seq / "_failed.txt", problem + "\n")  # compared: a failure is behaviour
        else:
            shutil.rmtree(tmp, ignore_errors=True)  # kept on failure, to look at
    meta["entry_points_sha256_after"] = entry_points_digest(python)
    if meta["entry_points_sha256_after"] != meta["entry_points_sha256_before"]:
        print("warning: the venv's truthline entry_points.txt changed during the capture")
    write(out / "_meta.json", json.dumps(meta, indent=2) + "\n")
    return rc


# -- comparing ---------------------------------------------------------------------------------
def compared_files(root: Path) -> set[str]:
    """Paths (relative) of the files ``compare`` looks at: all but top-level ``_*``."""
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not p.relative_to(root).parts[0].startswith("_")
    }


def compare(a: Path, b: Path, max_lines: int = 400) -> int:
    """Print a unified diff per differing file; 1 when anything differs, else 0."""
    fa, fb = compared_files(a), compared_files(b)
    if not fa and not fb:
        print("error: nothing to compare", file=sys.stderr)
        return 2
    bad = 0
    for rel in sorted(fa - fb):
        print(f"only in {a}: {rel}")
        bad += 1
    for rel in sorted(fb - fa):
        print(f"only in {b}: {rel}")
        bad += 1
    same = 0
    for rel in sorted(fa & fb):
        x, y = (a / rel).read_bytes(), (b / rel).read_bytes()
        if x == y:
            same += 1
            continue
        bad += 1
        diff = list(
            difflib.unified_diff(
                x.decode("utf-8", "replace").splitlines(keepends=True),
                y.decode("utf-8", "replace").splitlines(keepends=True),
                fromfile=f"{a.name}/{rel}",
                tofile=f"{b.name}/{rel}",
            )
        )
        sys.stdout.writelines(diff[:max_lines])
        if len(diff) > max_lines:
            print(f"... {len(diff) - max_lines} more diff lines")
        if diff and not diff[-1].endswith("\n"):
            print()
        if not diff:  # differs only in a way splitlines hides (line endings)
            print(f"{rel}: bytes differ (sha256 {_sha(x)} vs {_sha(y)})")
    print(f"{same} identical, {bad} differing")
    return 1 if bad else 0


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    cap = sub.add_parser("capture", help="run the sequences and write their outputs")
    cap.add_argument("--src", type=Path, required=True, help="truthline source tree")
    cap.add_argument("--out", type=Path, required=True, help="new or empty capture dir")
    cap.add_argument("--only", default=",".join(SEQUENCES), help="comma-separated sequences")
    cap.add_argument("--python", default=sys.executable, help="interpreter (default: this one)")
    cmp_ = sub.add_parser("compare", help="diff two capture dirs; exit 1 on any difference")
    cmp_.add_argument("a", type=Path)
    cmp_.add_argument("b", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "compare":
        return compare(args.a, args.b)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in SEQUENCES]
    if unknown or not only:
        ap.error(f"--only: unknown {unknown} (choose from {', '.join(SEQUENCES)})")
    return capture(args.src, args.out, only, args.python)


if __name__ == "__main__":
    raise SystemExit(main())
