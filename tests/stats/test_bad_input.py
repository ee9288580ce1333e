"""Bad ratings files (issues 12, 13): one clear line naming the file (and row/column), exit 1.

Table-driven: (case id, file writer, extra arguments, message fragments).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.stats.test_cli_store import tl


def _text(body: str, name: str = "r.csv") -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        p = tmp / name
        p.write_text(body, encoding="utf-8")
        return p

    return make


def _bytes(body: bytes, name: str = "r.csv") -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        p = tmp / name
        p.write_bytes(body)
        return p

    return make


def _folder(tmp: Path) -> Path:
    p = tmp / "ratings.csv"
    p.mkdir()
    return p


GOOD = "unit,A,B\nu1,1,1\nu2,2,2\nu3,1,2\n"

CASES: list[tuple[str, Callable[[Path], Path], list[str], list[str]]] = [
    (
        "latin-1",
        _bytes("unit,A,B\nu1,caf\u00e9,caf\u00e9\nu2,th\u00e9,th\u00e9\n".encode("latin-1")),
        [],
        ["line 2: not UTF-8", "byte 0xe9", "save the file as UTF-8"],
    ),
    (
        "unbalanced-quote",
        _text('unit,A,B\nu1,"yes,no\n' + "u,1,2\n" * 30_000 + 'u2,1",2\n'),
        [],
        ["row 1, column 'A'", "limit 131072", "quoting"],
    ),
    (
        "quote-to-eof",
        _text('unit,A,B\nu1,"yes,no\nu2,1,2\n'),
        [],
        ["not a readable CSV table", "EOF inside string"],
    ),
    (
        "corrupt-parquet",
        _bytes(b"PAR1\x00\x01garbage not a parquet footer PAR1", "r.parquet"),
        [],
        ["not a readable Parquet file"],
    ),
    ("empty-file", _text(""), [], ["empty file", "header row"]),
    ("header-only", _text("unit,A,B\n"), [], ["no ratings (a header and no rows)"]),
    (
        "duplicate-unit",
        _text("unit,A,B\nu1,1,1\nu2,2,2\nu1,1,2\n"),
        [],
        ["rows 1 and 3", "unit 'u1' appears twice", "--format long"],
    ),
    (
        "all-blank",
        _text("unit,A,B\nu1,,\nu2,,\n"),
        [],
        ["no ratings (every cell of the rater columns A, B is blank)"],
    ),
    (
        "never-rated-twice",
        _text("unit,A,B\nu1,1,\nu2,,2\n"),
        [],
        ["no unit has ratings from two or more raters"],
    ),
    (
        "design-column",
        _text("unit,A,B,site\nu1,1,1,s1\nu2,2,2,s2\n"),
        [],
        ["column 'site' looks like a design column", "--raters"],
    ),
    ("unknown-rater", _text(GOOD), ["--raters", "A,Z"], ["no column 'Z'"]),
    ("unknown-unit-col", _text(GOOD), ["--unit-col", "id"], ["no column 'id'"]),
    (
        "long-blank-unit",
        _text("unit,rater,value\nu1,A,1\n,B,1\n"),
        ["--format", "long"],
        ["row 2, column 'unit': blank unit id"],
    ),
    ("folder", _folder, [], ["is a folder"]),
    (
        "text-at-interval",
        _text("unit,A,B\nu1,1,1\nu2,2,two\n"),
        ["--level", "interval"],
        ["unit 'u2', rater 'B'", "'two' is not a number"],
    ),
    ("missing-file", lambda tmp: tmp / "nope.csv", [], ["no such file"]),
]


@pytest.mark.parametrize(
    ("make", "args", "fragments"),
    [pytest.param(m, a, f, id=i) for i, m, a, f in CASES],
)
def test_bad_ratings_file_one_line_exit_1(tmp_path, make, args, fragments):
    path = make(tmp_path)
    proc = tl("stats", "agreement", str(path), "--ci", "none", *args, check=1)
    err = proc.stderr.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert path.name in err, err
    for frag in fragments:
        assert frag in err, (frag, err)
