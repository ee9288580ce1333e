"""The mapper stage of a free-form prompt variant (seeds/001 App. E.2, V2).

A variant declared with ``answer = "text"`` asks the model for prose; the variant's mapper
model maps that prose to the answer fields, and the mapped answer is parsed and scored like
any other. Both calls go through ``truthline.models.run_requests`` (one cache, budget and
failure accounting), so a rerun asks neither again. Per sample the result row keeps the
free-form text, the mapper's raw answer and its parse status; a mapper that fails to give
a parseable answer is a *mapper* failure (the model did answer), scored wrong and counted
in the entry's ``mapper.parse`` block, never in the model's failures.

Mapped accuracy includes the mapper's own errors. Its noise floor is measured by a round
trip: each item's gold is written as a deterministic description
(``fields._answer.describe_answer``) and mapped back by the same mapper; the share of
target decisions it gets wrong there (Wilson interval over items) is reported beside the
entry's scores, which are labelled "mapped by <mapper>".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select

from truthline.benchmark._gold import GoldItem
from truthline.benchmark._scoring import answer_fields, score_answer
from truthline.fields import FieldType, get_field_type
from truthline.fields._answer import bind_free_form, describe_answer
from truthline.project import MappedVariant, Project
from truthline.store import Store, json_hash, tables

FREE_TEXT = "description"
"""The one field a free-form variant asks: the model's prose."""

MAPPER_NOTE = (
    "Mapped accuracy includes the mapper's errors: compare it with a direct (structured) "
    "entry only with the mapper's noise floor in mind."
)

_ENTITY = re.compile(r"^(?P<name>[^\[\].]+)\[(?P<eid>[^\]]*)\]\.(?P<sub>.+)$")


def free_text_fields() -> dict[str, FieldType]:
    """The fields of a free-form question: one text field read under the ``text`` grammar."""
    cls = get_field_type("text")
    ft = cls(FREE_TEXT, cls.Spec.model_validate({"type": "text"}), {})
    bind_free_form(ft)
    return {FREE_TEXT: ft}


def request_fields(project: Project, targets: Sequence[str]) -> dict[str, FieldType]:
    """The fields a structured answer to ``targets`` carries (what the mapper fills in):
    the targets' top-level fields and the confidence field, as the runner asks them."""
    top = answer_fields(project, targets)
    conf = project.benchmark.confidence_field
    if conf and conf in project.field_types and conf not in top:
        top.append(conf)
    return {n: project.field_types[n] for n in top}


def mapper_spec_text(mapped: MappedVariant, extra: Mapping[str, Any]) -> str:
    """The mapper's model spec: ``RunConfig.extra["mapper"]`` overrides the declared one."""
    return str(extra.get("mapper") or mapped.mapper)


def gold_answer(project: Project, it: GoldItem, fields: Mapping[str, FieldType]) -> dict:
    """An item's gold decisions in answer form (entity lists as lists of objects)."""
    out: dict[str, Any] = {}
    ents: dict[str, dict[str, dict[str, Any]]] = {}
    for path, v in it.values.items():
        m = _ENTITY.match(path)
        if m and m["name"] in fields:
            ents.setdefault(m["name"], {}).setdefault(m["eid"], {})[m["sub"]] = v
        elif path in fields and getattr(fields[path], "subfields", None) is None:
            out[path] = v
    for name, ft in fields.items():
        if getattr(ft, "subfields", None) is None:
            continue
        by_id = ents.get(name, {})
        for eid in it.values.get(name) or []:
            by_id.setdefault(str(eid), {})
        key = getattr(ft.spec, "key", None) or "id"
        out[name] = [{key: eid, **vals} for eid, vals in by_id.items()]
    return out


def mapper_request(
    project: Project,
    mapped: MappedVariant,
    it: GoldItem,
    prose: str,
    fields: Mapping[str, FieldType],
    variant: str,
) -> Any:
    """The request asking the mapper to map ``prose`` (about item ``it``) to ``fields``."""
    from truthline.models import ModelRequest, default_settings
    from truthline.models._prompt import render_template

    assert mapped.mapper_prompt is not None  # the loader requires it with a mapper
    ctx = {
        "project": project,
        "description": prose,
        "fields": fields,
        "taxonomies": project.taxonomies,
        "variant": variant,
    }
    user = render_template(project.prompt_path(mapped.mapper_prompt), ctx)
    return ModelRequest(
        project=project.name,
        item_id=it.item_id,
        purpose="benchmark",
        system=None,
        user=user,
        images=[],
        fields=dict(fields),
        settings=default_settings(project, variant=variant, stage="mapper"),
        context={"key": it.key, "variant": variant, "mapper_input": prose},
    )


Scorer = Callable[[Project, GoldItem, Any, list[str]], dict[str, Any]]


@dataclass(frozen=True)
class MapStage:
    """What the mapper stage of one entry needs from the runner."""

    project: Project
    mapped: MappedVariant
    mapper: str
    variant: str
    fields: Mapping[str, FieldType]
    targets: list[str]
    score: Scorer
    concurrency: int = 8
    max_cost: float | None = None
    retry_missing: bool = False
    progress: bool = False
    max_failures: int | None = 5


def stage_for(
    project: Project, cfg: Any, targets: Sequence[str], score: Scorer, progress: bool
) -> MapStage | None:
    """The mapper stage of run config ``cfg`` (a ``RunConfig``), None when its variant is
    not a mapped one."""
    mapped = project.prompts.mapper_of(cfg.variant)
    if mapped is None:
        return None
    return MapStage(
        project,
        mapped,
        mapper_spec_text(mapped, cfg.extra),
        cfg.variant or "",
        request_fields(project, targets),
        list(targets),
        score,
        cfg.concurrency,
        cfg.max_cost,
        cfg.retry_missing,
        progress,
        cfg.max_failures,
    )


def ask_free_text(stage: MapStage | None, reqs: Sequence[Any]) -> None:
    """Under a mapped variant, the model requests ask for prose (the ``text`` grammar)."""
    if stage is not None:
        free = free_text_fields()
        for r in reqs:
            r.fields = free


def map_stage(
    store: Store,
    stage: MapStage | None,
    run_id: str,
    key: Sequence[str],
    reqs: Sequence[Any],
    results: Sequence[Any],
    by_id: Mapping[int, GoldItem],
) -> list[Any]:
    """Map, score and store the model's free-form answers (nothing without a stage);
    returns the model's results and then the mapper's."""
    if stage is None:
        return list(results)
    rows, mres = map_answers(store, stage, reqs, results, by_id)
    write_rows(store, run_id, key, rows)
    return [*results, *mres]


def record(
    store: Store,
    stage: MapStage | None,
    run_id: str,
    key: Sequence[str],
    items: Sequence[GoldItem],
    entry: dict[str, Any],
    results: Sequence[Any] = (),
) -> None:
    """Put the mapper's record (parse rate, noise floor) in the manifest entry; the round
    trip spends what ``results`` (this invocation's calls) left of the budget."""
    if stage is not None:
        spent = sum(r.cost_usd for r in results if not r.cached)
        entry["mapper"] = mapper_block(store, stage, run_id, key, items, spent)


def _run(store: Store, st: MapStage, reqs: Sequence[Any], spent: float = 0.0) -> list[Any]:
    from truthline.models import run_requests

    cap = None if st.max_cost is None else max(0.0, st.max_cost - spent)
    return run_requests(
        store,
        st.mapper,
        reqs,
        concurrency=st.concurrency,
        max_cost=cap,
        retry_missing=st.retry_missing,
        progress=st.progress,
        max_failures=st.max_failures,
    )


def map_answers(
    store: Store,
    st: MapStage,
    reqs: Sequence[Any],
    results: Sequence[Any],
    by_id: Mapping[int, GoldItem],
) -> tuple[dict[int, dict[str, Any]], list[Any]]:
    """Map the model's free-form answers and score them: ``(rows by item id, mapper
    results)``; a row is ``{response_id, status, scores}``. Items
    whose model or mapper answer was never sent get no row (a rerun asks them)."""
    rows: dict[int, dict[str, Any]] = {}
    todo: list[tuple[GoldItem, Any, Any]] = []
    for req, res in zip(reqs, results, strict=True):
        it = by_id.get(req.item_id)
        if it is None or res.status == "not_run":
            continue
        if res.status != "parsed":  # the model's own failure (or infrastructure)
            scores = st.score(st.project, it, res, st.targets)
            scores["mapper"] = {"status": "not_asked", "free_text": res.raw}
            rows[it.item_id] = _row(res, res.status, scores)
            continue
        prose = str(res.values.get(FREE_TEXT) or "")
        mreq = mapper_request(st.project, st.mapped, it, prose, st.fields, st.variant)
        todo.append((it, res, mreq))
    spent = sum(r.cost_usd for r in results if not r.cached)
    mres = _run(store, st, [m for _, _, m in todo], spent) if todo else []
    for (it, res, _), mr in zip(todo, mres, strict=True):
        if mr.status == "not_run":
            continue
        info = {
            "status": "mapped" if mr.status == "parsed" else mr.status,
            "free_text": res.values.get(FREE_TEXT),
            "raw": mr.raw,
            "reason": mr.reason,
            "response_id": mr.response_id or None,
            "field_errors": mr.field_errors,
            "cost_usd": mr.cost_usd,
        }
        if mr.status == "infra_missing":  # the mapper was not reached: retried on rerun
            rows[it.item_id] = _row(res, "infra_missing", {"reason": f"mapper_{mr.reason}"})
            rows[it.item_id]["scores"]["mapper"] = info
            continue
        if mr.status == "parsed":
            merged = replace(res, values=mr.values, field_errors=mr.field_errors)
        else:  # a mapper failure: scored wrong, counted as the mapper's, not the model's
            info["status"] = "failure"
            merged = replace(res, status="model_failure", values={}, reason=f"mapper_{mr.reason}")
        merged = replace(merged, cost_usd=res.cost_usd + mr.cost_usd)
        scores = st.score(st.project, it, merged, st.targets)
        scores["mapper"] = info
        rows[it.item_id] = _row(res, "parsed", scores)
    return rows, mres


def _row(res: Any, status: str, scores: dict[str, Any]) -> dict[str, Any]:
    return {"response_id": res.response_id or None, "status": status, "scores": scores}


def roundtrip(
    store: Store, st: MapStage, items: Sequence[GoldItem], spent: float = 0.0
) -> dict[str, Any]:
    """The mapper's noise floor: gold described in prose, mapped back by the same mapper,
    scored against the gold; wrong share of target decisions with a Wilson interval
    (items as units). Parse failures are counted apart, never as noise."""
    from truthline.stats import proportion_ci

    reqs = [
        mapper_request(
            st.project,
            st.mapped,
            it,
            describe_answer(st.fields, gold_answer(st.project, it, st.fields)),
            st.fields,
            st.variant,
        )
        for it in items
    ]
    res = _run(store, st, reqs, spent) if reqs else []
    wrong: list[int] = []
    n: list[int] = []
    failures = missing = 0
    for it, r in zip(items, res, strict=True):
        if r.status != "parsed":
            failures += int(r.status == "model_failure")
            missing += int(r.status != "model_failure")
            continue
        dec = score_answer(st.project, it.values, it.provenance, r.values, st.targets)
        k = len(dec["decisions"])
        if k:
            wrong.append(sum(not d["correct"] for d in dec["decisions"]))
            n.append(k)
    ci = proportion_ci(wrong, n) if n else None
    return {
        "items": len(items),
        "mapped": len(n),
        "failures": failures,
        "missing": missing,
        "decisions": int(sum(n)),
        "wrong": int(sum(wrong)),
        "value": ci.as_dict() if ci is not None else {},
    }


def _template_hash(st: MapStage) -> str | None:
    """Hash of the mapper's prompt template (its rendered prompts differ per answer)."""
    if not st.mapped.mapper_prompt:
        return None
    path = st.project.prompt_path(st.mapped.mapper_prompt)
    return json_hash(path.read_text(encoding="utf-8")) if path.is_file() else None


def parse_counts(store: Store, run_id: str, key: Sequence[str]) -> dict[str, Any]:
    """The mapper's parse rate over an entry's stored rows (every resume included)."""
    r = tables.run_results
    model, variant, condition, control = key
    with store.begin() as conn:
        rows = conn.execute(
            select(r.c.scores).where(
                r.c.run_id == run_id,
                r.c.model == model,
                r.c.variant == variant,
                r.c.condition == condition,
                r.c.control == control,
            )
        ).all()
    mapped = failures = 0
    cost = 0.0
    reasons: dict[str, int] = {}
    for (scores,) in rows:
        info = (scores or {}).get("mapper") or {}
        cost += float(info.get("cost_usd") or 0.0)
        if info.get("status") == "mapped":
            mapped += 1
        elif info.get("status") == "failure":
            failures += 1
            why = str(info.get("reason") or "")
            reasons[why] = reasons.get(why, 0) + 1
    asked = mapped + failures
    return {
        "asked": asked,
        "mapped": mapped,
        "failures": failures,
        "rate": mapped / asked if asked else None,
        "failure_reasons": reasons,
        "cost_usd": round(cost, 6),
    }


def write_rows(
    store: Store, run_id: str, key: Sequence[str], rows: Mapping[int, dict[str, Any]]
) -> None:
    """Upsert an entry's result rows (a rerun replaces, never duplicates)."""
    if not rows:
        return
    from truthline.models._upsert import insert_or_update

    model, variant, condition, control = key
    keys = ["run_id", "model", "item_id", "variant", "condition", "control"]
    values = [
        dict(
            run_id=run_id,
            model=model,
            item_id=iid,
            variant=variant,
            condition=condition,
            control=control,
            **row,
        )
        for iid, row in rows.items()
    ]
    with store.begin() as conn:
        stmt = insert_or_update(
            conn.dialect.name, tables.run_results, keys, ["response_id", "status", "scores"]
        )
        conn.execute(stmt, values)


def mapper_block(
    store: Store,
    st: MapStage,
    run_id: str,
    key: Sequence[str],
    items: Sequence[GoldItem],
    spent: float = 0.0,
) -> dict[str, Any]:
    """The entry's ``mapper`` record in the run manifest: who mapped, parse rate, noise."""
    from truthline.models import get_backend, parse_model_spec

    spec = parse_model_spec(st.mapper)
    noise = roundtrip(store, st, items, spent)
    return {
        "spec": spec.text,
        "alias": spec.alias,
        "simulated": bool(get_backend(spec).simulated),
        "prompt": st.mapped.mapper_prompt,
        "template_hash": _template_hash(st),
        "parse": parse_counts(store, run_id, key),
        "noise": noise,
        "note": MAPPER_NOTE,
    }


# -- the report's view ----------------------------------------------------------------------
@dataclass(frozen=True)
class MappedEntry:
    """One mapped entry as the report shows it: the entry, its mapper, the mapper's parse
    rate and noise floor (both measured, never folded into the entry's accuracy)."""

    run_id: str
    model: str
    variant: str
    condition: str
    control: str
    mapper: str
    simulated: bool
    parse: dict[str, Any]
    noise: dict[str, Any]

    @property
    def label(self) -> str:
        return f"mapped by {self.mapper}" + (" [SIMULATED]" if self.simulated else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "model": self.model,
            "variant": self.variant,
            "condition": self.condition,
            "control": self.control,
            "mapper": self.mapper,
            "mapped_by": self.label,
            "simulated": self.simulated,
            "parse": dict(self.parse),
            "noise": dict(self.noise),
            "note": MAPPER_NOTE,
        }


def mapped_entries(store: Store, run_ids: Sequence[str]) -> list[MappedEntry]:
    """The mapped entries of the runs, from their manifests."""
    from truthline.benchmark._runner import load_manifest

    out = []
    for rid in run_ids:
        for e in load_manifest(store, rid).get("entries", {}).values():
            m = e.get("mapper")
            if not m:
                continue
            out.append(
                MappedEntry(
                    run_id=rid,
                    model=e["model"],
                    variant=e.get("variant", ""),
                    condition=e.get("condition", "base"),
                    control=e.get("control", ""),
                    mapper=m.get("alias") or m.get("spec", ""),
                    simulated=bool(m.get("simulated")),
                    parse=dict(m.get("parse") or {}),
                    noise=dict(m.get("noise") or {}),
                )
            )
    return out
