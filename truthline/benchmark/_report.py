"""``benchmark report``: leaderboard with CIs and cost, per-condition table, per-class
heatmap, safety regime scatter, calibration plot, paired-difference matrix and the
provenance comparison — plots as PNG, tables as Markdown/HTML and CSV.

Everything is computed by the same result functions the CLI and dashboards call.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from truthline.audit._cifmt import design_note, with_design
from truthline.benchmark._across import across_metrics
from truthline.benchmark._results import compare_gold, leaderboard, paired_matrix
from truthline.project import Project
from truthline.store import Store


@dataclass
class Section:
    title: str
    text: str = ""
    table: list[dict[str, Any]] = field(default_factory=list)
    image: str | None = None
    sources: list[Any] = field(default_factory=list)
    """The plain data the table's intervals came from: its thin-design warnings are shown
    as one note under the table."""

    @property
    def note(self) -> str:
        return design_note(self.sources)


def _fmt_ci(ci: dict[str, Any] | None, scale: float = 1.0) -> str:
    if not ci or ci.get("point") is None:
        return "—"
    p = ci["point"] * scale
    if ci.get("low") is None or ci.get("high") is None:
        return f"{p:.3f}"
    return with_design(f"{p:.3f} [{ci['low'] * scale:.3f}, {ci['high'] * scale:.3f}]", ci)


def _headline(m: dict[str, Any], name: str) -> float | None:
    v = (m["metrics"].get(name) or {}).get("value")
    if isinstance(v, dict):
        return v.get("point")
    return v


def build_report(
    store: Store, project: Project, run_ids: list[str], *, resamples: int | None = None
) -> dict[str, Any]:
    """The report's content as plain data (what ``--json`` prints)."""
    board = leaderboard(store, project, run_ids, resamples=resamples)
    gold_cmp = [compare_gold(store, project, r, resamples=resamples) for r in run_ids]
    paired = [paired_matrix(store, project, r, resamples=resamples) for r in run_ids]
    across = [across_metrics(store, project, r, resamples=resamples) for r in run_ids]
    return {
        "runs": run_ids,
        "leaderboard": board,
        "compare_gold": gold_cmp,
        "paired": paired,
        "across": across,
    }


def _label(m: dict[str, Any]) -> str:
    extra = [
        x
        for x in (m["variant"], m["condition"] if m["condition"] != "base" else "", m["control"])
        if x
    ]
    return (
        m["model"]
        + (f" ({', '.join(extra)})" if extra else "")
        + (" [SIMULATED]" if m.get("simulated") else "")
    )


def write_report(
    store: Store, project: Project, run_ids: list[str], out: Path, *, resamples: int | None = None
) -> dict[str, Any]:
    """Write ``out`` (.md or .html) with PNG plots and CSV tables in ``<stem>_files/``."""
    import matplotlib

    matplotlib.use("Agg")
    data = build_report(store, project, run_ids, resamples=resamples)
    out = Path(out)
    files = out.parent / f"{out.stem}_files"
    files.mkdir(parents=True, exist_ok=True)
    board = data["leaderboard"]
    sections: list[Section] = []

    rows = []
    for m in board:
        rows.append(
            {
                "model": _label(m),
                "accuracy [95% CI]": _fmt_ci(m["accuracy"]),
                **{
                    k: (f"{v:.3f}" if isinstance(v, float) else "—")
                    for k in _BOARD_METRICS
                    for v in [_headline(m, k)]
                    if k in m["metrics"]
                },
                "coverage": f"{m['coverage']:.3f}",
                "format rate": f"{m['format_rate']:.3f}",
                "failures": m["model_failure"],
                "infra missing": m["infra_missing"],
                "cost USD": f"{m['cost_usd']:.4f}",
                "run": m["run_id"],
            }
        )
    sections.append(
        Section(
            "Leaderboard",
            "Accuracy over every target decision with a "
            f"{'cluster' if project.benchmark.cluster else 'item'} bootstrap 95% CI "
            f"({_resamples(board)} resamples, seed {project.benchmark.seed}; the clusters and "
            "strata each interval resampled are shown beside it, and with fewer than 20 "
            "clusters it is a cluster jackknife-t, marked ⚠). Model failures are "
            "scored wrong; infrastructure-missing answers are excluded (coverage).",
            rows,
            _plot_leaderboard(board, files / "leaderboard.png"),
            [m["accuracy"] for m in board],
        )
    )
    cond = _conditions(board)
    if cond:
        sections.append(
            Section(
                "Accuracy per condition",
                "Conditions by increasing severity.",
                cond,
                _plot_conditions(cond, files / "conditions.png"),
                [(m["metrics"].get("naudc") or {}).get("value") for m in board],
            )
        )
    heat = _per_class(board, project)
    if heat:
        sections.append(
            Section(
                f"Per-class accuracy ({project.benchmark.action_field or 'first field'})",
                "",
                heat,
                _plot_heatmap(heat, files / "per_class.png"),
            )
        )
    saf = _safety(board)
    if saf:
        sections.append(
            Section(
                "Safety operating regime",
                "False-alarm share of safety errors vs safety recall.",
                saf,
                _plot_safety(saf, files / "safety.png"),
            )
        )
    cal = _calibration(board)
    if cal:
        sections.append(
            Section(
                "Calibration",
                "Mean stated confidence vs accuracy per bin (ECE, 10 equal-width bins).",
                [],
                _plot_calibration(cal, files / "calibration.png"),
            )
        )
    fw = _four_way(board)
    if fw:
        sections.append(
            Section(
                "Read/ground decomposition",
                f"{project.benchmark.read_field} (C) and {project.benchmark.ground_field} (G) "
                "per item: counts (shares); grounding accuracy given a correct reading.",
                fw,
                sources=[(m["metrics"].get("four_way") or {}) for m in board],
            )
        )
    for a in data["across"]:
        sections.extend(_across_sections(a))
    for p in data["paired"]:
        if p["pairs"]:
            prow = [
                {
                    "a": c["a"],
                    "b": c["b"],
                    "n decisions": c["n"],
                    "a - b [95% CI]": _fmt_ci(c["difference"]),
                    "distinguishable": "yes" if c["distinguishable"] else "no",
                }
                for c in p["pairs"]
            ]
            sections.append(
                Section(
                    f"Paired differences ({p['run_id']})",
                    "Paired bootstrap on identical decisions; distinguishable only when the 95% CI excludes zero.",
                    prow,
                    _plot_paired(p, files / f"paired_{_safe(p['run_id'])}.png"),
                    [p],
                )
            )
    for g in data["compare_gold"]:
        grow = [
            {
                "model": m["model"],
                "blind": _fmt_ci(m.get("blind")),
                "anchored": _fmt_ci(m.get("anchored")),
                "vlm-sourced": _fmt_ci(m.get("vlm-sourced")),
                "inflation anchored (pp)": _fmt_pp(m.get("inflation_anchored_pp")),
                "inflation vlm-sourced (pp)": _fmt_pp(m.get("inflation_vlm-sourced_pp")),
            }
            for m in g["models"]
        ]
        mean = g["mean_inflation_pp"]
        text = (
            f"Higher on anchored gold: {g['higher_on_anchored']} models; mean inflation "
            f"{mean:+.1f} pp."
            if mean is not None
            else "No blind/anchored split in this gold."
        )
        sections.append(
            Section(
                f"Scores by gold provenance ({g['run_id']})",
                text,
                grow,
                _plot_provenance(g, files / f"provenance_{_safe(g['run_id'])}.png"),
                [g],
            )
        )
    for s in sections:
        if s.table:
            pd.DataFrame(s.table).to_csv(files / f"{_safe(s.title)}.csv", index=False)
    title = f"Benchmark report: {project.title or project.name}"
    text = (
        _html(title, sections, files, out)
        if out.suffix.lower() in (".html", ".htm")
        else _md(title, sections, files, out)
    )
    out.write_text(text, encoding="utf-8")
    (files / "report.json").write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return {"report": str(out), "files": str(files), **data}


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


def _four_way(board: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for m in board:
        fw = m["metrics"].get("four_way") or {}
        if fw.get("counts"):
            rows.append(
                {
                    "model": _label(m),
                    **{k: f"{v} ({fw['shares'][k]:.2f})" for k, v in fw["counts"].items()},
                    "read": _fmt_ci(fw.get("read_accuracy")),
                    "ground | read correct": _fmt_ci(fw.get("value")),
                }
            )
    return rows


def _across_sections(a: dict[str, Any]) -> list[Section]:
    """Sections for the metrics across models of one run (those the project names)."""
    rid, mets = a["run_id"], a["metrics"]
    out: list[Section] = []
    for name, r in mets.items():
        start = len(out)
        _across_section(out, name, r, rid)
        for sec in out[start:]:
            sec.sources = [r]
    return out


def _across_section(out: list[Section], name: str, r: dict[str, Any], rid: str) -> None:
    """Append the section(s) of one metric across models."""
    if r.get("note"):
        out.append(Section(f"{_TITLES.get(name, name)} ({rid})", r["note"]))
        return
    if name == "routing_oracle":
        best = r["best_single"]
        out.append(
            Section(
                f"Routing oracle ({rid})",
                f"Each {r['environment']} routed to its best model: accuracy "
                f"{_fmt_ci(r['value'])} vs best single model {best['model']} "
                f"{_fmt_ci(best['accuracy'])} (gain {100 * r['gain']:+.1f} pp, "
                f"{r['n']} common decisions).",
                [
                    {r["environment"]: e, "best model": m}
                    for e, m in r["best_by_environment"].items()
                ],
            )
        )
    elif name == "ensemble":
        best = r["best_single"]
        out.append(
            Section(
                f"Majority-of-models ensemble ({rid})",
                f"Majority vote of {', '.join(r['members'])}: accuracy "
                f"{_fmt_ci(r['value'])} vs best single model {best['model']} "
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
            )
        )
    elif name == "hard_subset":
        out.append(
            Section(
                f"Hard subset ({rid})",
                f"Decisions the rule baseline {r['rule']} gets wrong: {r['hard_decisions']} "
                f"of {r['n']} ({100 * r['hard_share']:.1f}%, {r['hard_items']} items).",
                [
                    {
                        "model": lab,
                        "all": _fmt_ci(v["all"]),
                        "hard subset": _fmt_ci(v["hard"]),
                        "rest": _fmt_ci(v["easy"]),
                    }
                    for lab, v in r["models"].items()
                ],
            )
        )
    elif name == "rank_transfer":
        a_, b_ = r["sets"]
        out.append(
            Section(
                f"Rank transfer {a_} -> {b_} ({rid})",
                f"Spearman rho {r['spearman_rho']:.3f} (p {r['spearman_p']:.3g}), "
                f"Pearson r {r['pearson_r']:.3f} (p {r['pearson_p']:.3g}) over "
                f"{len(r['models'])} models.",
                [{"model": m, **v} for m, v in r["scores"].items()],
            )
        )
    elif name == "paired_conditions":
        out.append(
            Section(
                f"Paired conditions Base -> +GT ({rid})",
                "Same items, one input given as truth; repairs = wrong -> right, "
                "harms = right -> wrong.",
                [
                    {
                        "model": m,
                        "net change [95% CI]": _fmt_ci(v["net_change"]),
                        "repairs": v["repairs"],
                        "harms": v["harms"],
                        "kept right": v["kept_right"],
                        "kept wrong": v["kept_wrong"],
                    }
                    for m, v in r["models"].items()
                ],
            )
        )
    elif name == "open_similarity":
        out.append(
            Section(
                f"Open-answer similarity ({rid})",
                f"Cosine similarity to the reference with the local MiniLM embedder over "
                f"{', '.join(r['fields'])} ({r['n']} answers); z-score across models.",
                [
                    {"model": m, "similarity": _fmt_ci(v["similarity"]), "z": v["z"]}
                    for m, v in r["models"].items()
                ],
            )
        )


_TITLES = {
    "routing_oracle": "Routing oracle",
    "ensemble": "Majority-of-models ensemble",
    "hard_subset": "Hard subset",
    "rank_transfer": "Rank transfer",
    "paired_conditions": "Paired conditions",
    "open_similarity": "Open-answer similarity",
}


def _resamples(board: list[dict[str, Any]]) -> int:
    for m in board:
        if m["accuracy"].get("resamples") is not None:
            return int(m["accuracy"]["resamples"])
    return 0


def _fmt_pp(d: dict[str, Any] | None) -> str:
    if not d:
        return "—"
    if d.get("low") is None:
        return f"{d['point']:+.1f}"
    return with_design(f"{d['point']:+.1f} [{d['low']:+.1f}, {d['high']:+.1f}]", d)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name).strip("_").lower()


def _conditions(board: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for m in board:
        per = (m["metrics"].get("naudc") or {}).get("per_condition")
        if per:
            rows.append(
                {
                    "model": _label(m),
                    **{c: f"{v['accuracy']:.3f}" for c, v in per.items()},
                    "nAUDC": _fmt_ci((m["metrics"]["naudc"] or {}).get("value")),
                }
            )
    return rows


def _per_class(board: list[dict[str, Any]], project: Project) -> list[dict[str, Any]]:
    f = project.benchmark.action_field
    rows: dict[str, dict[str, Any]] = {}
    for m in board:
        pc = (m["metrics"].get("per_class") or {}).get("by_field") or {}
        fld = pc.get(f) if f else next(iter(pc.values()), None)
        if not fld:
            continue
        for cls, v in fld["classes"].items():
            rows.setdefault(cls, {"class": cls})[_label(m)] = v["accuracy"]
    return list(rows.values())


def _safety(board: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in board:
        r = (m["metrics"].get("safety_recall") or {}).get("value")
        fa = m["metrics"].get("false_alarm_share") or {}
        if isinstance(r, dict) and isinstance(fa.get("value"), dict):
            out.append(
                {
                    "model": _label(m),
                    "safety recall": r["point"],
                    "false-alarm share": fa["value"]["point"],
                    "regime": fa.get("regime"),
                }
            )
    return out


def _calibration(board: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {
        _label(m): m["metrics"]["ece"]["bins"]
        for m in board
        if (m["metrics"].get("ece") or {}).get("bins")
    }


def _fig(w: float = 7, h: float = 4):
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(w, h))


def _save(fig: Any, path: Path) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _plot_leaderboard(board: list[dict[str, Any]], path: Path) -> str:
    fig, ax = _fig(7, 0.5 * len(board) + 1.5)
    labels = [_label(m) for m in board][::-1]
    pts = [m["accuracy"].get("point") or 0 for m in board][::-1]
    lo = [
        max(0.0, p - (m["accuracy"].get("low") if m["accuracy"].get("low") is not None else p))
        for p, m in zip(pts, board[::-1], strict=True)
    ]
    hi = [
        max(0.0, (m["accuracy"].get("high") if m["accuracy"].get("high") is not None else p) - p)
        for p, m in zip(pts, board[::-1], strict=True)
    ]
    ax.barh(labels, pts, xerr=[lo, hi], color="#4c72b0", capsize=3)
    ax.set_xlim(0, 1)
    ax.set_xlabel("accuracy (95% CI)")
    return _save(fig, path)


def _plot_conditions(rows: list[dict[str, Any]], path: Path) -> str:
    fig, ax = _fig()
    for r in rows:
        conds = [k for k in r if k not in ("model", "nAUDC")]
        ax.plot(conds, [float(r[c]) for c in conds], marker="o", label=r["model"])
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_heatmap(rows: list[dict[str, Any]], path: Path) -> str:
    df = pd.DataFrame(rows).set_index("class").astype(float)
    fig, ax = _fig(1.5 + 1.2 * len(df.columns), 0.35 * len(df) + 1.5)
    im = ax.imshow(df.to_numpy(), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_yticks(range(len(df)), df.index)
    ax.set_xticks(range(len(df.columns)), df.columns, rotation=30, ha="right", fontsize=7)
    fig.colorbar(im, ax=ax, label="accuracy")
    return _save(fig, path)


def _plot_safety(rows: list[dict[str, Any]], path: Path) -> str:
    fig, ax = _fig(6, 5)
    for r in rows:
        ax.scatter(r["false-alarm share"] or 0, r["safety recall"] or 0)
        ax.annotate(r["model"], (r["false-alarm share"] or 0, r["safety recall"] or 0), fontsize=7)
    ax.axvline(0.5, color="grey", ls="--")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("false-alarm share of safety errors (right: false-alarm regime)")
    ax.set_ylabel("safety recall")
    return _save(fig, path)


def _plot_calibration(cal: dict[str, list[dict[str, Any]]], path: Path) -> str:
    fig, ax = _fig(5, 5)
    ax.plot([0, 1], [0, 1], color="grey", ls="--")
    for name, bins in cal.items():
        pts = [(b["confidence"], b["accuracy"]) for b in bins if b["n"]]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xlabel("stated confidence")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_paired(p: dict[str, Any], path: Path) -> str:
    import numpy as np

    names = p["entries"]
    m = np.full((len(names), len(names)), np.nan)
    for c in p["pairs"]:
        i, j = names.index(c["a"]), names.index(c["b"])
        m[i, j] = c["difference"]["point"]
        m[j, i] = -c["difference"]["point"]
    fig, ax = _fig(1.5 + 1.1 * len(names), 1.2 + 0.9 * len(names))
    im = ax.imshow(m, cmap="RdBu", vmin=-0.5, vmax=0.5)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    for c in p["pairs"]:
        i, j = names.index(c["a"]), names.index(c["b"])
        mark = "*" if c["distinguishable"] else ""
        ax.text(
            j, i, f"{c['difference']['point']:+.2f}{mark}", ha="center", va="center", fontsize=7
        )
    fig.colorbar(im, ax=ax, label="row - column accuracy (* distinguishable)")
    return _save(fig, path)


def _plot_provenance(g: dict[str, Any], path: Path) -> str:
    import numpy as np

    fig, ax = _fig()
    slices = ["blind", "anchored", "vlm-sourced"]
    x = np.arange(len(g["models"]))
    for k, sl in enumerate(slices):
        vals = [(m.get(sl) or {}).get("point") or 0 for m in g["models"]]
        ax.bar(x + (k - 1) * 0.27, vals, width=0.27, label=sl)
    ax.set_xticks(x, [m["model"] for m in g["models"]], rotation=20, ha="right", fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.legend()
    return _save(fig, path)


def _md_table(rows: list[dict[str, Any]]) -> str:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(_cell(r.get(c)) for c in cols) + " |")
    return "\n".join(lines)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return "—" if v is None else str(v).replace("|", "\\|")


def _md(title: str, sections: list[Section], files: Path, out: Path) -> str:
    parts = [f"# {title}", ""]
    rel = files.relative_to(out.parent)
    for s in sections:
        parts += [f"## {s.title}", ""]
        if s.text:
            parts += [s.text, ""]
        if s.image:
            parts += [f"![{s.title}]({rel}/{s.image})", ""]
        if s.table:
            parts += [_md_table(s.table), ""]
        if s.note:
            parts += [s.note, ""]
    return "\n".join(parts)


def _html(title: str, sections: list[Section], files: Path, out: Path) -> str:
    rel = files.relative_to(out.parent)
    body = [f"<h1>{html.escape(title)}</h1>"]
    for s in sections:
        body.append(f"<h2>{html.escape(s.title)}</h2>")
        if s.text:
            body.append(f"<p>{html.escape(s.text)}</p>")
        if s.image:
            body.append(f'<img src="{rel}/{s.image}" alt="{html.escape(s.title)}">')
        if s.table:
            cols = list(dict.fromkeys(k for r in s.table for k in r))
            body.append(
                "<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>"
            )
            for r in s.table:
                body.append(
                    "<tr>"
                    + "".join(f"<td>{html.escape(_cell(r.get(c)))}</td>" for c in cols)
                    + "</tr>"
                )
            body.append("</table>")
        if s.note:
            body.append(f"<p class='design-warning'>{html.escape(s.note)}</p>")
    style = "body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}img{max-width:100%}"
    return f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{style}</style></head><body>{''.join(body)}</body></html>"
