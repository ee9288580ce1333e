"""Field types: normalization and agreement tables (METRICS.md §1)."""

from __future__ import annotations

import pytest

from truthline.errors import FieldValueError
from truthline.fields import masi_distance


def test_single_choice_normalizes_case_names_and_codes(steel_project):
    action = steel_project.field("workers.action")
    assert action.normalize("b1") == "B1"
    assert action.normalize("operating equipment") == "B1"
    assert action.normalize("B1 operating equipment") == "B1"
    assert action.normalize(["F1"]) == "F1"
    assert action.normalize("") is None
    with pytest.raises(FieldValueError, match=r"workers\.action: 'Z9' is not a declared choice"):
        action.normalize("Z9")


@pytest.mark.parametrize(
    ("x", "y", "agree", "credit"),
    [
        ("B1", "B1", True, 1.0),
        ("B1", "B7", False, 0.5),  # same group B: declared group credit 0.5 (DWA)
        ("B1", "A1", False, 0.0),
        ("C1", "C2", False, 0.5),  # default_group_credit
        (None, "B1", False, 0.0),
    ],
)
def test_single_choice_agree_and_group_credit(steel_project, x, y, agree, credit):
    action = steel_project.field("workers.action")
    assert action.agree(x, y) is agree
    assert action.credit(x, y) == credit


def test_cannot_tell_is_an_explicit_choice(steel_project):
    helmet = steel_project.field("workers.helmet")
    assert helmet.normalize("cannot_tell") == "cannot_tell"
    assert "cannot_tell" in helmet.categories()
    assert steel_project.field("workers.posture").categories() == [
        "standing",
        "bending",
        "crouching",
        "kneeling",
        "lying",
        "climbing",
    ]


def test_ordered_choice_is_ordinal_with_rank_distance(steel_project):
    occ = steel_project.field("workers.occlusion")
    assert occ.level == "ordinal"
    assert occ.distance("none", "heavy") == 2.0
    assert steel_project.field("workers.helmet").level == "nominal"


@pytest.mark.parametrize(
    ("x", "y", "agree", "jaccard"),
    [
        (["elevated", "crane_zone"], "crane_zone, elevated", True, 1.0),
        (["elevated"], ["elevated", "crane_zone"], False, 0.5),
        (["walkway"], ["elevated"], False, 0.0),
        ([], [], True, 1.0),
    ],
)
def test_multi_choice_sets(steel_project, x, y, agree, jaccard):
    f = steel_project.field("workers.spatial_context")
    a, b = f.normalize(x), f.normalize(y)
    assert f.agree(a, b) is agree
    assert f.credit(a, b) == pytest.approx(jaccard)
    assert f.level == "masi"


def test_masi_distance_published_values():
    # Passonneau (2006): identical 0; subset -> 1 - J*2/3; overlap -> 1 - J/3; disjoint -> 1.
    assert masi_distance({"a"}, {"a"}) == 0
    assert masi_distance({"a"}, {"a", "b"}) == pytest.approx(1 - 0.5 * 2 / 3)
    assert masi_distance({"a", "b"}, {"b", "c"}) == pytest.approx(1 - (1 / 3) * (1 / 3))
    assert masi_distance({"a"}, {"b"}) == 1.0


@pytest.mark.parametrize(
    ("raw", "norm"),
    [(True, True), ("yes", True), ("False", False), (0, False), ("", None), (None, None)],
)
def test_boolean_normalize(steel_project, raw, norm):
    assert steel_project.field("workers.safety_violation").normalize(raw) == norm


def test_boolean_rejects_other_values(steel_project):
    with pytest.raises(FieldValueError, match="expected true or false"):
        steel_project.field("crane_active").normalize("maybe")


def test_number_tolerance_units_and_bounds():
    from truthline.fields import Number, NumberSpec

    tape = Number("tape", NumberSpec(type="number", unit="in", tolerance=0.125))
    assert tape.normalize("12.5 in") == 12.5
    assert tape.normalize("12.5") == 12.5
    assert tape.agree(12.5, 12.625) is True  # exactly at the 1/8 inch tolerance
    assert tape.agree(12.5, 12.626) is False
    with pytest.raises(FieldValueError, match="unit 'in'"):
        tape.normalize("31 cm")  # never converts units
    count = Number("worker_count", NumberSpec(type="number", integer=True, min=0))
    assert count.normalize("3") == 3
    with pytest.raises(FieldValueError, match="whole number"):
        count.normalize(2.5)
    with pytest.raises(FieldValueError, match="below the declared minimum"):
        count.normalize(-1)
    with pytest.raises(FieldValueError):
        count.normalize(True)


def test_reading_declared_normalizations_only():
    from truthline.fields import Reading, ReadingSpec

    plain = Reading("plate", ReadingSpec(type="reading"))
    assert plain.normalize("  AB 12 ") == "AB 12"
    assert plain.agree(plain.normalize("ab12"), plain.normalize("AB12")) is False
    loose = Reading("mass", ReadingSpec(type="reading", normalizations=["case", "unit_spacing"]))
    assert loose.agree(loose.normalize("2 kg"), loose.normalize("2KG")) is True
    assert loose.agree(loose.normalize("2 kg"), loose.normalize("2000 g")) is False


def test_region_iou_and_label(steel_project):
    box = steel_project.field("workers.box")
    a = box.normalize([{"x": 10, "y": 10, "width": 20, "height": 40}])
    assert a[0]["label"] == "worker"  # the only declared label is implied
    b = box.normalize([{"x": 12, "y": 10, "width": 20, "height": 40, "label": "worker"}])
    far = box.normalize([{"x": 50, "y": 50, "width": 20, "height": 40}])
    assert box.agree(a, b) is True  # IoU 0.82 >= 0.5
    assert box.agree(a, far) is False
    assert box.credit(a, a + far) == pytest.approx(2 / 3)
    with pytest.raises(FieldValueError, match="label 'car'"):
        box.normalize([{"x": 1, "y": 1, "width": 1, "height": 1, "label": "car"}])
    for bad in ("nan", "inf", float("-inf")):  # "nan" reads as a float: refused, not kept
        with pytest.raises(FieldValueError, match="finite"):
            box.normalize([{"x": bad, "y": 1, "width": 1, "height": 1}])


def test_entity_list_matches_by_key_then_compares_per_field(steel_project):
    workers = steel_project.field("workers")
    h = workers.normalize(
        [
            {"worker_id": "P1", "action": "B1", "helmet": "worn"},
            {"worker_id": "P2", "action": "A1", "helmet": "worn"},
        ]
    )
    v = workers.normalize(
        [
            {"worker_id": " P2 ", "action": "A1", "helmet": "worn"},  # key normalized: spaces
            {"worker_id": "P1", "action": "B7", "helmet": "worn"},
        ]
    )
    decisions = {p: (a, b) for p, a, b in workers.decisions(h, v)}
    assert decisions["workers[P1].action"] == ("B1", "B7")
    assert decisions["workers[P2].helmet"] == ("worn", "worn")
    assert workers.agree(h, v) is False
    assert (
        workers.agree(
            h,
            workers.normalize(
                [
                    {"worker_id": "P2", "action": "A1", "helmet": "worn"},
                    {"worker_id": "P1", "action": "B1", "helmet": "worn"},
                ]
            ),
        )
        is True
    )
    with pytest.raises(FieldValueError, match="duplicate key"):
        workers.normalize([{"worker_id": "P1"}, {"worker_id": "P 1"}])
    with pytest.raises(FieldValueError, match=r"workers\.action"):
        workers.normalize([{"worker_id": "P1", "action": "nope"}])


def test_entity_list_matches_by_box_iou_without_key():
    from truthline.project import validate_data

    p = validate_data(
        {
            "name": "boxes",
            "media": "image",
            "fields": {
                "people": {
                    "type": "entity_list",
                    "match_region": "box",
                    "fields": {
                        "box": {"type": "region"},
                        "helmet": {"type": "boolean"},
                    },
                }
            },
        },
        "inline",
    )
    people = p.field("people")
    x = people.normalize(
        [
            {"box": [{"x": 0, "y": 0, "width": 10, "height": 10}], "helmet": True},
            {"box": [{"x": 50, "y": 50, "width": 10, "height": 10}], "helmet": False},
        ]
    )
    y = people.normalize(
        [
            {"box": [{"x": 51, "y": 50, "width": 10, "height": 10}], "helmet": False},
            {"box": [{"x": 1, "y": 0, "width": 10, "height": 10}], "helmet": True},
        ]
    )
    pairs = sorted(people.align(x, y))
    assert pairs == [(0, 1), (1, 0)]
    assert people.agree(x, y) is True
    z = people.normalize([{"box": [{"x": 80, "y": 80, "width": 5, "height": 5}], "helmet": True}])
    assert sorted(people.align(x, z), key=str) == sorted([(0, None), (1, None), (None, 0)], key=str)


def test_text_is_verbatim_and_not_in_alpha(steel_project):
    desc = steel_project.field("scene_description")
    assert desc.normalize("  two workers  ") == "two workers"
    assert desc.level is None
