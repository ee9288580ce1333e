"""Post-construction audit (seeds/002 Table 5): a declared sample allocated across probe types
(census of the smallest, the rest proportional), a fixed-seed hash order within groups, and
first-pass vs post-correction rates with intervals, on planted audit outcomes."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from truthline.cli import app
from truthline.errors import TruthlineError
from truthline.systems.physalign import compile_release, read_jsonl
from truthline.systems.physalign._post_audit import allocate, plan, report
from truthline.systems.physalign._reverify import load_answers


def test_allocation_census_then_largest_remainder():
    sizes = {"a": 5, "b": 10, "c": 100, "d": 300}
    # a and b in full (15); 85 left over c and d: quotas 21.25 and 63.75 -> 21 and 64
    assert allocate(sizes, 100, census_smallest=2) == {"a": 5, "b": 10, "c": 21, "d": 64}
    assert allocate(sizes, 415) == sizes
    with pytest.raises(TruthlineError, match="more than --n 10"):
        allocate(sizes, 10, census_smallest=2)
    with pytest.raises(TruthlineError, match=r"1\.\.415"):
        allocate(sizes, 416)


@pytest.fixture
def approved_release(gen_copy: Path, tmp_path: Path) -> Path:
    rel = gen_copy / "release"
    compile_release(gen_copy / "annotations.jsonl", rel, seed=9)
    rows = []
    for p in read_jsonl(rel / "private" / "targets.jsonl"):
        t = p["targets"]
        role = (t.get("owner") or t.get("referent"))["aliases"][0]
        read = (t.get("read") or {}).get("text")
        for who in ("a@example.com", "b@example.com"):
            rows.append(
                {
                    "probe_id": p["probe_id"],
                    "reviewer": who,
                    "role": role,
                    "read": read,
                    "submitted_at": "2026-12-01T09:00",
                }
            )
    f = tmp_path / "blind.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert load_answers(rel, f)["by_status"] == {"approved_direct": len(rows) // 2}
    return rel


def _wilson(x: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    c = (x + z * z / 2) / (n + z * z)
    h = z / (n + z * z) * math.sqrt(x * (n - x) / n + z * z / 4)
    return c - h, c + h


def test_plan_is_hash_ordered_allocated_and_declared_once(approved_release: Path):
    rel = approved_release
    private = read_jsonl(rel / "private" / "targets.jsonl")
    sizes: dict[str, list[str]] = {}
    for p in private:
        sizes.setdefault(p["probe_type"], []).append(p["probe_id"])
    smallest = min(sizes, key=lambda g: (len(sizes[g]), g))
    n = len(sizes[smallest]) + 10
    got = plan(rel, n, by=("probe_type",), seed=42, census_smallest=1)
    assert got["frame"] == len(private) and sum(got["allocation"].values()) == n
    assert got["allocation"][smallest] == len(sizes[smallest])  # the census group, in full
    for g, ids in got["selected"].items():
        # the fixed-seed hash order, computed here independently
        ranked = sorted(sizes[g], key=lambda pid: hashlib.sha256(f"42|{pid}".encode()).hexdigest())
        assert ids == ranked[: got["allocation"][g]]
    # the same declaration again is the same plan; another one is refused
    assert (
        plan(rel, n, by=("probe_type",), seed=42, census_smallest=1)["selected"] == got["selected"]
    )
    with pytest.raises(TruthlineError, match="already declared"):
        plan(rel, n, by=("probe_type",), seed=43, census_smallest=1)
    sheet = (rel / "private" / "audit_worksheet.csv").read_text().splitlines()
    assert sheet[0] == "probe_id,group,rank,first_pass,issue,reinspection" and len(sheet) == n + 1


def test_report_first_pass_and_after_correction_rates(approved_release: Path, tmp_path: Path):
    rel = approved_release
    r = CliRunner()
    res = r.invoke(
        app,
        [
            "physalign",
            "post-audit",
            "plan",
            "--release",
            str(rel),
            "--n",
            "30",
            "--by",
            "probe_type",
            "--seed",
            "5",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    sel = [pid for ids in json.loads(res.output)["selected"].values() for pid in ids]
    assert len(sel) == 30
    # planted: 4 flagged, 3 of them pass reinspection after correction, 1 unresolved
    flagged = {sel[0]: "pass", sel[7]: "pass", sel[15]: "pass", sel[29]: "unresolved"}
    rows = [
        {
            "probe_id": pid,
            "first_pass": "flag" if pid in flagged else "pass",
            "reinspection": flagged.get(pid, ""),
        }
        for pid in sel
    ]
    out = tmp_path / "outcomes.jsonl"
    out.write_text("".join(json.dumps(x) + "\n" for x in rows))
    res = r.invoke(
        app,
        [
            "physalign",
            "post-audit",
            "report",
            "--release",
            str(rel),
            "--outcomes",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    o = rep["overall"]
    assert (o["audited"], o["passed_first"], o["flagged"]) == (30, 26, 4)
    assert (o["corrected_passed"], o["unresolved"], o["accepted_after_correction"]) == (3, 1, 29)
    assert o["first_pass_rate"]["point"] == pytest.approx(26 / 30)
    assert o["after_correction_rate"]["point"] == pytest.approx(29 / 30)
    assert o["reinspection_pass_rate"]["point"] == pytest.approx(3 / 4)
    # a Wilson interval, never narrower than the plain one (parent clusters widen it)
    lo, hi = _wilson(26, 30)
    fp = o["first_pass_rate"]
    assert fp["low"] <= lo + 1e-9 and fp["high"] >= hi - 1e-9 and "wilson" in fp["method"]
    assert sum(g["audited"] for g in rep["groups"].values()) == 30
    assert sum(g["flagged"] for g in rep["groups"].values()) == 4
    assert rep["not_yet_audited"] == []
    # a probe outside the declared sample, or a flag without its reinspection, is refused
    frame = [p["probe_id"] for p in read_jsonl(rel / "private" / "targets.jsonl")]
    outside = next(p for p in frame if p not in sel)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"probe_id": outside, "first_pass": "pass"}) + "\n")
    with pytest.raises(TruthlineError, match="not in the declared audit sample"):
        report(rel, bad)
    bad.write_text(json.dumps({"probe_id": sel[0], "first_pass": "flag"}) + "\n")
    with pytest.raises(TruthlineError, match="needs pass or unresolved"):
        report(rel, bad)
    # a partial audit says what is left
    part = tmp_path / "part.jsonl"
    part.write_text("".join(json.dumps(x) + "\n" for x in rows[:10]))
    assert len(report(rel, part)["not_yet_audited"]) == 20
