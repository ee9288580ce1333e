"""Original-problem solving (seeds/002 §5.1, §5.4, App. B.4, D.3, Table 17; METRICS.md §9):
SolveAcc per model and Δsolve, grounding split by solve-correct vs solve-wrong parents.

A solve run asks each parent problem as it stands (statement, question, options, images,
a fresh context, no probe metadata; :func:`solve_prompt`). Scoring follows the question
format. Choice and fill-in are scripted: the final answer is the last ``\\boxed{...}`` of
the reply (``last_boxed``, the ``boxed`` answer grammar of ``truthline.fields``). It is
compared with the reference under the problem's declared tolerance (numbers: relative or
absolute; choices: set of letters) and earns 1 or 0; a reply without a box is a model
failure (0). Short-answer and calculation replies are expert-graded: points awarded / the
problem's maximum, imported from a table. An ungraded one is pending (counted, never 0).
A missing reply (infrastructure) leaves the denominator, and the coverage says so.

SolveAcc is the mean of s_p over the scored parents, each parent equal, with a parent
interval (the §2 jackknife-t fallback under 20 parents). Δsolve uses the binary
final-answer correctness, never s_p. Ḡ is a model's Base grounding averaged within each
parent over its probes in L, then over the parents of each group, not type-balanced.
Δsolve = Ḡ_correct − Ḡ_wrong on the parents with a binary outcome and at least one L
probe. One paired parent draw gives its CI. It is descriptive and undefined for an empty
group.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from truthline.benchmark import _metrics as M
from truthline.errors import TruthlineError
from truthline.fields._answer import last_boxed
from truthline.stats import CI, design_ci, fmt_ci

if TYPE_CHECKING:
    from truthline.benchmark._registry import RunScored
    from truthline.report import Section

SCRIPTED = ("choice", "fill-in")
"""Formats scored by script on the boxed final answer (1 or 0)."""
EXPERT = ("short-answer", "calculation")
"""Formats scored by expert partial credit (points / maximum)."""
FORMATS = SCRIPTED + EXPERT

SCORED, FAILED, PENDING, MISSING = "scored", "model_failure", "pending", "infra_missing"


@dataclass(frozen=True)
class Tolerance:
    """How close a numeric final answer must be: ``|a - r| <= max(abs, rel * |r|)``."""

    rel: float = 0.0
    abs: float = 0.0

    def accepts(self, answer: float, reference: float) -> bool:
        return abs(answer - reference) <= max(self.abs, self.rel * abs(reference), 1e-12)


@dataclass(frozen=True)
class SolveRef:
    """A parent problem's reference: its format, final answer (None: expert-graded with
    no scriptable final answer) and tolerance."""

    parent: str
    format: str
    answer: str | None = None
    tolerance: Tolerance = Tolerance()

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise TruthlineError(
                f"problem {self.parent}: format {self.format!r} is none of {', '.join(FORMATS)}"
            )


@dataclass(frozen=True)
class ExpertCredit:
    """Expert grading of one model's solution: points awarded of the problem's maximum,
    and the binary final-answer outcome where the grader recorded one."""

    model: str
    parent: str
    points: float
    max_points: float
    final_correct: bool | None = None

    @property
    def share(self) -> float:
        return self.points / self.max_points


@dataclass(frozen=True)
class SolveOutcome:
    """One model on one parent: ``status`` (scored, model_failure, pending,
    infra_missing), the normalized credit ``score`` (s_p; None unless scored or failed),
    the binary final-answer outcome ``correct`` (None when unknown) and what was
    extracted."""

    model: str
    parent: str
    format: str
    status: str
    score: float | None
    correct: bool | None
    extracted: str | None = None


# -- comparing final answers -------------------------------------------------------------
_WRAPPERS = re.compile(r"\\(?:text|mathrm|mathbf|textbf|operatorname)\s*\{([^{}]*)\}")
_SPACING = re.compile(r"\\[,;:!]|\\quad|\\qquad|~|\$")
_FRAC = re.compile(r"^\\d?frac\s*\{([^{}]+)\}\s*\{([^{}]+)\}")
_SCI = re.compile(r"\s*(?:\\times|\\cdot|x|×)\s*10\s*\^\s*\{?\s*([-+−]?\d+)\s*\}?")
_NUM = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_CHOICE_WORDS = re.compile(r"\b(?:options?|choices?|answers?|and)\b", re.I)


def _clean(s: str) -> str:
    """LaTeX wrappers and spacing dropped, true minus to ``-``, whitespace collapsed."""
    prev = None
    while prev != s:
        prev, s = s, _WRAPPERS.sub(r"\1", s)
    s = _SPACING.sub(" ", s).replace("−", "-").replace("\\left", "").replace("\\right", "")
    return " ".join(s.split()).strip(" .")


def parse_number(s: str) -> float | None:
    """A number at the start of a final answer (``3.2 N``, ``-\\frac{1}{2}``,
    ``1.5\\times10^{3}``, ``2/3``), None when it does not start with one."""
    t = _clean(s)
    sign = -1.0 if t.startswith("-") else 1.0
    body = t[1:].lstrip() if t[:1] in "-+" else t
    f = _FRAC.match(body)
    if f:
        a, b = parse_number(f.group(1)), parse_number(f.group(2))
        return None if a is None or not b else sign * a / b
    m = _NUM.match(body)
    if not m:
        return None
    value = float(m.group(0))
    rest = body[m.end() :]
    if rest.startswith("/"):
        den = _NUM.match(rest[1:].lstrip())
        return sign * value / float(den.group(0)) if den and float(den.group(0)) else None
    sci = _SCI.match(rest)
    if sci:
        value *= 10.0 ** int(sci.group(1).replace("−", "-"))
    return sign * value


def choice_set(s: str) -> frozenset[str] | None:
    """The option letters of a choice answer (``B``, ``(A)``, ``A, C``, ``AC``, ``A and
    C``, ``\\text{D}``), None when it is not only letters."""
    t = _CHOICE_WORDS.sub(" ", _clean(s))
    t = re.sub(r"[(),;:/&\[\]]", " ", t)
    tokens = t.split()
    if not tokens or not all(re.fullmatch(r"[A-Za-z]+", x) for x in tokens):
        return None
    letters = "".join(tokens)
    if len(tokens) > 1 and any(len(x) > 1 for x in tokens):
        return None  # words, not option letters
    if not letters.isupper() and len(letters) > 1:
        return None
    return frozenset(letters.upper())


def answers_match(answer: str, ref: SolveRef) -> bool:
    """Whether a final answer equals the reference under its format and tolerance."""
    if ref.answer is None:
        return False
    if ref.format == "choice":
        a, r = choice_set(answer), choice_set(ref.answer)
        return a is not None and a == r
    a_num, r_num = parse_number(answer), parse_number(ref.answer)
    if r_num is not None:
        return a_num is not None and ref.tolerance.accepts(a_num, r_num)
    return (
        _clean(answer).replace(" ", "").casefold() == _clean(ref.answer).replace(" ", "").casefold()
    )


def score_reply(
    model: str, ref: SolveRef, reply: str | None, credit: ExpertCredit | None = None
) -> SolveOutcome:
    """One reply scored by its problem's rule (App. B.4); ``reply`` None = no answer came
    back (infrastructure missing)."""
    if reply is None:
        return SolveOutcome(model, ref.parent, ref.format, MISSING, None, None)
    boxed = last_boxed(reply)
    match = boxed is not None and answers_match(boxed, ref)
    if ref.format in SCRIPTED:
        if boxed is None:
            return SolveOutcome(model, ref.parent, ref.format, FAILED, 0.0, False)
        return SolveOutcome(model, ref.parent, ref.format, SCORED, float(match), match, boxed)
    binary: bool | None = match if ref.answer is not None else None
    if credit is not None and credit.final_correct is not None:
        binary = credit.final_correct
    if credit is None:
        return SolveOutcome(model, ref.parent, ref.format, PENDING, None, binary, boxed)
    return SolveOutcome(model, ref.parent, ref.format, SCORED, credit.share, binary, boxed)


def score_replies(
    replies: Iterable[tuple[str, str, str | None]],
    refs: Mapping[str, SolveRef],
    credit: Iterable[ExpertCredit] = (),
) -> list[SolveOutcome]:
    """Every (model, parent, reply) scored; a parent without a reference is an error."""
    grades = {(c.model, c.parent): c for c in credit}
    out = []
    for model, parent, reply in replies:
        if parent not in refs:
            raise TruthlineError(f"solve reply of {model} for {parent}: no reference for it")
        out.append(score_reply(model, refs[parent], reply, grades.get((model, parent))))
    return out


# -- SolveAcc and Δsolve -------------------------------------------------------------------
@dataclass(frozen=True)
class SolveAcc:
    """SolveAcc of one model with its parent interval and the coverage counts."""

    model: str
    value: CI
    scored: int
    failed: int
    pending: int
    infra_missing: int

    @property
    def n(self) -> int:
        return self.scored + self.failed


@dataclass(frozen=True)
class DeltaSolve:
    """Table 17 for one model: Ḡ on solve-correct and solve-wrong parents and Δsolve,
    one paired parent draw for all three; counts of parents and L probes used."""

    model: str
    g_correct: CI
    g_wrong: CI
    delta: CI
    parents_correct: int
    parents_wrong: int
    probes: int


@dataclass(frozen=True)
class SolveReport:
    """SolveAcc and Table 17 of every model with solve outcomes."""

    solve: list[SolveAcc]
    delta: list[DeltaSolve] = field(default_factory=list)


def _nan_ci(point: float, rs: M.Resampling, n: int) -> CI:
    return CI(point, math.nan, math.nan, 0, rs.seed, level=rs.level, n=n)


def solve_acc(outcomes: Sequence[SolveOutcome], rs: M.Resampling = M.Resampling()) -> SolveAcc:
    """One model's SolveAcc: mean s_p over its scored and failed parents, each parent
    equal, parent interval (jackknife-t under 20 parents, Wilson floor when binary)."""
    models = {o.model for o in outcomes}
    if len(models) != 1:
        raise ValueError(f"solve_acc takes one model's outcomes, got {sorted(models)}")
    got = [o for o in outcomes if o.status in (SCORED, FAILED) and o.score is not None]
    count = {s: sum(o.status == s for o in outcomes) for s in (SCORED, FAILED, PENDING, MISSING)}
    if got:
        parents = [o.parent for o in got]
        value = M.accuracy(
            [float(o.score or 0.0) for o in got], units=parents, clusters=parents, rs=rs
        )
    else:
        value = _nan_ci(math.nan, rs, 0)
    return SolveAcc(
        next(iter(models)), value, count[SCORED], count[FAILED], count[PENDING], count[MISSING]
    )


def delta_solve(
    outcomes: Sequence[SolveOutcome],
    grounding: Mapping[str, Sequence[float]],
    rs: M.Resampling = M.Resampling(),
) -> DeltaSolve:
    """Δsolve of one model from its solve outcomes and its L grounding per parent (G of
    each L probe): parents with a binary outcome and at least one L probe."""
    model = outcomes[0].model if outcomes else ""
    rows = [
        (o.parent, bool(o.correct), float(np.mean(grounding[o.parent])), len(grounding[o.parent]))
        for o in outcomes
        if o.correct is not None and o.status != MISSING and len(grounding.get(o.parent, ()))
    ]
    parents = [r[0] for r in rows]
    c = np.array([float(r[1]) for r in rows])
    g = np.array([r[2] for r in rows])
    w = 1.0 - c

    def mean_in(mask: np.ndarray) -> Any:
        def stat(W: np.ndarray) -> np.ndarray:
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.asarray((W @ (mask * g)) / (W @ mask))

        return stat

    stats = {
        "correct": mean_in(c),
        "wrong": mean_in(w),
        "delta": lambda W: mean_in(c)(W) - mean_in(w)(W),
    }
    out: dict[str, CI] = {}
    for k, stat in stats.items():
        point = float(stat(np.ones((1, len(rows))))[0]) if rows else math.nan
        if not rows or not np.isfinite(point):
            out[k] = _nan_ci(point, rs, len(rows))
            continue
        out[k] = design_ci(
            point,
            stat,
            len(rows),
            clusters=parents,
            resamples=rs.resamples,
            seed=rs.seed,
            level=rs.level,
            bounds=(-1.0, 1.0) if k == "delta" else (0.0, 1.0),
        )
    return DeltaSolve(
        model,
        out["correct"],
        out["wrong"],
        out["delta"],
        int(c.sum()),
        int(w.sum()),
        int(sum(r[3] for r in rows)),
    )


def grounding_by_parent(v: RunScored, label: str) -> dict[str, list[float]]:
    """An entry's grounding G per parent over its probes in L (the probe protocol's L:
    T03-image probes with a verified reading), read with the project's field names."""
    from truthline.systems.physalign._protocol import _L, _items

    L = _L(_items(v, label))
    out: dict[str, list[float]] = {}
    for parent, g in zip(L["parent"], L["G"], strict=True):
        out.setdefault(str(parent), []).append(float(g))
    return out


def solve_report(
    outcomes: Sequence[SolveOutcome], v: RunScored | None = None, rs: M.Resampling | None = None
) -> SolveReport:
    """SolveAcc of every model in ``outcomes``; with a grounding run ``v``, Table 17 for
    each model that has a Base entry (model name as in the run) there."""
    rs = rs or (v.rs if v is not None else M.Resampling())
    by: dict[str, list[SolveOutcome]] = {}
    for o in outcomes:
        by.setdefault(o.model, []).append(o)
    solve = [solve_acc(os_, rs) for os_ in by.values()]
    delta = []
    if v is not None:
        base = {
            str(key[0]): lab
            for lab, key in v.keys.items()
            if tuple(key[2:4]) == ("base", "") and key[1] == ""
        }
        for model, os_ in by.items():
            if model in base:
                delta.append(delta_solve(os_, grounding_by_parent(v, base[model]), rs))
    return SolveReport(solve, delta)


# -- the solve run -------------------------------------------------------------------------
@dataclass(frozen=True)
class SolveProblem:
    """A parent problem as a solver sees it: statement, question, options (letter ->
    text), images; no probe metadata."""

    parent: str
    format: str
    text: str = ""
    question: str = ""
    options: tuple[tuple[str, str], ...] = ()
    images: tuple[Path, ...] = ()


SOLVE_FIELD = "final_answer"
"""The one field of a solve request: the reply read under the ``boxed`` grammar."""


def solve_prompt(problem: SolveProblem) -> str:
    """The original problem as a fresh request: statement, question and options when
    present, the answer instruction of its format."""
    if problem.format not in FORMATS:
        raise TruthlineError(f"format {problem.format!r} is none of {', '.join(FORMATS)}")
    lines = [t for t in dict.fromkeys((problem.text.strip(), problem.question.strip())) if t]
    lines += [f"({k}) {v}" for k, v in problem.options]
    if problem.format in SCRIPTED:
        lines.append("Give your final answer in \\boxed{...} at the end.")
    else:
        lines.append(
            "Give a detailed worked solution, with the key formulas and conclusions; put "
            "your final answer in \\boxed{...} at the end."
        )
    return "\n\n".join(lines)


def _solve_fields() -> dict[str, Any]:
    from truthline.fields import get_field_type
    from truthline.fields._answer import bind_grammar

    cls = get_field_type("text")
    ft = cls(SOLVE_FIELD, cls.Spec(type="text", description="the boxed final answer"))
    bind_grammar(ft, "boxed")
    return {SOLVE_FIELD: ft}


def solve_requests(
    project: Any, problems: Sequence[SolveProblem], *, max_tokens: int | None = None
) -> list[Any]:
    """One fresh request per parent problem (the project's decoding settings; worked
    solutions may need a larger ``max_tokens``)."""
    from truthline.models import ModelRequest, default_settings

    settings = default_settings(project, max_tokens=max_tokens)
    fields = _solve_fields()
    return [
        ModelRequest(
            project=project.name,
            item_id=None,
            purpose="solve",
            system=None,
            user=solve_prompt(p),
            images=list(p.images),
            fields=fields,
            settings=settings,
            context={"parent": p.parent},
        )
        for p in problems
    ]


def run_solve(
    store: Any,
    project: Any,
    spec: str,
    problems: Sequence[SolveProblem],
    *,
    concurrency: int = 8,
    max_tokens: int | None = None,
    progress: bool = False,
) -> list[tuple[str, str, str | None]]:
    """Ask one model every problem through the shared model layer (its cache, retries and
    costs); ``(model, parent, reply)`` per problem, reply None when no answer came back."""
    from truthline.models import INFRA_MISSING, parse_model_spec, run_requests

    reqs = solve_requests(project, problems, max_tokens=max_tokens)
    results = run_requests(store, spec, reqs, concurrency=concurrency, progress=progress)
    alias = parse_model_spec(spec).alias
    return [
        (alias, p.parent, None if r.status == INFRA_MISSING else (r.raw or ""))
        for p, r in zip(problems, results, strict=True)
    ]


# -- tables ----------------------------------------------------------------------------------
def _rows(path: Path) -> list[dict[str, Any]]:
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return list(csv.DictReader(text.splitlines()))


def _float(v: Any, default: float = 0.0) -> float:
    return default if v in (None, "") else float(v)


def _bool(v: Any) -> bool | None:
    if v in (None, ""):
        return None
    return str(v).strip().lower() in ("1", "true", "yes", "correct")


def read_references(path: Path) -> dict[str, SolveRef]:
    """Parent references (CSV or JSONL): ``parent, format, answer, rel_tol, abs_tol``."""
    out = {}
    for r in _rows(path):
        tol = Tolerance(_float(r.get("rel_tol")), _float(r.get("abs_tol")))
        ans = r.get("answer")
        out[str(r["parent"])] = SolveRef(
            str(r["parent"]), str(r["format"]), None if ans in (None, "") else str(ans), tol
        )
    return out


def read_credit(path: Path) -> list[ExpertCredit]:
    """Expert grades (CSV or JSONL): ``model, parent, points, max_points[, final_correct]``."""
    out = []
    for r in _rows(path):
        mx = _float(r.get("max_points"))
        if mx <= 0:
            raise TruthlineError(f"{path}: {r.get('parent')}: max_points must be positive")
        out.append(
            ExpertCredit(
                str(r["model"]),
                str(r["parent"]),
                _float(r.get("points")),
                mx,
                _bool(r.get("final_correct")),
            )
        )
    return out


def read_problems(path: Path, media_root: Path | None = None) -> list[SolveProblem]:
    """Parent problems (CSV or JSONL): ``parent, format, problem_text, question,
    options`` (a JSON object letter -> text) and ``images`` (``;``-separated paths,
    relative to ``media_root``, default the table's folder)."""
    root = Path(media_root) if media_root is not None else Path(path).parent
    out = []
    for r in _rows(path):
        opts = r.get("options") or {}
        if isinstance(opts, str):
            opts = json.loads(opts) if opts.strip() else {}
        imgs = r.get("images") or []
        if isinstance(imgs, str):
            imgs = [x for x in imgs.split(";") if x.strip()]
        out.append(
            SolveProblem(
                str(r["parent"]),
                str(r["format"]),
                str(r.get("problem_text") or ""),
                str(r.get("question") or ""),
                tuple((str(k), str(v)) for k, v in dict(opts).items()),
                tuple(root / str(x).strip() for x in imgs),
            )
        )
    return out


def read_replies(path: Path) -> list[tuple[str, str, str | None]]:
    """Solve replies (CSV or JSONL): ``model, parent, reply`` (empty/absent: no answer)."""
    return [(str(r["model"]), str(r["parent"]), r.get("reply") or None) for r in _rows(path)]


# -- outcomes beside the project, and the report ------------------------------------------
SOLVE_DIR = "solve"
"""Folder beside the project definition holding each run's solve outcomes
(``solve/<run id>.jsonl``): the report joins them with that run's grounding."""


def outcomes_path(project: Any, run_id: str) -> Path:
    root = getattr(project, "root", None)
    if root is None:
        raise TruthlineError(f"project {project.name!r} has no folder to keep solve outcomes in")
    return Path(root) / SOLVE_DIR / f"{run_id}.jsonl"


def write_outcomes(project: Any, run_id: str, outcomes: Sequence[SolveOutcome]) -> Path:
    """Keep a run's scored solve outcomes beside the project (one JSON line each)."""
    from dataclasses import asdict

    path = outcomes_path(project, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps(asdict(o), ensure_ascii=False) + "\n" for o in outcomes),
        encoding="utf-8",
    )
    return path


def read_outcomes(project: Any, run_id: str) -> list[SolveOutcome] | None:
    """A run's solve outcomes, None when it has none."""
    path = outcomes_path(project, run_id) if getattr(project, "root", None) else None
    if path is None or not path.is_file():
        return None
    return [SolveOutcome(**r) for r in _rows(path)]


def report_sections(ctx: Any) -> list[Section]:
    """SolveAcc and Table 17 of each reported run that has solve outcomes (a
    ``truthline.report_sections`` builder; nothing for other runs)."""
    from truthline.benchmark._across import run_view

    out: list[Section] = []
    for rid in ctx.run_ids:
        got = read_outcomes(ctx.project, rid)
        if got:
            v = run_view(ctx.store, ctx.project, rid, resamples=ctx.resamples)
            out += solve_sections(solve_report(got, v), rid)
    return out


# -- report sections -----------------------------------------------------------------------
def solve_sections(rep: SolveReport, rid: str) -> list[Section]:
    """SolveAcc per model and Table 17 (Δsolve), every row with its n."""
    from truthline.report import Section

    out = [
        Section.of(
            f"Original-problem solving: SolveAcc ({rid})",
            "Each parent problem asked as it stands in a fresh context. Choice and fill-in: "
            "the last boxed final answer against the reference (1 or 0; no boxed answer "
            "is a model failure, 0). Short-answer and calculation: expert points / the "
            "problem's maximum; ungraded ones are pending and left out. Parents equally "
            "weighted; interval over parents.",
            [
                {
                    "model": s.model,
                    "SolveAcc": fmt_ci(s.value),
                    "scored": s.scored,
                    "failed": s.failed,
                    "pending": s.pending,
                    "infra missing": s.infra_missing,
                }
                for s in rep.solve
            ],
            n=[s.n for s in rep.solve],
            n_column="n parents",
        )
    ]
    if rep.delta:
        out.append(
            Section.of(
                f"Grounding by solve outcome, Δsolve ({rid})",
                "Parents with a binary final-answer outcome and at least one L probe; "
                "grounding averaged within each parent, then over the parents of each group "
                "(not type-balanced). Δsolve = solve-correct - solve-wrong, in points, from "
                "unrounded means; one paired parent draw; descriptive.",
                [
                    {
                        "model": d.model,
                        "G solve-correct": fmt_ci(d.g_correct, scale=100, digits=1),
                        "G solve-wrong": fmt_ci(d.g_wrong, scale=100, digits=1),
                        "Δsolve (pp)": fmt_ci(d.delta, scale=100, digits=1, sign=True),
                    }
                    for d in rep.delta
                ],
                n=[
                    f"{d.parents_correct} correct / {d.parents_wrong} wrong parents, "
                    f"{d.probes} probes"
                    for d in rep.delta
                ],
                n_column="n",
            )
        )
    return out
