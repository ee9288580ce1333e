"""import-table records each item's arm, so the blind gold slice keeps expert values on
blind items (a planted table: every count below follows from how it was built)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from truthline.audit import finalize, import_table
from truthline.benchmark import load_gold
from truthline.errors import TruthlineError
from truthline.store import tables

BLIND, ANCHORED = 20, 16
FIELDS = ("action", "violation", "count")


def _table(path: Path, *, arm_column: bool = True) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "field", "annotator", "arm", "value", "shown_prediction", "expert"])
        for k in range(BLIND + ANCHORED):
            blind = k < BLIND
            for who in ("A", "B") if blind else ("A",):
                for f, v in zip(FIELDS, ("walk", "false", "2"), strict=True):
                    w.writerow(
                        [
                            f"i{k}",
                            f,
                            who,
                            ("blind" if blind else "anchored") if arm_column else "",
                            v,
                            "" if blind else v,
                            "stand" if f == "action" else v,  # the expert reviews every item
                        ]
                    )
    return path


@pytest.mark.parametrize("arm_column", [True, False], ids=["arm-column", "derived"])
def test_blind_slice_keeps_expert_values_on_blind_items(
    hand_project, sqlite_store, tmp_path, arm_column
):
    rep = import_table(
        sqlite_store,
        hand_project,
        _table(tmp_path / "t.csv", arm_column=arm_column),
        create_items=True,
    )
    assert rep.arms_assigned == BLIND + ANCHORED
    with sqlite_store.begin() as conn:
        arms = [r.arm for r in conn.execute(tables.arm_assignments.select())]
    assert sorted(arms) == ["anchored"] * ANCHORED + ["blind"] * BLIND
    finalize(sqlite_store, hand_project)
    gold = load_gold(sqlite_store, hand_project.name, slice_="blind")
    expert = [p for it in gold.items for p in it.provenance.values() if p == "expert"]
    # every field of every blind item came from the expert: 20 items x 3 fields
    assert len(expert) == BLIND * len(FIELDS)
    assert len(gold.items) == BLIND
    # re-importing the same table assigns nothing new and changes nothing
    again = import_table(
        sqlite_store, hand_project, _table(tmp_path / "t.csv", arm_column=arm_column)
    )
    assert again.arms_assigned == 0


def test_arm_clash_with_an_existing_assignment_is_an_error(hand_project, sqlite_store, tmp_path):
    import_table(sqlite_store, hand_project, _table(tmp_path / "t.csv"), create_items=True)
    flipped = tmp_path / "flipped.csv"
    flipped.write_text(
        "item,field,annotator,arm,value\ni0,action,C,anchored,walk\n", encoding="utf-8"
    )
    with pytest.raises(TruthlineError, match=r"item 'i0' is labelled in the anchored arm"):
        import_table(sqlite_store, hand_project, flipped)
