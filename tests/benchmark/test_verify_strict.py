"""``benchmark verify`` checks a release strictly (issue 27): a file the SHA256SUMS does not
list fails, an entry leaving the release (``../``, absolute, a symlink out) is refused
without reading it, and a malformed line is named as ``SHA256SUMS:LINE``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from truthline.benchmark._export import _write_sums
from truthline.benchmark._release import verify_files
from truthline.errors import TruthlineError


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A release-shaped folder whose SHA256SUMS is written as ``export`` writes it."""
    out = tmp_path / "rel"
    (out / "public" / "data").mkdir(parents=True)
    (out / "private").mkdir()
    (out / "release.json").write_text("{}")
    (out / "public" / "data" / "train-00000-of-00001.parquet").write_bytes(b"PAR1 rows")
    (out / "private" / "annotators.json").write_text("{}")
    _write_sums(out / "public", out / "public")
    _write_sums(out, out)
    return out


def _verify(path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUTHLINE_")}
    return subprocess.run(
        [sys.executable, "-m", "truthline", "benchmark", "verify", str(path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_an_intact_release_and_its_public_half_verify(release: Path) -> None:
    assert verify_files(release).failures == []
    assert verify_files(release / "public").failures == []
    proc = _verify(release)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["mismatches"] == []


def test_an_unlisted_file_fails(release: Path) -> None:
    (release / "public" / "data" / "extra.parquet").write_bytes(b"added later")
    (release / "private" / "linked").symlink_to(release / "private")  # a folder link too
    res = verify_files(release)
    assert res.unlisted == ["private/linked", "public/data/extra.parquet"]
    assert verify_files(release / "public").unlisted == ["data/extra.parquet"]
    proc = _verify(release)
    assert proc.returncode == 1
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "not listed in SHA256SUMS: private/linked, public/data/extra.parquet" in " ".join(
        err.split()
    )


def test_changed_and_missing_files_fail(release: Path) -> None:
    (release / "release.json").write_text('{"edited": true}')
    (release / "private" / "annotators.json").unlink()
    res = verify_files(release)
    assert (res.mismatched, res.missing) == (["release.json"], ["private/annotators.json"])
    assert res.failures == ["private/annotators.json", "release.json"]


@pytest.mark.parametrize(
    "entry",
    ["../outside.txt", "public/../../outside.txt", "ABSOLUTE", "link.txt"],
    ids=["dotdot", "nested-dotdot", "absolute", "symlink-out"],
)
def test_entries_leaving_the_release_are_refused(release: Path, entry: str) -> None:
    outside = release.parent / "outside.txt"
    outside.write_text("not part of the release")
    (release / "link.txt").symlink_to(outside)
    entry = entry.replace("ABSOLUTE", str(outside))
    sums = release / "SHA256SUMS"
    lines = sums.read_text().splitlines()
    digest = hashlib.sha256(outside.read_bytes()).hexdigest()
    sums.write_text("\n".join([*lines, f"{digest}  {entry}"]) + "\n")
    n = len(lines) + 1
    with pytest.raises(TruthlineError, match=rf"SHA256SUMS:{n}: .* points outside the release"):
        verify_files(release)
    proc = _verify(release)
    assert proc.returncode == 1
    assert f"SHA256SUMS:{n}:" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "line",
    ["not a checksum line", "abc123  short.txt", "f" * 64 + " one-space.txt", "f" * 64 + "  "],
    ids=["prose", "short-digest", "one-space", "no-path"],
)
def test_a_malformed_line_is_named(release: Path, line: str) -> None:
    sums = release / "SHA256SUMS"
    lines = sums.read_text().splitlines()
    lines.insert(1, line)
    sums.write_text("\n".join(lines) + "\n")
    with pytest.raises(TruthlineError, match=r"SHA256SUMS:2: malformed line") as exc:
        verify_files(release)
    assert str(exc.value).startswith(f"{sums}:2: ")


def test_a_path_listed_twice_is_named(release: Path) -> None:
    sums = release / "SHA256SUMS"
    first = sums.read_text().splitlines()[0]
    sums.write_text(sums.read_text() + first + "\n")
    with pytest.raises(TruthlineError, match=r"is listed twice"):
        verify_files(release)


def test_no_sums_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TruthlineError, match="has no SHA256SUMS"):
        verify_files(tmp_path)
