"""The scoring contract of PHYSALIGN.md §6 on the shipped physics-diagrams template: the
answer forms accepted and rejected (§6.2), fields scored independently and readings equal
under the declared normal form N (§6.3), with the spec's equal and still-different pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from truthline.benchmark import score_answer
from truthline.benchmark._scoring import READ_RULES, read_normal_form
from truthline.errors import AnswerFormatError
from truthline.fields._answer import parse_json_answer
from truthline.project import load_project

PROJECT = load_project(
    Path(__file__).resolve().parents[2] / "projects/physics-diagrams/project.toml"
)

EQUAL = [
    ("m₁", "m_1"),
    ("m_{1}", "m_1"),
    ("v²", "v^{2}"),
    ("−3 N", "-3 N"),
    ("2kg", "2 kg"),
    ("F=10N", "F = 10 N"),
    ("$m_1$", "m_1"),
    (r"\(m_1\)", "m_1"),
    ("  m_1 ", "m_1"),
]
DIFFERENT = [
    ("M", "m"),
    ("Kg", "kg"),
    ("m1", "m_1"),
    ("v_2", "v^2"),
    ("2000 g", "2 kg"),
    ("m'", "m"),
    ("-3", "3"),
    ("12", "21"),
]


@pytest.mark.parametrize(("a", "b"), EQUAL)
def test_read_normal_form_equates_the_declared_variants(a, b):
    assert read_normal_form(a, READ_RULES) == read_normal_form(b, READ_RULES)


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_read_normal_form_keeps_significant_differences(a, b):
    assert read_normal_form(a, READ_RULES) != read_normal_form(b, READ_RULES)


def _score(values):
    gold = {"read": "m_1", "owner": "E2"}
    out = score_answer(PROJECT, gold, {}, values, ["read", "owner"])
    return {d["field"]: d["correct"] for d in out["decisions"]}


def test_fields_are_scored_on_their_own_and_readings_under_n():
    assert PROJECT.benchmark.read_rules == list(READ_RULES)
    assert _score({"read": "m_{1}", "owner": "E2"}) == {"read": True, "owner": True}
    assert _score({"read": "$m_1$", "owner": None}) == {"read": True, "owner": False}
    assert _score({"read": None, "owner": "E2"}) == {"read": False, "owner": True}
    assert _score({"read": "m1", "owner": "E3"}) == {"read": False, "owner": False}
    assert _score(None) == {"read": False, "owner": False}  # a model failure


@pytest.mark.parametrize(
    "text",
    ['{"read": "m_1"}', '```json\n{"read": "m_1"}\n```', '```\n{"read": "m_1"}\n```'],
)
def test_forms_a_and_b_parse(text):
    assert parse_json_answer(text) == {"read": "m_1"}


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a": {"b": 1, "b": 2}}',
        '{"a": 1}{"b": 2}',
        '{"a": 1}\n{"b": 2}',
        '```json\n{"a": 1}\n```\n```json\n{"a": 1}\n```',
        '```json\n{"a": 1}\n{"b": 2}\n```',
        '{"a": 1}\n```json\n{"a": 1}\n```',
        "[1]",
        'The answer is {"a": 1}.',
        "",
        '{"a": 1',
        '{"a": NaN}',
        '{"a": -Infinity}',
        '```python\n{"a": 1}\n```',
    ],
)
def test_rejected_forms(text):
    with pytest.raises(AnswerFormatError):
        parse_json_answer(text)
