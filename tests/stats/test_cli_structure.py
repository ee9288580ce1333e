"""`truthline stats structure`: disagreements by taxonomy group; table and --json agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.stats.test_cli_store import tl
from truthline.stats import disagreement_structure

ROWS = [["a1", "a1", "a2"], ["a1", "b1", "b1"], ["b1", "b2", "b2"], ["a2", "a2", "a2"]]
GROUPS = {"a1": "A", "a2": "A", "b1": "B", "b2": "B"}


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    p = tmp_path / "r.csv"
    p.write_text("unit,r1,r2,r3\n" + "".join(f"u{i},{','.join(r)}\n" for i, r in enumerate(ROWS)))
    return p


def test_structure_json_equals_library_and_table_shows_share(csv, tmp_path):
    groups = tmp_path / "groups.csv"
    groups.write_text("category,group\na1,A\na2,A\nb1,B\n")
    out = json.loads(
        tl(
            "stats", "structure", str(csv), "--groups", str(groups), "--group", "b2=B", "--json"
        ).stdout
    )
    lib = disagreement_structure(ROWS, GROUPS)
    # 12 within-unit pairs; disagreeing: a1|a2 x2, a1|b1 x2, b1|b2 x2 -> 6, 4 inside a group
    assert out["disagreements"] == lib["disagreements"] == 6
    assert out["within_group"] == lib["within_group"] == 4
    assert out["share_within_group"] == pytest.approx(4 / 6)
    assert out["within_group_share_by_group"] == {"A": 0.5, "B": 0.5}
    table = tl(
        "stats",
        "structure",
        str(csv),
        "--group",
        "a1=A",
        "--group",
        "a2=A",
        "--group",
        "b1=B",
        "--group",
        "b2=B",
    ).stdout
    assert "6 of 12 within-unit rater pairs disagree; 4 (0.667) fall inside one group" in table


def test_structure_errors_name_the_problem(csv):
    err = tl("stats", "structure", str(csv), check=1).stderr
    assert "--groups FILE" in err
    err = tl("stats", "structure", str(csv), "--group", "a1=A", check=1).stderr
    assert "no taxonomy group for categories" in err and "b1" in err
    err = tl("stats", "structure", str(csv), "--group", "a1", check=1).stderr
    assert "CATEGORY=GROUP" in err


def test_structure_on_the_store(tmp_path):
    from tests.stats.test_cli_store import _seed_store
    from truthline.workspace import Workspace

    ws = Workspace.from_env(tmp_path / "ws")
    _seed_store(ws)
    where = ["--project", "steel-safety", "--field", "workers.helmet", "--arm", "blind"]
    err = tl("stats", "structure", *where, ws=ws.root, check=1).stderr
    assert "field that uses a taxonomy" in err  # helmet has no taxonomy
    out = json.loads(
        tl(
            "stats",
            "structure",
            *where,
            "--group",
            "worn=ok",
            "--group",
            "not_worn=bad",
            "--json",
            ws=ws.root,
        ).stdout
    )
    # aligned workers: only clip2[P1] disagrees (worn vs not_worn), across groups
    assert out["disagreements"] == 1 and out["within_group"] == 0
    assert out["source"] == "steel-safety:workers.helmet arm=blind"
