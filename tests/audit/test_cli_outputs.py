"""`audit run --report` into folders that do not exist yet, and one clear line when the
report cannot be written there (a file in the way, a folder named like the report)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from truthline.cli import app
from truthline.errors import TruthlineError


def test_audit_report_into_missing_folder_and_clear_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "ws"))
    r = CliRunner()
    assert r.invoke(app, ["init", "steel-safety"]).exit_code == 0
    res = r.invoke(app, ["audit", "simulate", "--items", "40", "--seed", "3", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["simulated"], res.output
    monkeypatch.chdir(tmp_path)
    res = r.invoke(app, ["audit", "run", "--resamples", "0", "--report", "newdir/sub/a.md"])
    assert res.exit_code == 0, (res.output, res.exception)
    assert "## Provenance gradient" in (tmp_path / "newdir" / "sub" / "a.md").read_text()
    (tmp_path / "blocker").write_text("not a folder")
    res = r.invoke(app, ["audit", "run", "--resamples", "0", "--report", "blocker/sub/a.md"])
    assert res.exit_code == 1 and isinstance(res.exception, TruthlineError), res.exception
    msg = str(res.exception)
    assert msg.startswith("--report blocker/sub/a.md: cannot create the folder") and "\n" not in msg
    (tmp_path / "dir.md").mkdir()
    res = r.invoke(app, ["audit", "run", "--resamples", "0", "--report", "dir.md"])
    assert isinstance(res.exception, TruthlineError) and "is a folder" in str(res.exception)
    assert (tmp_path / "blocker").read_text() == "not a folder", "nothing overwritten"
