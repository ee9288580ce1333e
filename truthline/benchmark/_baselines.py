"""Rule baselines as models: ``rule:majority``, ``rule:random`` and project-supplied rules.

A rule answers through the shared model layer like any backend (same cache, same
scoring, same support). It sees the run's *support* (per target field: the gold values
over the run's items, from which the majority class and the candidate set come) and the
public entity ids (e.g. worker track ids), never an item's own answers. A new rule is one
function decorated with ``@rule("name")`` returning the answer object for one request.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from truthline.benchmark._scoring import leaf_of

RuleFn = Callable[[Any, dict[str, Any]], dict[str, Any]]
_RULES: dict[str, RuleFn] = {}


def rule(name: str) -> Callable[[RuleFn], RuleFn]:
    """Register a rule baseline answered by the model spec ``rule:NAME``."""

    def deco(fn: RuleFn) -> RuleFn:
        _RULES[name] = fn
        return fn

    return deco


def registered_rules() -> list[str]:
    return sorted(_RULES)


def support_of(project: Any, items: Sequence[Any], targets: Sequence[str]) -> dict[str, Any]:
    """Per target leaf: the majority gold value and the candidate set (declared categories,
    else the values seen in gold) over the run's items."""
    out: dict[str, Any] = {}
    for t in targets:
        vals = [
            v for it in items for p, v in it.values.items() if leaf_of(p) == t and v is not None
        ]
        counts = Counter(json.dumps(v, sort_keys=True) for v in vals)
        ft = project.field(t)
        cats = ft.categories()
        if cats is None:
            cats = [json.loads(k) for k in sorted(counts)]
        majority = json.loads(counts.most_common(1)[0][0]) if counts else None
        out[t] = {"majority": majority, "candidates": list(cats)}
    return out


def _fill(request: Any, pick: Callable[[str, str], Any]) -> dict[str, Any]:
    """An answer object for the request's fields, choosing each leaf value with ``pick``."""
    support = request.context.get("rule_support") or {}
    entities = request.context.get("entities") or {}
    answer: dict[str, Any] = {}
    for name, ft in request.fields.items():
        subs = getattr(ft, "subfields", None)
        if subs is not None:
            ents = []
            for eid in entities.get(name, []):
                ent: dict[str, Any] = {}
                if ft.spec.key:
                    ent[ft.spec.key] = eid
                for sub in subs:
                    leaf = f"{name}.{sub}"
                    if leaf in support:
                        ent[sub] = pick(leaf, f"{name}[{eid}].{sub}")
                ents.append(ent)
            answer[name] = ents
        elif name in support:
            answer[name] = pick(name, name)
    return answer


@rule("majority")
def _majority(request: Any, support: dict[str, Any]) -> dict[str, Any]:
    """Always the most frequent gold value of each field over the run's support."""
    return _fill(request, lambda leaf, path: support[leaf]["majority"])


@rule("random")
def _random(request: Any, support: dict[str, Any]) -> dict[str, Any]:
    """A uniform choice among the candidates (expected accuracy 1/K), seeded per item+field."""

    def pick(leaf: str, path: str) -> Any:
        cands = support[leaf]["candidates"]
        if not cands:
            return None
        rng = random.Random(f"{request.context.get('key')}|{path}")
        return cands[rng.randrange(len(cands))]

    return _fill(request, pick)


def _register_backend() -> None:
    from truthline.models import Backend, Completion, backend

    @backend("rule")
    class RuleBackend(Backend):
        """``rule:NAME``: a deterministic rule baseline (no model, no cost)."""

        max_concurrency = 1

        async def complete(self, request: Any) -> Any:
            fn = _RULES.get(self.spec.name)
            if fn is None:
                from truthline.errors import TruthlineError

                raise TruthlineError(
                    f"unknown rule {self.spec.name!r} (registered: {', '.join(registered_rules())})"
                )
            support = request.context.get("rule_support") or {}
            return Completion(text=json.dumps(fn(request, support)))


_register_backend()
