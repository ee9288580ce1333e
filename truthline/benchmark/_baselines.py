"""Rule baselines as models: ``rule:majority``, ``rule:random`` and project-supplied rules.

Project-supplied rules live in ``rules.py`` beside the project definition (registering with
``from truthline.benchmark import rule``); ``load_project_rules`` imports it when a run
names a rule. A rule answers through the shared model layer like any backend (same cache, same
scoring, same support). It sees the run's *support* (per target field: the gold values
over the run's items, from which the majority class and the candidate set come) and the
public entity ids (e.g. worker track ids), never an item's own answers. A new rule is one
function decorated with ``@rule("name")`` returning the answer object for one request.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from truthline._registry import Registry
from truthline.benchmark._scoring import leaf_of
from truthline.errors import TruthlineError
from truthline.fields import render_answer

RuleFn = Callable[[Any, dict[str, Any]], dict[str, Any]]
_RULES: Registry[RuleFn] = Registry("rule", entry_point_group="truthline.rules")
"""Rule baselines by name: the built-ins below, a project's rules.py, and plug-ins declared
in the entry-point group ``truthline.rules`` (``name = "module:function"``)."""


_PROJECT_MODULE = "truthline_project_rules_"


AppliesFn = Callable[[Mapping[str, Any]], bool]
"""Whether a rule applies to an item, from its typed public inputs (``meta``)."""
_APPLIES: dict[str, AppliesFn] = {}


def rule(name: str, *, applies: AppliesFn | None = None) -> Callable[[RuleFn], RuleFn]:
    """Register a rule baseline answered by the model spec ``rule:NAME``. A project's
    rules.py may redefine a rule another project's (or its own older version) defined;
    redefining a built-in rule is an error. ``applies``: the rule's support (e.g. the
    nearest-region rule needs an image anchor and a clear nearest candidate); a rule is
    scored on the items it applies to, with its coverage beside the score, never 0 on
    the items it cannot answer. Without it the rule applies everywhere."""

    def deco(fn: RuleFn) -> RuleFn:
        old = _RULES.as_dict().get(name)
        from_project = getattr(old, "__module__", "").startswith(_PROJECT_MODULE)
        registered = _RULES.register(name, replace=from_project)(fn)
        if applies is None:
            _APPLIES.pop(name, None)
        else:
            _APPLIES[name] = applies
        return registered

    return deco


def rule_applies(name: str) -> AppliesFn | None:
    """The declared support of rule ``name`` (``rule:`` prefix allowed), None when it
    applies to every item (or is unknown)."""
    return _APPLIES.get(name.removeprefix("rule:"))


def registered_rules() -> list[str]:
    return _RULES.names()


RULES_FILE = "rules.py"
RULE_ERROR = "rule_error"
"""Stored raw-answer prefix of a rule that raised: the runner records the item's outcome as
``error`` with the exception named (scored wrong, kept in the denominator), never as
infrastructure missing."""


def rule_error(raw: str | None) -> str | None:
    """The exception a rule raised, from its stored raw answer (None: it did not raise)."""
    if raw and raw.startswith(RULE_ERROR + ": "):
        return raw[len(RULE_ERROR) + 2 :]
    return None


_LOADED: dict[tuple[str, float], list[str]] = {}


def load_project_rules(project: Any) -> list[str]:
    """Import ``rules.py`` beside the project's definition (once per file version) so its
    ``@rule`` functions register; returns the rule names it registers (empty: no file)."""
    root: Path | None = getattr(project, "root", None)
    if root is None or not (root / RULES_FILE).is_file():
        return []
    path = (root / RULES_FILE).resolve()
    key = (str(path), path.stat().st_mtime)
    if key in _LOADED:
        return _LOADED[key]
    mod_name = _PROJECT_MODULE + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise TruthlineError(f"{path}: cannot import project rules")
    before = _RULES.as_dict()
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the project's own code: report where it failed
        raise TruthlineError(f"{path}: loading project rules failed: {exc}") from exc
    added = sorted(k for k, fn in _RULES.as_dict().items() if before.get(k) is not fn)
    _LOADED[key] = added
    return added


def majority_answer(request: Any, support: dict[str, Any]) -> dict[str, Any]:
    """The majority answer object (a starting point for project rules that decide only some
    fields, e.g. nearest-region decides the candidate and leaves the rest at the majority)."""
    return _fill(request, lambda leaf, path: support[leaf]["majority"], support)


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


def _fill(
    request: Any, pick: Callable[[str, str], Any], support: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An answer object for the request's fields, choosing each leaf value with ``pick``."""
    if support is None:
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
    return _fill(request, lambda leaf, path: support[leaf]["majority"], support)


@rule("random")
def _random(request: Any, support: dict[str, Any]) -> dict[str, Any]:
    """A uniform choice among the candidates (expected accuracy 1/K), seeded per item+field;
    an item's own public candidates (``item_candidates``: the grounding field's K_j aliases)
    replace the field's declared choices."""
    own = request.context.get("item_candidates") or {}

    def pick(leaf: str, path: str) -> Any:
        cands = own.get(leaf) or support[leaf]["candidates"]
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
        reads_context = True  # answers from the gold and the item, not the prompt

        async def complete(self, request: Any) -> Any:
            if self.spec.name not in _RULES:
                raise TruthlineError(
                    f"unknown rule {self.spec.name!r} (registered: {', '.join(registered_rules())})"
                )
            fn = _RULES.get(self.spec.name)
            support = request.context.get("rule_support") or {}
            try:
                return Completion(text=render_answer(request.fields, fn(request, support)))
            except Exception as exc:  # the rule's own bug: an error of this item, not infra
                return Completion(
                    text=None,
                    finish_reason=RULE_ERROR,
                    raw=f"{RULE_ERROR}: rule {self.spec.name} raised {type(exc).__name__}: {exc}",
                )


_register_backend()
