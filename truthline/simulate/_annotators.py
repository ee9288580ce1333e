"""SIMULATED annotators with declared (planted) behaviours, for demos and audit tests.

An annotator *decides* values here; writing them (straight into the store, or through
Label Studio in the demo) is the caller's business. Behaviours are registered by name:

* ``careful``: accurate blind; notices most wrong prefills and fixes them.
* ``noisy``: less accurate, notices fewer wrong prefills.
* ``rubber_stamper``: keeps 98 % of prefills; its few edits never fix a VLM error.
* ``over_corrector``: changes 30 % of *correct* prefills (harmful overrides).
* ``expert``: tier-2 reference, answers the known truth (``accuracy`` below 1 adds errors).

Field difficulty (``difficulty``: leaf path -> skill multiplier in (0, 1]) scales blind
accuracy and the chance of noticing a wrong prefill, so harmful anchoring concentrates in
hard fields (SteelBench: action and worker count) and vanishes in easy ones (harness).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from truthline._registry import Registry
from truthline.fields import Boolean, EntityList, FieldType, MultiChoice, Number, SingleChoice


@dataclass(frozen=True)
class AnnotatorBehaviour:
    """Planted per-decision probabilities of one SIMULATED annotator."""

    kind: str
    description: str
    blind_accuracy: float = 0.9
    detect: float = 0.85
    """P(notice a wrong prefill) before field difficulty."""
    fix: float = 0.95
    """P(the noticed error is replaced by the right value) — else a wrong override."""
    keep_right: float = 0.99
    """P(keep a correct prefill); 1 - this is the harmful-override rate."""
    keep_all: float | None = None
    """Rubber stamping: keep this share of prefills whatever they are; edits never fix."""
    lead_time: tuple[float, float] = (440.0, 90.0)
    override_time: float = 80.0
    """Extra seconds when at least one prefill value is changed."""
    flag_rate: float = 0.06
    uses_difficulty: bool = True


@dataclass
class AnnotatorDecision:
    """What a SIMULATED annotator produced for one item (top-level field values)."""

    values: dict[str, Any]
    lead_time: float
    flagged: bool
    changed: int = 0
    decisions: int = 0
    simulated: bool = True


BEHAVIOURS: Registry[Callable[[], AnnotatorBehaviour]] = Registry("simulated annotator behaviour")


def annotator_behaviour(
    name: str,
) -> Callable[[Callable[[], AnnotatorBehaviour]], Callable[[], AnnotatorBehaviour]]:
    """Register a zero-argument function returning an ``AnnotatorBehaviour``."""
    return BEHAVIOURS.register(name)


def registered_behaviours() -> list[str]:
    return BEHAVIOURS.names()


def get_behaviour(name: str) -> AnnotatorBehaviour:
    if name not in BEHAVIOURS:
        known = ", ".join(registered_behaviours())
        raise KeyError(f"unknown simulated annotator behaviour {name!r} (known: {known})")
    return BEHAVIOURS.get(name)()


@annotator_behaviour("careful")
def _careful() -> AnnotatorBehaviour:
    return AnnotatorBehaviour("careful", "SIMULATED careful annotator", 0.92, 0.9, 0.95, 0.99)


@annotator_behaviour("noisy")
def _noisy() -> AnnotatorBehaviour:
    return AnnotatorBehaviour(
        "noisy", "SIMULATED noisy annotator", 0.78, 0.6, 0.8, 0.95, flag_rate=0.04
    )


@annotator_behaviour("rubber_stamper")
def _rubber() -> AnnotatorBehaviour:
    return AnnotatorBehaviour(
        "rubber_stamper",
        "SIMULATED rubber-stamper: keeps 98% of prefills, never fixes a VLM error",
        blind_accuracy=0.8,
        keep_all=0.98,
        lead_time=(150.0, 40.0),
        override_time=20.0,
        flag_rate=0.01,
        uses_difficulty=False,
    )


@annotator_behaviour("over_corrector")
def _over() -> AnnotatorBehaviour:
    return AnnotatorBehaviour(
        "over_corrector",
        "SIMULATED over-corrector: changes 30% of correct prefills",
        0.88,
        0.85,
        0.9,
        keep_right=0.7,
        flag_rate=0.09,
        uses_difficulty=False,
    )


@annotator_behaviour("expert")
def _expert() -> AnnotatorBehaviour:
    return AnnotatorBehaviour(
        "expert",
        "SIMULATED tier-2 expert: the known truth",
        1.0,
        1.0,
        1.0,
        1.0,
        lead_time=(300.0, 60.0),
        override_time=0.0,
        flag_rate=0.0,
        uses_difficulty=False,
    )


# -- deciding values ---------------------------------------------------------------------------
def wrong_value(ft: FieldType, truth: Any, rng: random.Random, avoid: list[Any]) -> Any:
    """A plausible wrong value for ``ft`` that agrees with nothing in ``avoid``; returns
    ``None`` when the field has no such value."""

    def bad(x: Any) -> bool:
        return any(a is not None and ft.agree(x, a) for a in avoid)

    for _ in range(12):
        cand = _candidate(ft, truth, rng)
        if cand is not None and not bad(cand):
            return cand
    return None


def _candidate(ft: FieldType, truth: Any, rng: random.Random) -> Any:
    if isinstance(ft, Boolean):
        return not truth
    if isinstance(ft, Number):
        lo = getattr(ft.spec, "min", None)
        out = truth + rng.choice([-1, 1])
        return truth + 1 if lo is not None and out < lo else out
    if isinstance(ft, SingleChoice):
        cannot = getattr(ft.spec, "cannot_tell", None)
        cats = [c for c in (ft.categories() or []) if c != cannot]
        group = ft.group_of(truth) if isinstance(truth, str) else None
        same = [c for c in cats if group is not None and ft.group_of(c) == group]
        return rng.choice(same if same and rng.random() < 0.6 else cats) if cats else None
    if isinstance(ft, MultiChoice):
        cats = ft.categories() or []
        cur = set(truth or [])
        extra = [c for c in cats if c not in cur]
        if cur and (not extra or rng.random() < 0.5):
            cur.discard(rng.choice(sorted(cur)))
            if not cur and extra:
                cur.add(rng.choice(extra))
        elif extra:
            cur.add(rng.choice(extra))
        return ft.normalize(sorted(cur))
    return None


class _Decider:
    def __init__(self, b: AnnotatorBehaviour, rng: random.Random, difficulty: Mapping[str, float]):
        self.b = b
        self.rng = rng
        self.difficulty = difficulty
        self.changed = 0
        self.decisions = 0

    def skill(self, leaf: str) -> float:
        return self.difficulty.get(leaf, 1.0) if self.b.uses_difficulty else 1.0

    def value(self, ft: FieldType, leaf: str, truth: Any, shown: Any) -> Any:
        b, rng = self.b, self.rng
        self.decisions += 1
        if shown is None:  # blind
            # difficulty bites harder on noticing a wrong prefill than on labelling blind
            if rng.random() < b.blind_accuracy * (1 + self.skill(leaf)) / 2:
                return truth
            alt = wrong_value(ft, truth, rng, [truth])
            return truth if alt is None else alt
        if b.keep_all is not None:
            if rng.random() < b.keep_all:
                return shown
            alt = wrong_value(ft, truth, rng, [truth, shown])
            self.changed += alt is not None
            return shown if alt is None else alt
        if ft.agree(shown, truth):
            if rng.random() < b.keep_right:
                return shown
            alt = wrong_value(ft, truth, rng, [truth])
            self.changed += alt is not None
            return shown if alt is None else alt
        if rng.random() < b.detect * self.skill(leaf):
            self.changed += 1
            if rng.random() < b.fix:
                return truth
            alt = wrong_value(ft, truth, rng, [truth, shown])
            return truth if alt is None else alt
        return shown


def decide_annotation(
    behaviour: AnnotatorBehaviour | str,
    project: Any,
    truth: Mapping[str, Any],
    shown: Mapping[str, Any] | None,
    rng: random.Random,
    *,
    difficulty: Mapping[str, float] | None = None,
) -> AnnotatorDecision:
    """Decide every field the truth covers, blind (``shown`` None) or from a prefill.

    Values are normalized by the project's field types; entity lists follow the truth's
    entities (matched to shown ones by key), so the SIMULATED annotator sees every worker.
    """
    b = get_behaviour(behaviour) if isinstance(behaviour, str) else behaviour
    dec = _Decider(b, rng, difficulty or {})
    out: dict[str, Any] = {}
    for name, tv in truth.items():
        ft = project.field_types.get(name)
        if ft is None or tv is None:
            continue
        tv = ft.normalize(tv)
        sv = None if shown is None else shown.get(name)
        if isinstance(ft, EntityList):
            out[name] = _entities(dec, ft, tv, sv)
        else:
            out[name] = dec.value(ft, name, tv, sv)
    mu, sd = b.lead_time
    lead = max(5.0, rng.gauss(mu, sd) + (b.override_time if dec.changed else 0.0))
    return AnnotatorDecision(
        out, round(lead, 1), rng.random() < b.flag_rate, dec.changed, dec.decisions
    )


def _entities(dec: _Decider, ft: EntityList, truth: list, shown: Any) -> list[dict[str, Any]]:
    key = ft.spec.key
    by_key = {}
    if isinstance(shown, list) and key:
        by_key = {e.get(key): e for e in shown if isinstance(e, dict)}
    out = []
    for i, ent in enumerate(truth):
        s_ent = (
            by_key.get(ent.get(key))
            if key
            else (shown[i] if isinstance(shown, list) and i < len(shown) else None)
        )
        ans: dict[str, Any] = {}
        for name, sub in ft.subfields.items():
            tv = ent.get(name)
            if tv is None:
                continue
            if name == key:
                ans[name] = tv
                continue
            sv = None if s_ent is None else s_ent.get(name)
            ans[name] = dec.value(sub, f"{ft.path}.{name}", tv, sv)
        out.append(ans)
    return out


__all__ = [
    "AnnotatorBehaviour",
    "AnnotatorDecision",
    "annotator_behaviour",
    "decide_annotation",
    "get_behaviour",
    "registered_behaviours",
    "wrong_value",
]
