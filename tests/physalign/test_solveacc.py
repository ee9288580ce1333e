"""Original-problem solving (seeds/002 App. B.4, §5.4, Table 17): the final answer is the
last ``\\boxed{...}`` (nested braces kept), compared with the reference under the declared
tolerance (numbers) or as a set of letters (choices); short-answer and calculation earn
expert points / maximum; SolveAcc weights parents equally; Δsolve splits a model's L
grounding by binary solve outcome, on a planted run whose answer is known."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from tests.physalign.protocol_view import probes, project, view
from truthline.benchmark import metrics as M
from truthline.errors import AnswerFormatError
from truthline.fields._answer import last_boxed, parse_bare
from truthline.systems.physalign._solve import (
    ExpertCredit,
    SolveProblem,
    SolveRef,
    Tolerance,
    delta_solve,
    read_credit,
    read_references,
    read_replies,
    run_solve,
    score_replies,
    score_reply,
    solve_acc,
    solve_prompt,
    solve_report,
    solve_requests,
    solve_sections,
)

RS = M.Resampling(300, 1)


@pytest.mark.parametrize(
    ("reply", "want"),
    [
        (r"so $T = \boxed{\frac{m_1 g}{2}}$", r"\frac{m_1 g}{2}"),  # nested braces
        (r"first \boxed{3} then, correcting, \boxed{4.5\,\text{N}}", r"4.5\,\text{N}"),
        (r"\boxed{2} and a truncated \boxed{\frac{1}{", "2"),  # an open box is no answer
        (r"\boxed { A }", "A"),
        (r"\boxed{\{1, 2\}}", r"\{1, 2\}"),  # escaped braces are literal
        ("The answer is 3.", None),
    ],
)
def test_the_last_complete_box_is_the_final_answer(reply, want):
    assert last_boxed(reply) == want


def test_the_boxed_grammar_fails_without_a_box():
    assert parse_bare("boxed", r"Hence \boxed{B}.") == "B"
    with pytest.raises(AnswerFormatError) as e:
        parse_bare("boxed", "B")
    assert e.value.reason == "no_boxed"


def test_numbers_under_the_declared_tolerance_and_choices_as_letter_sets():
    num = SolveRef("p1", "fill-in", "3.2", Tolerance(rel=0.01))
    got = {
        r: score_reply("m", num, r).score
        for r in (
            r"\boxed{3.21\ \mathrm{N}}",
            r"\boxed{3.3}",
            r"\boxed{\frac{16}{5}}",
            r"\boxed{-3.2}",
        )
    }
    assert list(got.values()) == [1.0, 0.0, 1.0, 0.0]
    absolute = SolveRef("p2", "fill-in", "0", Tolerance(abs=0.05))
    assert score_reply("m", absolute, r"\boxed{0.04}").correct
    assert not score_reply("m", absolute, r"\boxed{0.06}").correct
    sci = SolveRef("p3", "fill-in", "1500")
    assert score_reply("m", sci, r"\boxed{1.5\times10^{3}}").correct
    choice = SolveRef("p4", "choice", "A, C")
    for reply, ok in [
        (r"\boxed{AC}", True),
        (r"\boxed{(C) and (A)}", True),
        (r"\boxed{\text{A}}", False),  # a subset is wrong
        (r"\boxed{Option B}", False),
    ]:
        assert score_reply("m", choice, reply).correct is ok, reply
    # no box: a model failure scored 0; no reply at all: infrastructure missing
    fail = score_reply("m", choice, "I think A and C.")
    assert (fail.status, fail.score, fail.correct) == ("model_failure", 0.0, False)
    assert score_reply("m", choice, None).status == "infra_missing"


def test_partial_credit_and_solveacc_weight_parents_equally():
    refs = {
        "p1": SolveRef("p1", "choice", "B"),
        "p2": SolveRef("p2", "fill-in", "2"),
        "p3": SolveRef("p3", "calculation", "9.8", Tolerance(rel=0.01)),
        "p4": SolveRef("p4", "short-answer"),
        "p5": SolveRef("p5", "choice", "D"),
    }
    replies = [
        ("m", "p1", r"\boxed{B}"),  # 1
        ("m", "p2", "two"),  # no box: failure, 0
        ("m", "p3", r"... so $g \approx \boxed{9.81}$"),  # expert 3 of 4 points
        ("m", "p4", "a long explanation"),  # not graded yet: pending
        ("m", "p5", None),  # infrastructure missing
    ]
    credit = [ExpertCredit("m", "p3", 3, 4)]
    out = score_replies(replies, refs, credit)
    by = {o.parent: o for o in out}
    assert by["p3"].score == 0.75 and by["p3"].correct is True  # binary: the boxed answer
    assert by["p4"].status == "pending" and by["p4"].score is None
    s = solve_acc(out, RS)
    assert s.value.point == pytest.approx((1 + 0 + 0.75) / 3)
    assert (s.scored, s.failed, s.pending, s.infra_missing, s.n) == (2, 1, 1, 1, 3)
    # 3 parents (< 20): the parent jackknife-t, not a zero-width bootstrap
    assert "jackknife" in s.value.method and s.value.low < s.value.point < s.value.high
    # a grader's binary outcome overrides the boxed match
    graded = score_reply("m", refs["p3"], r"\boxed{9.81}", ExpertCredit("m", "p3", 4, 4, False))
    assert (graded.score, graded.correct) == (1.0, False)


def _planted():
    """6 parents; the model's Base grounding on L (image probes with a reading) is right on
    3/3 probes of p0, 2/3 of p1, 3/3 of p2 (solved) and 1/3 of p3, 0/3 of p4, 1/3 of p5
    (not solved); its T03-text probes (outside L) are wrong everywhere."""
    p = project()
    ps = probes(6)
    right = {"p0": 3, "p1": 2, "p2": 3, "p3": 1, "p4": 0, "p5": 1}
    owners: dict[str, str | None] = {}
    for x in ps:
        k = int(x.key.split("_")[1][1]) if x.probe_type == "T03-image" else 0
        ok = x.probe_type == "T03-image" and k <= right[x.parent]
        owners[x.key] = x.owner if ok else "E3" if x.owner != "E3" else "E1"
    reads = {x.key: x.reading for x in ps if x.reading}
    v = view(p, ps, {("m", "base"): (owners, reads)}, RS)
    refs = {f"p{k}": SolveRef(f"p{k}", "choice", "A") for k in range(6)}
    replies = [("m", f"p{k}", r"\boxed{A}" if k < 3 else r"\boxed{B}") for k in range(6)]
    return v, score_replies(replies, refs)


def test_delta_solve_on_a_planted_run():
    v, outcomes = _planted()
    rep = solve_report(outcomes, v)
    (d,) = rep.delta
    g_correct = np.mean([1, 2 / 3, 1])
    g_wrong = np.mean([1 / 3, 0, 1 / 3])
    assert d.g_correct.point == pytest.approx(g_correct)
    assert d.g_wrong.point == pytest.approx(g_wrong)
    assert d.delta.point == pytest.approx(g_correct - g_wrong)
    assert (d.parents_correct, d.parents_wrong, d.probes) == (3, 3, 18)
    assert d.delta.low < d.delta.point < d.delta.high and "jackknife" in d.delta.method
    assert rep.solve[0].value.point == 0.5
    sol, t17 = solve_sections(rep, "r1")
    assert sol.table[0]["SolveAcc"].startswith("0.500 [") and sol.n == [6]
    assert t17.table[0]["Δsolve (pp)"].startswith(f"{100 * (g_correct - g_wrong):+.1f} [")
    assert t17.n == ["3 correct / 3 wrong parents, 18 probes"]


def test_an_empty_group_leaves_delta_solve_undefined():
    _, outcomes = _planted()
    solved = [o for o in outcomes if o.correct]
    d = delta_solve(solved, {"p0": [1.0], "p1": [0.5]}, RS)
    assert np.isnan(d.delta.point) and d.parents_wrong == 0


def test_the_solve_request_is_the_original_problem_only():
    problem = SolveProblem(
        "p1",
        "choice",
        "A 2 kg block rests on a 30° incline.",
        "Find the friction force.",
        (("A", "9.8 N"), ("B", "0 N")),
    )
    text = solve_prompt(problem)
    assert "A 2 kg block" in text and "(B) 0 N" in text and "\\boxed" in text
    calc = SolveProblem("p1", "calculation", problem.text, problem.question)
    assert "worked solution" in solve_prompt(calc)
    (req,) = solve_requests(project(), [problem])
    # a fresh request: the problem alone, no probe metadata, read under the boxed grammar
    assert req.user == text and req.context == {"parent": "p1"} and req.purpose == "solve"
    assert set(req.fields) == {"final_answer"}


def test_a_solve_run_through_the_model_layer(tmp_path):
    from truthline.models._stub import StubServer
    from truthline.store import Store

    def answer(body):
        text = json.dumps(body)
        return "Work... so \\boxed{B}" if "incline" in text else "I think it is A."

    problems = [
        SolveProblem("p1", "choice", "A block on an incline.", "Which force?", (("B", "f"),)),
        SolveProblem("p2", "choice", "A pulley.", "Which mass?", (("A", "m1"),)),
    ]
    refs = {"p1": SolveRef("p1", "choice", "B"), "p2": SolveRef("p2", "choice", "A")}
    store = Store(f"sqlite:///{tmp_path / 't.db'}")
    stub = StubServer(answer=answer).start()
    try:
        replies = run_solve(store, project(), f"openai:solver@{stub.url}", problems)
    finally:
        stub.stop()
        store.close()
    assert [(m, p) for m, p, _ in replies] == [("openai:solver", "p1"), ("openai:solver", "p2")]
    out = score_replies(replies, refs)
    # p1 boxed and right; p2 without a box: a model failure scored 0
    assert [(o.status, o.score) for o in out] == [("scored", 1.0), ("model_failure", 0.0)]
    assert solve_acc(out, RS).value.point == 0.5


def test_tables_in_and_scored(tmp_path):
    def write(name, rows):
        path = tmp_path / name
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return path

    refs = read_references(
        write(
            "refs.csv",
            [
                {
                    "parent": "p1",
                    "format": "fill-in",
                    "answer": "10",
                    "rel_tol": "0.05",
                    "abs_tol": "",
                },
                {
                    "parent": "p2",
                    "format": "calculation",
                    "answer": "",
                    "rel_tol": "",
                    "abs_tol": "",
                },
            ],
        )
    )
    credit = read_credit(
        write(
            "credit.csv",
            [
                {
                    "model": "m",
                    "parent": "p2",
                    "points": "1",
                    "max_points": "5",
                    "final_correct": "no",
                }
            ],
        )
    )
    replies = read_replies(
        write(
            "replies.csv",
            [
                {"model": "m", "parent": "p1", "reply": r"\boxed{10.4}"},
                {"model": "m", "parent": "p2", "reply": "worked"},
            ],
        )
    )
    out = {o.parent: o for o in score_replies(replies, refs, credit)}
    assert out["p1"].correct and out["p2"].score == pytest.approx(0.2)
    assert out["p2"].correct is False


def test_outcomes_kept_beside_the_project_reach_the_report(tmp_path, monkeypatch):
    import shutil
    from types import SimpleNamespace

    from truthline.benchmark import _across
    from truthline.project import load_project
    from truthline.systems.physalign._solve import read_outcomes, report_sections, write_outcomes
    from truthline.workspace import templates_dir

    shutil.copytree(templates_dir() / "physics-diagrams", tmp_path / "pd")
    p = load_project(tmp_path / "pd")
    v, outcomes = _planted()
    path = write_outcomes(p, "r1", outcomes)
    assert path == tmp_path / "pd" / "solve" / "r1.jsonl"
    assert read_outcomes(p, "r1") == outcomes and read_outcomes(p, "other") is None
    monkeypatch.setattr(_across, "run_view", lambda store, project, rid, resamples=None: v)
    ctx = SimpleNamespace(project=p, run_ids=["r1", "other"], store=None, resamples=None)
    titles = [s.title for s in report_sections(ctx)]
    assert titles == [
        "Original-problem solving: SolveAcc (r1)",
        "Grounding by solve outcome, Δsolve (r1)",
    ]


def test_the_solve_command_scores_loaded_replies(tmp_path):
    """``physalign solve --replies``: scored, kept with the run, SolveAcc printed; a table
    without a required column names it."""
    from typer.testing import CliRunner

    from truthline.cli import app
    from truthline.errors import TruthlineError

    ws = tmp_path / "ws"
    runner = CliRunner()
    assert runner.invoke(app, ["--workspace", str(ws), "init", "physics-diagrams"]).exit_code == 0

    def write(name, rows):
        path = tmp_path / name
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return path

    refs = write(
        "refs.csv",
        [
            {"parent": f"p{k}", "format": "choice", "answer": "B", "rel_tol": "", "abs_tol": ""}
            for k in range(4)
        ],
    )
    replies = write(
        "replies.csv",
        [
            {"model": "m", "parent": "p0", "reply": r"so \boxed{A} no, \boxed{B}"},
            {"model": "m", "parent": "p1", "reply": r"\boxed{B}"},
            {"model": "m", "parent": "p2", "reply": r"\boxed{C}"},
            {"model": "m", "parent": "p3", "reply": "no box at all"},
        ],
    )
    base = ["--workspace", str(ws), "physalign", "solve", "--run", "r1"]
    args = [*base, "--problems", str(refs), "--references", str(refs), "--replies", str(replies)]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    (m,) = info["models"]
    # p0 and p1 right (the last box counts), p2 wrong, p3 has no box: a failure scored 0
    assert m["solve_acc"]["point"] == pytest.approx(0.5) and (m["scored"], m["failed"]) == (3, 1)
    lines = Path(info["outcomes"]).read_text(encoding="utf-8").splitlines()
    kept = [json.loads(x) for x in lines]
    assert [o["parent"] for o in kept] == ["p0", "p1", "p2", "p3"]
    bad = write("bad.csv", [{"parent_id": "p0", "format": "choice", "answer": "B"}])
    r = runner.invoke(
        app, [*base, "--problems", str(bad), "--references", str(bad), "--replies", str(replies)]
    )
    assert isinstance(r.exception, TruthlineError) and "missing column 'parent'" in str(r.exception)
