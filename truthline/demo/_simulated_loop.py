"""A SIMULATED annotation loop in a workspace, for the dashboard tests and ``bench/dashboard_load.py``.

Items carry the demo's known truth; the prefill is the ``steel-v1`` simulated VLM; blind and
anchored annotators are simulated (``sim-rubber`` keeps almost every prefill: the planted
anchoring annotator); a simulated expert reviews a share of items. Media files are
written small (160x90): benchmark runs send them to the simulated models.

Unlike ``build_scenario`` (a store-only SteelBench-sized audit scenario without media),
this builds a whole workspace with media files, a gold snapshot and a benchmark run, which
is what every dashboard page needs to show something.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert

from truthline.simulate._vlm import seeded_rng, simulated_answer
from truthline.store import json_hash, now, tables

if TYPE_CHECKING:
    from truthline.workspace import Workspace

BLIND = ["sim-ann-a", "sim-ann-b", "sim-ann-c"]
ANCHORED = ["sim-ann-d", "sim-ann-e", "sim-rubber"]
KEEP = {"sim-ann-d": 0.55, "sim-ann-e": 0.6, "sim-rubber": 0.97}
PREFILL = "simulated-steel-v1"


def _norm(project, values: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, ft in project.field_types.items():
        if name in values:
            try:
                out[name] = ft.normalize(values[name])
            except Exception:
                out[name] = None
    return out


BENCH_MODELS = ["simulated:steel-strong", "simulated:steel-weak"]


def _pk(result: Any) -> int:
    """The new row's primary key (typed Optional by SQLAlchemy; an insert always has one)."""
    key = result.inserted_primary_key
    assert key is not None
    return int(key[0])


def build_simulated_loop(
    root: Path, n_items: int = 60, seed: int = 0, review_share: float = 0.5, benchmark: bool = True
) -> Workspace:
    """A workspace whose store holds items, prefill, blind/anchored/expert annotations, and
    (``benchmark``) a gold snapshot and one run of two SIMULATED models of different accuracy."""
    # imported here: importing truthline.demo stays light (the CLI lists it lazily)
    from truthline.media import import_items
    from truthline.simulate._scene import make_specs, truth_of, write_dataset
    from truthline.workspace import Workspace

    ws = Workspace.from_env(root)
    project = ws.init_project("steel-safety")
    name = project.name
    ts = now()
    media = ws.media_dir / name
    csv_path = write_dataset(media, n_clips=n_items, seed=seed, size=(160, 90))
    import_items(ws.store, project, media, metadata=csv_path, progress=False)
    specs = make_specs(n_items, seed)
    ids = ws.store.item_ids_by_key(name)
    resp, preds, anns, assign = [], [], [], []
    for k, s in enumerate(specs):
        item, truth = ids[s.key], truth_of(s)
        arm = "blind" if k % 2 == 0 else "anchored"
        assign.append(
            dict(project=name, item_id=item, arm=arm, seed=seed, weight=1.0, created_at=ts)
        )
        v = _norm(project, simulated_answer("steel-v1", truth, project, s.key))
        resp.append(
            dict(
                cache_key=json_hash(["prefill", s.key]),
                project=name,
                item_id=item,
                purpose="prefill",
                model_spec="simulated:steel-v1",
                model_alias=PREFILL,
                simulated=True,
                status="parsed",
                parsed=v,
                tokens_in=900,
                tokens_out=120,
                cost_usd=0.0021,
                created_at=ts,
                updated_at=ts,
            )
        )
        preds.append((item, v))
        who = BLIND if arm == "blind" else ANCHORED
        pair = [who[k % 3], who[(k + 1) % 3]]
        for a in pair:
            own = _norm(project, simulated_answer("steel-strong", truth, project, f"{a}:{s.key}"))
            rng = seeded_rng(a, s.key)
            if arm == "anchored":
                vals = {f: (v[f] if rng.random() < KEEP[a] else own.get(f)) for f in v}
                lead = 380.0 + (0 if vals == v else 140.0) + 40 * rng.random()
            else:
                vals, lead = own, 500.0 + 60 * rng.random()
            anns.append((item, a, arm, 1, vals, lead))
        if seeded_rng("review", s.key).random() < review_share:
            anns.append((item, "sim-expert", "review", 2, _norm(project, truth), 600.0))
    with ws.store.begin() as conn:
        conn.execute(insert(tables.arm_assignments), assign)
        r_ids = [_pk(conn.execute(insert(tables.responses).values(**r))) for r in resp]
        p_ids = {}
        for (item, v), rid in zip(preds, r_ids, strict=True):
            p_ids[item] = _pk(
                conn.execute(
                    insert(tables.predictions).values(
                        project=name,
                        item_id=item,
                        model_version=PREFILL,
                        response_id=rid,
                        values=v,
                        status="parsed",
                        simulated=True,
                        created_at=ts,
                    )
                )
            )
        rows = []
        for item, a, arm, tier, vals, lead in anns:
            for f, val in vals.items():
                rows.append(
                    dict(
                        project=name,
                        item_id=item,
                        field_path=f,
                        annotator=a,
                        arm=arm,
                        tier=tier,
                        value=val,
                        lead_time=lead,
                        source="simulated",
                        simulated=True,
                        source_id=f"sim:{arm}:{a}:{item}",
                        shown_prediction_id=p_ids[item] if arm in ("anchored", "review") else None,
                        model_version=PREFILL if arm == "anchored" else None,
                        stored_at=ts,
                    )
                )
        conn.execute(insert(tables.annotations), rows)
        conn.execute(
            insert(tables.exposures),
            [
                dict(
                    project=name,
                    item_id=item,
                    annotator=a,
                    arm=arm,
                    prediction_id=p_ids[item] if arm == "anchored" else None,
                    model_version=PREFILL if arm == "anchored" else None,
                    created_at=ts,
                )
                for item, a, arm, tier, _v, _l in anns
                if tier == 1
            ],
        )
    if benchmark:
        from truthline.audit import finalize
        from truthline.benchmark import RunConfig, run_benchmark

        finalize(ws.store, project)
        run_benchmark(ws.store, project, RunConfig(models=BENCH_MODELS), progress=False)
    return ws


__all__ = ["ANCHORED", "BENCH_MODELS", "BLIND", "KEEP", "PREFILL", "build_simulated_loop"]
