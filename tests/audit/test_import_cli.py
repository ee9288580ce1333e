"""import-table error reporting and round trip; the `truthline audit` CLI end to end;
the sample-size planner against the textbook example."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from truthline.audit import ImportTableError, import_table, load, plan_sample_size
from truthline.cli import app


def _write(path: Path, text: str) -> Path:
    path.write_text(text.strip() + "\n")
    return path


def test_every_row_problem_has_line_and_column(steel, sqlite_store, tmp_path):
    f = _write(
        tmp_path / "bad.csv",
        """
item,field,annotator,arm,tier,value,lead_time
c1,worker_count,ann,anchored,1,two,10
c1,workers[P1].action,ann,anchored,1,Z9,10
c2,no_such_field,ann,blind,1,1,10
c2,worker_count,ann,sideways,3,1,-4
""",
    )
    with pytest.raises(ImportTableError) as exc:
        import_table(sqlite_store, steel, f)
    msg = str(exc.value)
    assert "bad.csv:2: column 'value': worker_count" in msg
    assert "bad.csv:3: column 'value': workers.action" in msg and "Z9" in msg
    assert "bad.csv:4: column 'field': project 'steel-safety' has no field 'no_such_field'" in msg
    assert "bad.csv:5: column 'arm'" in msg and "bad.csv:5: column 'tier'" in msg
    assert "bad.csv:5: column 'lead_time'" in msg
    assert sqlite_store.status("steel-safety")["annotations"]["total"] == 0  # nothing written


def test_missing_required_column(steel, sqlite_store, tmp_path):
    f = _write(tmp_path / "m.csv", "item,field,value\nc1,worker_count,2")
    with pytest.raises(ImportTableError, match=r"m\.csv:1: column 'annotator': required"):
        import_table(sqlite_store, steel, f)


def test_entity_paths_assemble_and_reimport_is_idempotent(steel, sqlite_store, tmp_path):
    f = _write(
        tmp_path / "ok.csv",
        """
item,field,annotator,arm,value,shown_prediction,model_version,lead_time,expert
c1,workers[P1].action,ann,anchored,B1,B1,vlm-x,30,B7
c1,workers[P1].helmet,ann,anchored,worn,not_worn,vlm-x,30,worn
c1,workers[P2].action,ann,anchored,walking,A1,vlm-x,30,A1
c1,worker_count,ann,anchored,2,2,vlm-x,30,2
""",
    )
    rep = import_table(sqlite_store, steel, f, create_items=True)
    assert (rep.annotations, rep.predictions, rep.expert_reviews, rep.items_created) == (1, 1, 1, 1)
    again = import_table(sqlite_store, steel, f)
    assert again.replaced == 2  # the annotation and the expert review, replaced in place
    data = load(sqlite_store, steel)
    assert len(data.annotations) == 2
    ann = next(a for a in data.annotations if a.tier == 1)
    assert ann.values["workers[P2].action"] == "A1"  # "walking" normalized by the field type
    assert ann.values["workers"] == ["P1", "P2"]
    d = data.d
    k = list(d["path"]).index("workers[P1].action")
    assert (d["hv"][k], d["he"][k], d["ve"][k]) == (1.0, 0.0, 0.0)  # harmful anchoring


def test_planner_matches_the_textbook_385():
    # Cochran: p = 0.5, +/- 5 points at 95% -> 384.16 -> 385
    assert plan_sample_size(rate=0.5, half_width=0.05).items == 385
    p = plan_sample_size(rate=0.04, half_width=0.01, decisions_per_item=11, icc=0.05)
    assert p.decisions == 1476 and p.design_effect == pytest.approx(1.5)
    assert p.items == 202
    with pytest.raises(Exception, match="rate must be between"):
        plan_sample_size(rate=1.5, half_width=0.1)


def test_cli_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "ws"))
    r = CliRunner()

    def ok(*args: str) -> str:
        res = r.invoke(app, list(args))
        assert res.exit_code == 0, res.output
        return res.output

    ok("init", "steel-safety")
    sim = json.loads(ok("audit", "simulate", "--items", "200", "--seed", "2", "--json"))
    assert sim["simulated"] is True
    out = json.loads(
        ok(
            "audit",
            "run",
            "--resamples",
            "100",
            "--json",
            "--gradient-model",
            sim["benchmark_version"],
        )
    )
    assert out["counts"]["items"] == 200 and out["settings"]["resamples"] == 100
    rep = tmp_path / "audit.md"
    ok("audit", "run", "--resamples", "50", "--report", str(rep))
    assert "## Provenance gradient" in rep.read_text()
    ok("audit", "run", "--resamples", "50", "--report", str(tmp_path / "audit.html"))
    assert (tmp_path / "audit.html").read_text().startswith("<!doctype html>")
    h1 = json.loads(ok("audit", "finalize", "--json"))["hash"]
    h2 = json.loads(ok("audit", "finalize", "--json"))["hash"]
    assert h1 == h2
    rec = json.loads(ok("audit", "exclude", "ann_6", "--reason", "rubber stamp", "--json"))
    assert rec["annotator"] == "ann_6" and rec["decided_at"]
    assert json.loads(ok("audit", "finalize", "--json"))["hash"] != h1
    q = json.loads(ok("audit", "queue", "--budget", "10", "--json"))
    assert q and all(x["weight"] == pytest.approx(1 / x["probability"]) for x in q)
    # user errors exit 1, usage errors 2
    assert r.invoke(app, ["audit", "exclude", "nobody", "--reason", "x"]).exit_code == 1
    assert r.invoke(app, ["audit", "exclude", "ann_1"]).exit_code == 2
    assert r.invoke(app, ["audit", "run", "--report", str(tmp_path / "a.pdf")]).exit_code == 1
    assert r.invoke(app, ["audit", "finalize", "--excluded", "maybe"]).exit_code == 2
    assert "usage" in r.invoke(app, ["audit", "--help"]).output.lower()
