"""A SIMULATED SteelBench-sized store with planted annotator behaviours.

Writes items (with ``sim_truth``), SIMULATED prefill predictions, arm assignments,
exposures, blind and anchored tier-1 annotations and tier-2 expert reviews straight into
the store, deterministically by seed. The planted parameters are returned so tests can
check that the audit recovers them. Default sizes follow SteelBench: 1,345 clips,
6 annotators, 363 expert-reviewed clips, 102 blind double-annotated clips.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import select

from truthline._names import check_annotator
from truthline.fields import EntityList
from truthline.project import Project
from truthline.simulate._annotators import decide_annotation, get_behaviour
from truthline.simulate._scene import make_specs, truth_of
from truthline.simulate._vlm import simulated_answer
from truthline.store import Store, json_hash, now, tables

DIFFICULTY = {
    "worker_count": 0.55,
    "workers.action": 0.6,
    "workers.spatial_context": 0.8,
    "workers.helmet": 0.95,
    "workers.harness": 1.0,
    "workers.safety_violation": 0.95,
}
"""Skill multipliers per leaf field: hard fields hide wrong prefills (SteelBench's gradient)."""


@dataclass(frozen=True)
class TeamMember:
    name: str
    behaviour: str
    share: float = 1.0
    """Relative share of anchored items."""
    blind: bool = True
    """Takes part in the blind double-annotation arm."""

    def __post_init__(self) -> None:
        check_annotator(self.name, "TeamMember name")


DEFAULT_TEAM = (
    TeamMember("ann_1", "careful"),
    TeamMember("ann_2", "careful"),
    TeamMember("ann_3", "noisy"),
    TeamMember("ann_4", "over_corrector"),
    TeamMember("ann_5", "careful"),
    TeamMember("ann_6", "rubber_stamper", share=0.5, blind=False),
)


@dataclass
class Scenario:
    """What was planted (behaviours, sizes, model versions), for tests and the demo."""

    project: str
    seed: int
    items: int
    team: list[dict[str, Any]]
    behaviours: dict[str, dict[str, Any]]
    difficulty: dict[str, float]
    prefill_version: str
    benchmark_version: str
    rerun_agreement: float
    expert: str
    expert_items: int
    blind_pairs: int
    anchored_pairs: int
    counts: dict[str, int] = field(default_factory=dict)
    simulated: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def of_kind(self, behaviour: str) -> list[str]:
        return [m["name"] for m in self.team if m["behaviour"] == behaviour]


def _normalize(project: Project, values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in values.items():
        ft = project.field_types.get(k)
        if ft is not None:
            out[k] = ft.normalize(v)
    return out


def _rerun(project: Project, prefill: dict, fresh: dict, r: float, rng: random.Random) -> dict:
    """A SIMULATED benchmark re-run of the prefill model: each decision repeats the
    prefill with probability ``r``, else takes the fresh answer."""
    out: dict[str, Any] = {}
    for name, fv in fresh.items():
        ft = project.field_types.get(name)
        pv = prefill.get(name)
        if isinstance(ft, EntityList) and isinstance(fv, list) and isinstance(pv, list):
            key = ft.spec.key
            by = {e.get(key): e for e in pv}
            ents = []
            for e in fv:
                p = by.get(e.get(key), {})
                ents.append({k: (p[k] if k in p and rng.random() < r else v) for k, v in e.items()})
            out[name] = ents
        else:
            out[name] = pv if name in prefill and rng.random() < r else fv
    return out


def build_scenario(
    store: Store,
    project: Project,
    *,
    n_items: int = 1345,
    seed: int = 0,
    team: tuple[TeamMember, ...] = DEFAULT_TEAM,
    expert_items: int | None = None,
    blind_pairs: int | None = None,
    anchored_pairs: int | None = None,
    prefill_profile: str = "steel-v1",
    rerun_agreement: float = 0.7,
    difficulty: dict[str, float] | None = None,
    expert_name: str = "expert_1",
) -> Scenario:
    """Write the SIMULATED scenario into ``store`` (the project must be empty of items).

    Sizes default to SteelBench's proportions: 363 expert reviews, 102 blind
    double-annotated and 289 anchored double-annotated clips per 1,345.
    """
    check_annotator(expert_name, "expert_name")
    scale = n_items / 1345
    expert_items = round(363 * scale) if expert_items is None else expert_items
    blind_pairs = round(102 * scale) if blind_pairs is None else blind_pairs
    anchored_pairs = round(289 * scale) if anchored_pairs is None else anchored_pairs
    rng = random.Random(seed)
    diff = dict(DIFFICULTY if difficulty is None else difficulty)
    store.upsert_project(project)
    ts = now()
    version = f"simulated:{prefill_profile}"
    bench_version = f"simulated:{prefill_profile}@benchmark"
    w = _Writer(store, project, seed, ts)
    items = w.items(make_specs(n_items, seed))
    prefill, pred_id = w.predictions(items, prefill_profile, bench_version, rerun_agreement)
    plan = _plan(len(items), team, rng, blind_pairs, anchored_pairs, expert_items)
    arm_rows = [
        dict(
            project=project.name,
            item_id=item,
            arm="blind" if i in plan.blind else "anchored",
            seed=seed,
            weight=1.0,
            created_at=ts,
        )
        for i, (item, _key, _truth) in enumerate(items)
    ]
    exp_rows, ann_rows = w.annotations(items, plan, prefill, pred_id, version, diff, expert_name)
    with store.begin() as conn:
        conn.execute(tables.arm_assignments.insert(), arm_rows)
        conn.execute(tables.exposures.insert(), exp_rows)
        for k in range(0, len(ann_rows), 5000):
            conn.execute(tables.annotations.insert(), ann_rows[k : k + 5000])
    return Scenario(
        project=project.name,
        seed=seed,
        items=len(items),
        team=[asdict(m) for m in team],
        behaviours={m.behaviour: asdict(get_behaviour(m.behaviour)) for m in team},
        difficulty=diff,
        prefill_version=version,
        benchmark_version=bench_version,
        rerun_agreement=rerun_agreement,
        expert=expert_name,
        expert_items=len(plan.expert),
        blind_pairs=len(plan.blind),
        anchored_pairs=len(plan.pairs),
        counts={"annotations": len(plan.assignments), "annotation_rows": len(ann_rows)},
    )


@dataclass
class _Plan:
    """Who annotates what: blind-arm items, anchored items annotated twice, expert-reviewed
    items (indexes into the item list) and every (item, annotator, arm) assignment."""

    blind: set[int]
    pairs: set[int]
    expert: set[int]
    assignments: list[tuple[int, TeamMember, str]]


def _plan(
    n: int,
    team: tuple[TeamMember, ...],
    rng: random.Random,
    blind_pairs: int,
    anchored_pairs: int,
    expert_items: int,
) -> _Plan:
    order = list(range(n))
    rng.shuffle(order)
    blind_idx = set(order[:blind_pairs])
    anchored_idx = [i for i in order if i not in blind_idx]
    pair_idx = set(anchored_idx[:anchored_pairs])
    expert_idx = set(rng.sample(range(n), min(expert_items, n)))
    blind_team = [m for m in team if m.blind]
    weights = [m.share for m in team]
    assignments: list[tuple[int, TeamMember, str]] = []
    for i in range(n):
        if i in blind_idx:
            for m in rng.sample(blind_team, 2):
                assignments.append((i, m, "blind"))
            continue
        first = rng.choices(team, weights)[0]
        assignments.append((i, first, "anchored"))
        if i in pair_idx:
            rest = [m for m in team if m is not first]
            assignments.append((i, rng.choices(rest, [m.share for m in rest])[0], "anchored"))
    return _Plan(blind_idx, pair_idx, expert_idx, assignments)


class _Writer:
    """Writes the scenario's items and predictions and builds its annotation rows."""

    def __init__(self, store: Store, project: Project, seed: int, ts: Any):
        self.store, self.project, self.seed, self.ts = store, project, seed, ts

    def items(self, specs: list[Any]) -> list[tuple[int, str, dict[str, Any]]]:
        """Insert one SIMULATED item per clip spec; ``(id, key, truth)`` per item."""
        name = self.project.name
        with self.store.begin() as conn:
            conn.execute(
                tables.items.insert(),
                [
                    dict(
                        project=name,
                        key=f"simulated/{s.key}",
                        media_kind=self.project.media,
                        media=[],
                        media_root="",
                        content_hash=json_hash(["simulated", s.key]),
                        meta={
                            "site": s.site,
                            "camera": s.camera,
                            "visibility": s.visibility,
                            "scene_type": s.scene_type,
                            "video": s.video,
                            "simulated": True,
                        },
                        parent=s.video,
                        sim_truth=truth_of(s),
                        created_at=self.ts,
                        updated_at=self.ts,
                    )
                    for s in specs
                ],
            )
        ids = self.store.item_ids_by_key(name)
        return [(ids[f"simulated/{s.key}"], f"simulated/{s.key}", truth_of(s)) for s in specs]

    def predictions(
        self,
        items: list[tuple[int, str, dict[str, Any]]],
        profile: str,
        bench_version: str,
        rerun_agreement: float,
    ) -> tuple[dict[int, dict[str, Any]], dict[int, int]]:
        """The SIMULATED prefill and a re-run of it for the provenance gradient;
        ``(item -> prefill values, item -> prefill prediction id)``."""
        project, version = self.project, f"simulated:{profile}"
        prefill: dict[int, dict[str, Any]] = {}
        rows = []
        for item, key, truth in items:
            p = _normalize(project, simulated_answer(profile, truth, project, key))
            prefill[item] = p
            fresh = _normalize(
                project, simulated_answer(profile, truth, project, f"{key}#benchmark")
            )
            rng = random.Random(f"{self.seed}:{key}:rerun")
            b = _rerun(project, p, fresh, rerun_agreement, rng)
            for ver, vals in ((version, p), (bench_version, b)):
                rows.append(
                    dict(
                        project=project.name,
                        item_id=item,
                        model_version=ver,
                        values=vals,
                        status="parsed",
                        simulated=True,
                        created_at=self.ts,
                    )
                )
        t = tables
        with self.store.begin() as conn:
            conn.execute(t.predictions.insert(), rows)
            pred_id = dict(
                conn.execute(
                    select(t.predictions.c.item_id, t.predictions.c.id).where(
                        t.predictions.c.project == project.name,
                        t.predictions.c.model_version == version,
                    )
                ).all()
            )
        return prefill, pred_id

    def annotations(
        self,
        items: list[tuple[int, str, dict[str, Any]]],
        plan: _Plan,
        prefill: dict[int, dict[str, Any]],
        pred_id: dict[int, int],
        version: str,
        diff: dict[str, float],
        expert_name: str,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``(exposure rows, annotation rows)``: each assignment's SIMULATED decision, then
        the expert's reviews."""
        project, seed = self.project, self.seed
        exp_rows: list[dict[str, Any]] = []
        ann_rows: list[dict[str, Any]] = []
        for i, m, arm in plan.assignments:
            item, key, truth = items[i]
            shown = prefill[item] if arm == "anchored" else None
            d = decide_annotation(
                m.behaviour,
                project,
                truth,
                shown,
                random.Random(f"{seed}:{key}:{m.name}:{arm}"),
                difficulty=diff,
            )
            exp_rows.append(
                dict(
                    project=project.name,
                    item_id=item,
                    annotator=m.name,
                    arm=arm,
                    prediction_id=pred_id[item] if shown is not None else None,
                    model_version=version if shown is not None else None,
                    created_at=self.ts,
                )
            )
            ann_rows += _rows(
                project.name, item, m.name, arm, 1, d, pred_id.get(item), shown, version
            )
        for i in sorted(plan.expert):
            item, key, truth = items[i]
            d = decide_annotation(
                "expert", project, truth, None, random.Random(f"{seed}:{key}:{expert_name}")
            )
            ann_rows += _rows(project.name, item, expert_name, "review", 2, d, None, None, version)
        return exp_rows, ann_rows


def _rows(
    project: str,
    item: int,
    annotator: str,
    arm: str,
    tier: int,
    d: Any,
    pred_id: int | None,
    shown: dict[str, Any] | None,
    version: str,
) -> list[dict[str, Any]]:
    ts = now()
    sid = f"simulated:{annotator}:{item}:{arm}"
    out = []
    for name, val in d.values.items():
        if shown is None:
            origin = "manual"
        else:
            origin = "prediction" if val == shown.get(name) else "prediction-changed"
        out.append(
            dict(
                project=project,
                item_id=item,
                field_path=name,
                annotator=annotator,
                arm=arm,
                tier=tier,
                value=val,
                skipped=False,
                flagged=d.flagged,
                lead_time=d.lead_time,
                source="simulated",
                simulated=True,
                source_id=sid,
                shown_prediction_id=pred_id if shown is not None else None,
                model_version=version if shown is not None else None,
                origin=origin,
                annotated_at=ts,
                stored_at=ts,
            )
        )
    return out


__all__ = ["DEFAULT_TEAM", "DIFFICULTY", "Scenario", "TeamMember", "build_scenario"]
