"""`truthline audit`: provenance audit, exclusions, gold with provenance, review queue, planner."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from truthline._cli_common import (
    JsonOpt,
    ProjectOpt,
    console,
    emit,
    output_path,
    resamples_option,
    whole_names,
    ws_project,
)
from truthline.errors import TruthlineError

app = typer.Typer(
    help="Provenance audit (blind vs anchored), annotator exclusion, gold with provenance.",
    no_args_is_help=True,
)

ResamplesOpt = Annotated[int | None, resamples_option("project audit.resamples")]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Bootstrap seed (default: project).")]


@app.command("run")
def run_cmd(
    ctx: typer.Context,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Write the report to this .md or .html file."),
    ] = None,
    gradient_model: Annotated[
        str | None,
        typer.Option(
            "--gradient-model",
            help="Prediction model_version scored in the provenance gradient (default: a "
            "re-run of the prefill, <prefill>@..., when stored; else the prefill itself, "
            "which makes the VLM-sourced slice self-referential). The dashboards use the "
            "same default.",
        ),
    ] = None,
    model_version: Annotated[
        str | None,
        typer.Option("--model-version", help="The prefill v (default: the version shown)."),
    ] = None,
    resamples: ResamplesOpt = None,
    seed: SeedOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Override, direction table, anchoring bias, VLM kappa, blind vs anchored agreement,
    time, flags, safety direction, residual risk, gradient and exclusion signals — with CIs."""
    from truthline.audit import run_audit, to_html, to_markdown

    ws, proj = ws_project(ctx, project)
    if as_json:
        res = run_audit(
            ws.store,
            proj,
            resamples=resamples,
            seed=seed,
            model_version=model_version,
            gradient_model=gradient_model,
        )
    else:
        with console.status(f"auditing {proj.name} (bootstrap CIs)..."):
            res = run_audit(
                ws.store,
                proj,
                resamples=resamples,
                seed=seed,
                model_version=model_version,
                gradient_model=gradient_model,
            )
    data = res.as_dict()
    if report is not None:
        suffix = report.suffix.lower()
        if suffix not in (".md", ".html", ".htm"):
            raise TruthlineError(f"--report {report}: use a .md or .html file name")
        report = output_path(report, "--report")
        text = to_html(data) if suffix in (".html", ".htm") else to_markdown(data)
        report.write_text(text, encoding="utf-8")

    def render() -> None:
        _summary(data)
        if report is not None:
            console.print(f"[green]report written[/] {report}")

    emit(data, as_json, render)


def _pct(ci: dict | None) -> str:
    from truthline.stats import fmt_ci

    return fmt_ci(ci, digits=1, scale=100.0, unit="%", missing="–")


def _note(*sources: object) -> None:
    """The thin-design note under a table (nothing when every design is adequate)."""
    from truthline.stats import design_note

    note = design_note(sources)
    if note:
        console.print(f"[yellow]{note}[/]")


def _excluded_text(rec: dict) -> str:
    """``EXCLUDED: reason (by who, when)`` for the annotators table."""
    when = str(rec["decided_at"])[:16].replace("T", " ") if rec.get("decided_at") else None
    extra = ", ".join(str(x) for x in (rec.get("decided_by"), when) if x)
    # escaped: a reason's "[...]" is text, not markup
    return f"[magenta]EXCLUDED[/]: {escape(str(rec.get('reason')))}" + (
        f" ({escape(extra)})" if extra else ""
    )


def _summary(d: dict) -> None:
    table = Table(
        "field",
        "n",
        "harmful anchoring",
        "productive override",
        "anchoring bias (pp)",
        title=f"{d['project']}: direction per field",
    )
    for f, t in d["direction"]["by_field"].items():
        bias = d["anchoring_bias"][f]["bias_pp"]["point"]
        table.add_row(
            f,
            str(t["n"]),
            _pct(t["harmful_anchoring"]["rate"]),
            _pct(t["productive_override"]["rate"]),
            "–" if bias is None else f"{bias:+.1f}",
        )
    console.print(whole_names(table))
    _note(d["direction"]["by_field"], d["anchoring_bias"])
    sig = Table("annotator", "override rate", "VLM κ", "signals", "status", title="annotators")
    records = d.get("excluded_annotators") or {}
    sims = set(d.get("simulated_annotators") or ())
    for a, s in d["signals"].items():
        k = d["vlm_kappa"]["by_annotator"].get(a, {}).get("point")
        sig.add_row(
            escape(a) + (" [yellow]SIMULATED[/]" if a in sims else ""),
            _pct(d["override"]["by_annotator"][a]["override_rate"]),
            "–" if k is None else f"{k:.3f}",
            ("[red]FLAGGED[/] " if s["flagged"] else "") + ", ".join(s["fired"]),
            _excluded_text(records[a]) if s.get("excluded") and a in records else "retained",
        )
    console.print(whole_names(sig))
    if records:
        console.print(
            "excluded annotators keep their rows above; gold and the team figures leave them out"
        )
    _note(d["override"]["by_annotator"], d["vlm_kappa"]["by_annotator"])
    g = d["gradient"]
    console.print(
        f"gradient ({g['predictions']}): blind {_pct(g['blind'])} -> anchored "
        f"{_pct(g['anchored'])} -> VLM-sourced {_pct(g['vlm_sourced'])}"
    )
    _note(g)
    for w in d["warnings"]:
        console.print(f"[yellow]warning[/] {w}")


@app.command("import-table")
def import_cmd(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            help="Long CSV or Parquet: item, field, annotator, "
            "value [, arm, tier, shown_prediction, model_version, "
            "lead_time, expert, flagged]."
        ),
    ],
    create_items: Annotated[
        bool,
        typer.Option(
            "--create-items/--no-create-items",
            help="Create an item (without media) for each key the project does not have; "
            "by default such keys are refused, as a typo would become a phantom item.",
        ),
    ] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Load labels made in any tool; every row problem is reported with line and column."""
    from truthline.audit import import_table

    ws, proj = ws_project(ctx, project)
    rep = import_table(ws.store, proj, file, create_items=create_items)
    emit(
        rep.as_dict(),
        as_json,
        lambda: console.print(
            f"[green]imported[/] {rep.rows} rows: {rep.annotations} annotations "
            f"({', '.join(rep.annotators)}), {rep.predictions} predictions, "
            f"{rep.expert_reviews} expert reviews, {rep.items_created} items created, "
            f"{rep.replaced} replaced"
        ),
    )


@app.command("exclude")
def exclude_cmd(
    ctx: typer.Context,
    annotator: Annotated[str, typer.Argument(help="Annotator name as stored.")],
    reason: Annotated[str, typer.Option("--reason", help="Why (recorded with who and when).")] = "",
    undo: Annotated[bool, typer.Option("--undo", help="Withdraw an active exclusion.")] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record the decision to exclude an annotator (who, when, why)."""
    from truthline.audit import exclude_annotator

    ws, proj = ws_project(ctx, project)
    if not undo and not reason.strip():
        raise typer.BadParameter("give the reason with --reason TEXT", param_hint="--reason")
    rec = exclude_annotator(ws.store, proj, annotator, reason, undo=undo)
    emit(
        rec,
        as_json,
        lambda: console.print(
            f"[green]withdrawn[/] {rec['withdrawn']} exclusion(s) of {annotator}"
            if undo
            else f"[green]excluded[/] {annotator} ({rec['items']} items) by {rec['decided_by']}: {reason}"
        ),
    )


@app.command("finalize")
def finalize_cmd(
    ctx: typer.Context,
    excluded: Annotated[
        str,
        typer.Option(
            "--excluded", help="Items left without labels after exclusion: requeue | drop."
        ),
    ] = "requeue",
    single_blind: Annotated[
        str, typer.Option("--single-blind", help="One blind label: accept | adjudicate.")
    ] = "accept",
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write gold with provenance as a hashed snapshot; disagreements go to adjudication."""
    from truthline.audit import GoldPolicy, finalize

    if excluded not in ("requeue", "drop"):
        raise typer.BadParameter("requeue or drop", param_hint="--excluded")
    if single_blind not in ("accept", "adjudicate"):
        raise typer.BadParameter("accept or adjudicate", param_hint="--single-blind")
    ws, proj = ws_project(ctx, project)
    res = finalize(ws.store, proj, policy=GoldPolicy(excluded, single_blind))  # type: ignore[arg-type]
    data = res.as_dict()
    data.pop("pending")
    c = data["counts"]

    def render() -> None:
        console.print(f"[green]gold snapshot[/] {res.hash}")
        console.print(
            f"{c['values']} values over {c['items']} items; by provenance "
            f"{c['by_provenance']}; pending {c['pending']}; dropped {c['dropped_items']}; "
            f"unusable clips left out {c.get('unusable_items', 0)} "
            f"{c.get('unusable_by_reason') or ''}"
        )

    emit(data, as_json, render)


@app.command("queue")
def queue_cmd(
    ctx: typer.Context,
    budget: Annotated[int, typer.Option("--budget", min=1, help="Expected expert reviews.")] = 50,
    seed: Annotated[int, typer.Option("--seed", help="Sampling seed.")] = 0,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Risk-ordered expert-review sample with inverse-probability weights."""
    from truthline.audit import review_queue

    ws, proj = ws_project(ctx, project)
    q = review_queue(ws.store, proj, budget=budget, seed=seed)
    rows = [x.__dict__ for x in q]

    def render() -> None:
        t = Table(
            "item",
            "risk",
            "P(review)",
            "weight",
            "selected",
            title=f"expert review queue ({sum(x.selected for x in q)} selected)",
        )
        for x in q[:30]:
            t.add_row(
                x.key,
                f"{x.risk:.2f}",
                f"{x.probability:.3f}",
                f"{x.weight:.1f}",
                "yes" if x.selected else "",
            )
        console.print(whole_names(t))

    emit(rows, as_json, render)


@app.command("plan")
def plan_cmd(
    rate: Annotated[float, typer.Option("--rate", help="Expected rate (or observed agreement).")],
    half_width: Annotated[float, typer.Option("--half-width", help="Target CI half-width.")],
    level: Annotated[float, typer.Option("--level", help="CI level.")] = 0.95,
    decisions_per_item: Annotated[
        float, typer.Option("--decisions-per-item", help="Decisions per item.")
    ] = 1.0,
    icc: Annotated[float, typer.Option("--icc", help="Within-item correlation.")] = 0.0,
    kappa_chance: Annotated[
        float | None, typer.Option("--kappa-chance", help="p_e, to plan a kappa's CI instead.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Items needed (expert reviews or blind double-annotated items) for a target CI."""
    from truthline.audit import plan_sample_size

    p = plan_sample_size(
        rate=rate,
        half_width=half_width,
        level=level,
        decisions_per_item=decisions_per_item,
        icc=icc,
        kappa_chance=kappa_chance,
    )
    emit(p.as_dict(), as_json, lambda: console.print(p.note))


@app.command("self-check")
def self_check_cmd(
    ctx: typer.Context,
    model_version: Annotated[str, typer.Argument(help="The model version to be evaluated.")],
    snapshot: Annotated[str | None, typer.Option("--snapshot", help="Gold hash.")] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Warn when a model would be evaluated on gold it prefilled."""
    from truthline.audit import self_reference

    ws, proj = ws_project(ctx, project)
    r = self_reference(ws.store, proj.name, model_version, snapshot)
    emit(
        r,
        as_json,
        lambda: console.print(
            f"[yellow]warning[/] {r['warning']}"
            if r["warning"]
            else f"[green]ok[/] no gold value of snapshot {r['snapshot']} is a retained prefill of "
            f"{model_version}"
        ),
    )


@app.command("simulate")
def simulate_cmd(
    ctx: typer.Context,
    items: Annotated[int, typer.Option("--items", min=10, help="Number of clips.")] = 1345,
    seed: Annotated[int, typer.Option("--seed", help="Scenario seed.")] = 0,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a SIMULATED planted-behaviour scenario (items, prefill, annotations, expert)."""
    from truthline.simulate import build_scenario

    ws, proj = ws_project(ctx, project)
    if ws.store.stage_counts(proj.name).items:
        raise TruthlineError(
            f"project {proj.name!r} already has items; simulate into an empty workspace"
        )
    with console.status("writing SIMULATED scenario...") if not as_json else _null():
        sc = build_scenario(ws.store, proj, n_items=items, seed=seed)
    emit(
        sc.as_dict(),
        as_json,
        lambda: console.print(
            f"[green]SIMULATED scenario[/] {sc.items} items, {sc.counts['annotations']} annotations, "
            f"{sc.expert_items} expert reviews; team "
            + ", ".join(f"{m['name']}={m['behaviour']}" for m in sc.team)
            + f"; gradient model: {sc.benchmark_version}"
        ),
    )


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
