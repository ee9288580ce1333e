"""``simulated:PROFILE`` — a SIMULATED model answering from the item's known truth.

Answers come from ``truthline.simulate.simulated_answer`` (deterministic per item and
prompt); rows it writes carry ``simulated = True``. Token counts are estimates (4
characters per token, 85 per image) so cost and budget logic can be exercised with a
``price_in``/``price_out`` option; the default price is zero.
"""

from __future__ import annotations

from typing import Any

from truthline.errors import TruthlineError
from truthline.models._registry import Backend, backend
from truthline.models._types import Completion, ModelRequest


@backend("simulated")
class SimulatedBackend(Backend):
    simulated = True
    reads_context = True  # answers from the item's known truth

    def __init__(self, spec):
        super().__init__(spec)
        from truthline.simulate import get_profile

        try:
            get_profile(spec.name)
        except KeyError as exc:
            raise TruthlineError(f"model spec {spec.text!r}: {exc.args[0]}") from None
        self._projects: dict[str, Any] = {}

    def _project(self, req: ModelRequest) -> Any:
        proj = req.context.get("project_obj")
        if proj is not None:
            return proj
        if req.project not in self._projects:
            self._projects[req.project] = _project_from_store(self.store, req.project, req.fields)
        return self._projects[req.project]

    async def complete(self, request: ModelRequest) -> Completion:
        from truthline.models._store_project import key_of
        from truthline.simulate import simulated_raw

        truth = request.context.get("sim_truth")
        if truth is None:
            raise TruthlineError(
                f"simulated model {self.spec.alias}: item {request.item_id} of project "
                f"{request.project!r} has no known truth (items.sim_truth); simulated models "
                "only answer SIMULATED items (e.g. from `truthline demo`)"
            )
        text = simulated_raw(self.spec.name, truth, self._project(request), key_of(request))
        tokens_in = (len(request.user) + len(request.system or "")) // 4 + 85 * len(request.images)
        return Completion(text=text, tokens_in=tokens_in, tokens_out=len(text) // 4)


def _project_from_store(store: Any, name: str, fields: Any) -> Any:
    from truthline.models._store_project import project_from_store

    return project_from_store(store, name, fields)
