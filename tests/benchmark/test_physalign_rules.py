"""The benchmark's nearest-region rule reads the frozen ``nearest-region/v1`` geometry off
an item's typed public inputs; on a generated PhysAlign release it must agree, item by item,
with the release-time H / nearest alias that truthline.systems.physalign froze from the public
probe records (PHYSALIGN.md §9). Plus the geometry on hand-made cases."""

from __future__ import annotations

import csv

import pytest

from truthline.models._prompt import typed_meta
from truthline.systems.physalign import (
    compile_release,
    generate,
    nearest_region,
    write_import_tables,
)


def test_rule_on_item_inputs_agrees_with_the_release_time_rule(tmp_path):
    generate(8, 5, tmp_path / "gen")
    compile_release(tmp_path / "gen" / "annotations.jsonl", tmp_path / "rel", seed=2)
    t = write_import_tables(tmp_path / "rel", unverified=True)
    with open(t["metadata"], encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    in_h = 0
    for r in rows:
        got = nearest_region(typed_meta(r))
        want_h = r["in_H"] == "1"
        in_h += want_h
        assert got.applicable == want_h, r["key"]
        if want_h:
            assert got.alias == r["nearest_alias"], r["key"]
    assert in_h > 0


@pytest.mark.parametrize(
    ("meta", "alias", "applicable"),
    [
        # anchor centre (50, 10): E1's box contains it (distance 0)
        (
            {
                "anchor": {"bbox": [45, 5, 10, 10]},
                "candidates": {"E1": {"bbox": [40, 0, 20, 20]}, "E2": {"bbox": [100, 0, 10, 10]}},
            },
            "E1",
            True,
        ),
        # a polyline passing 3 px from the centre beats a box 10 px away
        (
            {
                "anchor": {"bbox": [45, 5, 10, 10]},
                "candidates": {
                    "E1": {"bbox": [60, 0, 10, 10]},
                    "E2": {"polyline": [[0, 13], [100, 13]]},
                },
            },
            "E2",
            True,
        ),
        # equal distances: the rule answers (first listed) but is not applicable
        (
            {
                "anchor": {"bbox": [45, 5, 10, 10]},
                "candidates": {"E1": {"bbox": [60, 0, 10, 20]}, "E2": {"bbox": [30, 0, 10, 20]}},
            },
            "E1",
            False,
        ),
        # a text anchor: nothing to measure
        (
            {
                "anchor": {"kind": "text_span", "start": 0, "end": 1, "text": "m"},
                "candidates": {"E1": {"bbox": [0, 0, 1, 1]}, "E2": {"bbox": [5, 5, 1, 1]}},
            },
            None,
            False,
        ),
    ],
)
def test_geometry_by_hand(meta, alias, applicable):
    got = nearest_region(meta)
    assert (got.alias, got.applicable) == (alias, applicable)


def test_malformed_candidates_raise_so_the_item_is_an_error():
    with pytest.raises(ValueError, match="candidates"):
        nearest_region({"anchor": {"bbox": [0, 0, 1, 1]}, "candidates": "E1:0,0"})
