"""The benchmark runner: requests built from gold, answered by the shared model layer, scored.

One run = one id holding any number of (model, variant, condition, control) entries.
Answers come from ``truthline.models.run_requests`` (one cache, retries, failure
accounting, cost); every scored answer is written to ``run_results`` as it arrives (by the
runner's writer thread, right after the answer's own commit), so a run killed mid-way
resumes: rows already scored are skipped and cached answers are never re-asked. Ctrl-C
or SIGTERM closes the run as partial and raises ``RunInterrupted``; an endpoint that
keeps failing raises ``EndpointFailingError`` (both ``TruthlineError``: exit 1).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from truthline import __version__
from truthline.benchmark._baselines import support_of
from truthline.benchmark._gold import Gold, GoldItem, load_gold
from truthline.benchmark._scoring import answer_fields, leaf_of, score_answer
from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.store import Store, json_hash, now, tables

CONDITIONS = ("base", "gt")
CONTROLS = ("", "no-image", "reorder")


@dataclass
class RunConfig:
    """What one benchmark invocation asks for (the run id derives from it unless given)."""

    models: list[str]
    gold: str = "all"
    snapshot: str | None = None
    variant: str | None = None
    condition: str = "base"
    control: str = ""
    limit: int | None = None
    run_id: str | None = None
    concurrency: int = 8
    max_cost: float | None = None
    retry_missing: bool = False
    max_failures: int | None = 5
    """Consecutive unfixable failures (endpoint down, key rejected) that stop the run."""
    extra: dict[str, Any] = field(default_factory=dict)


def targets_of(project: Project, gold: Gold) -> list[str]:
    """Target leaf fields: the project's declared list, else every field with gold."""
    declared = list(project.benchmark.target_fields)
    if declared:
        for t in declared:
            project.field(t)  # raises with the field name when the project lacks it
        return declared
    seen: list[str] = []
    for it in gold.items:
        for path in it.values:
            leaf = leaf_of(path)
            if leaf in project.leaf_fields() and leaf not in seen:
                seen.append(leaf)
    return seen


def _public_item(project: Project, it: GoldItem) -> dict[str, Any]:
    """What a model may see of an item: media and the declared public metadata only."""
    allowed = set(project.benchmark.public_inputs)
    return {
        "id": it.item_id,
        "key": it.key,
        "meta": {k: v for k, v in it.meta.items() if k in allowed},
        "parent": None,
        "media": it.media,
        "media_root": it.media_root,
        "sim_truth": it.sim_truth,
    }


def _reordered(project: Project, seed: int) -> Project:
    """A copy whose taxonomy classes and choices are listed in a seeded random order
    (the candidate-reordering input control)."""
    rng = random.Random(seed)
    taxes = {}
    for name, tax in project.taxonomies.items():
        classes = list(tax.classes)
        rng.shuffle(classes)
        taxes[name] = tax.model_copy(update={"classes": classes})
    return project.model_copy(update={"taxonomies": taxes})


def _given(project: Project, it: GoldItem) -> dict[str, Any]:
    """+GT condition: the gold values of the declared perception field, handed to the model."""
    f = project.benchmark.action_field
    if not f:
        raise TruthlineError(
            "--condition gt needs [benchmark] action_field (the input given as ground truth)"
        )
    return {p: v for p, v in it.values.items() if leaf_of(p) == f}


def build_requests(
    project: Project,
    items: Sequence[GoldItem],
    targets: Sequence[str],
    *,
    variant: str | None,
    condition: str,
    control: str,
    seed: int,
    support: dict[str, Any] | None = None,
) -> list[Any]:
    """One model request per gold item (prompts rendered by the model layer)."""
    from truthline.models import default_settings, item_requests

    if variant and variant not in project.prompts.variants:
        known = ", ".join(project.prompts.variants) or "none declared"
        raise TruthlineError(f"unknown prompt variant {variant!r} (project variants: {known})")
    top = answer_fields(project, targets)
    conf = project.benchmark.confidence_field
    if conf and conf in project.field_types and conf not in top:
        top.append(conf)
    fields = {n: project.field_types[n] for n in top}
    view = _reordered(project, seed) if control == "reorder" else project
    settings = default_settings(
        project, variant=variant, condition=condition, control=control or None
    )
    if support is not None:
        settings["rule_support"] = json_hash(support)
    out = []
    for it in items:
        ctx: dict[str, Any] = {"condition": condition, "control": control}
        if support is not None:
            ctx["rule_support"] = support
        ctx["entities"] = _entity_ids(project, it)
        req = item_requests(
            view,
            [_public_item(project, it)],
            purpose="benchmark",
            settings=settings,
            template=variant,
            context=ctx,
        )[0]
        req.fields = fields
        if control == "no-image":
            req.images = []
        if condition == "gt":
            given = _given(project, it)
            req.context["given"] = given
            lines = "\n".join(f"- {p} = {v}" for p, v in sorted(given.items()))
            req.user += f"\n\nGiven as ground truth (do not change these):\n{lines}"
        out.append(req)
    return out


def _entity_ids(project: Project, it: GoldItem) -> dict[str, list[str]]:
    """Entity ids of the item's lists (public candidates, e.g. worker track ids)."""
    out: dict[str, list[str]] = {}
    for name, ft in project.field_types.items():
        if getattr(ft, "subfields", None) is None:
            continue
        ids = [str(e) for e in it.values.get(name) or []]
        for p in it.values:
            if p.startswith(f"{name}["):
                eid = p[len(name) + 1 : p.index("]")]
                if eid not in ids:
                    ids.append(eid)
        out[name] = ids
    return out


def default_run_id(project: Project, gold: Gold, cfg: RunConfig) -> str:
    ident = {
        "snapshot": gold.snapshot,
        "gold": cfg.gold,
        "models": sorted(cfg.models),
        "variant": cfg.variant,
        "condition": cfg.condition,
        "control": cfg.control,
        "limit": cfg.limit,
    }
    return f"{project.name}-{json_hash(ident)[:10]}"


def run_benchmark(
    store: Store, project: Project, cfg: RunConfig, *, progress: bool = True
) -> dict[str, Any]:
    """Run (or resume) a benchmark; returns the run's manifest."""
    from truthline.models import EndpointFailingError, parse_model_spec, run_requests

    if cfg.condition not in CONDITIONS:
        raise TruthlineError(f"unknown condition {cfg.condition!r} (use base or gt)")
    if cfg.control not in CONTROLS:
        raise TruthlineError(f"unknown control {cfg.control!r} (use no-image or reorder)")
    if not cfg.models:
        raise TruthlineError("give at least one --model SPEC")
    gold = load_gold(store, project.name, cfg.snapshot, cfg.gold)
    items = gold.items[: cfg.limit] if cfg.limit else gold.items
    if not items:
        raise TruthlineError(
            f"gold snapshot {gold.snapshot[:12]} has no decisions in slice {cfg.gold!r}"
        )
    targets = targets_of(project, gold)
    if cfg.condition == "gt":
        targets = [t for t in targets if t != project.benchmark.action_field]
    run_id = cfg.run_id or default_run_id(project, gold, cfg)
    manifest = _open_run(store, project, run_id, gold, cfg, targets)
    seed = project.benchmark.seed
    for spec_text in cfg.models:
        spec = parse_model_spec(spec_text)
        from truthline.benchmark import _baselines  # registers the rule: backend

        if spec.kind == "rule":
            _baselines.load_project_rules(project)
            if spec.name not in _baselines.registered_rules():
                raise TruthlineError(
                    f"unknown rule {spec.name!r} (registered: "
                    f"{', '.join(_baselines.registered_rules())}; a project adds rules in "
                    f"{_baselines.RULES_FILE} beside its definition)"
                )
        support = support_of(project, items, targets) if spec.kind == "rule" else None
        alias = spec.alias
        variant = cfg.variant or ""
        done = _done_items(store, run_id, alias, variant, cfg.condition, cfg.control)
        todo = [it for it in items if it.item_id not in done]
        by_id = {it.item_id: it for it in todo}
        reqs = build_requests(
            project,
            todo,
            targets,
            variant=cfg.variant,
            condition=cfg.condition,
            control=cfg.control,
            seed=seed,
            support=support,
        )
        prompt_hashes = sorted({json_hash([r.system, r.user]) for r in reqs})

        entry_key = f"{alias}|{variant}|{cfg.condition}|{cfg.control}"
        persist = _ResultWriter(run_id, alias, variant, cfg, project, by_id, targets)
        try:
            results = run_requests(
                store,
                spec,
                reqs,
                concurrency=cfg.concurrency,
                max_cost=cfg.max_cost,
                retry_missing=cfg.retry_missing,
                progress=progress,
                persist=persist,
                max_failures=cfg.max_failures,
            )
        except EndpointFailingError:  # the endpoint kept failing: close the run as partial
            manifest["entries"].setdefault(
                entry_key, _entry(alias, spec, variant, cfg, prompt_hashes)
            )["not_run"] = len(reqs)
            _close_run(store, run_id, manifest)
            raise
        entry = manifest["entries"].get(entry_key) or _entry(alias, spec, variant, cfg, [])
        entry["prompt_hashes"] = sorted(set(entry["prompt_hashes"]) | set(prompt_hashes))
        entry["settings"] = reqs[0].settings if reqs else entry.get("settings")
        entry["simulated"] = any(r.simulated for r in results) or entry.get("simulated", False)
        entry["not_run"] = sum(r.status == "not_run" for r in results)
        manifest["entries"][entry_key] = entry
        stop = next((r.reason for r in results if r.status == "not_run"), None)
        if stop in ("interrupted", "terminated"):
            _close_run(store, run_id, manifest)
            raise RunInterrupted(
                f"benchmark run {run_id} {stop}: scored answers are stored; rerun the same "
                "command to resume",
                stop,
            )
    _close_run(store, run_id, manifest)
    return load_manifest(store, run_id)


class RunInterrupted(TruthlineError):
    """Ctrl-C or SIGTERM stopped a benchmark run; what was answered is stored and scored
    (the run is closed as partial). ``reason``: ``interrupted`` or ``terminated``."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason
        self.exit_code = 130 if reason == "interrupted" else 143


def _entry(
    alias: str, spec: Any, variant: str, cfg: RunConfig, prompt_hashes: list[str]
) -> dict[str, Any]:
    return {
        "model": alias,
        "spec": spec.text,
        "kind": spec.kind,
        "variant": variant,
        "condition": cfg.condition,
        "control": cfg.control,
        "prompt_hashes": list(prompt_hashes),
        "started_at": now().isoformat(),
    }


def _open_run(
    store: Store, project: Project, run_id: str, gold: Gold, cfg: RunConfig, targets: list[str]
) -> dict[str, Any]:
    t = tables.runs
    with store.begin() as conn:
        row = conn.execute(select(t.c.manifest, t.c.project).where(t.c.id == run_id)).first()
        if row is not None:
            if row.project != project.name:
                raise TruthlineError(f"run {run_id!r} belongs to project {row.project!r}")
            manifest = dict(row.manifest)
            if manifest.get("gold_snapshot") != gold.snapshot:
                raise TruthlineError(
                    f"run {run_id!r} was scored on gold {manifest.get('gold_snapshot', '')[:12]}, "
                    f"not {gold.snapshot[:12]}; start a new run (omit --run)"
                )
            manifest["resumed_at"] = [*manifest.get("resumed_at", []), now().isoformat()]
            conn.execute(
                t.update()
                .where(t.c.id == run_id)
                .values(status="running", manifest=manifest, updated_at=now())
            )
            return manifest
        manifest = {
            "run_id": run_id,
            "project": project.name,
            "tool_version": __version__,
            "gold_snapshot": gold.snapshot,
            "gold_slice": cfg.gold,
            "gold_counts": gold.counts(),
            "targets": targets,
            "limit": cfg.limit,
            "image_policy": project.image_policy.model_dump(),
            "output_cap": project.benchmark.output_cap,
            "seed": project.benchmark.seed,
            "bootstrap_resamples": project.benchmark.bootstrap_resamples,
            "metrics": list(project.benchmark.metrics),
            "started_at": now().isoformat(),
            "entries": {},
        }
        ts = now()
        from truthline.models._upsert import insert_ignore

        conn.execute(  # a concurrent run of the same command may have just created it
            insert_ignore(conn.dialect.name, t, ["id"]).values(
                id=run_id,
                project=project.name,
                manifest=manifest,
                status="running",
                created_at=ts,
                updated_at=ts,
            )
        )
    return manifest


def _done_items(
    store: Store, run_id: str, model: str, variant: str, condition: str, control: str
) -> set[int]:
    """Items with a final outcome for this entry (infra-missing rows are retried)."""
    r = tables.run_results
    with store.begin() as conn:
        rows = conn.execute(
            select(r.c.item_id).where(
                r.c.run_id == run_id,
                r.c.model == model,
                r.c.variant == variant,
                r.c.condition == condition,
                r.c.control == control,
                r.c.status != "infra_missing",
            )
        ).all()
    return {int(x[0]) for x in rows}


class _ResultWriter:
    """Scores answers and writes their ``run_results`` rows (the runner's ``persist``:
    in its writer thread, right after the answers' commit, one group per transaction).
    An upsert on the result's key, so a rerun or a concurrent run replaces, never
    duplicates or crashes."""

    def __init__(
        self,
        run_id: str,
        model: str,
        variant: str,
        cfg: RunConfig,
        project: Project,
        by_id: dict[int, GoldItem],
        targets: list[str],
    ):
        self.run_id = run_id
        self.model = model
        self.variant = variant
        self.cfg = cfg
        self.project = project
        self.by_id = by_id
        self.targets = targets
        self._stmt: Any = None
        """The upsert, built once: building its ``excluded`` columns per group cost more
        than the group's rows."""

    def __call__(self, conn: Any, jobs: list[Any]) -> None:
        rows: dict[int, dict[str, Any]] = {}
        for job in jobs:
            res = job.result
            if res.status == "not_run":
                continue
            for req in job.requests:
                it = self.by_id.get(req.item_id)
                if it is None:
                    continue
                rows[it.item_id] = dict(
                    run_id=self.run_id,
                    model=self.model,
                    item_id=it.item_id,
                    variant=self.variant,
                    condition=self.cfg.condition,
                    control=self.cfg.control,
                    response_id=res.response_id or None,
                    status=res.status,
                    scores=_scores(self.project, it, res, self.targets),
                )
        if not rows:
            return
        if self._stmt is None:
            from truthline.models._upsert import insert_or_update

            keys = ["run_id", "model", "item_id", "variant", "condition", "control"]
            self._stmt = insert_or_update(
                conn.dialect.name, tables.run_results, keys, ["response_id", "status", "scores"]
            )
        conn.execute(self._stmt, list(rows.values()))


def _scores(project: Project, it: GoldItem, res: Any, targets: list[str]) -> dict[str, Any]:
    if res.status not in ("parsed", "model_failure"):
        return {"reason": res.reason}
    values = res.values if res.status == "parsed" else None
    conf = project.benchmark.confidence_field
    scores = score_answer(project, it.values, it.provenance, values, targets, conf)
    scores["confidence"] = (values or {}).get(conf) if conf else None
    scores["reason"] = res.reason
    scores["field_errors"] = res.field_errors
    scores["cost_usd"] = res.cost_usd
    scores["tokens"] = [res.tokens_in, res.tokens_out, res.tokens_thinking]
    return scores


def _close_run(store: Store, run_id: str, manifest: dict[str, Any]) -> None:
    from sqlalchemy import func

    r = tables.run_results
    resp = tables.responses
    with store.begin() as conn:
        rows = conn.execute(
            select(
                r.c.model,
                r.c.variant,
                r.c.condition,
                r.c.control,
                r.c.status,
                func.count(),
                func.coalesce(func.sum(resp.c.cost_usd), 0.0),
                func.coalesce(func.sum(resp.c.tokens_in), 0),
                func.coalesce(func.sum(resp.c.tokens_out), 0),
                func.coalesce(func.sum(resp.c.tokens_thinking), 0),
            )
            .select_from(r.outerjoin(resp, resp.c.id == r.c.response_id))
            .where(r.c.run_id == run_id)
            .group_by(r.c.model, r.c.variant, r.c.condition, r.c.control, r.c.status)
        ).all()
        for e in manifest["entries"].values():
            e["status_counts"] = {}
            e["cost_usd"] = 0.0
            e["tokens"] = {"in": 0, "out": 0, "thinking": 0}
        for m, v, c, k, st, n, cost, tin, tout, tth in rows:
            e = manifest["entries"].get(f"{m}|{v}|{c}|{k}")
            if e is None:
                continue
            e["status_counts"][st] = int(n)
            e["cost_usd"] = round(e["cost_usd"] + float(cost), 6)
            e["tokens"]["in"] += int(tin)
            e["tokens"]["out"] += int(tout)
            e["tokens"]["thinking"] += int(tth)
        incomplete = any(e.get("not_run") for e in manifest["entries"].values())
        manifest["finished_at"] = now().isoformat()
        conn.execute(
            tables.runs.update()
            .where(tables.runs.c.id == run_id)
            .values(manifest=manifest, status="partial" if incomplete else "done", updated_at=now())
        )


def load_manifest(store: Store, run_id: str) -> dict[str, Any]:
    with store.begin() as conn:
        row = conn.execute(
            select(tables.runs.c.manifest, tables.runs.c.status).where(tables.runs.c.id == run_id)
        ).first()
    if row is None:
        raise TruthlineError(
            f"no benchmark run {run_id!r}; list runs with `truthline benchmark runs`"
        )
    return {**dict(row.manifest), "status": row.status}
