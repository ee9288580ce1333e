"""Ratings files (issue 13): one type for the whole table, set cells for MASI, design
columns never taken for raters. Through the real CLI, checked against scikit-learn/nltk."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import masi_distance
from sklearn.metrics import cohen_kappa_score

from tests.stats.test_cli_store import tl
from truthline.stats import krippendorff_alpha


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def test_one_text_label_does_not_split_the_numbers(tmp_path):
    a = ["1", "2", "1", "2", "1", "2", "x", "1", "2", "2", "1", "1"]
    b = ["1", "2", "1", "1", "1", "2", "2", "2", "2", "2", "1", "1"]  # B has no text
    p = write(tmp_path, "r.csv", ["A,B", *(f"{x},{y}" for x, y in zip(a, b, strict=True))])
    out = json.loads(
        tl("stats", "agreement", str(p), "--coef", "cohen", "--ci", "none", "--json").stdout
    )
    expected = cohen_kappa_score(a, b)
    assert out["results"][0]["point"] == pytest.approx(expected, abs=1e-12)
    assert expected > 0.5


def test_masi_cells_are_sets(tmp_path):
    rows = [
        ("helmet;vest", "vest;helmet", "helmet"),
        ("helmet", "helmet", "helmet"),
        ("vest", "vest; gloves", "gloves;vest"),
        ("gloves", "gloves", "vest"),
        ("helmet;gloves", "helmet", "helmet;gloves"),
        ("vest", "vest", "vest"),
    ]
    p = write(tmp_path, "sets.csv", ["A,B,C", *(",".join(r) for r in rows)])
    out = json.loads(
        tl("stats", "agreement", str(p), "--level", "masi", "--ci", "none", "--json").stdout
    )
    data = [
        (coder, str(i), frozenset(s.strip() for s in cell.split(";")))
        for i, r in enumerate(rows)
        for coder, cell in zip("ABC", r, strict=True)
    ]
    expected = AnnotationTask(data=data, distance=masi_distance).alpha()
    assert out["results"][0]["point"] == pytest.approx(expected, abs=1e-9)
    assert out["results"][0]["level"] == "masi"
    nominal = krippendorff_alpha([list(r) for r in rows])  # the strings as labels
    assert abs(expected - nominal) > 0.05


def test_design_column_is_not_a_rater(tmp_path):
    rng = np.random.default_rng(0)
    lines = ["unit,A,B,cluster"]
    for i in range(30):
        t = int(rng.integers(1, 4))
        lines.append(f"u{i},{t},{t if rng.random() < 0.8 else 1},c{i % 10}")
    p = write(tmp_path, "d.csv", lines)
    err = tl("stats", "agreement", str(p), "--ci", "none", check=1).stderr
    assert "column 'cluster' looks like a design column" in err and "--raters" in err
    assert len(err.strip().splitlines()) == 1
    named = json.loads(
        tl("stats", "agreement", str(p), "--raters", "A,B", "--ci", "none", "--json").stdout
    )
    used = json.loads(
        tl(
            "stats", "agreement", str(p), "--cluster", "cluster", "--resamples", "50", "--json"
        ).stdout
    )
    assert named["raters"] == 2 and used["raters"] == 2
    assert named["results"][0]["point"] == pytest.approx(used["results"][0]["point"])
    assert used["results"][0]["clusters"] == 10
