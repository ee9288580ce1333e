"""SynDORBench's questions as the paper asks them, and how the paper grid's count is reached
(frames x questions per frame by condition; ``_syndor``'s module docstring)."""

from __future__ import annotations

import pandas as pd
import pytest

from truthline.errors import TruthlineError
from truthline.models import classify
from truthline.models._prompt import render_prompt
from truthline.models._types import MODEL_FAILURE, PARSED, Completion
from truthline.project import load_project
from truthline.systems.syndorbench import _syndor as sd
from truthline.systems.syndorbench.envs.dori_person import (
    ABSENT,
    ACTION_PROMPT,
    GRIDS,
    PRESENCE_PROMPT,
)
from truthline.workspace import templates_dir


@pytest.fixture(scope="module")
def project():
    return load_project(templates_dir() / sd.PROJECT)


def _paper_renders(with_absent: bool = True) -> pd.DataFrame:
    r = pd.DataFrame(list(GRIDS["paper"]))
    r["present"] = r["pose"] != ABSENT
    return r if with_absent else r[r["present"]]


def test_the_paper_grid_count_factor_by_factor(project):
    renders = _paper_renders()
    assert len(renders) == 3 * 8 * 4 * 3 * 9 * 4 == 10_368
    items = sd.condition_items(renders)
    assert items["condition"].value_counts().to_dict() == {
        "day": 3 * 8 * 4 * 3 * 9 * 3,  # morning, noon, evening: one item each
        "night": 2_592,  # midnight: the raw camera frame ...
        "night-vision": 2_592,  # ... and its night-vision ISP image
    }
    pairs = sd.question_pairs(items, project)
    by = pairs.groupby(["question", "condition"]).size().to_dict()
    assert by == {
        ("presence", "day"): 7_776,  # every item
        ("presence", "night"): 2_592,
        ("presence", "night-vision"): 2_592,
        ("action", "day"): 6_912,  # 8 of 9 poses hold a person
        ("action", "night"): 2_304,
        ("action", "night-vision"): 2_304,
    }
    assert len(pairs) == 24_480
    grammar = pairs.groupby("question")["grammar"].unique().to_dict()
    assert {q: list(g) for q, g in grammar.items()} == {"presence": ["digit"], "action": ["label"]}
    # the paper's single-human frames (no absent pose): 11,520 items x 2 questions
    single = sd.question_pairs(sd.condition_items(_paper_renders(with_absent=False)), project)
    assert len(single) == 11_520 * 2 == 23_040
    # truthline's closed action question (beyond the paper) on top: one more per person item
    closed = sd.question_pairs(items, project, (*sd.PAPER_QUESTIONS, "action_closed"))
    assert len(closed) == 24_480 + 11_520


def test_the_questions_are_the_papers_prompts_answered_bare(project):
    item = {"id": 1, "key": "k", "meta": {}, "media": ["frame.png"]}
    assert render_prompt(project, item, template="presence")[1] == PRESENCE_PROMPT
    assert render_prompt(project, item, template="action")[1] == ACTION_PROMPT
    closed = render_prompt(project, item, template="action_closed")[1]
    assert "guard_up" in closed and closed.endswith(ACTION_PROMPT.split(". ", 1)[1])
    ft = project.field_types

    def ask(q: str, reply: str):
        fields = {f: ft[f] for f in project.question_fields(q)}
        return classify(fields, Completion(text=reply))

    assert ask("presence", "1")[:3] == (PARSED, None, {"present": True})
    assert ask("presence", "0")[2] == {"present": False}
    assert ask("presence", "1.")[:2] == (MODEL_FAILURE, "not_a_digit")
    assert ask("action", "Covering face with hands")[2] == {
        "action_text": "covering face with hands"
    }
    assert ask("action", "Answer: walking")[:2] == (MODEL_FAILURE, "not_a_label")
    assert ask("action_closed", "GUARD_UP")[2] == {"action": "guard_up"}


def test_gold_and_questions_agree_item_by_item(project):
    """The action is asked exactly where gold has it (a person in the scene), presence on
    every item whether or not the person can be made out."""
    items = pd.DataFrame(
        {
            "key": ["a-day", "a-night", "b-day"],
            "condition": ["day", "night", "day"],
            "present": [True, True, False],
            "pose": ["kicking", "kicking", ABSENT],
            "discernible": [True, False, False],
        }
    )
    pairs = sd.question_pairs(items, project)
    assert sorted(zip(pairs["key"], pairs["question"], strict=True)) == [
        ("a-day", "action"),
        ("a-day", "presence"),
        ("a-night", "action"),
        ("a-night", "presence"),
        ("b-day", "presence"),
    ]
    with pytest.raises(TruthlineError, match="not a declared question"):
        sd.question_pairs(items, project, ("hpc",))
