"""``truthline syndor``: SynDORBench step by step on frames rendered by ``truthline scenes``.

prepare (variants, features, the Cochran sample as a Label Studio project) -> people label it
(``truthline annotate push/pull --project dori-visibility-labels``) -> propagate (model,
items and gold of ``dori-visibility``) -> ``truthline benchmark run`` -> tables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from truthline._cli_common import JsonOpt, bounded_resamples, console, emit, workspace

app = typer.Typer(
    help="SynDORBench on rendered DORI frames: night-vision variants, discernibility labels "
    "(Cochran sample, RF/XGBoost propagation), gold, the paper's tables.",
    no_args_is_help=True,
)

LABELS = "dori-visibility-labels"


@app.command("prepare")
def prepare_cmd(
    ctx: typer.Context,
    store: Annotated[
        Path, typer.Option("--store", help="Frame store of `truthline scenes render dori`.")
    ],
    seed: Annotated[int, typer.Option("--seed", help="Noise and sampling seed.")] = 0,
    confidence: Annotated[float, typer.Option("--confidence", help="Cochran confidence.")] = 0.95,
    margin: Annotated[float, typer.Option("--margin", help="Cochran margin of error.")] = 0.05,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Ray workers.")] = 1,
    ray_address: Annotated[
        str | None, typer.Option("--ray", help="Ray cluster address (default: local).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Day / night / night-vision items with features, and the Cochran sample of the night
    and night-vision items as the labelling project dori-visibility-labels."""
    from truthline.systems.syndorbench import _discern as dis
    from truthline.systems.syndorbench import _syndor as sd

    ws = workspace(ctx)
    out = sd.items_dir(ws)
    renders = sd.renders_from_store(store)
    items = sd.make_items(renders, out, seed=seed, workers=workers, ray_address=ray_address)
    sd.save_items(items, out / "items.parquet")
    sample = sd.label_sample(items, confidence=confidence, margin=margin, seed=seed)
    if len(sample):  # a daylight-only grid has nothing for people to judge
        dis.write_label_project(ws, LABELS, sample, strata=["dori", "lighting"])
    cochran: dict[str, Any] = dict(sample.attrs.get("cochran", {}))
    info: dict[str, Any] = {
        "renders": len(renders),
        "items": len(items),
        "sample": cochran,
        "label_project": LABELS,
        "items_table": str(out / "items.parquet"),
    }

    def show() -> None:
        c = cochran
        console.print(
            f"{info['items']} items from {info['renders']} renders; Cochran sample {c.get('n')} "
            f"of {c.get('population')} night/night-vision items → project {LABELS}.\n"
            f"Next: truthline annotate push --project {LABELS} --arm blind --split 0, label, "
            f"truthline annotate pull --project {LABELS}, then truthline syndor propagate."
        )

    emit(info, as_json, show)


@app.command("simulate-labels")
def simulate_labels_cmd(
    ctx: typer.Context,
    seed: Annotated[int, typer.Option("--seed", help="Annotator noise seed.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """SIMULATED annotators label the sample (demos and tests only; never for a study)."""
    from truthline.systems.syndorbench import _sim as sim
    from truthline.systems.syndorbench import _syndor as sd

    ws = workspace(ctx)
    items = sd.load_items(sd.items_dir(ws) / "items.parquet")
    keys = {r["key"] for r in ws.store.items(LABELS)}
    n = sim.simulate_labels(ws.store, LABELS, items[items["key"].isin(keys)], seed=seed)
    emit({"simulated_annotations": n}, as_json,
         lambda: console.print(f"{n} SIMULATED annotations stored in {LABELS}"))  # fmt: skip


@app.command("propagate")
def propagate_cmd(
    ctx: typer.Context,
    seed: Annotated[int, typer.Option("--seed", help="CV folds and model seed.")] = 0,
    folds: Annotated[int, typer.Option("--folds", min=2, help="Cross-validation folds.")] = 5,
    search: Annotated[
        str, typer.Option("--search", help="Grid search: full (paper-sized) or small.")
    ] = "full",
    as_json: JsonOpt = False,
) -> None:
    """Fit RF / XGBoost / their ensemble on the human labels, label every other item
    (model-propagated), import the items into dori-visibility and write its gold."""
    from truthline.errors import TruthlineError
    from truthline.systems.syndorbench import _discern as dis
    from truthline.systems.syndorbench import _syndor as sd

    if search not in ("full", "small"):
        raise TruthlineError(f"--search {search!r}: use full or small")
    ws = workspace(ctx)
    out = sd.items_dir(ws)
    items = sd.load_items(out / "items.parquet")
    human = dis.human_labels(ws.store, LABELS) if LABELS in ws.project_names() else None
    from truthline.systems.syndorbench._discern import SMALL_GRIDS

    kw = SMALL_GRIDS if search == "small" else {}
    labelled, model = sd.fit_and_propagate(items, human, seed=seed, folds=folds, **kw)
    proj = sd.import_benchmark(ws, labelled, out)
    snap = sd.write_gold(ws.store, proj.name, labelled, model)
    sd.save_items(labelled, out / "labelled.parquet")
    summary = model.summary() if model is not None else None
    (out / "discernibility_model.json").write_text(
        json.dumps(summary, indent=2, default=str), encoding="utf-8"
    )
    counts = labelled["discernible_source"].value_counts().to_dict()
    info = {"model": summary, "gold_snapshot": snap, "label_sources": counts}

    def show() -> None:
        fit = (
            f"{model.name}: nested {folds}-fold CV (grouped by scene) accuracy {model.cv_accuracy:.3f}, macro-F1 "
            f"{model.cv_macro_f1:.3f}; "
            if model is not None
            else "no night frames: nothing to propagate; "
        )
        console.print(
            f"{fit}labels {counts}; gold snapshot {snap[:12]}.\n"
            f"Next: truthline benchmark run --project {proj.name} --model SPEC ..."
        )

    emit(info, as_json, show)


@app.command("tables")
def tables_cmd(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="A benchmark run of dori-visibility.")],
    out: Annotated[Path | None, typer.Option("--out", help="Also write Markdown here.")] = None,
    action: Annotated[
        bool, typer.Option("--action/--no-action", help="Score open action answers (embed extra).")
    ] = True,
    group: Annotated[
        list[str] | None,
        typer.Option(
            "--group",
            help="MODEL=small|medium|large|commercial (repeatable; overrides a spec's group=).",
        ),
    ] = None,
    human: Annotated[
        Path | None,
        typer.Option("--human", help="The non-expert's filled human_sample.csv (Table 6 row)."),
    ] = None,
    resamples: Annotated[
        int,
        typer.Option(
            "--resamples",
            min=0,
            callback=bounded_resamples,
            help="Resamples of the paired intervals (at most 100000, raised by "
            "TRUTHLINE_MAX_RESAMPLES).",
        ),
    ] = 1000,
    as_json: JsonOpt = False,
) -> None:
    """Presence accuracy / macro-F1 per distance, per lighting (condition and raw lighting),
    azimuth and elevation x distance, model-scale group means, compact vs larger models,
    the 80 % threshold line, open action answers by embedding similarity and the non-expert
    human row (``--human``)."""
    from truthline.benchmark import load_run
    from truthline.errors import TruthlineError
    from truthline.systems.syndorbench import _human as hu
    from truthline.systems.syndorbench import _syndor as sd
    from truthline.systems.syndorbench import _tables as tb

    ws = workspace(ctx)
    proj = ws.registered(sd.PROJECT)
    run = load_run(ws.store, run_id, proj)
    overrides = {}
    for g in group or []:
        model, eq, name = g.rpartition("=")
        if not eq or not model:
            raise TruthlineError(f"--group {g!r}: expected MODEL=GROUP")
        overrides[model] = name
    record_path = sd.items_dir(ws) / "human_sample.json"
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else None
    t = tb.syndor_tables(
        run.decisions,
        action=action,
        groups=tb.model_groups([run.manifest], overrides),
        resamples=resamples,
        human=hu.read_answers(human) if human else None,
        human_sample=record,
    )
    md = tb.tables_markdown(t)
    if out:
        out.write_text(md, encoding="utf-8")
    emit(t, as_json, lambda: console.print(md))


@app.command("human-sample")
def human_sample_cmd(
    ctx: typer.Context,
    n: Annotated[int, typer.Option("--n", min=1, help="Items to sample (the paper: 300).")] = 300,
    seed: Annotated[int, typer.Option("--seed", help="Sampling seed (recorded).")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """A uniformly random sample of dori-visibility items for one non-expert to answer
    (human_sample.csv: fill in present 1/0 and action_text), then `syndor tables RUN
    --human human_sample.csv`."""
    from truthline.systems.syndorbench import _human as hu
    from truthline.systems.syndorbench import _syndor as sd

    ws = workspace(ctx)
    rec = hu.write_sample(ws.store, sd.PROJECT, sd.items_dir(ws), n=n, seed=seed)
    emit({k: v for k, v in rec.items() if k != "keys"}, as_json, lambda: console.print(
        f"{rec['n']} of {rec['population']} items (seed {seed}) → {rec['csv']}: one person "
        "fills in present (1/0) and action_text, then `truthline syndor tables RUN --human FILE`."
    ))  # fmt: skip


@app.command("simulate-human")
def simulate_human_cmd(
    ctx: typer.Context,
    seed: Annotated[int, typer.Option("--seed", help="SIMULATED answer noise seed.")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """SIMULATED non-expert answers to human_sample.csv (demos and tests only; never for a
    study): writes human_answers.SIMULATED.csv."""
    from truthline.systems.syndorbench import _sim_human as sh
    from truthline.systems.syndorbench import _syndor as sd

    ws = workspace(ctx)
    d = sd.items_dir(ws)
    path = sh.simulate_non_expert(ws.store, sd.PROJECT, d / "human_sample.csv", seed=seed)
    emit({"simulated_answers": str(path)}, as_json,
         lambda: console.print(f"SIMULATED non-expert answers → {path}"))  # fmt: skip
