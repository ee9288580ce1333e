"""Prefill: one model answer per item through the model layer, one prediction row each.

A prediction holds the normalized top-level values (``predictions.values``), the model
alias as ``model_version``, the outcome status and the simulated flag, linked to its
``responses`` row. Reruns ask nothing twice (the model layer's cache) and rewrite the
same prediction rows, so a crash between the two writes heals on the next run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select

from truthline.models import (
    INFRA_MISSING,
    NOT_RUN,
    ModelRequest,
    ModelResult,
    default_settings,
    item_requests,
    parse_model_spec,
    results_summary,
    run_requests,
)
from truthline.store import Store, now, tables


@dataclass
class PrefillReport:
    model: str
    simulated: bool
    summary: dict[str, Any]
    predictions_written: int = 0
    stopped: str | None = None
    items: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "simulated": self.simulated,
            "items": self.items,
            "predictions_written": self.predictions_written,
            "stopped": self.stopped,
            **self.summary,
        }


def write_prediction(
    store: Store, project: str, alias: str, res: ModelResult, item_id: int
) -> bool:
    """Upsert the prediction of one item for one model; infra-missing answers write none."""
    if res.status in (INFRA_MISSING, NOT_RUN):
        return False
    t = tables.predictions
    values = dict(
        response_id=res.response_id,
        values=res.values,
        status=res.status,
        simulated=res.simulated,
    )
    with store.begin() as conn:
        row = conn.execute(
            select(t.c.id, t.c.response_id, t.c["values"], t.c.status).where(
                t.c.project == project, t.c.item_id == item_id, t.c.model_version == alias
            )
        ).first()
        if row is None:
            conn.execute(
                t.insert().values(
                    project=project,
                    item_id=item_id,
                    model_version=alias,
                    created_at=now(),
                    **values,
                )
            )
        elif (row.response_id, row._mapping["values"], row.status) != (
            res.response_id,
            res.values,
            res.status,
        ):
            conn.execute(t.update().where(t.c.id == row.id).values(**values))
        else:
            return False
    return True


def prefill(
    store: Store,
    project: Any,
    model: str,
    *,
    limit: int | None = None,
    concurrency: int = 8,
    max_cost: float | None = None,
    retry_missing: bool = False,
    progress: bool = True,
    variant: str | None = None,
    settings: dict[str, Any] | None = None,
) -> PrefillReport:
    """Pre-annotate the project's items (first ``limit`` by id) with one model."""
    spec = parse_model_spec(model)
    items = store.items(project.name)
    if limit:
        items = items[:limit]
    reqs = item_requests(
        project,
        items,
        purpose="prefill",
        settings=default_settings(project, **(settings or {})),
        template=variant,
    )
    written = 0

    def on_result(req: ModelRequest, res: ModelResult) -> None:
        nonlocal written
        if req.item_id is not None:
            written += write_prediction(store, project.name, spec.alias, res, req.item_id)

    results = run_requests(
        store,
        spec,
        reqs,
        concurrency=concurrency,
        max_cost=max_cost,
        retry_missing=retry_missing,
        progress=progress,
        on_result=on_result,
    )
    stopped = next((r.reason for r in results if r.status == NOT_RUN), None)
    simulated = any(r.simulated for r in results) or spec.kind == "simulated"
    return PrefillReport(
        model=spec.alias,
        simulated=simulated,
        summary=results_summary(results),
        predictions_written=written,
        stopped=stopped,
        items=len(items),
    )


def prefill_status(store: Store, project: str) -> dict[str, Any]:
    """Prefill answers by model and outcome (with reasons), cost, and item coverage."""
    r, p = tables.responses, tables.predictions
    with store.begin() as conn:
        rows = conn.execute(
            select(
                r.c.model_alias,
                r.c.simulated,
                r.c.status,
                r.c.reason,
                func.count(),
                func.coalesce(func.sum(r.c.cost_usd), 0.0),
                func.coalesce(func.sum(r.c.tokens_in), 0),
                func.coalesce(func.sum(r.c.tokens_out + r.c.tokens_thinking), 0),
            )
            .where(r.c.project == project, r.c.purpose == "prefill")
            .group_by(r.c.model_alias, r.c.simulated, r.c.status, r.c.reason)
        ).all()
        preds: dict[str, int] = dict(
            conn.execute(
                select(p.c.model_version, func.count())
                .where(p.c.project == project)
                .group_by(p.c.model_version)
            ).all()
        )
        n_items = conn.execute(
            select(func.count()).select_from(tables.items).where(tables.items.c.project == project)
        ).scalar_one()
    models: dict[str, dict[str, Any]] = {}
    for alias, sim, status, reason, n, cost, tin, tout in rows:
        m = models.setdefault(
            alias,
            {
                "simulated": bool(sim),
                "by_status": {},
                "by_reason": {},
                "cost_usd": 0.0,
                "tokens_in": 0,
                "tokens_out": 0,
            },
        )
        m["by_status"][status] = m["by_status"].get(status, 0) + n
        if reason:
            m["by_reason"][f"{status}:{reason}"] = n
        m["cost_usd"] = round(m["cost_usd"] + float(cost), 6)
        m["tokens_in"] += int(tin)
        m["tokens_out"] += int(tout)
    for alias, m in models.items():
        m["predictions"] = preds.get(alias, 0)
        m["items_without_answer"] = max(0, n_items - sum(m["by_status"].values()))
    return {"project": project, "items": n_items, "models": models}
