"""SIMULATED VLM answers: deterministic, seeded error profiles over an item's known truth.

A simulated model reads ``items.sim_truth`` (project field names, see
``truthline.simulate._scene.truth_of``) and answers every declared field with the errors
its profile declares: per-field error rates, a "defaults to B1 when unsure" bias,
over-flagging of safety fields, weak spatial context; and, for a SIMULATED model family,
a declared share of another profile's errors (``shares_errors_with``, ``share``: the
benchmark models repeat the prefill VLM's wrong answers, as VLMs trained alike do).
The same ``(profile, key)`` always gives the same answer, so reruns and caches are
stable. Nothing here is a real model: every answer carries ``simulated = True`` where it
is stored.

A new profile is one decorated function::

    @simulated_profile("my-model")
    def _mine() -> SimProfile:
        return SimProfile(field_error={"workers.action": 0.2})
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from truthline._registry import Registry
from truthline.fields import (
    Boolean,
    EntityList,
    FieldType,
    MultiChoice,
    Number,
    Reading,
    Region,
    SingleChoice,
    Text,
)
from truthline.simulate._probe import ProbeBehaviour, probe_answer


@dataclass(frozen=True)
class SimProfile:
    """How a simulated model errs. Rates are probabilities per decision."""

    description: str = ""
    default_error: float = 0.1
    field_error: dict[str, float] = field(default_factory=dict)
    """Error rate per leaf path (``workers.action``, ``worker_count``)."""
    default_code: dict[str, str] = field(default_factory=dict)
    """When an error hits this field, answer this code with ``default_bias`` probability
    (SteelBench's VLM falls back to B1 when unsure)."""
    default_bias: float = 0.0
    same_group: float = 0.6
    """Share of taxonomy errors that stay inside the true class's group."""
    false_alarm: float = 0.05
    """Safety fields: P(flag | no violation)."""
    miss: float = 0.05
    """Safety fields: P(no flag | violation)."""
    miss_entity: float = 0.0
    """P(an entity such as a worker is left out)."""
    format_failure: float = 0.0
    """P(the raw answer is not valid JSON) — exercises model-failure accounting."""
    shared_errors: float = 0.8
    """Share of decisions drawn from the item's shared random stream (common to every
    SIMULATED model): models err on the same hard items and in the same way, as real VLMs
    do (SteelBench's B1 magnet). This correlation is what lets anchored gold, which keeps
    the prefill's errors, inflate other models' scores."""
    shares_errors_with: str | None = None
    """A SIMULATED model family: the profile (e.g. the prefill VLM ``steel-v1``) whose error
    tendencies this model shares. Shared draws alone make models err on the same items but
    often with a *different* wrong answer, and a model that is right where the prefill was
    wrong is marked wrong on gold that kept the prefill; real VLMs err alike (SteelBench's
    B1 magnet), which is what lets anchored gold flatter every model (+6.6 pp, all 9)."""
    share: float = 0.0
    """P(this model gives the partner's wrong answer | the partner errs on the decision),
    by a coin seeded per item and decision (the same for every model of the family)."""

    probe: ProbeBehaviour | None = None
    """An evidence-anchored probe answerer (PhysAlign, ``_probe``): the answer then follows
    the request's probe type, condition and control instead of the per-field rates."""

    def error_rate(self, path: str) -> float:
        return self.field_error.get(path, self.default_error)


PROFILES: Registry[Callable[[], SimProfile]] = Registry("simulated profile")


def simulated_profile(name: str) -> Callable[[Callable[[], SimProfile]], Callable[[], SimProfile]]:
    """Register a zero-argument function returning a ``SimProfile`` under ``name``."""
    return PROFILES.register(name)


def registered_profiles() -> list[str]:
    return PROFILES.names()


def get_profile(name: str) -> SimProfile:
    if name not in PROFILES:
        raise KeyError(
            f"unknown simulated profile {name!r} (known: {', '.join(registered_profiles())})"
        )
    return PROFILES.get(name)()


@simulated_profile("steel-v1")
def _steel_v1() -> SimProfile:
    return SimProfile(
        description="SIMULATED prefill VLM: B1 when unsure, over-flags safety, weak spatial context",
        default_error=0.1,
        field_error={
            "workers.action": 0.35,
            "workers.helmet": 0.06,
            "workers.harness": 0.05,
            "workers.spatial_context": 0.45,
            "worker_count": 0.1,
            "visibility": 0.2,
            "scene_type": 0.1,
        },
        default_code={"workers.action": "B1"},
        default_bias=0.6,
        false_alarm=0.25,
        miss=0.06,
        miss_entity=0.03,
    )


FAMILY_SHARE = 0.8
"""Declared share of the prefill VLM's errors the SIMULATED benchmark models repeat: on
80 % of the decisions where ``steel-v1`` errs (in its shared-stream answer), they give its
wrong answer. SteelBench's models all gain on VLM-influenced gold (+6.6 pp, 9 of 9, not
only the prefill's own family), so every SIMULATED benchmark model declares the share."""


@simulated_profile("steel-strong")
def _steel_strong() -> SimProfile:
    return SimProfile(
        description="SIMULATED strong benchmark model (errs like the prefill VLM steel-v1: "
        "one model family)",
        default_error=0.05,
        field_error={
            "workers.action": 0.12,
            "workers.helmet": 0.03,
            "workers.harness": 0.03,
            "workers.spatial_context": 0.12,
            "worker_count": 0.04,
        },
        default_code={"workers.action": "B1"},
        default_bias=0.2,
        false_alarm=0.05,
        miss=0.04,
        miss_entity=0.01,
        shares_errors_with="steel-v1",
        share=FAMILY_SHARE,
    )


@simulated_profile("steel-weak")
def _steel_weak() -> SimProfile:
    return SimProfile(
        description="SIMULATED weak benchmark model (some unparseable answers; "
        "errs like the prefill VLM steel-v1: one model family)",
        default_error=0.25,
        field_error={
            "workers.action": 0.5,
            "workers.helmet": 0.15,
            "workers.harness": 0.15,
            "workers.spatial_context": 0.5,
            "worker_count": 0.25,
        },
        default_code={"workers.action": "B1"},
        default_bias=0.3,
        false_alarm=0.3,
        miss=0.3,
        miss_entity=0.08,
        format_failure=0.03,
        shares_errors_with="steel-v1",
        share=FAMILY_SHARE,
    )


@simulated_profile("perfect")
def _perfect() -> SimProfile:
    return SimProfile(description="SIMULATED oracle: answers the known truth", default_error=0.0)


# SIMULATED RealityBench-like (proof-of-work) models: error rates loosely after the paper's
# findings (text in frame is easy, tape readings and lean judgments are hard). They live
# here, not beside the benchmark code, so any process asking for ``simulated:pow-*`` gets
# them with the simulated backend and no core package imports simulation code.
_POW_HARD = {"tape_reading": 0.0, "tape_leans": 0.0, "gap": 0.0, "slope": 0.0, "acceptable": 0.0}
_POW = {
    "pow-strong": (
        0.04,
        {
            "tape_reading": 0.6,
            "tape_leans": 0.3,
            "gap": 0.35,
            "slope": 0.25,
            "acceptable": 0.2,
            "damage_severity": 0.25,
        },
    ),
    "pow-mid": (
        0.1,
        {
            "tape_reading": 0.8,
            "tape_leans": 0.45,
            "gap": 0.5,
            "slope": 0.45,
            "acceptable": 0.3,
            "damage_severity": 0.4,
        },
    ),
    "pow-weak": (
        0.2,
        {
            "tape_reading": 0.92,
            "tape_leans": 0.5,
            "gap": 0.65,
            "slope": 0.6,
            "acceptable": 0.4,
            "damage_severity": 0.55,
        },
    ),
}


def _pow_profile(name: str, default: float, per_field: dict[str, float]) -> None:
    @simulated_profile(name)
    def make() -> SimProfile:
        return SimProfile(
            description=f"SIMULATED RealityBench-like model ({name})",
            default_error=default,
            field_error={**_POW_HARD, **per_field},
        )


for _name, (_default, _per_field) in _POW.items():
    _pow_profile(_name, _default, _per_field)


def seeded_rng(*parts: str) -> random.Random:
    """A ``random.Random`` seeded from strings (stable across processes and platforms)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _leaf(path: str) -> str:
    """``workers.action`` for ``workers[P1].action`` (profile rates are per leaf path)."""
    import re

    return re.sub(r"\[[^\]]*\]", "", path)


class _Sim:
    def __init__(self, prof: SimProfile, rng: random.Random, item_key: str = ""):
        self.p = prof
        self.own = rng
        self.rng = rng
        self.item_key = item_key
        self.entity = ""
        self.errors = 0
        self.decisions = 0
        family = prof.shares_errors_with
        self.partner = get_profile(family) if family and prof.share > 0 else None

    def hit(self, rate: float) -> bool:
        return self.rng.random() < rate

    def stream(self, path: str) -> None:
        """Pick the random stream for one decision: the item's shared one (same draws for
        every SIMULATED model) with probability ``shared_errors``, else the model's own."""
        shared = self.own.random() < self.p.shared_errors
        self.rng = seeded_rng("shared", self.item_key, self.entity, path) if shared else self.own

    def value(self, ft: FieldType, truth: Any, known: bool) -> Any:
        if isinstance(ft, EntityList):
            return self.entities(ft, truth if isinstance(truth, list) else [])
        if isinstance(ft, Text):
            return "SIMULATED answer" if not known else (truth or "SIMULATED answer")
        if isinstance(ft, Reading | Region):
            return truth if known else None
        self.decisions += 1
        self.stream(ft.path)
        own = self.decide(ft, truth, known)
        return self.family_error(ft, truth, known, own)

    def family_error(self, ft: FieldType, truth: Any, known: bool, own: Any) -> Any:
        """The partner's wrong answer instead of ``own`` on a ``share`` of the decisions
        where the partner errs (SIMULATED models of one family err alike)."""
        if self.partner is None or not known:
            return own
        family = str(self.p.shares_errors_with)
        coin = seeded_rng("family", family, self.item_key, self.entity, ft.path).random()
        if coin >= self.p.share:
            return own
        theirs = self.tendency(ft, truth)
        if _same(ft, theirs, truth):
            return own
        self.errors += _same(ft, own, truth)
        return theirs

    def tendency(self, ft: FieldType, truth: Any) -> Any:
        """The partner's answer on this decision from the item's shared stream: what the
        partner answers whenever it draws from that stream (``shared_errors`` of the time)."""
        assert self.partner is not None
        twin = _Sim(self.partner, seeded_rng("shared", self.item_key, self.entity, ft.path))
        twin.partner = None
        twin.entity = self.entity
        return twin.decide(ft, truth, True)

    def decide(self, ft: FieldType, truth: Any, known: bool) -> Any:
        """One decision from the current stream, with this profile's own error rates."""
        leaf = _leaf(ft.path)
        if isinstance(ft, Boolean):
            if not known:
                return self.hit(self.p.false_alarm) if ft.spec.safety else False
            if ft.spec.safety:
                flip = self.hit(self.p.miss if truth else self.p.false_alarm)
            else:
                flip = self.hit(self.p.error_rate(leaf))
            self.errors += flip
            return (not truth) if flip else bool(truth)
        if not known:
            return self.unknown(ft)
        if not self.hit(self.p.error_rate(leaf)):
            return truth
        self.errors += 1
        if isinstance(ft, Number):
            step = self.rng.choice([-1, 1])
            lo = getattr(ft.spec, "min", None)
            out = truth + step
            if lo is not None and out < lo:
                out = truth + 1
            return out
        if isinstance(ft, SingleChoice):
            return self.wrong_choice(ft, truth, leaf)
        if isinstance(ft, MultiChoice):
            cats = [c for c in (ft.categories() or []) if c not in (truth or [])]
            if truth and (not cats or self.hit(0.5)):
                return sorted(truth[1:]) if len(truth) > 1 else [self.rng.choice(cats or truth)]
            return sorted([*(truth or [])[:-1], self.rng.choice(cats)]) if cats else truth
        return truth

    def wrong_choice(self, ft: SingleChoice, truth: str, leaf: str) -> str:
        default = self.p.default_code.get(leaf)
        if default and default != truth and self.hit(self.p.default_bias):
            return default
        cannot = getattr(ft.spec, "cannot_tell", None)
        cats = [c for c in (ft.categories() or []) if c != truth and c != cannot]
        if not cats:
            return truth
        group = ft.group_of(truth)
        same = [c for c in cats if group is not None and ft.group_of(c) == group]
        if same and self.hit(self.p.same_group):
            return self.rng.choice(same)
        return self.rng.choice(cats)

    def unknown(self, ft: FieldType) -> Any:
        cats = ft.categories()
        if isinstance(ft, MultiChoice):
            return []
        if cats:
            cannot = getattr(ft.spec, "cannot_tell", None)
            return cannot or cats[0]
        if isinstance(ft, Number):
            return getattr(ft.spec, "min", None) or 0
        return None

    def entities(self, ft: EntityList, truth: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for ent in truth:
            if not isinstance(ent, dict):
                continue
            self.entity = str(ent.get(ft.spec.key or "", ""))
            self.stream(ft.path)
            if self.hit(self.p.miss_entity):
                self.errors += 1
                continue
            ans: dict[str, Any] = {}
            for name, sub in ft.subfields.items():
                if name == ft.spec.key:
                    ans[name] = ent.get(name)
                    continue
                if name == "confidence":
                    continue
                ans[name] = self.value(sub, ent.get(name), name in ent)
            if "safety_violation" in ans and "violation_rule" in ft.subfields:
                if not ans["safety_violation"]:
                    ans["violation_rule"] = None
                elif not ans.get("violation_rule"):
                    ans["violation_rule"] = ent.get("violation_rule") or "UA-G-01"
            if "confidence" in ft.subfields:
                ans["confidence"] = self.confidence()
            out.append({k: v for k, v in ans.items() if v is not None})
        self.entity, self.rng = "", self.own
        return out

    def confidence(self) -> str:
        """Stated confidence loosely tracking whether errors were made (for calibration)."""
        self.rng = self.own
        if self.errors == 0:
            return self.rng.choice(["high", "high", "high", "medium"])
        return self.rng.choice(["high", "medium", "medium", "low"])


def _same(ft: FieldType, a: Any, b: Any) -> bool:
    """Whether two raw answers agree once normalized (a malformed one agrees with nothing)."""
    try:
        return ft.agree(ft.normalize(a), ft.normalize(b))
    except Exception:
        return False


def item_identity(key: str) -> str:
    """The item part of a simulation key: the model layer passes ``item|variant|prompt-hash``,
    scenarios ``item#purpose``; the shared error stream must depend on the item alone."""
    return key.split("|", 1)[0].split("#", 1)[0]


def simulated_answer(profile: str, truth: dict[str, Any], project: Any, key: str) -> dict[str, Any]:
    """The SIMULATED answer of ``profile`` for one item, as a JSON object in field names.

    ``truth`` is the item's known truth (``items.sim_truth``); ``project`` a loaded
    ``Project``; ``key`` makes it deterministic (item key + prompt variant, ...).
    Fields the truth does not cover get a neutral answer (``cannot_tell``, false, empty).
    """
    prof = get_profile(profile)
    sim = _Sim(prof, seeded_rng(profile, key), item_key=item_identity(key))
    truth = truth or {}
    out: dict[str, Any] = {}
    for name, ft in project.field_types.items():
        if name == "confidence":
            continue
        out[name] = sim.value(ft, truth.get(name), name in truth)
    if "scene_violation" in out and isinstance(out.get("workers"), list) and out["workers"]:
        flags = [w.get("safety_violation") for w in out["workers"]]
        if "scene_violation" not in truth:
            out["scene_violation"] = any(bool(f) for f in flags)
    if "confidence" in project.field_types:
        out["confidence"] = sim.confidence()
    return out


def simulated_raw(
    profile: str, truth: dict[str, Any], project: Any, key: str, fields: Any = None
) -> str:
    """The raw text a SIMULATED model returns, in the grammar of the question asking
    ``fields`` (default: JSON of every answer), or garbage at the profile's format-failure
    rate."""
    import json

    from truthline.fields import render_answer

    prof = get_profile(profile)
    if prof.format_failure and seeded_rng(profile, key, "format").random() < prof.format_failure:
        return "I think the workers are fine. (SIMULATED unparseable answer)"
    answer = simulated_answer(profile, truth, project, key)
    return json.dumps(answer) if fields is None else render_answer(fields, answer)


# -- SIMULATED free-form answers and mappers (seeds/001 App. E.2, V2) ---------------------------
def simulated_prose(profile: str, truth: dict[str, Any], project: Any, key: str) -> str:
    """The SIMULATED model's free-form answer: its answer (the same errors as its JSON
    answer) described in prose (``describe_answer``), for a variant asking free text."""
    from truthline.fields._answer import describe_answer

    prof = get_profile(profile)
    if prof.format_failure and seeded_rng(profile, key, "format").random() < prof.format_failure:
        return ""  # a SIMULATED empty answer: the model's own failure, not the mapper's
    return describe_answer(project.field_types, simulated_answer(profile, truth, project, key))


@dataclass(frozen=True)
class SimMapper:
    """A SIMULATED mapper: reads SIMULATED prose back (``read_description``) and errs on a
    declared share of the decisions; the spec's ``error=`` and ``fail=`` options override."""

    description: str = ""
    error: float = 0.05
    """P(a decision is mapped to a wrong value)."""
    fail: float = 0.0
    """P(the mapper's answer is not JSON): a mapper failure."""


MAPPERS: Registry[Callable[[], SimMapper]] = Registry("simulated mapper")


@MAPPERS.register("mapper")
def _mapper() -> SimMapper:
    return SimMapper(description="SIMULATED mapper: maps SIMULATED prose back to the fields")


def simulated_mapping(
    mapper: SimMapper, name: str, prose: str, fields: Any, key: str, error: float, fail: float
) -> str:
    """The SIMULATED mapper's raw answer for ``prose``: JSON of the values it reads, each
    decision wrong with probability ``error`` (seeded per key and decision), or garbage
    with probability ``fail``."""
    import json

    from truthline.fields._answer import read_description

    if fail and seeded_rng("mapper", name, key, "fail").random() < fail:
        return "SIMULATED mapper: I could not map this description."
    values = read_description(fields, prose)
    for fname, ft in fields.items():
        if fname not in values:
            continue
        if isinstance(ft, EntityList):
            for ent in values[fname]:
                eid = str(ent.get(ft.spec.key or "", ""))
                for sub, sft in ft.subfields.items():
                    if sub in ent and sub != ft.spec.key:
                        rng = seeded_rng("mapper", name, key, eid, sub)
                        ent[sub] = _mis_map(sft, ent[sub], rng, error)
        else:
            values[fname] = _mis_map(
                ft, values[fname], seeded_rng("mapper", name, key, fname), error
            )
    return json.dumps(values)


def _mis_map(ft: FieldType, value: Any, rng: random.Random, error: float) -> Any:
    """``value``, or with probability ``error`` a different value of the field."""
    if rng.random() >= error or isinstance(ft, Text | Reading | Region):
        return value
    if isinstance(ft, Boolean):
        return not value if isinstance(value, bool) else value
    if isinstance(ft, Number):
        return value + 1 if isinstance(value, int | float) else value
    cats = [c for c in (ft.categories() or [])]
    if isinstance(ft, MultiChoice):
        cur = set(value) if isinstance(value, list) else set()
        flip = rng.choice(cats) if cats else None
        return sorted(cur ^ {flip}) if flip is not None else value
    others = [c for c in cats if c != value]
    return rng.choice(others) if others else value


# -- SIMULATED PhysAlign probe answerers (seeds/002; ``_probe``) -------------------------------
# Rates loosely after the paper's picture: strong models misread rarely and err mostly in
# grounding; a weak reader's grounding errors follow its misreads (+GT repairs many, as for
# Qwen3.5-4B: repairs 13% and harms 5% of the mass); a nearest-region guesser keeps its
# errors under +GT and is harmed by the supplied reading. Every profile falls to a 1/K guess
# without the image.
PROBE_PROFILES: dict[str, tuple[str, ProbeBehaviour]] = {
    "physalign-strong": (
        "SIMULATED strong probe answerer: few misreads, grounding errors dominate",
        ProbeBehaviour(
            read_error={"T02-single": 0.03, "T03-image": 0.06},
            ground_error={"T02-single": 0.06, "T03-image": 0.12, "T03-text": 0.1},
            misread_misgrounds=0.8,
            nearest_bias=0.5,
            gt_harm=0.03,
        ),
    ),
    "physalign-misreader": (
        "SIMULATED weak reader: its misreads drive wrong owners, so +GT repairs many",
        ProbeBehaviour(
            read_error={"T02-single": 0.2, "T03-image": 0.35},
            ground_error={"T02-single": 0.1, "T03-image": 0.1, "T03-text": 0.15},
            misread_misgrounds=0.9,
            nearest_bias=0.3,
            gt_harm=0.08,
        ),
    ),
    "physalign-nearest": (
        "SIMULATED nearest-region guesser: reads well, grounds by proximity, harmed by +GT",
        ProbeBehaviour(
            read_error={"T02-single": 0.05, "T03-image": 0.1},
            ground_error={"T02-single": 0.3, "T03-image": 0.4, "T03-text": 0.35},
            misread_misgrounds=0.5,
            nearest_bias=0.9,
            gt_harm=0.15,
            reorder_flip=0.1,
        ),
    ),
}


def _probe_profile(name: str, description: str, beh: ProbeBehaviour) -> None:
    @simulated_profile(name)
    def make() -> SimProfile:
        return SimProfile(description=description, default_error=0.0, probe=beh)


for _pname, (_pdesc, _pbeh) in PROBE_PROFILES.items():
    _probe_profile(_pname, _pdesc, _pbeh)


def simulated_request_raw(
    profile: str, truth: dict[str, Any], project: Any, key: str, request: Any
) -> str:
    """``simulated_raw`` for one model request: a probe answerer (``SimProfile.probe``)
    reads the request's public probe type and candidates, its condition, control and whether
    any image is attached; every other profile answers as ``simulated_raw`` does."""
    import json

    prof = get_profile(profile)
    if prof.probe is None:
        return simulated_raw(profile, truth, project, key, request.fields)
    if prof.format_failure and seeded_rng(profile, key, "format").random() < prof.format_failure:
        return "The owner is probably the block. (SIMULATED unparseable answer)"
    bench = getattr(project, "benchmark", None)
    fields = dict(request.fields or {})
    read_field = getattr(bench, "read_field", None) or next(
        (n for n, f in fields.items() if isinstance(f, Reading)), "read"
    )
    ground_field = getattr(bench, "ground_field", None) or next(
        (n for n, f in fields.items() if isinstance(f, SingleChoice)), "owner"
    )
    answer = probe_answer(
        prof.probe,
        profile,
        item_identity(key),
        truth or {},
        request.context or {},
        has_images=bool(request.images),
        read_field=read_field,
        ground_field=ground_field,
        asked=list(fields),
        confidence_field=getattr(bench, "confidence_field", None) or "confidence",
    )
    return json.dumps(answer)
