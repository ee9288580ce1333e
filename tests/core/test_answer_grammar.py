"""Answer grammars (json, label, digit): a field declares one, the one answer contract reads
replies under it, the runner's outcome follows it, and a bad declaration names its place."""

from __future__ import annotations

import copy

import pytest

from truthline.errors import AnswerFormatError, ProjectError
from truthline.fields import parse_answer, parse_bare, parse_fields, render_answer
from truthline.models import classify
from truthline.models._types import MODEL_FAILURE, PARSED, Completion
from truthline.project import validate_data

BASE = {
    "name": "grammar",
    "media": "image",
    "fields": {
        "present": {"type": "boolean", "answer": "digit"},
        "action": {"type": "single_choice", "choices": ["walking", "guard_up"], "answer": "label"},
        "action_text": {"type": "text", "answer": "label"},
        "count": {"type": "number", "integer": True},
    },
}


@pytest.fixture
def project():
    return validate_data(copy.deepcopy(BASE), "project.toml")


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", 1), ("0", 0), (" 1\n", 1), ("12", 12), ("-3", -3)],
)
def test_digit_reads_a_bare_integer(text, value):
    assert parse_bare("digit", text) == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1.", "not_a_digit"),
        ("Answer: 1", "not_a_digit"),
        ('"1"', "not_a_digit"),
        ("1 0", "not_a_digit"),
        ("yes", "not_a_digit"),
        ("١", "not_a_digit"),  # an Arabic-Indic one is not the ASCII digit asked for
        ("  ", "empty"),
        (None, "empty"),
    ],
)
def test_digit_refuses_anything_else(text, reason):
    with pytest.raises(AnswerFormatError) as exc:
        parse_bare("digit", text)
    assert exc.value.reason == reason


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("walking", "walking"),
        ("  Walking ", "walking"),
        ("Guard   up", "guard up"),
        ("guard_up", "guard_up"),
        ("B", "b"),
        ("covering face with hands", "covering face with hands"),
    ],
)
def test_label_reads_a_bare_label_case_and_space_normalised(text, value):
    assert parse_bare("label", text) == value


@pytest.mark.parametrize(
    "text", ["walking.", "Answer: walking", "**walking**", '{"action": "walking"}', "walk\ning"]
)
def test_label_refuses_punctuation_prefixes_markup_json_and_lines(text):
    with pytest.raises(AnswerFormatError) as exc:
        parse_bare("label", text)
    assert exc.value.reason == "not_a_label"


def test_one_field_is_read_in_its_grammar_several_in_json(project):
    ft = project.field_types
    assert parse_answer({"present": ft["present"]}, "1") == {"present": 1}
    with pytest.raises(AnswerFormatError):  # the paper's answer was unparseable before
        parse_answer({"present": ft["present"]}, '{"present": true}')
    both = {"present": ft["present"], "action": ft["action"]}
    assert parse_answer(both, '{"present": 1, "action": "walking"}') == {
        "present": 1,
        "action": "walking",
    }
    with pytest.raises(AnswerFormatError):
        parse_answer(both, "1")
    # a field that declares nothing keeps the JSON contract, alone or not
    assert parse_answer({"count": ft["count"]}, '{"count": 3}') == {"count": 3}
    values, errors = parse_fields({"present": ft["present"]}, {"present": 1})
    assert values == {"present": True} and not errors
    values, errors = parse_fields({"action": ft["action"]}, {"action": "guard up"})
    assert values == {"action": None} and "not a declared choice" in errors["action"]


def test_render_answer_is_the_inverse_of_parse_answer(project):
    ft = project.field_types
    for fields, values in [
        ({"present": ft["present"]}, {"present": True}),
        ({"present": ft["present"]}, {"present": False}),
        ({"action_text": ft["action_text"]}, {"action_text": "stepping over something"}),
        (
            {"present": ft["present"], "action": ft["action"]},
            {"present": True, "action": "walking"},
        ),
    ]:
        back, errors = parse_fields(fields, parse_answer(fields, render_answer(fields, values)))
        assert back == values and not errors
    assert render_answer({"present": ft["present"]}, {"present": True}) == "1"


def test_the_runner_outcome_follows_the_grammar(project):
    """A grammar failure is a model failure (scored wrong, in the denominator): the share
    of replies that parse is the benchmark's answer-grammar match rate."""
    present = {"present": project.field_types["present"]}
    replies = ["1", "0", "1.", "Answer: 1", "I'm sorry, I cannot tell", '{"present": 1}']
    out = [classify(present, Completion(text=t)) for t in replies]
    assert [o[0] for o in out] == [PARSED, PARSED] + [MODEL_FAILURE] * 4
    assert out[0][2] == {"present": True} and out[1][2] == {"present": False}
    assert [o[1] for o in out[2:]] == ["not_a_digit", "not_a_digit", "refused", "not_a_digit"]
    text = {"action_text": project.field_types["action_text"]}
    status, reason, _, _ = classify(text, Completion(text="I cannot see anyone"))
    assert (status, reason) == (MODEL_FAILURE, "refused")  # a refusal also fits a label
    assert classify(text, Completion(text="Sneaking"))[2] == {"action_text": "sneaking"}


@pytest.mark.parametrize(
    ("field", "grammar", "message"),
    [
        ("present", "digits", "unknown answer grammar 'digits' (known: json, label, digit, boxed)"),
        ("count", "label", "a number field cannot be answered as a bare label"),
        ("action", "digit", "a single_choice field cannot be answered as a bare digit"),
    ],
)
def test_a_bad_grammar_names_the_file_and_the_field(field, grammar, message):
    data = copy.deepcopy(BASE)
    data["fields"][field]["answer"] = grammar
    with pytest.raises(ProjectError) as exc:
        validate_data(data, "projects/x/project.toml")
    assert f"projects/x/project.toml: fields.{field}.answer: {message}" in str(exc.value)


def test_questions_must_name_a_prompt_variant_and_known_fields(tmp_path):
    data = copy.deepcopy(BASE)
    data["prompts"] = {"variants": {"presence": "presence.md"}}
    data["benchmark"] = {"questions": {"presence": ["present"], "other": ["nope"]}}
    with pytest.raises(ProjectError) as exc:
        validate_data(data, "project.toml")
    msg = str(exc.value)
    assert "benchmark.questions.other: no prompt variant 'other'" in msg
    assert "benchmark.questions.other.0: unknown field 'nope'" in msg
    assert "benchmark.questions.presence" not in msg
    del data["benchmark"]["questions"]["other"]
    p = validate_data(data, "project.toml")
    assert p.question_fields("presence") == ["present"] and p.question_fields(None) is None
    # the raw definition keeps the declaration: a project re-read from the store has it
    assert p.fields["present"]["answer"] == "digit"
    again = validate_data(p.model_dump(), "store")
    assert parse_answer({"present": again.field_types["present"]}, "0") == {"present": 0}
