"""``simulated:PROFILE`` — a SIMULATED model answering from the item's known truth.

The truth is looked up by the backend itself, by the request's item id, in the store's
``items.sim_truth`` column (the runner binds the store before the first request): it never
travels in the request, so no prompt or request a real backend is sent carries it.
Answers come from ``simulated_request_raw`` (``simulated_raw``, deterministic per item and
prompt; a probe answerer also reads the request's condition and control); rows it writes
carry ``simulated = True``. Token counts are estimates (4 characters per token, 85 per
image) so cost and budget logic can be exercised with a ``price_in``/``price_out`` option;
the default price is zero.

``simulated:mapper`` (``;error=RATE;fail=RATE``) is a SIMULATED mapper for free-form
variants: it reads SIMULATED prose back and errs at the declared rates (``SimMapper``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select

from truthline.errors import TruthlineError
from truthline.fields import request_grammar
from truthline.models import Backend, Completion, ModelRequest, backend
from truthline.simulate._vlm import (
    MAPPERS,
    get_profile,
    simulated_mapping,
    simulated_prose,
    simulated_request_raw,
)
from truthline.store import tables


@backend("simulated")
class SimulatedBackend(Backend):
    simulated = True
    reads_context = True  # answers from the item's known truth: the item is in the cache key

    def __init__(self, spec):
        super().__init__(spec)
        self._mapper = MAPPERS.get(spec.name)() if spec.name in MAPPERS else None
        if self._mapper is None:
            try:
                get_profile(spec.name)
            except KeyError as exc:
                known = ", ".join(MAPPERS.names())
                raise TruthlineError(
                    f"model spec {spec.text!r}: {exc.args[0]}; SIMULATED mappers: {known}"
                ) from None
        self._projects: dict[str, Any] = {}
        self._truth: dict[Any, Any] = {}

    def provide_truth(self, truth: Mapping[Any, Any]) -> None:
        """Known truth by item id for requests whose item is not in the store (the endpoint
        check sends one with ``item_id=None``)."""
        self._truth.update(truth)

    def prepare_check(self) -> None:
        self.provide_truth({None: {"ok": True}})

    def truth_of(self, req: ModelRequest) -> Any:
        """The item's known truth: provided, else read from the store (all of a project's
        items at once, again only when an item not seen yet is asked for)."""
        if req.item_id not in self._truth and self.store is not None:
            self._truth.update(_store_truth(self.store, req.project))
        truth = self._truth.get(req.item_id)
        if truth is None:
            raise TruthlineError(
                f"simulated model {self.spec.alias}: item {req.item_id} of project "
                f"{req.project!r} has no known truth (items.sim_truth); simulated models "
                "only answer SIMULATED items (e.g. from `truthline demo`)"
            )
        return truth

    def _project(self, req: ModelRequest) -> Any:
        if req.project not in self._projects:
            self._projects[req.project] = project_from_store(self.store, req.project, req.fields)
        return self._projects[req.project]

    async def complete(self, request: ModelRequest) -> Completion:
        if self._mapper is not None:
            text = self._map(request)
        elif request_grammar(request.fields) == "text":  # a free-form variant: prose
            project = self._project(request)
            text = simulated_prose(self.spec.name, self.truth_of(request), project, key_of(request))
        else:
            truth = self.truth_of(request)
            text = simulated_request_raw(
                self.spec.name, truth, self._project(request), key_of(request), request
            )
        tokens_in = (len(request.user) + len(request.system or "")) // 4 + 85 * len(request.images)
        return Completion(text=text, tokens_in=tokens_in, tokens_out=len(text) // 4)

    def _map(self, request: ModelRequest) -> str:
        """A SIMULATED mapper's answer: the prose it is asked to map (the request's
        ``mapper_input``, also in its prompt) read back, with the declared error rates."""
        assert self._mapper is not None
        prose = request.context.get("mapper_input")
        if not isinstance(prose, str):
            raise TruthlineError(
                f"simulated mapper {self.spec.alias}: the request carries no mapper_input "
                "(a SIMULATED mapper only maps the benchmark's free-form answers)"
            )
        error = self.spec.opt_float("error", self._mapper.error)
        fail = self.spec.opt_float("fail", self._mapper.fail)
        return simulated_mapping(
            self._mapper,
            self.spec.name,
            prose,
            request.fields,
            key_of(request),
            float(error or 0.0),
            float(fail or 0.0),
        )


def _store_truth(store: Any, project: str) -> dict[int, Any]:
    t = tables.items
    with store.begin() as conn:
        rows = conn.execute(
            select(t.c.id, t.c.sim_truth).where(t.c.project == project, t.c.sim_truth.is_not(None))
        ).all()
    return {r.id: r.sim_truth for r in rows}


def project_from_store(store: Any, name: str, fields: Any) -> Any:
    """The project as registered in the store; falls back to the request's fields."""
    if store is not None:
        with store.begin() as conn:
            row = conn.execute(
                select(tables.projects.c.definition).where(tables.projects.c.name == name)
            ).first()
        if row is not None:
            from truthline.project import validate_data

            return validate_data(row[0], f"<store project {name}>")
    return SimpleNamespace(name=name, field_types=dict(fields))


def key_of(req: ModelRequest) -> str:
    """Deterministic key of a request for simulations: item key, variant, prompt hash."""
    ident = req.context.get("key") or req.item_id
    h = hashlib.sha256(f"{req.system}\x1f{req.user}".encode()).hexdigest()[:16]
    return f"{ident}|{req.context.get('variant', '')}|{h}"
