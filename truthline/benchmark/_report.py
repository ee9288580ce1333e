"""``benchmark report``: leaderboard with CIs and cost, per-condition table, per-class
heatmap, safety regime scatter, calibration plot, paired-difference matrix and the
provenance comparison, built as a ``truthline.report`` model: the HTML is one
self-contained file (plots embedded), the Markdown links the PNG copies, and tables are
also written as CSV. Every table row shows its n and every metric name is in the glossary.

Everything is computed by the same result functions the CLI and dashboards call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from truthline._registry import Registry
from truthline.benchmark._across import across_metrics
from truthline.benchmark._baselines import load_project_rules, rule_applies
from truthline.benchmark._mapper import MAPPER_NOTE, MappedEntry, mapped_entries
from truthline.benchmark._references import compare_labels
from truthline.benchmark._results import compare_gold, leaderboard, paired_matrix
from truthline.benchmark._types import BoardEntry, GoldComparison, PairedMatrix, as_plain
from truthline.project import Project
from truthline.report import CONTRAST, Figure, Paragraph, Report, Section, render_html
from truthline.report import render_markdown as render_md
from truthline.stats import fmt_ci
from truthline.store import Store
from truthline.vocab import Slice

_fmt_ci = fmt_ci  # the name tests import: an interval as the report shows it


def build_report(
    store: Store, project: Project, run_ids: list[str], *, resamples: int | None = None
) -> dict[str, Any]:
    """The report's content under the keys of ``report.json``: typed results (the
    leaderboard's ``BoardEntry``s, ``GoldComparison``s, ``PairedMatrix``es) and the metrics
    across models as plain data; ``as_plain`` of it is what ``--json`` prints."""
    board = leaderboard(store, project, run_ids, resamples=resamples)
    gold_cmp = [compare_gold(store, project, r, resamples=resamples) for r in run_ids]
    labels_cmp = [compare_labels(store, project, r, resamples=resamples) for r in run_ids]
    paired = [paired_matrix(store, project, r, resamples=resamples) for r in run_ids]
    across = [across_metrics(store, project, r, resamples=resamples) for r in run_ids]
    return {
        "runs": run_ids,
        "leaderboard": board,
        "compare_gold": gold_cmp,
        "compare_labels": labels_cmp,
        "paired": paired,
        "across": across,
        "mapped": mapped_entries(store, run_ids),
    }


def _label(m: BoardEntry) -> str:
    """An entry as the report names it: ``"m (v3, gt) [SIMULATED]"``."""
    return m.key.label(simulated=m.simulated)


def _items(ci: dict[str, Any] | None) -> int | None:
    return None if not ci or ci.get("n") is None else int(ci["n"])


def _board_n(m: BoardEntry) -> str:
    """``"172 decisions / 16 items"``: what a model's accuracy rests on."""
    items = _items(m.accuracy)
    return f"{m.decisions} decisions" + (f" / {items} items" if items is not None else "")


@dataclass
class ReportContext:
    """What a section builder may read: the store and project (to compute more), the runs,
    the results of ``build_report`` (``board``, ``gold``, ``paired`` typed; ``data["across"]``
    plain; a builder may add its own key to ``data``: it lands in ``report.json``) and the
    folder for PNG/CSV files."""

    store: Store
    project: Project
    run_ids: list[str]
    data: dict[str, Any]
    files: Path
    resamples: int | None = None

    @property
    def board(self) -> list[BoardEntry]:
        """The leaderboard of the runs, best accuracy first."""
        return self.data["leaderboard"]

    @property
    def gold(self) -> list[GoldComparison]:
        """Each run's scores by gold provenance (``compare_gold``)."""
        return self.data["compare_gold"]

    @property
    def labels(self) -> list[GoldComparison]:
        """Each run's scores against each arm's own labels (``compare_labels``)."""
        return self.data.get("compare_labels", [])

    @property
    def paired(self) -> list[PairedMatrix]:
        """Each run's paired-difference matrix."""
        return self.data["paired"]


SectionBuilder = Callable[[ReportContext], list[Section]]


report_section: Registry[SectionBuilder] = Registry(
    "benchmark report section", entry_point_group="truthline.report_sections"
)
"""Report sections other packages contribute (name -> a ``SectionBuilder``), e.g. a paper
system's tables: each returns no sections when the runs are not its kind. They appear after
the built-in per-model sections, in name order; a plug-in declares its builder in the
entry-point group ``truthline.report_sections`` (imported when a report is built)."""

MetricSectionBuilder = Callable[[dict[str, Any], str], list[Section]]
metric_section: Registry[MetricSectionBuilder] = Registry(
    "benchmark metric section", entry_point_group="truthline.metric_sections"
)
"""How a metric across models that another package defines is shown: metric name ->
``fn(result, run_id) -> sections`` (entry-point group ``truthline.metric_sections``)."""


def _plugin_sections(ctx: ReportContext) -> list[Section]:
    """The sections registered in ``report_section`` (plug-ins imported here)."""
    return [s for _, build in report_section.items() for s in build(ctx)]


def write_report(
    store: Store, project: Project, run_ids: list[str], out: Path, *, resamples: int | None = None
) -> dict[str, Any]:
    """Write ``out`` (.md or .html) with PNG plots and CSV tables in ``<stem>_files/``; the
    HTML embeds its plots, so it is one self-contained file."""
    import matplotlib

    matplotlib.use("Agg")
    data = build_report(store, project, run_ids, resamples=resamples)
    out = Path(out)
    files = out.parent / f"{out.stem}_files"
    files.mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(store, project, run_ids, data, files, resamples)
    sections = [s for build in SECTIONS for s in build(ctx)]
    _write_csvs(sections, files)
    report = _assemble(project, sections, data)
    html_out = out.suffix.lower() in (".html", ".htm")
    out.write_text(render_html(report) if html_out else render_md(report), encoding="utf-8")
    plain = as_plain(data)  # the JSON edge
    (files / "report.json").write_text(json.dumps(plain, indent=2, default=str), encoding="utf-8")
    return {"report": str(out), "files": str(files), **plain}


def _write_csvs(sections: list[Section], files: Path) -> None:
    """Every section's table as ``<files>/<title>.csv`` (the rows as the report shows them)."""
    for s in sections:
        if s.tables and s.tables[0].rows:
            pd.DataFrame(s.tables[0].records()).to_csv(files / f"{_safe(s.title)}.csv", index=False)


def _assemble(project: Project, sections: list[Section], data: dict[str, Any]) -> Report:
    """The report model: the sections, then how to read the provenance contrast."""
    report = Report(
        f"Benchmark report: {project.title or project.name}",
        [s.model() for s in sections],
        simulated=any(m.simulated for m in data["leaderboard"]),
    )
    if data["compare_gold"]:
        report.sections.append(
            Section(
                "How to read this",
                [Paragraph(CONTRAST)],
                metrics=["anchoring_bias", "gold_slice_inflation"],
            )
        )
    return report


def _leaderboard_sections(ctx: ReportContext) -> list[Section]:
    """Accuracy with its CI and the project's headline metrics, one row per model entry."""
    board, project = ctx.board, ctx.project
    shown = [k for k in _BOARD_METRICS if any(k in m.metrics for m in board)]
    rows = [
        {
            "model": _label(m) + _mapped_by(ctx, m),
            "accuracy [95% CI]": fmt_ci(m.accuracy),
            **{
                k: (f"{v:.3f}" if isinstance(v, float) else "—")
                for k in _BOARD_METRICS
                for v in [m.headline(k)]
                if k in m.metrics
            },
            "coverage": f"{m.coverage:.3f}",
            "format rate": f"{m.format_rate:.3f}",
            "failures": m.model_failure,
            "infra missing": m.infra_missing,
            "cost USD": f"{m.cost_usd:.4f}",
            "run": m.run_id,
        }
        for m in board
    ]
    return [
        Section.of(
            "Leaderboard",
            "Accuracy over every target decision with a "
            f"{'cluster' if project.benchmark.cluster else 'item'} bootstrap 95% CI "
            f"({_resamples(board)} resamples, seed {project.benchmark.seed}; the clusters and "
            "strata each interval resampled are shown beside it, and with fewer than 20 "
            "clusters it is a cluster jackknife-t, marked ⚠). Model failures are "
            "scored wrong; infrastructure-missing answers are excluded (coverage)."
            + _partial_rules_note(board, project),
            rows,
            _plot_leaderboard(board, ctx.files / "leaderboard.png"),
            [m.accuracy for m in board],
            n=[_board_n(m) for m in board],
            metrics=[
                "accuracy",
                *shown,
                "coverage",
                "format_rate",
                "model_failure",
                "infra_missing",
                "cost_usd",
            ],
        )
    ]


def _partial_rules_note(board: list[BoardEntry], project: Project) -> str:
    """A sentence naming the rule baselines that apply to part of the items only: their
    leaderboard accuracy counts every decision, the items they cannot answer as wrong, so
    it is not their score; that is shown on their support where a section computes it."""
    load_project_rules(project)
    rules = sorted({m.key.model for m in board if m.key.is_rule and rule_applies(m.key.model)})
    if not rules:
        return ""
    return (
        f" {', '.join(rules)} appl{'ies' if len(rules) == 1 else 'y'} to part of the items "
        "only: the accuracy here counts the rest as wrong; the score on the rule's own "
        "support, with its coverage, is in the rule-baseline rows below."
    )


def _condition_sections(ctx: ReportContext) -> list[Section]:
    """Accuracy per condition (severity ladder) and nAUDC."""
    board = ctx.board
    cond = _conditions(board)
    if not cond:
        return []
    with_cond = [m for m in board if (m.metrics.get("naudc") or {}).get("per_condition")]
    return [
        Section.of(
            "Accuracy per condition",
            "Conditions by increasing severity; n: the decisions over all conditions.",
            cond,
            _plot_conditions(cond, ctx.files / "conditions.png"),
            [(m.metrics.get("naudc") or {}).get("value") for m in board],
            n=[
                sum(v["n"] for v in m.metrics["naudc"]["per_condition"].values()) for m in with_cond
            ],
            metrics=["accuracy", "naudc"],
        )
    ]


def _per_class_sections(ctx: ReportContext) -> list[Section]:
    """Class x model accuracy heatmap of the action field."""
    heat, heat_n = _per_class(ctx.board, ctx.project)
    if not heat:
        return []
    return [
        Section.of(
            f"Per-class accuracy ({ctx.project.benchmark.action_field or 'first field'})",
            "n: the decisions whose gold is that class.",
            heat,
            _plot_heatmap(heat, ctx.files / "per_class.png"),
            n=heat_n,
            metrics=["per_class"],
        )
    ]


def _safety_sections(ctx: ReportContext) -> list[Section]:
    """Safety recall vs false-alarm share."""
    saf = _safety(ctx.board)
    if not saf:
        return []
    fig = _plot_safety(saf, ctx.files / "safety.png")
    n = [r.pop("_n") for r in saf]
    sources = [c for r in saf for c in r.pop("_ci")]
    for r in saf:
        r.pop("_xy")
    return [
        Section.of(
            "Safety operating regime",
            "False-alarm share of safety errors vs safety recall, each with its interval "
            "(a share over a few errors is wide, never exact); n: the true violations.",
            saf,
            fig,
            sources,
            n=n,
            metrics=["safety_recall", "false_alarm_share"],
        )
    ]


def _calibration_sections(ctx: ReportContext) -> list[Section]:
    """Reliability plot of stated confidence."""
    cal = _calibration(ctx.board)
    if not cal:
        return []
    return [
        Section.of(
            "Calibration",
            "Mean stated confidence vs accuracy per bin (ECE, 10 equal-width bins).",
            [],
            _plot_calibration(cal, ctx.files / "calibration.png"),
            metrics=["ece"],
        )
    ]


def _four_way_sections(ctx: ReportContext) -> list[Section]:
    """Read/ground decomposition (reading field x grounding field)."""
    fw = _four_way(ctx.board)
    if not fw:
        return []
    b = ctx.project.benchmark
    return [
        Section.of(
            "Read/ground decomposition",
            f"{b.read_field} (C) and {b.ground_field} (G) "
            "per item: counts (shares); grounding accuracy given a correct reading.",
            fw,
            sources=[(m.metrics.get("four_way") or {}) for m in ctx.board],
            n=[r.pop("_n") for r in fw],
            metrics=["four_way"],
        )
    ]


def _frame_density_sections(ctx: ReportContext) -> list[Section]:
    """Accuracy by frames per clip (``benchmark run --frames``), per run that has it."""
    from truthline.benchmark._frames import density_table, frame_density

    out = []
    for rid in ctx.run_ids:
        fd = frame_density(ctx.store, ctx.project, rid, resamples=ctx.resamples)
        if fd is None:
            continue
        ctx.data.setdefault("frame_density", []).append(fd)
        rows, ns = density_table(fd)
        what = f"{fd.field} decisions" if fd.field else "every target decision"
        out.append(
            Section.of(
                f"Accuracy by frames per clip ({rid})",
                f"The same clips re-sampled from their source videos at k frames (positions "
                f"i/(k-1) of the clip; k = 1: its centre), all else fixed; accuracy over "
                f"{what}, and the paired change from {fd.native} frames (re-sampled, else "
                "the stored frames) on common decisions with the same bootstrap design; "
                "n: the decisions.",
                rows,
                _plot_frames(fd, ctx.files / f"frames_{_safe(rid)}.png"),
                [r.accuracy for r in fd.rows] + [r.change_pp for r in fd.rows],
                n=ns,
                metrics=["accuracy", "paired_difference"],
            )
        )
    return out


def _across_run_sections(ctx: ReportContext) -> list[Section]:
    """The metrics across models (ensemble, routing, rank transfer, ...) of each run."""
    return [s for a in ctx.data["across"] for s in across_sections(a)]


def _paired_sections(ctx: ReportContext) -> list[Section]:
    """Paired-difference matrix per run (a rule that applies to part of the items is left
    out: on identical decisions it would be charged with the ones it cannot answer)."""
    out = []
    load_project_rules(ctx.project)
    for p in ctx.paired:
        partial = sorted({e.model for e in p.entries if e.is_rule and rule_applies(e.model)})
        if partial:
            kept = tuple(c for c in p.pairs if not {c.a.model, c.b.model} & set(partial))
            p = replace(p, pairs=kept)
        if not p.pairs:
            continue
        left_out = (
            f" Left out: {', '.join(partial)}, which appl{'ies' if len(partial) == 1 else 'y'} "
            "to part of the items only (compared on its support where a section does so)."
            if partial
            else ""
        )
        prow = [
            {
                "a": c.a.id,
                "b": c.b.id,
                "n decisions": c.n,
                "a - b [95% CI]": fmt_ci(c.difference),
                "distinguishable": "yes" if c.distinguishable else "no",
            }
            for c in p.pairs
        ]
        out.append(
            Section.of(
                f"Paired differences ({p.run_id})",
                "Paired bootstrap on identical decisions; distinguishable only when the 95% CI "
                "excludes zero." + left_out,
                prow,
                _plot_paired(p, ctx.files / f"paired_{_safe(p.run_id)}.png"),
                [p.as_dict()],  # the design note reads the intervals in the JSON form
                n=[c.n for c in p.pairs],
                metrics=["paired_difference"],
                n_column="n decisions",
            )
        )
    return out


def _mapped_of(ctx: ReportContext, m: BoardEntry) -> MappedEntry | None:
    for e in ctx.data.get("mapped", []):
        if e.run_id == m.run_id and (e.model, e.variant, e.condition, e.control) == m.key:
            return e
    return None


def _mapped_by(ctx: ReportContext, m: BoardEntry) -> str:
    """`` — mapped by <mapper>`` for an entry whose free-form answers a mapper mapped."""
    e = _mapped_of(ctx, m)
    return f" — {e.label}" if e is not None else ""


def _mapped_sections(ctx: ReportContext) -> list[Section]:
    """Free-form (mapped) entries: accuracy beside the mapper's parse rate and noise floor."""
    rows, n = [], []
    for m in ctx.board:
        e = _mapped_of(ctx, m)
        if e is None:
            continue
        p, z = e.parse, e.noise
        rate = p.get("rate")
        rows.append(
            {
                "model": _label(m),
                "mapped by": e.label.removeprefix("mapped by "),
                "mapped accuracy [95% CI]": fmt_ci(m.accuracy),
                "mapper parse rate": "—" if rate is None else f"{rate:.3f}",
                "mapper failures": f"{p.get('failures', 0)} of {p.get('asked', 0)}",
                "model failures": m.model_failure,
                "mapper noise [95% CI]": fmt_ci(z.get("value")),
                "noise decisions": z.get("decisions", 0),
                "run": m.run_id,
            }
        )
        n.append(_board_n(m))
    if not rows:
        return []
    return [
        Section.of(
            "Mapped (free-form) entries",
            "These entries answered in prose, which a mapper model mapped to the fields before "
            "scoring. Mapper noise: the share of target decisions the same mapper gets wrong "
            "when it maps the gold itself, written as a fixed plain-text description (a round "
            "trip; Wilson 95% interval over items). A mapper failure (no parseable mapping) is "
            "scored wrong and counted apart from the model's failures. " + MAPPER_NOTE,
            rows,
            n=n,
            metrics=["accuracy", "format_rate", "model_failure"],
        )
    ]


def _compare_gold_sections(ctx: ReportContext) -> list[Section]:
    """Scores by label provenance (the paper's design, where the store holds the labels),
    then by gold provenance, per run."""
    by_labels = [_compare_gold_section(g, ctx.files) for g in ctx.labels if g.models]
    return by_labels + [_compare_gold_section(g, ctx.files) for g in ctx.gold]


SECTIONS: list[SectionBuilder] = [
    _leaderboard_sections,
    _condition_sections,
    _per_class_sections,
    _safety_sections,
    _calibration_sections,
    _four_way_sections,
    _frame_density_sections,
    _mapped_sections,
    # add a section here: ``def _x_sections(ctx: ReportContext) -> list[Section]`` (empty
    # list when the runs have nothing for it), listed where it should appear in the report
    _plugin_sections,  # registered sections: the paper systems' tables (their runs only)
    _across_run_sections,
    _paired_sections,
    _compare_gold_sections,
]
"""The report's sections in order: each builder returns its sections (none when its data
is absent). A builder needs nothing else: ``write_report`` writes every table's CSV, and
the HTML and Markdown render every section."""


def _compare_gold_section(g: GoldComparison, files: Path) -> Section:
    """Scores by gold provenance: gold-slice inflation per model."""
    grow = [
        {
            "model": m.model,
            "blind": fmt_ci(m.blind),
            "anchored": fmt_ci(m.anchored),
            "vlm-sourced": fmt_ci(m.vlm_sourced),
            "inflation anchored (pp)": _fmt_pp(m.inflation_anchored_pp),
            "inflation vlm-sourced (pp)": _fmt_pp(m.inflation_vlm_sourced_pp),
        }
        for m in g.models
    ]
    labels = g.reference == "labels"
    what = "labels" if labels else "gold"
    mean = g.mean_inflation_pp
    ci = g.mean_inflation_anchored_ci
    text = (
        f"Higher on anchored {what}: {g.higher_on_anchored} models; mean inflation "
        + (_fmt_pp(ci) if ci else f"{mean:+.1f}")
        + " pp."
        if mean is not None
        else f"No blind/anchored split in these {what}."
    )
    if labels:
        text += (
            " Same answers, different references: every retained tier-1 annotator's labels are "
            "a reference of their own arm (blind, anchored; VLM-sourced = the anchored labels "
            "that kept the prefill's value), one paired draw over the design for all models."
            " n: the items of each slice."
        )
    else:
        text += " n: the items of each gold slice (blind / anchored / VLM-sourced)."
    slices = (Slice.BLIND, Slice.ANCHORED, Slice.VLM_SOURCED)
    return Section.of(
        f"Scores by {'label' if labels else 'gold'} provenance ({g.run_id})",
        text,
        grow,
        _plot_provenance(g, files / f"provenance_{what}_{_safe(g.run_id)}.png"),
        [g.as_dict()],  # the design note reads the intervals in the JSON form
        n=[
            " / ".join("–" if _items(m.ci(s)) is None else str(_items(m.ci(s))) for s in slices)
            for m in g.models
        ],
        metrics=["accuracy", "gold_slice_inflation"],
    )


_BOARD_METRICS = (
    "macro_f1",
    "dwa",
    "safety_recall",
    "crg",
    "naudc",
    "ece",
    "drs",
    "tolerance",
    "set_match",
    "balanced",
    "four_way",
)
"""Per-model headline metrics shown as leaderboard columns when the project names them."""


def _four_way(board: list[BoardEntry]) -> list[dict[str, Any]]:
    rows = []
    for m in board:
        fw = m.metrics.get("four_way") or {}
        if fw.get("counts"):
            rows.append(
                {
                    "model": _label(m),
                    **{k: f"{v} ({fw['shares'][k]:.2f})" for k, v in fw["counts"].items()},
                    "read": fmt_ci(fw.get("read_accuracy")),
                    "ground | read correct": fmt_ci(fw.get("value")),
                    "_n": sum(fw["counts"].values()),
                }
            )
    return rows


def across_sections(a: dict[str, Any]) -> list[Section]:
    """Sections for the metrics across models of one run (those the project names), each
    table row with its n: the report, ``benchmark across`` and the dashboard show these."""
    rid, mets = a["run_id"], a["metrics"]
    out: list[Section] = []
    replaced = _superseded(mets)
    for name, r in mets.items():
        if name in replaced:
            continue
        start = len(out)
        _across_section(out, name, r, rid)
        for sec in out[start:]:
            sec.sources = [r]
            sec.metrics = [name]
    return out


def _across_section(out: list[Section], name: str, r: dict[str, Any], rid: str) -> None:
    """Append the section(s) of one metric across models (its note when it has no value)."""
    if r.get("note"):
        out.append(Section.of(f"{_TITLES.get(name, name)} ({rid})", r["note"]))
        return
    build = _ACROSS_SECTIONS.get(name)
    if build is None and name in metric_section:
        build = metric_section.get(name)
    if build is not None:
        out.extend(build(r, rid))


def _routing_oracle_section(r: dict[str, Any], rid: str) -> list[Section]:
    """Each environment's best model and the routed accuracy."""
    best = r["best_single"]
    ins = r.get("in_sample") or {}
    optimistic = f" {ins['label']}: {fmt_ci(ins['routed'])}." if ins.get("routed") else ""
    return [
        Section.of(
            f"Routing oracle ({rid})",
            f"Each {r['environment']} routed to its best model, "
            f"{r.get('method', 'cross-fitted')}: accuracy "
            f"{fmt_ci(r['value'])} vs best single model {best['model']} "
            f"{fmt_ci(best['accuracy'])} (gain {100 * r['gain']:+.1f} pp, "
            f"{r['n']} common decisions).{optimistic} The table shows the in-sample choices.",
            [
                {
                    r["environment"]: e,
                    "best model": m,
                    "accuracy there": (r.get("accuracy_by_environment") or {}).get(e),
                }
                for e, m in r["best_by_environment"].items()
            ],
            n=[(r.get("n_by_environment") or {}).get(e) for e in r["best_by_environment"]],
            n_column="n decisions",
        )
    ]


def _ensemble_section(r: dict[str, Any], rid: str) -> list[Section]:
    """Majority vote of the models, per field."""
    best = r["best_single"]
    return [
        Section.of(
            f"Majority-of-models ensemble ({rid})",
            f"Majority vote of {', '.join(r['members'])}: accuracy "
            f"{fmt_ci(r['value'])} vs best single model {best['model']} "
            f"{best['accuracy']:.3f} (gain {100 * r['gain']:+.1f} pp). "
            f"{r.get('ties', 0)} of {r['n']} decisions were tied: "
            f"{r.get('tie_rule', 'a tie has no majority and is scored wrong')}.",
            [
                {
                    "field": f,
                    "ensemble accuracy": v,
                    "ties": (r.get("ties_by_field") or {}).get(f, 0),
                }
                for f, v in r["by_field"].items()
            ],
            n=[(r.get("n_by_field") or {}).get(f) for f in r["by_field"]],
            n_column="n decisions",
        )
    ]


def _hard_subset_section(r: dict[str, Any], rid: str) -> list[Section]:
    """Every model on the rule baseline's failures and on the rest."""
    return [
        Section.of(
            f"Hard subset ({rid})",
            f"Decisions the rule baseline {r['rule']} gets wrong: {r['hard_decisions']} "
            f"of {r['n']} ({100 * r['hard_share']:.1f}%, {r['hard_items']} items).",
            [
                {
                    "model": lab,
                    "all": fmt_ci(v["all"]),
                    "hard subset": fmt_ci(v["hard"]),
                    "rest": fmt_ci(v["easy"]),
                }
                for lab, v in r["models"].items()
            ],
            n=[f"{r['n']} all / {r['hard_decisions']} hard / {r['n'] - r['hard_decisions']} rest"]
            * len(r["models"]),
        )
    ]


def _rank_transfer_section(r: dict[str, Any], rid: str) -> list[Section]:
    """Model scores on two item sets and their rank correlation."""
    a_, b_ = r["sets"]
    return [
        Section.of(
            f"Rank transfer {a_} -> {b_} ({rid})",
            f"Spearman rho {r['spearman_rho']:.3f} (p {r['spearman_p']:.3g}; "
            f"rank-confidence-set interval {fmt_ci(r['value'])}: {r.get('verdict', '')}), "
            f"Pearson r {r['pearson_r']:.3f} (p {r['pearson_p']:.3g}) over "
            f"{len(r['models'])} models.",
            [{"model": m, **v} for m, v in r["scores"].items()],
            n=[_pair_n((r.get("n") or {}).get(m), a_, b_) for m in r["scores"]],
            n_column=f"n decisions ({a_} / {b_})",
        )
    ]


def _paired_conditions_section(r: dict[str, Any], rid: str) -> list[Section]:
    """Base vs +GT per model: net change, repairs and harms."""
    return [
        Section.of(
            f"Paired conditions Base -> +GT ({rid})",
            "Same items, one input given as truth; repairs = wrong -> right, "
            "harms = right -> wrong.",
            [
                {
                    "model": m,
                    "net change [95% CI]": fmt_ci(v["net_change"]),
                    "repairs": v["repairs"],
                    "harms": v["harms"],
                    "kept right": v["kept_right"],
                    "kept wrong": v["kept_wrong"],
                }
                for m, v in r["models"].items()
            ],
            n=[
                v["repairs"] + v["harms"] + v["kept_right"] + v["kept_wrong"]
                for v in r["models"].values()
            ],
        )
    ]


def _open_similarity_section(r: dict[str, Any], rid: str) -> list[Section]:
    """Open answers' similarity to the reference, with z-scores."""
    return [
        Section.of(
            f"Open-answer similarity ({rid})",
            f"Cosine similarity to the reference with the local MiniLM embedder over "
            f"{', '.join(r['fields'])} ({r['n']} answers); z-score across models.",
            [
                {"model": m, "similarity": fmt_ci(v["similarity"]), "z": v["z"]}
                for m, v in r["models"].items()
            ],
            n=[_items(v["similarity"]) for v in r["models"].values()],
        )
    ]


_ACROSS_SECTIONS: dict[str, Callable[[dict[str, Any], str], list[Section]]] = {
    "routing_oracle": _routing_oracle_section,
    "ensemble": _ensemble_section,
    "hard_subset": _hard_subset_section,
    "rank_transfer": _rank_transfer_section,
    "paired_conditions": _paired_conditions_section,
    "open_similarity": _open_similarity_section,
}
"""How each built-in metric across models is shown (metric name -> its sections); other
packages register theirs in ``metric_section``. A metric with neither is computed
(``benchmark across --json``) but not shown."""


def _pair_n(n: dict[str, int] | None, a: str, b: str) -> str | None:
    """``"40 / 38"``: a model's decisions on each of the two sets of a rank transfer."""
    return None if not n else f"{n.get(a, '–')} / {n.get(b, '–')}"


_TITLES = {
    "routing_oracle": "Routing oracle",
    "ensemble": "Majority-of-models ensemble",
    "hard_subset": "Hard subset",
    "rank_transfer": "Rank transfer",
    "paired_conditions": "Paired conditions",
    "open_similarity": "Open-answer similarity",
}


def _resamples(board: list[BoardEntry]) -> int:
    for m in board:
        if m.accuracy.get("resamples") is not None:
            return int(m.accuracy["resamples"])
    return 0


def _fmt_pp(d: dict[str, Any] | None) -> str:
    """A difference in percentage points with its interval."""
    return fmt_ci(d, digits=1, sign=True)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name).strip("_").lower()


def _conditions(board: list[BoardEntry]) -> list[dict[str, Any]]:
    rows = []
    for m in board:
        per = (m.metrics.get("naudc") or {}).get("per_condition")
        if per:
            rows.append(
                {
                    "model": _label(m),
                    **{c: f"{v['accuracy']:.3f}" for c, v in per.items()},
                    "nAUDC": fmt_ci((m.metrics["naudc"] or {}).get("value")),
                }
            )
    return rows


def _per_class(
    board: list[BoardEntry], project: Project
) -> tuple[list[dict[str, Any]], list[int | str | None]]:
    """Rows (class x model accuracy) and each class's n (its gold decisions; the largest
    over models, which differ only by infrastructure-missing answers)."""
    f = project.benchmark.action_field
    rows: dict[str, dict[str, Any]] = {}
    ns: dict[str, int] = {}
    for m in board:
        pc = (m.metrics.get("per_class") or {}).get("by_field") or {}
        fld = pc.get(f) if f else next(iter(pc.values()), None)
        if not fld:
            continue
        for cls, v in fld["classes"].items():
            rows.setdefault(cls, {"class": cls})[_label(m)] = v["accuracy"]
            ns[cls] = max(ns.get(cls, 0), int(v.get("n") or 0))
    return list(rows.values()), [ns.get(c) for c in rows]


def _safety(board: list[BoardEntry]) -> list[dict[str, Any]]:
    out = []
    for m in board:
        r = (m.metrics.get("safety_recall") or {}).get("value")
        fa = m.metrics.get("false_alarm_share") or {}
        if isinstance(r, dict) and isinstance(fa.get("value"), dict):
            counts = fa.get("counts") or {}
            errors = int(counts.get("false_alarms", 0)) + int(counts.get("missed", 0))
            out.append(
                {
                    "model": _label(m),
                    "safety recall": fmt_ci(r),
                    "false-alarm share": fmt_ci(fa["value"]),
                    "safety errors": errors,
                    "regime": fa.get("regime"),
                    "_n": counts.get("violations"),
                    "_xy": (fa["value"]["point"], r["point"]),
                    "_ci": (r, fa["value"]),
                }
            )
    return out


def _calibration(board: list[BoardEntry]) -> dict[str, list[dict[str, Any]]]:
    return {
        _label(m): m.metrics["ece"]["bins"]
        for m in board
        if (m.metrics.get("ece") or {}).get("bins")
    }


def _fig(w: float = 7, h: float = 4):
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(w, h))


def _save(fig: Any, path: Path) -> Figure:
    """The figure, embedded in the HTML and saved beside it for the Markdown to link."""
    return Figure.from_matplotlib(
        fig, path.stem, save_to=path, href=f"{path.parent.name}/{path.name}"
    )


def _plot_leaderboard(board: list[BoardEntry], path: Path) -> Figure:
    fig, ax = _fig(7, 0.5 * len(board) + 1.5)
    labels = [_label(m) for m in board][::-1]
    accs = [m.accuracy for m in board][::-1]
    pts = [a.get("point") or 0 for a in accs]
    lo = [
        max(0.0, p - (a["low"] if a.get("low") is not None else p))
        for p, a in zip(pts, accs, strict=True)
    ]
    hi = [
        max(0.0, (a["high"] if a.get("high") is not None else p) - p)
        for p, a in zip(pts, accs, strict=True)
    ]
    ax.barh(labels, pts, xerr=[lo, hi], color="#4c72b0", capsize=3)
    ax.set_xlim(0, 1)
    ax.set_xlabel("accuracy (95% CI)")
    return _save(fig, path)


def _plot_conditions(rows: list[dict[str, Any]], path: Path) -> Figure:
    fig, ax = _fig()
    for r in rows:
        conds = [k for k in r if k not in ("model", "nAUDC")]
        ax.plot(conds, [float(r[c]) for c in conds], marker="o", label=r["model"])
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_heatmap(rows: list[dict[str, Any]], path: Path) -> Figure:
    df = pd.DataFrame(rows).set_index("class").astype(float)
    fig, ax = _fig(1.5 + 1.2 * len(df.columns), 0.35 * len(df) + 1.5)
    im = ax.imshow(df.to_numpy(), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_yticks(range(len(df)), df.index)
    ax.set_xticks(range(len(df.columns)), df.columns, rotation=30, ha="right", fontsize=7)
    fig.colorbar(im, ax=ax, label="accuracy")
    return _save(fig, path)


def _plot_safety(rows: list[dict[str, Any]], path: Path) -> Figure:
    fig, ax = _fig(6, 5)
    for r in rows:
        x, y = (v or 0 for v in r["_xy"])
        ax.scatter(x, y)
        ax.annotate(r["model"], (x, y), fontsize=7)
    ax.axvline(0.5, color="grey", ls="--")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("false-alarm share of safety errors (right: false-alarm regime)")
    ax.set_ylabel("safety recall")
    return _save(fig, path)


def _plot_calibration(cal: dict[str, list[dict[str, Any]]], path: Path) -> Figure:
    fig, ax = _fig(5, 5)
    ax.plot([0, 1], [0, 1], color="grey", ls="--")
    for name, bins in cal.items():
        pts = [(b["confidence"], b["accuracy"]) for b in bins if b["n"]]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xlabel("stated confidence")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_frames(fd: Any, path: Path) -> Figure:
    """Accuracy vs frames per clip, one line per model (Figure 11's shape)."""
    fig, ax = _fig()
    by: dict[str, list[tuple[int, float]]] = {}
    for r in fd.rows:
        if r.frames is not None and r.accuracy:
            by.setdefault(r.model_label, []).append((r.frames, r.accuracy["point"]))
    for name, pts in by.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ks = sorted({r.frames for r in fd.rows if r.frames is not None})
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("frames per clip")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_paired(p: PairedMatrix, path: Path) -> Figure:
    import numpy as np

    names = [e.id for e in p.entries]
    m = np.full((len(names), len(names)), np.nan)
    for c in p.pairs:
        i, j = p.entries.index(c.a), p.entries.index(c.b)
        m[i, j] = c.difference["point"]
        m[j, i] = -c.difference["point"]
    fig, ax = _fig(1.5 + 1.1 * len(names), 1.2 + 0.9 * len(names))
    im = ax.imshow(m, cmap="RdBu", vmin=-0.5, vmax=0.5)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    for c in p.pairs:
        i, j = p.entries.index(c.a), p.entries.index(c.b)
        mark = "*" if c.distinguishable else ""
        ax.text(j, i, f"{c.difference['point']:+.2f}{mark}", ha="center", va="center", fontsize=7)
    fig.colorbar(im, ax=ax, label="row - column accuracy (* distinguishable)")
    return _save(fig, path)


def _plot_provenance(g: GoldComparison, path: Path) -> Figure:
    import numpy as np

    fig, ax = _fig()
    slices = ["blind", "anchored", "vlm-sourced"]
    x = np.arange(len(g.models))
    for k, sl in enumerate(slices):
        vals = [(m.ci(sl) or {}).get("point") or 0 for m in g.models]
        ax.bar(x + (k - 1) * 0.27, vals, width=0.27, label=sl)
    ax.set_xticks(x, [m.model for m in g.models], rotation=20, ha="right", fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.legend()
    return _save(fig, path)


def _superseded(mets: dict[str, Any]) -> set[str]:
    """Metrics whose sections another result of the run replaces: a metric that defines
    the same quantity its own way (the probe protocol's balanced H_hard and net change)
    names the generic ones in ``supersedes``, so one report never shows two conflicting
    definitions of the hard subset or of the net change. Only results with a value count
    (a protocol that could not run leaves the generic sections in place)."""
    out: set[str] = set()
    for name, r in mets.items():
        if isinstance(r, dict) and not r.get("note"):
            out |= {str(x) for x in r.get("supersedes") or () if x != name}
    return out
