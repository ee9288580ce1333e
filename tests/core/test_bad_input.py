"""The bad-input corpus: every case is a real input and a real ``truthline`` command run as
a subprocess. Each must end with its exit code and one clear line naming the problem
(never a traceback) and must leave the store exactly as it was (a full SQL dump of the
store is compared before and after).

Cases of the stats and annotate stages live in their own suites (tests/stats,
tests/annotate); these are the CLI shell's, the workspace's, the store's, project
definitions' and ``items import``'s.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import pytest

from truthline.media import import_items
from truthline.store import now, tables
from truthline.workspace import Workspace

PROJECT_TOML = 'name = "photos"\nmedia = "image"\n\n[fields.ok]\ntype = "boolean"\n'


def _png(path: Path, shade: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.full((24, 32, 3), shade, np.uint8))
    return path


def _definition(folder: Path, text: str, name: str = "project.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with the 'photos' project and two imported images."""
    root = tmp_path_factory.mktemp("corpus")
    tmpl = _definition(root / "photos-template", PROJECT_TOML)
    ws = Workspace.from_env(root / "ws")
    project = ws.init_project(str(tmpl))
    media = root / "media"
    _png(media / "one.png", 10)
    _png(media / "two.png", 200)
    rep = import_items(ws.store, project, media, progress=False)
    assert rep.added == 2
    ws.store.close()
    return root


def dump(db: Path) -> str:
    """The store's full content as SQL (a file that is no database is compared byte-wise)."""
    if not db.exists():
        return "<missing>"
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return "\n".join(con.iterdump())
        finally:
            con.close()
    except sqlite3.DatabaseError:
        return db.read_bytes().hex()


@dataclass
class Case:
    id: str
    setup: Callable[[Path], list[str]]
    """Builds the input under the case folder (holding a copy of the base workspace at
    ``ws``) and returns the command line after ``truthline``."""
    code: int
    fragment: str
    db: Callable[[Path], Path] = field(default=lambda d: d / "ws" / "truthline.db")
    after: Callable[[Path], None] | None = None


def _tmpl(d: Path) -> str:
    return str(d / "photos-template")


# -- names that would become paths ----------------------------------------------------
def _victim(d: Path) -> None:
    (d / "victim").mkdir(exist_ok=True)
    (d / "victim" / "keep.txt").write_text("precious")


def _victim_intact(d: Path) -> None:
    assert (d / "victim" / "keep.txt").read_text() == "precious"


def _traversal(name: str) -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        _victim(d)
        return ["init", _tmpl(d), "--name", name.replace("VICTIM", str(d / "victim")), "--force"]

    return setup


# -- project definitions --------------------------------------------------------------
def _check(text: str, name: str = "project.toml") -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        return ["projects", "check", str(_definition(d / "def", text, name))]

    return setup


def _number(extra: str) -> str:
    return f'name = "n"\nmedia = "image"\n[fields.depth]\ntype = "number"\n{extra}\n'


DUP_YAML = (
    "name: n\nmedia: image\nfields:\n  depth:\n    type: number\n"
    "    tolerance: 1\n    tolerance: 5\n"
)


def _not_utf8_definition(d: Path) -> list[str]:
    folder = d / "def"
    folder.mkdir()
    (folder / "project.toml").write_bytes(PROJECT_TOML.encode() + b'title = "caf\xe9"\n')
    return ["projects", "check", str(folder)]


def _init_invalid_template(d: Path) -> list[str]:
    return ["init", str(_definition(d / "t", _number("tolerance = inf")))]


# -- items import ---------------------------------------------------------------------
def _media(d: Path) -> Path:
    m = d / "new"
    _png(m / "x.png", 90)
    _png(m / "y.png", 120)
    return m


def _csv_bytes(data: bytes) -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        m = _media(d)
        (d / "meta.csv").write_bytes(data)
        return ["items", "import", str(m), "--metadata", str(d / "meta.csv")]

    return setup


def _cluster_csv(d: Path) -> list[str]:
    """A project clustered by 'site' whose CSV gives a 600-character site (items.parent is
    String(500): PostgreSQL would refuse it, SQLite would keep it)."""
    folder = d / "clustered"
    _definition(
        folder,
        PROJECT_TOML.replace('media = "image"', 'media = "image"\ncluster = "site"').replace(
            '"photos"', '"clustered"'
        ),
    )
    ws = Workspace.from_env(d / "ws")
    ws.init_project(str(folder))
    ws.store.close()
    m = _media(d)
    (d / "meta.csv").write_text("key,site\nx," + "s" * 600 + "\ny,B\n")
    return ["items", "import", str(m), "--metadata", str(d / "meta.csv"), "-p", "clustered"]


def _same_key(d: Path) -> list[str]:
    m = d / "same"
    _png(m / "a.png", 30)
    cv2.imwrite(str(m / "a.jpg"), np.full((24, 32, 3), 60, np.uint8))
    return ["items", "import", str(m)]


def _long_key(d: Path) -> list[str]:
    m = d / "deep"
    _png(m / ("a" * 200) / ("b" * 200) / ("c" * 150 + ".png"), 5)
    return ["items", "import", str(m)]


def _changed_under_labels(d: Path) -> list[str]:
    ws = Workspace.from_env(d / "ws")
    m = d / "labelled"
    _png(m / "cat.png", 40)
    import_items(ws.store, ws.project("photos"), m, progress=False)
    item = ws.store.item_ids_by_key("photos")["cat"]
    with ws.store.begin() as conn:
        conn.execute(
            tables.annotations.insert().values(
                project="photos",
                item_id=item,
                field_path="ok",
                annotator="a@example.com",
                arm="blind",
                tier=1,
                value=True,
                source="import",
                source_id="import:1",
                stored_at=now(),
            )
        )
    ws.store.close()
    _png(m / "cat.png", 41)  # new pixels under the old key
    return ["items", "import", str(m)]


# -- the store ------------------------------------------------------------------------
def _garbage_store(d: Path) -> list[str]:
    (d / "garbage.db").write_bytes(b"this is not a database\n" * 100)
    return ["--db", f"sqlite:///{d / 'garbage.db'}", "status"]


def _newer_store(d: Path) -> list[str]:
    con = sqlite3.connect(d / "ws" / "truthline.db")
    con.execute(
        "INSERT INTO truthline_schema (version, description, applied_at) "
        "VALUES (99, 'from the future', '2030-01-01')"
    )
    con.commit()
    con.close()
    return ["items", "list"]


def _read_only_store(d: Path) -> list[str]:
    url = f"sqlite:///file:{d / 'ws' / 'truthline.db'}?mode=ro&uri=true"
    return ["--db", url, "items", "import", str(_media(d))]


def _workspace_under_file(d: Path) -> list[str]:
    (d / "plain-file").write_text("x")
    return ["--workspace", str(d / "plain-file" / "ws"), "init", _tmpl(d)]


def _store_under_file(d: Path) -> list[str]:
    (d / "plain-file").write_text("x")
    return ["--db", f"sqlite:///{d / 'plain-file' / 'x.db'}", "init", _tmpl(d)]


def _store_unwritable(d: Path) -> list[str]:
    """A store in a folder nobody may write (``/proc`` refuses even root)."""
    return ["--db", "sqlite:////proc/truthline-test/x.db", "init", _tmpl(d)]


# -- inputs read by the stage CLIs, caught by the CLI's safety net ---------------------
def _stats_csv(data: bytes) -> Callable[[Path], list[str]]:
    def setup(d: Path) -> list[str]:
        (d / "ratings.csv").write_bytes(data)
        return ["stats", "agreement", str(d / "ratings.csv")]

    return setup


def _corrupt_parquet(d: Path) -> list[str]:
    (d / "labels.parquet").write_bytes(b"PAR1" + b"\x00garbage" * 50)
    return ["audit", "import-table", str(d / "labels.parquet")]


# -- issue 27: silent accepts and unbounded work ------------------------------------------
def _ambiguous_key(d: Path) -> list[str]:
    m = d / "amb"
    _png(m / "a.png", 20)
    _png(m / "a.v1.png", 21)  # item 'a.v1'; 'a.v1' less its suffix is item 'a'
    (d / "meta.csv").write_text("key,site\na.v1,A\n")
    return ["items", "import", str(m), "--metadata", str(d / "meta.csv")]


def _newline_file_name(d: Path) -> list[str]:
    m = d / "nl"
    _png(m / "bad\nname.png", 22)
    return ["items", "import", str(m)]


def _unknown_label_key(d: Path) -> list[str]:
    (d / "labels.csv").write_text("item,field,annotator,value\none,ok,ann,true\ntpyo,ok,ann,true\n")
    return ["audit", "import-table", str(d / "labels.csv")]


def _prompt_outside(d: Path) -> list[str]:
    (d / "secret.txt").write_text("OPENAI_API_KEY=sk-not-for-prompts")
    folder = _definition(d / "def", PROJECT_TOML + '[prompts]\nuser = "../secret.txt"\n')
    return ["init", str(folder), "--name", "leaky"]


def _alias_bomb(d: Path) -> list[str]:
    rows = ['l0: &l0 ["x","x","x","x","x","x","x","x","x"]'] + [
        f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)
    ]
    text = "name: n\nmedia: image\n" + "\n".join(rows) + "\nfields: {ok: {type: boolean}}\n"
    return ["init", str(_definition(d / "def", text, "project.yaml"))]


def _bad_sums(d: Path) -> list[str]:
    (d / "rel").mkdir()
    (d / "rel" / "SHA256SUMS").write_text("this is not a checksum line\n")
    return ["benchmark", "verify", str(d / "rel")]


CASES = [
    Case("init-name-traversal", _traversal("../../victim"), 1, "cannot be used as a file name",
         after=_victim_intact),
    Case("init-name-absolute", _traversal("VICTIM"), 1, "cannot be used as a file name",
         after=_victim_intact),
    Case("init-name-slash", _traversal("a/b"), 1, "cannot be used as a file name"),
    Case("init-name-dotdot", _traversal(".."), 1, "cannot be used as a file name",
         after=_victim_intact),
    Case("init-name-upper-space", _traversal("My Project"), 1, "lower-case letters"),
    Case("init-name-too-long", _traversal("p" * 101), 1, "at most 100 characters"),
    Case("project-option-traversal", lambda d: ["status", "--project", "../../etc"], 1,
         "--project '../../etc' cannot be used as a file name"),
    Case("init-invalid-template", _init_invalid_template, 1,
         "fields.depth.tolerance: Input should be a finite number"),
    Case("yaml-duplicate-key", _check(DUP_YAML, "project.yaml"), 1,
         "project.yaml: fields.depth.tolerance: duplicate key (line 7; first given on line 6)"),
    Case("tolerance-inf-toml", _check(_number("tolerance = inf")), 1,
         "project.toml: fields.depth.tolerance: Input should be a finite number"),
    Case("tolerance-nan-yaml",
         _check("name: n\nmedia: image\nfields:\n  d:\n    type: number\n    tolerance: .nan\n",
                "project.yaml"), 1, "fields.d.tolerance: Input should be a finite number"),
    Case("tolerance-negative", _check(_number("tolerance = -0.5")), 1,
         "fields.depth.tolerance: Input should be greater than or equal to 0"),
    Case("min-above-max", _check(_number("min = 10\nmax = 1")), 1,
         "fields.depth: min (10) is greater than max (1)"),
    Case("max-infinite", _check(_number("max = inf")), 1,
         "fields.depth.max: Input should be a finite number"),
    Case("field-name-dot",
         _check('name = "n"\nmedia = "image"\n[fields."a.b"]\ntype = "boolean"\n'), 1,
         "project.toml: fields.a.b: invalid field name"),
    Case("field-name-bracket",
         _check('name = "n"\nmedia = "image"\n[fields."w[0]"]\ntype = "boolean"\n'), 1,
         "fields.w[0]: invalid field name"),
    Case("subfield-name-dot",
         _check('name = "n"\nmedia = "image"\n[fields.w]\ntype = "entity_list"\n'
                '[fields.w.fields."x.y"]\ntype = "boolean"\n'), 1,
         "fields.w.fields.x.y: invalid field name"),
    Case("definition-not-utf8", _not_utf8_definition, 1, "not UTF-8 text"),
    Case("definition-empty", _check(""), 1, "media: Field required"),
    Case("definition-bad-yaml", _check("name: [unclosed\n", "project.yaml"), 1, "invalid YAML"),
    Case("definition-missing", lambda d: ["projects", "check", str(d / "nope")], 1,
         "nope: file not found"),
    Case("csv-not-utf8", _csv_bytes(b"key,site\nx,caf\xe9\n"), 1,
         "meta.csv: not UTF-8 text"),
    Case("csv-huge-cell", _csv_bytes(b"key,note\nx,\"" + b"z" * 200_000 + b"\"\n"), 1,
         "meta.csv: not a readable CSV file: field larger than field limit"),
    Case("csv-empty", _csv_bytes(b""), 1, "meta.csv: empty file"),
    Case("csv-duplicate-ids", _csv_bytes(b"key,site\nx,A\ny,B\nx,C\n"), 1,
         "rows 2 and 4 both describe item 'x'"),
    Case("csv-duplicate-id-and-path", _csv_bytes(b"key,site\nx,A\nx.png,B\n"), 1,
         "rows 2 and 3 both describe item 'x'"),
    Case("csv-cluster-id-too-long", _cluster_csv, 1,
         "column 'site': a cluster id of 600 characters (at most 500)"),
    Case("csv-missing", lambda d: ["items", "import", str(_media(d)), "--metadata",
                                   str(d / "absent.csv")], 1, "cannot read the metadata CSV"),
    Case("media-same-key", _same_key, 1, "a.jpg and a.png would both be item 'a'"),
    Case("media-key-too-long", _long_key, 1, "characters (at most 500)"),
    Case("media-changed-under-labels", _changed_under_labels, 1,
         "item 'cat' (cat.png): its media changed, and it already has 1 annotations"),
    Case("media-folder-missing", lambda d: ["items", "import", str(d / "absent")], 1,
         "no such file or folder"),
    Case("items-list-limit-negative", lambda d: ["items", "list", "--limit", "-1"], 2,
         "Invalid value for '--limit'"),
    Case("store-garbage", _garbage_store, 1, "file is not a database",
         db=lambda d: d / "garbage.db"),
    Case("store-newer-schema", _newer_store, 1, "made by a newer truthline (schema version 99"),
    Case("store-read-only", _read_only_store, 1, "attempt to write a readonly database"),
    Case("store-bad-url", lambda d: ["--db", "nosuchdriver://x/y", "status"], 1,
         "cannot open the store at nosuchdriver://x/y"),
    Case("workspace-under-a-file", _workspace_under_file, 1, "cannot copy the template into"),
    Case("store-under-a-file", _store_under_file, 1, "cannot create the store file"),
    Case("store-folder-unwritable", _store_unwritable, 1, "cannot create the store file"),
    Case("net-stats-csv-not-utf8", _stats_csv(b"a,b\n1,\xff\xfe\n"), 1,
         "not UTF-8 text"),
    Case("net-stats-csv-empty", _stats_csv(b""), 1, "ratings.csv"),
    Case("net-corrupt-parquet", _corrupt_parquet, 1, "labels.parquet"),
    Case("csv-duplicate-column", _csv_bytes(b"key,site,site\nx,A,B\n"), 1,
         "meta.csv: row 1: column 'site' is given twice (columns 2 and 3)"),
    Case("csv-nul-byte", _csv_bytes(b"key,site\nx,A\x00B\n"), 1,
         "meta.csv: row 2, column 'site': a NUL byte"),
    Case("csv-newline-in-key", _csv_bytes(b'key,site\n"x\ny",A\n'), 1,
         "meta.csv: row 2, column 'key': 'x\\ny' holds a line break"),
    Case("csv-key-matches-two-items", _ambiguous_key, 1,
         "row 2, column 'key': 'a.v1' matches 2 items ('a.v1', 'a')"),
    Case("csv-from-a-device", lambda d: ["items", "import", str(_media(d)), "--metadata",
                                         "/dev/zero"], 1, "/dev/zero: not a regular file"),
    Case("media-newline-in-file-name", _newline_file_name, 1,
         "'bad\\nname.png': the file name holds a line break"),
    Case("labels-unknown-item-key", _unknown_label_key, 1,
         "1 item key(s) not in project 'photos': 'tpyo'; fix the keys"),
    Case("prompt-template-outside", _prompt_outside, 1,
         "prompts.user: prompt template '../secret.txt' is outside the project folder"),
    Case("yaml-alias-bomb", _alias_bomb, 1, "YAML nodes once aliases are expanded"),
    Case("cannot-tell-is-a-choice",
         _check(PROJECT_TOML + '[fields.c]\ntype = "single_choice"\nchoices = ["y", "n"]\n'
                'cannot_tell = "n"\n'), 1, "fields.c.cannot_tell: 'n' is also a choice"),
    Case("stats-ratings-from-a-device", lambda d: ["stats", "agreement", "/dev/zero"], 1,
         "/dev/zero: not a regular file"),
    Case("stats-resamples-over-limit",
         lambda d: ["stats", "agreement", "/dev/zero", "--resamples", "1000000000"], 2,
         "1000000000 bootstrap resamples is over the limit of 100000"),
    Case("verify-malformed-sums-line", _bad_sums, 1,
         "SHA256SUMS:1: malformed line 'this is not a checksum line'"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, base: Path, tmp_path: Path) -> None:
    shutil.copytree(base / "ws", tmp_path / "ws")
    shutil.copytree(base / "photos-template", tmp_path / "photos-template")
    ws = Workspace.from_env(tmp_path / "ws")
    ws.registered("photos")  # the copy's own definition path, as any command would record
    ws.store.close()
    argv = case.setup(tmp_path)
    db = case.db(tmp_path)
    before = dump(db)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUTHLINE_")}
    env["TRUTHLINE_WORKSPACE"] = str(tmp_path / "ws")
    proc = subprocess.run(
        [sys.executable, "-m", "truthline", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=180,
    )
    err = proc.stderr
    assert proc.returncode == case.code, f"exit {proc.returncode}\n{proc.stdout}\n{err}"
    assert "Traceback" not in err, err
    flat = " ".join(err.split())  # rich wraps long lines
    assert " ".join(case.fragment.split()) in flat, err
    assert dump(db) == before, "the store changed"
    if case.after:
        case.after(tmp_path)


def test_corpus_size() -> None:
    assert len(CASES) >= 55
