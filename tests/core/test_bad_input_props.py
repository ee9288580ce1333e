"""The bad-input corpus, generated (issue 27): hypothesis draws faulty project files,
metadata CSVs, label tables (CSV and Parquet) and CLI numbers, and each run of the real
entry point (``truthline.cli.main``, in process) must end in exit 1 or 2 with one line of
error (for a usage error, one ``Error:`` line naming the option), never a traceback, and
leave the store byte-for-byte as it was (the SQL dump of ``tests/core/test_bad_input``)."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.core.test_bad_input import PROJECT_TOML, _png, dump
from truthline.cli import main
from truthline.media import import_items
from truthline.workspace import Workspace

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace with project 'photos' (one boolean field ``ok``) and items one, two."""
    root = tmp_path_factory.mktemp("props")
    tmpl = root / "photos-template"
    tmpl.mkdir()
    (tmpl / "project.toml").write_text(PROJECT_TOML)
    workspace = Workspace.from_env(root / "ws")
    project = workspace.init_project(str(tmpl))
    _png(root / "media" / "one.png", 10)
    _png(root / "media" / "two.png", 200)
    assert import_items(workspace.store, project, root / "media", progress=False).added == 2
    workspace.store.close()
    yield root


@contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(root: Path, *argv: str) -> tuple[int, str]:
    """Exit code and stderr of ``truthline ARGV`` on the module's workspace."""
    err, out = io.StringIO(), io.StringIO()
    old = sys.argv
    sys.argv = ["truthline", *argv]
    code = 0
    try:
        with _env(TRUTHLINE_WORKSPACE=str(root / "ws")), redirect_stderr(err), redirect_stdout(out):
            main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = old
    return code, err.getvalue()


def refused(root: Path, *argv: str, code: int = 1, option: str | None = None) -> str:
    """Run ARGV; assert exit ``code``, one error line and an unchanged store."""
    db = root / "ws" / "truthline.db"
    before = dump(db)
    got, err = run(root, *argv)
    assert "Traceback" not in err, err
    assert got == code, f"exit {got}: {err}"
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.startswith("Error:")]
        assert len(lines) == 1, err
        assert option is None or option in lines[0], err
        line = lines[0]
    else:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        line = lines[0]
    assert dump(db) == before, "the store changed"
    return line


def _folder(root: Path, name: str) -> Path:
    d = root / "cases" / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


# -- project files ----------------------------------------------------------------------
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12)


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a TOML basic string


DEFINITION_FAULTS = [
    "tolerance",
    "bounds",
    "cannot_tell",
    "template",
    "resamples",
    "unknown",
    "name",
]


@st.composite
def faulty_definitions(draw: st.DrawFn, kind: str) -> tuple[str, str, str]:
    """(file name, text, what the one error line must say): a valid definition with one
    fault drawn from the kinds issue 27 and earlier issues name."""
    head = 'name = "gen"\nmedia = "image"\n'
    ok = '[fields.ok]\ntype = "boolean"\n'
    if kind == "tolerance":
        t = draw(st.one_of(st.floats(max_value=-1e-9, allow_infinity=False), st.just(float("inf"))))
        text = head + f'[fields.d]\ntype = "number"\ntolerance = {t!r}\n'
        return "project.toml", text, "fields.d.tolerance"
    if kind == "bounds":
        lo = draw(st.integers(-(10**6), 10**6))
        hi = lo - draw(st.integers(1, 10**6))
        return (
            "project.toml",
            head + f'[fields.d]\ntype = "number"\nmin = {lo}\nmax = {hi}\n',
            (f"min ({lo}) is greater than max ({hi})"),
        )
    if kind == "cannot_tell":
        choices = draw(st.lists(NAMES, min_size=1, max_size=5, unique_by=str.casefold))
        clash = draw(st.sampled_from(choices))
        clash = draw(st.sampled_from([clash, clash.upper(), clash.capitalize()]))
        cs = ", ".join(_toml_str(c) for c in choices)
        text = head + f'[fields.c]\ntype = "single_choice"\nchoices = [{cs}]\n'
        return "project.toml", text + f"cannot_tell = {_toml_str(clash)}\n", "is also a choice"
    if kind == "template":
        ups = draw(st.integers(1, 6))
        target = draw(st.sampled_from(["../" * ups + "secret.txt", "/etc/passwd", "/root/x"]))
        key = draw(st.sampled_from(["system", "user"]))
        text = head + ok + f"[prompts]\n{key} = {_toml_str(target)}\n"
        return "project.toml", text, f"prompts.{key}: prompt template"
    if kind == "resamples":
        n = draw(st.integers(100_001, 10**15))
        sec = draw(st.sampled_from(["[audit]\nresamples", "[benchmark]\nbootstrap_resamples"]))
        return "project.toml", head + ok + f"{sec} = {n}\n", "over the limit of 100000"
    if kind == "unknown":
        key = draw(NAMES.filter(lambda k: k not in {"name", "media", "title", "description",
                   "license", "licence", "fields", "taxonomies", "strata", "cluster", "prompts",
                   "image_policy", "audit", "benchmark", "layers", "frames_per_item"}))  # fmt: skip
        return "project.toml", head + f"{key} = 1\n" + ok, f"{key}: unknown setting"
    bad = draw(st.text(alphabet="ab_-.[]/ é", min_size=1, max_size=10))
    assume(any(c in bad for c in ".[]/ é"))
    return (
        "project.toml",
        head + f'[fields.{_toml_str(bad)}]\ntype = "boolean"\n',
        ("invalid field name"),
    )


@pytest.mark.parametrize("kind", DEFINITION_FAULTS)
@given(data=st.data(), n=st.integers(0, 10**6))
@settings(SETTINGS, max_examples=6)
def test_faulty_project_files_are_one_line(ws: Path, kind: str, data: st.DataObject, n: int):
    name, text, fragment = data.draw(faulty_definitions(kind))
    d = _folder(ws, "def")
    (d / name).write_text(text, encoding="utf-8")
    line = refused(ws, "init", str(d), "--name", f"gen{n}")
    assert f"{d / name}:" in line, line
    assert fragment in line, line
    assert not (ws / "ws" / "projects" / f"gen{n}").exists()


@given(st.integers(6, 9), st.integers(2, 9))
@settings(SETTINGS, max_examples=6)
def test_alias_bombs_end_at_once(ws: Path, levels: int, fan: int) -> None:
    assume(fan**levels > 200_000)
    lines = ["name: gen", "media: image", "l0: &l0 [" + ",".join(['"x"'] * fan) + "]"]
    lines += [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * fan) + "]" for i in range(1, levels)]
    d = _folder(ws, "bomb")
    (d / "project.yaml").write_text("\n".join([*lines, "fields: {ok: {type: boolean}}", ""]))
    line = refused(ws, "init", str(d), "--name", "bomb")
    assert "YAML nodes once aliases are expanded" in line and "TRUTHLINE_MAX_YAML_NODES" in line


TOMLISH = st.lists(
    st.sampled_from(
        [
            'name = "g"',
            'media = "image"',
            "[fields.a]",
            'type = "boolean"',
            'type = "number"',
            "tolerance = -1",
            "[prompts]",
            'user = "../x"',
            "a: &a [1, *a]",
            "fields:",
            "  a: {type: boolean}",
            "[[x]]",
            "= 1",
            '"\\u0000"',
            "cannot_tell = 'a'",
            'choices = ["a"]',
            "[audit]",
            "resamples = 1e99",
            "media: image",
        ]
    ),
    max_size=12,
).map(lambda lines: "\n".join(lines).encode())


@given(st.one_of(st.binary(min_size=1, max_size=200), TOMLISH.filter(bool)))
@settings(SETTINGS, max_examples=30)
def test_arbitrary_bytes_as_a_definition_never_trace(ws: Path, data: bytes) -> None:
    """Whatever the bytes, ``projects check`` passes or fails naming the file, never crashes."""
    d = _folder(ws, "bytes")
    suffix = "toml" if data[0] % 2 else "yaml"
    (d / f"project.{suffix}").write_bytes(data)
    code, err = run(ws, "projects", "check", str(d))
    assert "Traceback" not in err and code in (0, 1), err
    if code == 1:
        assert all(str(d) in ln for ln in err.strip().splitlines()), err


# -- metadata CSVs (items import) ---------------------------------------------------------
CELL = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=12)


def _names_no_item(key: str) -> bool:
    """``key`` names neither item (by key, by path, nor by path less its suffix)."""
    if not key:
        return False
    try:
        bare = Path(key).with_suffix("").as_posix()
    except ValueError:
        bare = key
    return not {key, bare} & {"one", "two", "one.png", "two.png"}


METADATA_FAULTS = ["dup", "nul", "newline", "unknown", "utf8", "cells"]


@st.composite
def faulty_metadata(draw: st.DrawFn, kind: str) -> tuple[bytes, str]:
    col = draw(NAMES.filter(lambda c: c not in ("key", "item", "item_id", "path", "file")))
    if kind == "dup":
        return f"key,{col},{col}\none,a,b\n".encode(), f"column '{col}' is given twice"
    if kind == "nul":
        v = draw(CELL)
        at = draw(st.integers(0, len(v)))
        cell = v[:at] + "\0" + v[at:]
        return f'key,{col}\none,"{cell.replace(chr(34), "")}"\n'.encode(), "a NUL byte"
    if kind == "newline":
        ctl = draw(st.sampled_from(["\n", "\r\n", "\t", "\x1b"]))
        return f'key,{col}\n"one{ctl}x",a\n'.encode(), "control character"
    if kind == "unknown":
        key = draw(CELL.filter(lambda k: '"' not in k and _names_no_item(k.strip())))
        return f'key,{col}\n"{key}",a\n'.encode(), "no media item"
    if kind == "utf8":
        return f"key,{col}\none,".encode() + b"\xff\xfe\n", "not UTF-8"
    extra = draw(st.integers(1, 4))
    return f"key,{col}\none,a{',x' * extra}\n".encode(), "more cells than the header"


@pytest.mark.parametrize("kind", METADATA_FAULTS)
@given(data=st.data())
@settings(SETTINGS, max_examples=5)
def test_faulty_metadata_csvs_are_one_line(ws: Path, kind: str, data: st.DataObject) -> None:
    raw, fragment = data.draw(faulty_metadata(kind))
    d = _folder(ws, "meta")
    (d / "meta.csv").write_bytes(raw)
    line = refused(ws, "items", "import", str(ws / "media"), "--metadata", str(d / "meta.csv"))
    assert "meta.csv" in line and fragment in line, line


# -- label tables (audit import-table), CSV and Parquet ----------------------------------------
KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=10)


TABLE_FAULTS = ["unknown-keys", "dup-column", "unknown-column", "bad-value"]


@st.composite
def faulty_tables(draw: st.DrawFn, kind: str) -> tuple[list[str], list[list[str]], str]:
    cols = ["item", "field", "annotator", "value"]
    if kind == "unknown-keys":
        keys = draw(st.lists(KEYS.filter(lambda k: k not in ("one", "two")), min_size=1,
                             max_size=8, unique=True))  # fmt: skip
        rows = [[k, "ok", "ann", "true"] for k in ["one", *keys]]
        return cols, rows, f"{len(keys)} item key(s) not in project 'photos'"
    if kind == "dup-column":
        c = draw(st.sampled_from(cols))
        return [*cols, c], [["one", "ok", "ann", "true", "x"]], f"column '{c}' is given twice"
    if kind == "unknown-column":
        c = draw(NAMES.filter(lambda c: c not in ("item", "field", "annotator", "value", "arm",
                 "tier", "shown_prediction", "model_version", "lead_time", "expert",
                 "flagged")))  # fmt: skip
        return [*cols, c], [["one", "ok", "ann", "true", "x"]], f"column '{c}': unknown column"
    value = draw(st.sampled_from(["maybe", "2", '{"a": 1}', "nope", "-1.5"]))
    return cols, [["one", "ok", "ann", value]], "column 'value'"


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("kind", TABLE_FAULTS)
@given(data=st.data())
@settings(SETTINGS, max_examples=4)
def test_faulty_label_tables_are_one_line(ws: Path, kind: str, fmt: str, data: st.DataObject):
    cols, rows, fragment = data.draw(faulty_tables(kind))
    if fmt == "parquet" and len(set(cols)) != len(cols):
        import pyarrow as pa
        import pyarrow.parquet as pq

        d = _folder(ws, "table")
        arrays = [pa.array([r[i] for r in rows]) for i in range(len(cols))]
        pq.write_table(pa.table(arrays, names=cols), d / "t.parquet")
        path = d / "t.parquet"
    else:
        d = _folder(ws, "table")
        df = pd.DataFrame(rows, columns=cols)
        path = d / f"t.{fmt}"
        df.to_parquet(path) if fmt == "parquet" else df.to_csv(path, index=False)
    line = refused(ws, "audit", "import-table", str(path), "-p", "photos")
    assert path.name in line and fragment in line, line


# -- CLI numbers ---------------------------------------------------------------------------
NOT_INTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e9", "0x10", "", "ten", "1.5", "--1", "5 5", "½", "５"]),
).filter(lambda t: _as_int(t) is None)


def _as_int(text: str) -> int | None:
    """``text`` as the CLI reads an integer option (typer's lax integer parsing: signs,
    spaces, ``1_000`` and ``5.0`` pass; ``1e9``, ``0x10`` and ``5.5`` do not), else None."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(int).validate_python(text)
    except ValidationError:
        return None


def _ints_outside(lo: int, hi: int | None = None) -> st.SearchStrategy[str]:
    below = st.integers(-(10**15), lo - 1)
    return (below if hi is None else st.one_of(below, st.integers(hi + 1, 10**15))).map(str)


@given(
    st.one_of(
        st.integers(0, 100_000).map(str),
        _ints_outside(0, 100_000),
        st.floats(-1e6, 1e6).map(repr),
        NOT_INTS,
    )
)
@settings(SETTINGS, max_examples=25)
def test_resamples_numbers(ws: Path, text: str) -> None:
    ratings = ws / "ratings.csv"
    ratings.write_text("unit,A,B\nu1,1,1\nu2,2,2\nu3,1,2\n")
    argv = ["stats", "agreement", str(ratings), "--ci", "none", "--resamples", text]
    n = _as_int(text)
    if n is not None and 0 <= n <= 100_000:
        code, err = run(ws, *argv)
        assert code == 0, err
    else:
        refused(ws, *argv, code=2, option="--resamples")


@given(st.one_of(_ints_outside(1), NOT_INTS))
@settings(SETTINGS, max_examples=15)
def test_concurrency_numbers(ws: Path, text: str) -> None:
    refused(ws, "benchmark", "run", "-m", "rule:majority", "-c", text, code=2, option="-c")


@given(st.one_of(_ints_outside(0), NOT_INTS))
@settings(SETTINGS, max_examples=15)
def test_limit_numbers(ws: Path, text: str) -> None:
    refused(ws, "items", "list", "--limit", text, code=2, option="--limit")


@given(
    st.one_of(
        st.tuples(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6))
        .filter(lambda wh: not (1 <= wh[0] <= 16384 and 1 <= wh[1] <= 16384))
        .map(lambda wh: f"{wh[0]}x{wh[1]}"),
        st.text(max_size=12).filter(lambda s: "x" not in s.lower()),
    )
)
@settings(SETTINGS, max_examples=15)
def test_render_sizes(ws: Path, res: str) -> None:
    line = refused(ws, "scenes", "render", "dori", f"--res={res}", "--limit", "1")
    assert "--res" in line, line
