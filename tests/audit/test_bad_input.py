"""Bad input to the audit and benchmark CLIs: one clear error naming the file / item / field
and what to do, exit 1 (usage errors exit 2), never a traceback, nothing written.

Each case runs the real entry point (``truthline.cli.main``) on a small SIMULATED
workspace; ``main`` re-raises anything that is not a ``TruthlineError`` or a usage error,
so a traceback fails the test.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from truthline.cli import main

HEAD = "item,field,annotator,value\n"

# name -> (write the input under the tmp folder, argv (with {tmp}), exit code, message part)
CASES: dict[str, tuple[Callable[[Path], None], list[str], int, str]] = {
    "import non-UTF-8": (
        lambda d: (d / "t.csv").write_bytes(HEAD.encode() + b"c1,worker_count,\xff\xfe,2\n"),
        ["audit", "import-table", "{tmp}/t.csv"],
        1,
        "t.csv:2: not UTF-8 text",
    ),
    "import header only": (
        lambda d: (d / "t.csv").write_text(HEAD),
        ["audit", "import-table", "{tmp}/t.csv"],
        1,
        "header but no rows",
    ),
    "import duplicate rows": (
        lambda d: (d / "t.csv").write_text(HEAD + "c1,worker_count,a,2\nc1,worker_count,a,3\n"),
        ["audit", "import-table", "{tmp}/t.csv"],
        1,
        "t.csv:3: column 'field': duplicate of line 2",
    ),
    "import unknown column": (
        lambda d: (d / "t.csv").write_text(
            "item,field,annotator,value,expret\nc1,worker_count,a,2,3\n"
        ),
        ["audit", "import-table", "{tmp}/t.csv"],
        1,
        "t.csv:1: column 'expret': unknown column",
    ),
    "import unknown field": (
        lambda d: (d / "t.csv").write_text(HEAD + "c1,no_such_field,a,2\n"),
        ["audit", "import-table", "{tmp}/t.csv"],
        1,
        "t.csv:2: column 'field': project 'steel-safety' has no field 'no_such_field'",
    ),
    "import damaged parquet": (
        lambda d: (d / "t.parquet").write_bytes(b"not parquet at all"),
        ["audit", "import-table", "{tmp}/t.parquet"],
        1,
        "t.parquet: not a readable Parquet file",
    ),
    "audit unknown prefill version": (
        lambda d: None,
        ["audit", "run", "--model-version", "nope", "--resamples", "0"],
        1,
        "no predictions of model version 'nope'",
    ),
    "audit unknown snapshot": (
        lambda d: None,
        ["audit", "self-check", "m", "--snapshot", "zzzz"],
        1,
        "gold snapshot 'zzzz' of project 'steel-safety': not found",
    ),
    "audit plan level out of range": (
        lambda d: None,
        ["audit", "plan", "--rate", "0.5", "--half-width", "0.1", "--level", "95"],
        1,
        "--level must be between 0 and 1",
    ),
    "audit negative resamples": (
        lambda d: None,
        ["audit", "run", "--resamples", "-5"],
        2,
        "--resamples",
    ),
    "benchmark negative limit": (
        lambda d: None,
        ["benchmark", "run", "-m", "rule:majority", "--limit", "-3"],
        2,
        "--limit",
    ),
    "benchmark negative resamples": (
        lambda d: None,
        ["benchmark", "compare-gold", "x", "--resamples", "-1"],
        2,
        "--resamples",
    ),
    "benchmark report unknown run": (
        lambda d: None,
        ["benchmark", "report", "no-such-run", "--out", "{tmp}/r.md"],
        1,
        "no benchmark run 'no-such-run'",
    ),
    "benchmark report bad suffix": (
        lambda d: None,
        ["benchmark", "report", "no-such-run", "--out", "{tmp}/r.pdf"],
        1,
        "use a .md or .html file name",
    ),
    "benchmark export into a non-empty folder": (
        lambda d: (d / "rel").mkdir() or (d / "rel" / "keep.txt").write_text("x"),
        ["benchmark", "export", "--out", "{tmp}/rel"],
        1,
        "is not empty",
    ),
    "benchmark export onto a file": (
        lambda d: (d / "rel").write_text("x"),
        ["benchmark", "export", "--out", "{tmp}/rel"],
        1,
        "is a file, not a folder",
    ),
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("badinput")
    old = os.environ.get("TRUTHLINE_WORKSPACE")
    os.environ["TRUTHLINE_WORKSPACE"] = str(root / "ws")
    for argv in (
        ["init", "steel-safety"],
        ["audit", "simulate", "--items", "30", "--json"],
        ["audit", "finalize", "--json"],
    ):
        assert _run(argv) == 0, argv
    yield root
    if old is None:
        os.environ.pop("TRUTHLINE_WORKSPACE", None)
    else:
        os.environ["TRUTHLINE_WORKSPACE"] = old


def _run(argv: list[str]) -> int:
    old = sys.argv
    sys.argv = ["truthline", *argv]
    try:
        main()
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        sys.argv = old
    return 0


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_clear_error(name, ws, tmp_path, capsys):
    write, argv, code, part = CASES[name]
    write(tmp_path)
    capsys.readouterr()
    before = _status(ws)
    got = _run([a.replace("{tmp}", str(tmp_path)) for a in argv])
    out = capsys.readouterr()
    text = " ".join((out.err + out.out).split())
    assert got == code, text
    assert "Traceback" not in text
    assert part in text, text
    if code == 1:
        assert text.startswith("error: ") or "error: " in text
    assert _status(ws) == before  # nothing written


def _status(root: Path) -> dict:
    from truthline.store import Store

    store = Store(f"sqlite:///{root / 'ws' / 'truthline.db'}")
    try:
        return store.status("steel-safety")
    finally:
        store.close()
