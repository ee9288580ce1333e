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

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from truthline import __version__
from truthline.benchmark import _mapper
from truthline.benchmark._baselines import rule_error, support_of
from truthline.benchmark._gold import Gold, GoldItem, load_gold
from truthline.benchmark._scoring import answer_fields, leaf_of, score_answer
from truthline.errors import TruthlineError
from truthline.models._prompt import typed_meta
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
    wait_claimed: bool = False
    """Wait for requests another live run has claimed (default: leave them to it; the
    entry counts them as not run, so a rerun afterwards takes their answers)."""
    journal_dir: Path | None = None
    """Where paid answers are journaled before their store write (default: the
    workspace's ``journal/``, ``truthline.models._journal.default_journal_dir``)."""
    extra: dict[str, Any] = field(default_factory=dict)
    frames: int | None = None
    """Re-sample each clip at this many frames from its source video (the frame-density
    ablation, ``_frames``); the entry's control becomes ``frames:<k>``."""
    video_root: Path | None = None
    """The folder the clips' source videos were mined from (``frames`` only)."""
    frames_dir: Path | None = None
    """Where re-sampled frames are cached (default: ``<item media root>/resampled``)."""
    fresh: bool = False
    """Ask every model again instead of reusing answers stored before this run started
    (default: a byte-identical request stored before, e.g. by a prefill, is reused). Without
    ``run_id`` the run is ``<derived id>-fresh-N``: a rerun resumes the last unfinished one."""


def targets_of(project: Project, gold: Gold) -> list[str]:
    """Target leaf fields: the project's declared list, else every field with gold."""
    declared = list(project.benchmark.target_fields)
    if declared:
        for t in declared:
            project.field(t)  # raises with the field name when the project lacks it
        return declared
    leaves = project.leaf_fields()
    seen: dict[str, None] = {}  # first-seen order
    for it in gold.items:
        for path in it.values:
            leaf = leaf_of(path)
            if leaf in leaves:
                seen.setdefault(leaf)
    return list(seen)


def _public_item(project: Project, it: GoldItem, control: str = "") -> dict[str, Any]:
    """What a model may see of an item: media and the declared public metadata only,
    typed (``public_meta``); the candidates in display order for ``control``; no media
    under the no-image control."""
    meta = public_meta(project, it)
    if control == "reorder" and "candidates" in meta:
        meta["candidates"] = reordered_candidates(meta["candidates"])
    return {
        "id": it.item_id,
        "key": it.key,
        "meta": meta,
        "parent": None,
        "media": [] if control == "no-image" else it.media,
        "media_root": it.media_root,
    }


def public_meta(project: Project, it: GoldItem) -> dict[str, Any]:
    """The item's declared public inputs, typed (``typed_meta``): a cell that looks like JSON
    but does not parse is an error naming the item and column."""
    allowed = set(project.benchmark.public_inputs)
    return typed_meta({k: v for k, v in it.meta.items() if k in allowed}, strict=it.key)


REORDER = "reverse"
"""The declared candidate-reorder permutation (PHYSALIGN.md §11): the display order is
reversed; aliases stay bound to their regions, so answers need no mapping back."""


def reordered_candidates(cands: Any) -> Any:
    """Candidates in the reorder control's display order (a list or an id -> region map)."""
    if isinstance(cands, dict):
        return dict(reversed(list(cands.items())))
    if isinstance(cands, list):
        return list(reversed(cands))
    return cands


def _reordered(project: Project, seed: int) -> Project:
    """A copy whose taxonomy classes are listed in a seeded random order (the reorder
    control for taxonomy answers; codes stay bound to their classes)."""
    rng = random.Random(seed)
    taxes = {}
    for name, tax in project.taxonomies.items():
        classes = list(tax.classes)
        rng.shuffle(classes)
        taxes[name] = tax.model_copy(update={"classes": classes})
    return project.model_copy(update={"taxonomies": taxes})


def candidate_ids(cands: Any) -> list[str]:
    """Candidate ids (aliases) of a public candidates value, in display order."""
    if isinstance(cands, dict):
        return [str(k) for k in cands]
    if isinstance(cands, list):
        out = []
        for c in cands:
            if isinstance(c, dict):
                out.append(str(c.get("alias", c.get("id", ""))))
            else:
                out.append(str(c))
        return out
    return []


VERIFIED = ("blind_consensus", "adjudicated", "expert")
"""Gold provenances that count as verified for a +GT input (PHYSALIGN.md §5 check 2):
an adjudicator or expert decided, or blind annotators agreed, and then at least
``MIN_BLIND`` of them (a single blind label is not verified); a VLM answer kept by one
annotator is never handed to a model as truth."""
MIN_BLIND = 2

_ALIAS_TOKEN = re.compile(r"^[ERV][0-9]+$")


def given_fields(project: Project) -> list[str]:
    """Fields given as truth in the +GT condition: ``given_as_truth``, else ``action_field``."""
    b = project.benchmark
    fields = list(b.given_as_truth) or ([b.action_field] if b.action_field else [])
    if not fields:
        raise TruthlineError(
            "--condition gt needs [benchmark] given_as_truth (the fields handed to the model "
            "as ground truth, e.g. the reading) or action_field"
        )
    for f in fields:
        project.field(f)  # raises with the field name when the project lacks it
        if b.given_as_truth and f == b.ground_field:
            raise TruthlineError(
                f"[benchmark] given_as_truth names {f!r}, the grounding field the probe asks "
                "for: an ownership fact is never admissible for the query it answers"
            )
    return fields


def gold_sources(store: Store, snapshot: str, items: Sequence[GoldItem]) -> dict[int, dict]:
    """Item id -> decision path -> the annotators behind that gold value."""
    g = tables.gold
    ids = [it.item_id for it in items]
    out: dict[int, dict[str, list[str]]] = {}
    with store.begin() as conn:
        for k in range(0, len(ids), 500):
            rows = conn.execute(
                select(g.c.item_id, g.c.field_path, g.c.sources).where(
                    g.c.snapshot == snapshot, g.c.item_id.in_(ids[k : k + 500])
                )
            ).all()
            for iid, path, src in rows:
                out.setdefault(int(iid), {})[path] = list(src or [])
    return out


def admissibility(
    project: Project,
    it: GoldItem,
    fields: Sequence[str],
    sources: dict[str, list[str]] | None = None,
) -> str | None:
    """Why the item's +GT input is not admissible (None: admissible). Model-independent: a
    pure function of the gold, its provenance and sources and the public inputs, decided
    before any run (PHYSALIGN.md §5). ``action_field`` projects check only that a value
    exists. ``sources``: decision path -> annotators behind the gold value."""
    given = {p: v for p, v in it.values.items() if leaf_of(p) in fields}
    strict = bool(project.benchmark.given_as_truth)
    meta = public_meta(project, it) if strict else {}
    anchor = meta.get("anchor")
    if strict and (
        str(meta.get("probe_type", "")).endswith("-text")
        or (isinstance(anchor, dict) and anchor.get("kind") == "text_span")
    ):
        return "text_anchor"  # check 7: the span is already public, nothing to supply
    if not any(v not in (None, "", []) for v in given.values()):
        return "no_gold_value"
    if not strict:
        return None
    if str(it.meta.get("in_P", "1")).strip().lower() in ("0", "false", "no"):
        return "not_in_P"  # the release's own admissibility (truthline.systems.physalign) said no
    for p in given:
        prov = it.provenance.get(p)
        n_src = len((sources or {}).get(p, []))
        if prov not in VERIFIED or (prov == "blind_consensus" and n_src < MIN_BLIND):
            return "unverified"  # check 2: verified by two blind annotators (or adjudicated)
    cands = meta.get("candidates")
    ids = {c.upper() for c in candidate_ids(cands)}
    descs = [
        str(c.get("description", ""))
        for c in (cands.values() if isinstance(cands, dict) else cands or [])
        if isinstance(c, dict)
    ]
    for v in given.values():
        text = str(v).strip()
        if _ALIAS_TOKEN.match(text.upper()) or text.upper() in ids:
            return "role_content"  # check 3: an alias token would name a candidate
        if any(text and text in d for d in descs):
            return "description_leak"  # check 5: string matching alone would pick one
    return None


def _given(project: Project, it: GoldItem, fields: Sequence[str]) -> dict[str, Any]:
    """+GT condition: the gold values of the given fields (the item's perception part)."""
    return {p: v for p, v in it.values.items() if leaf_of(p) in fields}


def given_block(project: Project, it: GoldItem, given: dict[str, Any]) -> str:
    """The given-as-truth block appended to the prompt: ``local_reading`` records
    ``{anchor_id, text}`` for the probe's anchor (no role content), else ``path = value``."""
    anchor = public_meta(project, it).get("anchor")
    aid = anchor.get("anchor_id", "R1") if isinstance(anchor, dict) else None
    if project.benchmark.given_as_truth and aid:
        recs = [{"anchor_id": aid, "text": str(v)} for _, v in sorted(given.items())]
        return "Given as ground truth (do not change it):\nlocal_reading = " + json.dumps(recs)
    lines = "\n".join(f"- {p} = {v}" for p, v in sorted(given.items()))
    return f"Given as ground truth (do not change these):\n{lines}"


NO_IMAGE_NOTE = (
    "No image is attached (input control no-image): answer from the text, the anchor "
    "coordinates and the candidate geometry given above."
)


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
    gfields = given_fields(project) if condition == "gt" else []
    settings = default_settings(
        project, variant=variant, condition=condition, control=control or None
    )
    if support is not None:
        settings["rule_support"] = json_hash(support)
    common: dict[str, Any] = {"condition": condition, "control": control}
    if support is not None:
        common["rule_support"] = support
    # one call for every item (its per-call work, e.g. the default prompt, done once);
    # each request's own context is added after the shared part, in the same key order
    publics = [_public_item(project, it, control) for it in items]
    reqs = item_requests(
        view, publics, purpose="benchmark", settings=settings, template=variant, context=common
    )
    gf = project.benchmark.ground_field
    out = []
    for it, pub, req in zip(items, publics, reqs, strict=True):
        req.context["entities"] = _entity_ids(project, it)
        if support is not None and gf:  # rules: the item's own candidate aliases (K_j)
            meta = public_meta(project, it) if control == "reorder" else pub["meta"]
            ids = candidate_ids(meta.get("candidates"))
            if ids:
                req.context["item_candidates"] = {gf: ids}
        req.fields = fields
        if control == "no-image":
            req.images = []
            req.user += f"\n\n{NO_IMAGE_NOTE}"
        if condition == "gt":
            given = _given(project, it, gfields)
            req.context["given"] = given
            req.user += "\n\n" + given_block(project, it, given)
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


def fresh_run_id(store: Store, base: str) -> str:
    """``<base>-fresh-N`` of a ``--fresh`` run: the highest one while it is unfinished (a
    rerun after a crash or a stop resumes it, asking nothing twice), else the next."""
    t = tables.runs
    pre = f"{base}-fresh-"
    with store.begin() as conn:
        rows = conn.execute(select(t.c.id, t.c.status).where(t.c.id.startswith(pre))).all()
    runs = {int(r.id[len(pre) :]): r.status for r in rows if r.id[len(pre) :].isdigit()}
    if not runs:
        return f"{pre}1"
    last = max(runs)
    return f"{pre}{last}" if runs[last] != "done" else f"{pre}{last + 1}"


def run_start(manifest: Mapping[str, Any]) -> datetime:
    """When the run started (its first session): answers stored before are reused ones."""
    ts = datetime.fromisoformat(manifest["started_at"])
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def check_metric_names(project: Project) -> None:
    """Every metric the project names is registered or declared by an installed plug-in; an
    unknown one is one line naming the project file, the name and the known names."""
    from truthline.benchmark._registry import _check_known

    try:
        _check_known(list(project.benchmark.metrics))
    except KeyError as exc:
        where = getattr(project, "source", None) or project.name
        raise TruthlineError(f"{where}: [benchmark] metrics: {exc.args[0]}") from None


def run_benchmark(
    store: Store, project: Project, cfg: RunConfig, *, progress: bool = True
) -> dict[str, Any]:
    """Run (or resume) a benchmark; returns the run's manifest."""
    from truthline.models import frozen_heap

    with frozen_heap:  # the gold and requests built here stay out of the collector's walks
        return _run_benchmark(store, project, cfg, progress)


def _run_benchmark(
    store: Store, project: Project, cfg: RunConfig, progress: bool
) -> dict[str, Any]:
    from truthline.models import EndpointFailingError

    if cfg.condition not in CONDITIONS:
        raise TruthlineError(f"unknown condition {cfg.condition!r} (use base or gt)")
    if cfg.control not in CONTROLS:
        raise TruthlineError(f"unknown control {cfg.control!r} (use no-image or reorder)")
    if cfg.frames is not None:  # the frame-density ablation: its own entry per density
        from truthline.benchmark._frames import frames_control, positions

        if cfg.control:
            raise TruthlineError(
                f"--frames re-samples the clips; it takes no --control {cfg.control}"
            )
        positions(cfg.frames)  # raises on k < 1
        cfg = replace(cfg, control=frames_control(cfg.frames))
    if not cfg.models:
        raise TruthlineError("give at least one --model SPEC")
    check_metric_names(project)  # before any model is asked: a typo costs nothing
    gold = load_gold(store, project.name, cfg.snapshot, cfg.gold)
    items = gold.items[: cfg.limit] if cfg.limit else gold.items
    if not items:
        raise TruthlineError(
            f"gold snapshot {gold.snapshot[:12]} has no decisions in slice {cfg.gold!r}"
        )
    asked = project.question_fields(cfg.variant)
    targets = asked or targets_of(project, gold)
    if asked:  # a declared question is asked only where it has gold (no action on empty frames)
        items = [it for it in items if any(leaf_of(p) in targets for p in it.values)]
    excluded: dict[str, list[str]] = {}
    if cfg.condition == "gt":
        # +GT: the given fields are not scored; items whose +GT input is not admissible
        # are left out of the +GT support and counted (decided before any model answers)
        gfields = given_fields(project)
        targets = [t for t in targets if t not in gfields]
        kept = []
        srcs = gold_sources(store, gold.snapshot, items)
        for it in items:
            why = admissibility(project, it, gfields, srcs.get(it.item_id))
            if why is None:
                kept.append(it)
            else:
                excluded.setdefault(why, []).append(it.key)
        items = kept
        if not items:
            raise TruthlineError(
                "--condition gt: no item has an admissible +GT input ("
                + ", ".join(f"{k}: {len(v)}" for k, v in sorted(excluded.items()))
                + "): only a verified reading of the probe's own image anchor can be given"
            )
    if cfg.frames is not None:  # cached: a resumed run decodes nothing
        from truthline.benchmark._frames import resample_items

        items = resample_items(items, cfg.frames, cfg.video_root, cfg.frames_dir)
    run_id = cfg.run_id or default_run_id(project, gold, cfg)
    if cfg.fresh and not cfg.run_id:
        run_id = fresh_run_id(store, run_id)
    specs = [_checked_spec(project, t) for t in cfg.models]  # before the run row: no stuck run
    manifest = _open_run(store, project, run_id, gold, cfg, targets)
    try:
        return _run_models(
            store, project, cfg, run_id, manifest, specs, items, targets, progress, excluded
        )
    except (EndpointFailingError, RunInterrupted):
        raise  # closed as partial where raised
    except BaseException:
        _fail_run(store, run_id, manifest)  # never left at `running`
        raise


def _checked_spec(project: Project, spec_text: str) -> Any:
    """A ``--model`` spec parsed and its backend built (which checks the name: a rule that
    is not registered, a local model folder that is missing, an unknown kind), so a typo
    fails before the run row is opened rather than leaving a run at ``running``."""
    from truthline.benchmark import _baselines  # registers the rule: backend
    from truthline.models import get_backend, parse_model_spec

    spec = parse_model_spec(spec_text)
    if spec.kind == "rule":
        _baselines.load_project_rules(project)
        if spec.name not in _baselines.registered_rules():
            raise TruthlineError(
                f"unknown rule {spec.name!r} (registered: "
                f"{', '.join(_baselines.registered_rules())}; a project adds rules in "
                f"{_baselines.RULES_FILE} beside its definition)"
            )
    get_backend(spec)
    return spec


def _fail_run(store: Store, run_id: str, manifest: dict[str, Any]) -> None:
    """Close a run an unexpected error stopped as ``failed`` (a rerun resumes it)."""
    manifest["finished_at"] = now().isoformat()
    with store.begin() as conn:
        conn.execute(
            tables.runs.update()
            .where(tables.runs.c.id == run_id)
            .values(manifest=manifest, status="failed", updated_at=now())
        )


def _run_models(
    store: Store,
    project: Project,
    cfg: RunConfig,
    run_id: str,
    manifest: dict[str, Any],
    specs: list[Any],
    items: list[GoldItem],
    targets: list[str],
    progress: bool,
    excluded: dict[str, list[str]],
) -> dict[str, Any]:
    from truthline.models import EndpointFailingError, run_requests

    seed = project.benchmark.seed
    for spec in specs:
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
        stage = _mapper.stage_for(project, cfg, targets, _scores, progress)
        _mapper.ask_free_text(stage, reqs)  # a free-form (mapped) variant asks for prose
        prompt_hashes = sorted({json_hash([r.system, r.user]) for r in reqs})

        entry_key = f"{alias}|{variant}|{cfg.condition}|{cfg.control}"
        persist = _ResultWriter(run_id, alias, variant, cfg, project, by_id, targets)
        claims = _claims(cfg, run_id, alias)
        try:
            results = run_requests(
                store,
                spec,
                reqs,
                concurrency=cfg.concurrency,
                max_cost=cfg.max_cost,
                retry_missing=cfg.retry_missing,
                progress=progress,
                persist=None if stage is not None else persist,
                max_failures=cfg.max_failures,
                claims=claims,
                journal_dir=cfg.journal_dir,
                fresh_since=run_start(manifest) if cfg.fresh else None,
            )
        except EndpointFailingError:  # the endpoint kept failing: close the run as partial
            manifest["entries"].setdefault(
                entry_key, _entry(alias, spec, variant, cfg, prompt_hashes)
            )["not_run"] = len(reqs)
            _close_run(store, run_id, manifest)
            raise
        key = (alias, variant, cfg.condition, cfg.control)
        results = _mapper.map_stage(store, stage, run_id, key, reqs, results, by_id)
        entry = manifest["entries"].get(entry_key) or _entry(alias, spec, variant, cfg, [])
        _mapper.record(store, stage, run_id, key, items, entry, results)
        if cfg.condition == "gt":
            entry["gt_support"] = {
                "given": given_fields(project),
                "admissible": len(items),
                "excluded": {k: len(v) for k, v in sorted(excluded.items())},
                "excluded_items": {k: sorted(v) for k, v in sorted(excluded.items())},
                "verified_provenance": list(VERIFIED),
                "min_blind_sources": MIN_BLIND,
            }
        if cfg.control:
            entry["control_spec"] = (
                {"reorder": REORDER}
                if cfg.control == "reorder"
                else {"no-image": "no attachment; the prompt says so"}
                if cfg.control == "no-image"
                else {"frames": cfg.frames, "positions": "i/(k-1) of the clip; k=1: its centre"}
            )
        entry["prompt_hashes"] = sorted(set(entry["prompt_hashes"]) | set(prompt_hashes))
        entry["settings"] = reqs[0].settings if reqs else entry.get("settings")
        entry["simulated"] = any(r.simulated for r in results) or entry.get("simulated", False)
        entry["not_run"] = sum(r.status == "not_run" for r in results)
        if claims.left:  # left to another live run: this entry stays partial
            entry["claimed_elsewhere"] = {**claims.as_dict(), "message": claims.message()}
        else:
            entry.pop("claimed_elsewhere", None)
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


def _claims(cfg: RunConfig, run_id: str, alias: str) -> Any:
    """How this entry treats requests another live run claimed (``RunConfig.wait_claimed``)."""
    from truthline.models._claims import Claims

    mode = "wait" if cfg.wait_claimed else "skip"
    return Claims(mode=mode, label=f"benchmark {run_id} {alias}")


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
            if cfg.fresh:
                manifest["fresh"] = True
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
            **({"protocol": _protocol_manifest(project)} if project.benchmark.ground_field else {}),
            "started_at": now().isoformat(),
            **({"fresh": True} if cfg.fresh else {}),
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


def _protocol_manifest(project: Project) -> dict[str, Any]:
    """The frozen probe-protocol choices a grounding benchmark's numbers depend on
    (PHYSALIGN.md §13 manifest): rule versions, normalization list, +GT admissibility,
    the reorder permutation, seed and resamples."""
    from truthline.benchmark._registry import manifest_facts

    b = project.benchmark
    facts: dict[str, Any] = {}
    for _, fact in manifest_facts.items():  # e.g. a system's frozen rule version
        facts.update(fact(project))
    return {
        **facts,
        "read_rules": list(b.read_rules),
        "given_as_truth": list(b.given_as_truth) or ([b.action_field] if b.action_field else []),
        "verified_provenance": list(VERIFIED),
        "min_blind_sources": MIN_BLIND,
        "reorder": REORDER,
        "balance": list(b.balance),
        "seed": b.seed,
        "bootstrap_resamples": b.bootstrap_resamples,
    }


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
                scores = _scores(self.project, it, res, self.targets)
                status = res.status
                crash = rule_error(res.raw) if res.status == "model_failure" else None
                if crash is not None:  # a rule that raised: this item's error, named
                    status, scores["reason"] = "error", crash
                rows[it.item_id] = dict(
                    run_id=self.run_id,
                    model=self.model,
                    item_id=it.item_id,
                    variant=self.variant,
                    condition=self.cfg.condition,
                    control=self.cfg.control,
                    response_id=res.response_id or None,
                    status=status,
                    scores=scores,
                )
        if not rows:
            return
        if self._stmt is None:
            from truthline.models._upsert import BulkInsert

            keys = ["run_id", "model", "item_id", "variant", "condition", "control"]
            self._stmt = BulkInsert(
                conn.dialect, tables.run_results, keys, update=["response_id", "status", "scores"]
            )
        self._stmt(conn, list(rows.values()))


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
    from sqlalchemy import case, func

    r = tables.run_results
    resp = tables.responses
    # an answer stored before the run started is reused: it costs this run nothing
    reused = resp.c.created_at < run_start(manifest)
    with store.begin() as conn:
        rows = conn.execute(
            select(
                r.c.model,
                r.c.variant,
                r.c.condition,
                r.c.control,
                r.c.status,
                func.count(),
                func.coalesce(func.sum(case((reused, 0.0), else_=resp.c.cost_usd)), 0.0),
                func.coalesce(func.sum(resp.c.tokens_in), 0),
                func.coalesce(func.sum(resp.c.tokens_out), 0),
                func.coalesce(func.sum(resp.c.tokens_thinking), 0),
                func.coalesce(func.sum(case((reused, 1), else_=0)), 0),
                func.coalesce(func.sum(case((reused, resp.c.cost_usd), else_=0.0)), 0.0),
            )
            .select_from(r.outerjoin(resp, resp.c.id == r.c.response_id))
            .where(r.c.run_id == run_id)
            .group_by(r.c.model, r.c.variant, r.c.condition, r.c.control, r.c.status)
        ).all()
        for e in manifest["entries"].values():
            e["status_counts"] = {}
            e["cost_usd"] = 0.0
            e["tokens"] = {"in": 0, "out": 0, "thinking": 0}
            e["answers"] = {"fresh": 0, "reused": 0, "reused_cost_usd": 0.0}
        for m, v, c, k, st, n, cost, tin, tout, tth, n_reused, reused_cost in rows:
            e = manifest["entries"].get(f"{m}|{v}|{c}|{k}")
            if e is None:
                continue
            e["status_counts"][st] = int(n)
            e["cost_usd"] = round(e["cost_usd"] + float(cost), 6)
            a = e["answers"]
            a["reused"] += int(n_reused)
            a["fresh"] += int(n) - int(n_reused)
            a["reused_cost_usd"] = round(a["reused_cost_usd"] + float(reused_cost), 6)
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
