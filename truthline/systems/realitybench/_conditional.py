"""Conditional scoring as RealityBench does it (seeds/000_676627df3ee1361f.txt, §6-7, App. D).

Each frame carries the acceptability scorer's verdict as the gold of the ``acceptable``
field. Documentation questions count only on frames the scorer accepts (a rejected frame
may not show what is asked); the acceptability answers count on every frame, and the
false accepts (the model accepts a frame the scorer rejects) are counted on the rest.
Tolerances (1/8 in, 1/4 in, 0.2 deg) and set matching come from the field types at
scoring time; a field where "any named part counts" is right when the answer names at
least one gold element (a non-empty overlap, Jaccard credit > 0). Rankings: Kendall's tau
between models' acceptability F1 and documentation score, and between their scores on two
renderings of the same scenes, each with the simultaneous rank-confidence-set interval of
METRICS.md §6 (pairs of models resolved in both tasks; never a percentile bootstrap of tau).
Gray-zone frames carry no verdict and positive-stratum frames never count as false accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import RunScored, Scored, metric
from truthline.fields import MultiChoice
from truthline.stats import CI, RankAgreement, design, draw, proportion_ci, rank_agreement
from truthline.stats import fmt_ci as stats_fmt_ci

if TYPE_CHECKING:
    from truthline.benchmark import ReportContext
    from truthline.report import Section

ACCEPT_FIELD = "acceptable"
ANY_MATCH_DEFAULT = ("visible_face",)
"""Multi-choice fields scored "any named part counts" when the project declares none
(``[benchmark] any_match`` once the project model has it; see the module docstring)."""
RENDERING_COLUMN = "rendering"
"""Item metadata column naming the rendering of a frame (two renderings: rank transfer)."""


def any_match_fields(project: Any) -> set[str]:
    declared = getattr(project.benchmark, "any_match", None)
    names = declared if declared is not None else ANY_MATCH_DEFAULT
    return {n for n in names if isinstance(project.field_types.get(n), MultiChoice)}


def doc_correct(d: pd.DataFrame, any_fields: set[str]) -> np.ndarray:
    """Correctness per decision, with "any named part counts" for ``any_fields``."""
    c = d["correct"].astype(float).to_numpy().copy()
    if any_fields and len(d):
        m = d["field"].isin(any_fields).to_numpy()
        c[m] = (d.loc[m, "credit"].astype(float).to_numpy() > 0).astype(float)
    return c


def verdicts(d: pd.DataFrame, accept_field: str = ACCEPT_FIELD) -> dict[str, bool]:
    """Item -> the scorer's verdict (the gold of the acceptability field)."""
    rows = d[d["field"] == accept_field]
    return {
        str(i): bool(g) for i, g in zip(rows["item_id"], rows["gold"], strict=True) if g is not None
    }


def environment_of(d: pd.DataFrame, column: str | None) -> pd.Series:
    if column and "meta" in d:
        return d["meta"].map(lambda m: str((m or {}).get(column, "")))
    if "stratum" in d and d["stratum"].notna().any():
        return d["stratum"].fillna("").astype(str)
    return pd.Series(["all"] * len(d), index=d.index)


def gray_frames(d: pd.DataFrame) -> set[str]:
    """Items flagged gray-zone in their metadata (``meta.gray``): a term near its threshold,
    the requirement ambiguous; their gold has no acceptability verdict."""
    if "meta" not in d or not len(d):
        return set()

    def flag(m: Any) -> bool:
        v = (m or {}).get("gray")
        return v is True or str(v).strip().lower() in ("true", "1", "yes")

    return {str(i) for i, m in zip(d["item_id"], d["meta"], strict=True) if flag(m)}


def random_frames(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of random field-pose frames: positive-stratum frames (``meta.sample_stratum``
    "positive", App. D) are added to estimate misses and never count in false-accept rates."""
    if "meta" not in rows or not len(rows):
        return rows
    pos = rows["meta"].map(lambda m: str((m or {}).get("sample_stratum", "")) == "positive")
    return rows[~pos.astype(bool)]


def conditional_scores(
    s: Scored,
    *,
    accept_field: str = ACCEPT_FIELD,
    boot: Callable[[pd.DataFrame], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One model's conditional scores: documentation on accepted frames (and, for the
    paper's gap analysis, on rejected ones), acceptability precision/recall/F1 with the
    false-accept and miss rates, per field and per environment, with item counts."""
    d = s.decisions
    boot = boot or s.boot_args
    if not len(d):
        return {"value": None, "note": "no decisions"}
    ok = verdicts(d, accept_field)
    if not ok:
        return {"value": None, "note": f"no gold for the acceptability field {accept_field!r}"}
    any_fields = any_match_fields(s.project)
    targets = [t for t in (s.settings.target_fields or []) if t != accept_field]
    doc = d[d["field"] != accept_field]
    if targets:
        doc = doc[
            doc["field"].isin(targets)
            | doc["field"].map(lambda f: f.split(".")[0] in targets).astype(bool)
        ]
    doc = doc.assign(c=doc_correct(doc, any_fields), frame_ok=doc["item_id"].astype(str).map(ok))
    no_verdict = int(doc["frame_ok"].isna().sum())
    gray = gray_frames(d)
    doc = doc[doc["frame_ok"].notna()]
    on_acc, on_rej = doc[doc["frame_ok"].astype(bool)], doc[~doc["frame_ok"].astype(bool)]
    acc_rows = d[d["field"] == accept_field]
    env_col = s.settings.environment

    def score(rows: pd.DataFrame) -> CI | None:
        return M.accuracy(rows["c"], **boot(rows)) if len(rows) else None

    def acceptability(rows: pd.DataFrame) -> dict[str, Any] | None:
        if not len(rows):
            return None
        return M.binary_scores(rows["gold"].tolist(), rows["pred"].tolist(), **boot(rows))

    by_field = {
        str(f): {"score": score(g), "n": len(g), "items": int(g["item_id"].nunique())}
        for f, g in on_acc.groupby("field")
    }
    by_env: dict[str, Any] = {}
    env_doc = environment_of(on_acc, env_col)
    env_acc = environment_of(acc_rows, env_col)
    for e in sorted(set(env_acc)):
        a = acc_rows[env_acc == e]
        g = on_acc[env_doc == e]
        bs = acceptability(a)
        rejected = random_frames(a[~a["gold"].astype(bool)])
        fa = int(sum(bool(p) for p in rejected["pred"] if p is not None))
        by_env[e] = {
            "frames": int(a["item_id"].nunique()),
            "acceptable_frames": int(a["gold"].astype(bool).sum()),
            "documentation": score(g),
            "documentation_n": len(g),
            "f1": bs["f1"] if bs else None,
            "false_accepts": fa,
            "rejected_frames": len(rejected),
            "false_accept_rate": proportion_ci(fa, len(rejected)) if len(rejected) else None,
        }
    bs = acceptability(acc_rows)
    rejected = random_frames(acc_rows[~acc_rows["gold"].astype(bool)])
    fa = int(sum(bool(p) for p in rejected["pred"] if p is not None))
    doc_acc = score(on_acc)
    return {
        "value": doc_acc,
        "documentation_on_acceptable": doc_acc,
        "documentation_on_rejected": score(on_rej),
        "acceptability": bs,
        "false_accepts": {"n": fa, "of_rejected": len(rejected)},
        "frames": {
            "acceptable": sum(ok.values()),
            "rejected": sum(not v for v in ok.values()),
            # gray-zone frames carry no verdict (section 4): out of F1, false accepts, misses
            "gray_excluded": len(gray),
            "documentation_without_verdict": no_verdict,
        },
        "any_match_fields": sorted(any_fields),
        "by_field": by_field,
        "by_environment": by_env,
    }


@metric("conditional")
def _conditional(s: Scored) -> dict[str, Any]:
    """Documentation on scorer-acceptable frames; false accepts on the rest (RealityBench)."""
    return conditional_scores(s)


# -- rankings with CIs ------------------------------------------------------------------------
def _per_item(d: pd.DataFrame, items: list[str], col: np.ndarray) -> np.ndarray:
    idx = pd.Index(items).get_indexer(d["item_id"].astype(str))
    return np.bincount(idx, weights=col, minlength=len(items))


def kendall_ci(
    models: Sequence[str],
    a: np.ndarray,
    b: np.ndarray,
    *,
    boot_a: np.ndarray | None,
    boot_b: np.ndarray | None,
    tasks: tuple[str, str],
    level: float = 0.95,
    seed: int = 0,
    n: int = 0,
) -> RankAgreement:
    """Kendall's tau-b (and Spearman rho, Pearson r) between two score vectors over models,
    with the interval of the simultaneous rank confidence sets (METRICS.md §6) on paired
    bootstrap replicates (rows of ``boot_a``/``boot_b``). Never the percentile interval of
    tau's replicates: with models 2 pp apart that covered the truth a third of the time."""
    return rank_agreement(models, a, b, boot_a, boot_b, tasks=tasks, level=level, seed=seed,
                          n=(n, n))  # fmt: skip


def _ranked(v: RunScored, what: str) -> tuple[list[str], str | None]:
    """The run's models as every comparison across models counts them (``ranked_models``)."""
    from truthline.benchmark._across import ranked_models

    count = ranked_models(v)
    return count.models, count.short(3, what)


def _agreement_result(r: RankAgreement, scheme: str) -> dict[str, Any]:
    """The plain keys every ranking result carries: tau-b with its interval (``value``),
    rho with its interval, Pearson r and the p-values (scores taken as exact)."""
    return {
        "value": r.tau_ci(scheme),
        "spearman_rho": r.rho_ci(scheme),
        "spearman_p": r.rho_p,
        "kendall_p": r.tau_p,
        "pearson_r": r.pearson_r,
        "pearson_p": r.pearson_p,
        "verdict": r.verdict,
        "unresolved_pairs": [list(p) for p in r.unresolved_pairs],
        "rank_agreement": r,
    }


def _scores_over(
    v: RunScored, labels: list[str], item_filter: Callable[[pd.DataFrame], pd.Series] | None = None
) -> tuple[list[str], dict[str, dict[str, np.ndarray]], pd.DataFrame]:
    """Per model and item: documentation (correct, n) on accepted frames and acceptability
    counts (tp, fp, fn), over the items every model has."""
    per: dict[str, pd.DataFrame] = {}
    for lab in labels:
        d = v.entries[lab].decisions
        if item_filter is not None and len(d):
            d = d[item_filter(d)]
        per[lab] = d
    common = None
    for d in per.values():
        ids = set(d["item_id"].astype(str))
        common = ids if common is None else common & ids
    items = sorted(common or [])
    out: dict[str, dict[str, np.ndarray]] = {}
    meta = pd.DataFrame()
    for lab, d in per.items():
        d = d[d["item_id"].astype(str).isin(items)]
        s = v.entries[lab]
        ok = verdicts(d)
        accepted = d["item_id"].astype(str).map(lambda i, ok=ok: ok.get(i, False))
        anyf = any_match_fields(s.project)
        doc = d[(d["field"] != ACCEPT_FIELD) & accepted]
        acc = d[d["field"] == ACCEPT_FIELD]
        g = acc["gold"].astype(bool).to_numpy()
        p = np.array(
            [bool(x) if x is not None else (not gg) for x, gg in zip(acc["pred"], g, strict=True)]
        )
        out[lab] = {
            "doc_c": _per_item(doc, items, doc_correct(doc, anyf)),
            "doc_n": _per_item(doc, items, np.ones(len(doc))),
            "tp": _per_item(acc, items, (g & p).astype(float)),
            "fp": _per_item(acc, items, (~g & p).astype(float)),
            "fn": _per_item(acc, items, (g & ~p).astype(float)),
        }
        if meta.empty and len(d):
            meta = d.drop_duplicates("item_id").set_index(
                d.drop_duplicates("item_id")["item_id"].astype(str)
            )
    return items, out, meta


def _design_of(
    v: RunScored, items: list[str], meta: pd.DataFrame
) -> tuple[list[Any] | None, list[Any] | None]:
    if meta.empty:
        return None, None
    m = meta.reindex(items)
    clusters = (
        m["parent"].fillna(pd.Series(items, index=m.index)).astype(str).tolist()
        if "parent" in m and m["parent"].notna().any()
        else None
    )
    strata = (
        m["stratum"].fillna("").astype(str).tolist()
        if "stratum" in m and m["stratum"].notna().any()
        else None
    )
    if clusters is not None and strata is not None:
        frame = pd.DataFrame({"c": clusters, "s": strata})
        if (frame.groupby("c")["s"].nunique() > 1).any():
            strata = None
    return clusters, strata


def _draw(
    v: RunScored, n: int, clusters: list[Any] | None, strata: list[Any] | None
) -> np.ndarray | None:
    if not v.rs.resamples or not n:
        return None
    d = design(n, clusters, strata)
    cl, st = d.resampling(clusters, strata)
    return draw(n, v.rs.resamples, v.rs.seed, clusters=cl, strata=st).astype(float)


def _doc(x: Mapping[str, np.ndarray], W: np.ndarray | None = None) -> Any:
    if W is None:
        return x["doc_c"].sum() / x["doc_n"].sum() if x["doc_n"].sum() else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return (W @ x["doc_c"]) / (W @ x["doc_n"])


def _f1(x: Mapping[str, np.ndarray], W: np.ndarray | None = None) -> Any:
    tp, fp, fn = (x[k] if W is None else W @ x[k] for k in ("tp", "fp", "fn"))
    tp, fp, fn = (np.sum(t) if W is None else t for t in (tp, fp, fn))
    with np.errstate(invalid="ignore", divide="ignore"):
        return 2 * tp / (2 * tp + fp + fn)


def acceptability_documentation_rank(v: RunScored) -> dict[str, Any]:
    """Rank agreement of models' acceptability F1 and their documentation score on accepted
    frames (the paper's two tracks, Spearman rho 0.69): one bootstrap draw over items
    (clusters) feeds both tracks, so the pairs are resolved on a paired design."""
    labels, short = _ranked(v, "acceptability_documentation_rank")
    if short:
        return {"value": None, "note": short}
    items, x, meta = _scores_over(v, labels)
    cl, st = _design_of(v, items, meta)
    W = _draw(v, len(items), cl, st)
    f1 = np.array([_f1(x[m]) for m in labels])
    doc = np.array([_doc(x[m]) for m in labels])
    bf = np.column_stack([_f1(x[m], W) for m in labels]) if W is not None else None
    bd = np.column_stack([_doc(x[m], W) for m in labels]) if W is not None else None
    r = kendall_ci(
        labels,
        f1,
        doc,
        boot_a=bf,
        boot_b=bd,
        tasks=("acceptability F1", "documentation"),
        level=v.rs.level,
        seed=v.rs.seed,
        n=len(items),
    )
    return {
        **_agreement_result(r, "cluster" if cl else "item"),
        "models": labels,
        "acceptability_f1": dict(zip(labels, f1.tolist(), strict=True)),
        "documentation": dict(zip(labels, doc.tolist(), strict=True)),
        "items": len(items),
    }


def rendering_transfer(v: RunScored, column: str = RENDERING_COLUMN) -> dict[str, Any]:
    """Kendall's tau between models' documentation scores (on accepted frames) on two
    renderings of the same scenes (item metadata ``column``: e.g. spp16 vs spp4, or with
    and without camera effects), paired by scene: one bootstrap draw over scenes feeds both
    renderings' scores. Also the tau of acceptability F1 across the two renderings. Intervals:
    simultaneous rank confidence sets (METRICS.md §6)."""
    labels, short = _ranked(v, "rendering_transfer")
    if short:
        return {"value": None, "note": short}
    d0 = v.entries[labels[0]].decisions
    names = sorted({str((m or {}).get(column, "")) for m in d0.get("meta", [])} - {""})
    if len(names) != 2:
        return {
            "value": None,
            "note": f"metadata column {column!r} must name two renderings, found {names}",
        }
    sides = []
    for name in names:

        def on(d: pd.DataFrame, n: str = name) -> pd.Series:
            return d["meta"].map(lambda m: str((m or {}).get(column, ""))) == n

        items, x, meta = _scores_over(v, labels, on)
        scene = (
            meta.reindex(items)["parent"].fillna("").astype(str).tolist()
            if "parent" in meta
            else items
        )
        sides.append((items, x, scene))
    scenes = sorted(set(sides[0][2]) & set(sides[1][2]))
    if len(scenes) < 2:
        return {"value": None, "note": "the two renderings share fewer than 2 scenes (item parent)"}
    Ws = None
    if v.rs.resamples:
        Ws = draw(len(scenes), v.rs.resamples, v.rs.seed).astype(float)
    out: dict[str, Any] = {"renderings": names, "scenes": len(scenes), "models": labels}
    vecs: dict[str, dict[str, Any]] = {}
    for (_items, x, scene), name in zip(sides, names, strict=True):
        pos = pd.Index(scenes).get_indexer(scene)
        keep = pos >= 0
        # items -> scenes: a scene's resample count applies to each of its items
        Wi = None if Ws is None else Ws[:, pos[keep]]
        sub = {m: {k: arr[keep] for k, arr in x[m].items()} for m in labels}
        vecs[name] = {
            "doc": np.array([_doc(sub[m]) for m in labels]),
            "f1": np.array([_f1(sub[m]) for m in labels]),
            "boot_doc": None if Wi is None else np.column_stack([_doc(sub[m], Wi) for m in labels]),
            "boot_f1": None if Wi is None else np.column_stack([_f1(sub[m], Wi) for m in labels]),
        }
        out[f"documentation[{name}]"] = dict(zip(labels, vecs[name]["doc"].tolist(), strict=True))
    a, b = vecs[names[0]], vecs[names[1]]
    doc_r = kendall_ci(
        labels,
        a["doc"],
        b["doc"],
        boot_a=a["boot_doc"],
        boot_b=b["boot_doc"],
        tasks=(names[0], names[1]),
        level=v.rs.level,
        seed=v.rs.seed,
        n=len(scenes),
    )
    f1_r = kendall_ci(
        labels,
        a["f1"],
        b["f1"],
        boot_a=a["boot_f1"],
        boot_b=b["boot_f1"],
        tasks=(names[0], names[1]),
        level=v.rs.level,
        seed=v.rs.seed,
        n=len(scenes),
    )
    out.update(_agreement_result(doc_r, "cluster"))
    out["acceptability_f1_tau"] = f1_r.tau_ci("cluster")
    out["acceptability_f1_agreement"] = f1_r
    return out


@metric("acceptability_documentation_rank", across=True)
def _acc_doc_rank(v: RunScored) -> dict[str, Any]:
    return acceptability_documentation_rank(v)


@metric("rendering_transfer", across=True)
def _rendering_transfer(v: RunScored) -> dict[str, Any]:
    return rendering_transfer(v)


# -- human baseline rows ----------------------------------------------------------------------
def human_baseline(
    ratings: pd.DataFrame,
    scorer: Mapping[str, bool],
    *,
    environment: Mapping[str, str] | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Each human rater as a row beside the models: their acceptability verdicts (long
    table: item, rater, acceptable; skips allowed) scored against the scorer, F1 with CI,
    false-accept and miss rates, per environment too; plus the raters' majority."""
    rows: list[dict[str, Any]] = []
    r = ratings.dropna(subset=["acceptable"])
    r = r[r["item"].astype(str).isin(scorer)]

    def one(name: str, items: Sequence[str], verdict: Sequence[bool]) -> dict[str, Any]:
        gold = [scorer[str(i)] for i in items]
        envs = [environment.get(str(i), "") for i in items] if environment else None
        bs = M.binary_scores(
            gold, list(verdict), units=list(items), rs=M.Resampling(resamples, seed)
        )
        row = {
            "rater": name,
            "frames": len(items),
            **{k: bs[k] for k in ("f1", "precision", "recall", "false_accept_rate", "miss_rate")},
            "counts": bs["counts"],
        }
        if envs:
            row["by_environment"] = {}
            for e in sorted(set(envs)):
                idx = [k for k, x in enumerate(envs) if x == e]
                be = M.binary_scores(
                    [gold[k] for k in idx],
                    [verdict[k] for k in idx],
                    units=[items[k] for k in idx],
                    rs=M.Resampling(resamples, seed),
                )
                row["by_environment"][e] = {
                    "f1": be["f1"],
                    "false_accept_rate": be["false_accept_rate"],
                    "frames": len(idx),
                }
        return row

    for rater, g in r.groupby("rater"):
        rows.append(
            one(str(rater), g["item"].astype(str).tolist(), g["acceptable"].astype(bool).tolist())
        )
    maj_items, maj = [], []
    for item, g in r.groupby("item"):
        yes = int(g["acceptable"].astype(bool).sum())
        no = len(g) - yes
        if yes != no:
            maj_items.append(str(item))
            maj.append(yes > no)
    if maj_items:
        rows.append(one("raters' majority", maj_items, maj))
    return rows


# -- the paper's per-environment tables ---------------------------------------------------------
def fmt_ci(ci: Any, pct: bool = False) -> str | None:
    """``0.83 [0.75, 0.90]`` (or percent, no decimals) without the design; None when there is
    no estimate (the paper's table format of ``truthline.stats.fmt_ci``)."""
    shown = stats_fmt_ci(
        ci, digits=0 if pct else 2, scale=100.0 if pct else 1.0, design=False, missing=""
    )
    return shown or None


def is_pow(decisions: pd.DataFrame, accept_field: str = ACCEPT_FIELD) -> bool:
    """Whether a run's decisions carry acceptability verdicts (a RealityBench-style run)."""
    return bool(len(decisions)) and accept_field in set(decisions["field"])


def pow_tables(
    project: Any, decisions: pd.DataFrame, rs: M.Resampling | None = None
) -> dict[str, list[dict[str, Any]]]:
    """RealityBench's tables from a run's decisions (``load_run(...).decisions``): per
    environment and model (frames, acceptable frames, acceptability F1, false accepts,
    documentation on accepted and on rejected frames) and per documentation field and
    model (score on accepted frames)."""
    rs = rs or M.Resampling(project.benchmark.bootstrap_resamples, project.benchmark.seed)
    env_rows: list[dict[str, Any]] = []
    field_rows: list[dict[str, Any]] = []
    overall: list[dict[str, Any]] = []
    for model, d in decisions.groupby("model", sort=False):
        s = Scored(project, d.reset_index(drop=True), pd.DataFrame(), rs)
        r = conditional_scores(s)
        if r.get("value") is None and "note" in r:
            continue
        a = r["acceptability"] or {}
        overall.append(
            {
                "model": model,
                "frames": r["frames"]["acceptable"] + r["frames"]["rejected"],
                "acceptable frames": r["frames"]["acceptable"],
                "acceptability F1": fmt_ci(a.get("f1")),
                "false accepts": f"{r['false_accepts']['n']}/{r['false_accepts']['of_rejected']}",
                "documentation (accepted)": fmt_ci(r["documentation_on_acceptable"]),
                "documentation (rejected)": fmt_ci(r["documentation_on_rejected"]),
            }
        )
        for e, x in r["by_environment"].items():
            env_rows.append(
                {
                    "environment": e,
                    "model": model,
                    "frames": x["frames"],
                    "acceptable frames": x["acceptable_frames"],
                    "acceptability F1": fmt_ci(x["f1"]),
                    "false accepts": f"{x['false_accepts']}/{x['rejected_frames']}",
                    "false-accept rate": fmt_ci(x["false_accept_rate"]),
                    "documentation (accepted)": fmt_ci(x["documentation"]),
                }
            )
        for f, x in r["by_field"].items():
            field_rows.append(
                {
                    "field": f,
                    "model": model,
                    "score (accepted frames)": fmt_ci(x["score"]),
                    "n": x["n"],
                }
            )
    env_rows.sort(key=lambda x: (x["environment"], str(x["model"])))
    field_rows.sort(key=lambda x: (x["field"], str(x["model"])))
    return {"overall": overall, "by_environment": env_rows, "by_field": field_rows}


def ranking_rows(across: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the two rank comparisons from ``across_metrics`` output (plain data): tau
    with its rank-confidence-set interval, and where the result has them Spearman rho with
    its interval, Pearson r with the p-values, and whether the rankings were resolved."""

    def fmt(v: Any) -> str | None:
        return fmt_ci(v) if isinstance(v, Mapping) else None

    def extra(r: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if isinstance(r.get("spearman_rho"), Mapping):
            out["Spearman rho"] = fmt(r["spearman_rho"])
            out["rho p"] = _p(r.get("spearman_p"))
        if r.get("pearson_r") is not None:
            out["Pearson r"] = f"{r['pearson_r']:.2f}"
            out["r p"] = _p(r.get("pearson_p"))
        if r.get("verdict"):
            out["rankings"] = r["verdict"]
        return out

    rows = []
    for a in across:
        m = a.get("metrics", {})
        r = m.get("acceptability_documentation_rank") or {}
        if r.get("value") is not None:
            rows.append(
                {
                    "run": a.get("run_id"),
                    "ranking": "acceptability F1 vs documentation",
                    "Kendall tau": fmt(r["value"]),
                    **extra(r),
                    "n": r.get("items"),
                }
            )
        r = m.get("rendering_transfer") or {}
        if r.get("value") is not None:
            names = " vs ".join(r.get("renderings", []))
            rows.append(
                {
                    "run": a.get("run_id"),
                    "ranking": f"documentation, {names}",
                    "Kendall tau": fmt(r["value"]),
                    **extra(r),
                    "n": r.get("scenes"),
                }
            )
    return rows


def _p(p: Any) -> str | None:
    """A p-value as the paper prints it (``< 0.001`` below that)."""
    if p is None:
        return None
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


RATING_PROJECT = "pow-acceptability"
"""The generated acceptability-rating project (``truthline pow frames``) whose tier-1
ratings become the human baseline rows."""


def rater_verdicts(store: Any, project: str = RATING_PROJECT) -> pd.DataFrame:
    """Long table (item key, rater, acceptable) of the rating project's tier-1 ratings in
    the store (pulled from Label Studio, or SIMULATED); skips and deleted ones left out."""
    from sqlalchemy import select

    from truthline.store import tables

    a = tables.annotations
    keys = {v: k for k, v in store.item_ids_by_key(project).items()}
    with store.begin() as conn:
        rows = conn.execute(
            select(a.c.item_id, a.c.annotator, a.c.value).where(
                a.c.project == project,
                a.c.field_path == ACCEPT_FIELD,
                a.c.tier == 1,
                a.c.deleted_at.is_(None),
                a.c.skipped.is_(False),
            )
        ).all()
    return pd.DataFrame(
        [(keys.get(i, str(i)), who, bool(v)) for i, who, v in rows if v is not None],
        columns=["item", "rater", "acceptable"],
    )


def human_rows(
    decisions: pd.DataFrame,
    ratings: pd.DataFrame,
    resamples: int = 2000,
    seed: int = 0,
    env_col: str | None = "environment",
) -> list[dict[str, Any]]:
    """Human baseline rows for the tables: each rater (and the raters' majority) against the
    scorer verdicts of the run's items, matched by item key."""
    acc = decisions[decisions["field"] == ACCEPT_FIELD].drop_duplicates("item_id")
    if not len(acc) or not len(ratings):
        return []
    key_col = "key" if "key" in acc else "item_id"
    scorer = {str(k): bool(g) for k, g in zip(acc[key_col], acc["gold"], strict=True)}
    env = dict(zip(acc[key_col].astype(str), environment_of(acc, env_col), strict=True))
    rows = human_baseline(ratings, scorer, environment=env, resamples=resamples, seed=seed)
    out = []
    for r in rows:
        out.append(
            {
                "model": f"human: {r['rater']}",
                "frames": r["frames"],
                "acceptability F1": fmt_ci(r["f1"]),
                "false-accept rate": fmt_ci(r["false_accept_rate"]),
                "by_environment": {
                    e: {
                        "acceptability F1": fmt_ci(x["f1"]),
                        "false-accept rate": fmt_ci(x["false_accept_rate"]),
                        "frames": x["frames"],
                    }
                    for e, x in r.get("by_environment", {}).items()
                },
            }
        )
    return out


def report_sections(ctx: ReportContext) -> list[Section]:
    """RealityBench sections of ``truthline benchmark report`` (a ``SECTIONS`` builder):
    empty unless the runs carry acceptability verdicts and the project lists the
    ``conditional`` metric."""
    from truthline.benchmark import run_decisions
    from truthline.report import Section

    if "conditional" not in ctx.project.benchmark.metrics:
        return []
    dec = run_decisions(ctx.store, ctx.project, ctx.run_ids, is_pow)
    if dec is None:
        return []
    rs = M.Resampling(
        ctx.resamples if ctx.resamples is not None else ctx.project.benchmark.bootstrap_resamples,
        ctx.project.benchmark.seed,
    )
    t = pow_tables(ctx.project, dec, rs)
    # no rating project in the store: no ratings, no human rows
    humans = (
        human_rows(dec, rater_verdicts(ctx.store), rs.resamples, rs.seed)
        if ctx.store is not None
        else []
    )
    t["human"] = [{k: v for k, v in h.items() if k != "by_environment"} for h in humans]
    ctx.data["realitybench"] = t
    secs = [
        Section.of(
            "RealityBench: acceptability and conditional documentation",
            "Documentation is scored only on frames the acceptability scorer accepts; false "
            "accepts (the model accepts a frame the scorer rejects) are counted on the rest. "
            "Intervals: bootstrap over items (clusters) at 95 %.",
            t["overall"],
            n=[r["frames"] for r in t["overall"]],
            metrics=["conditional", "acceptability"],
        ),
        Section.of(
            "RealityBench: per environment",
            "Per environment and model (the paper's Tables 8-9): acceptability F1 against "
            "the scorer, false accepts over the scorer-rejected frames, documentation score "
            "on accepted frames.",
            t["by_environment"],
            n=[r["frames"] for r in t["by_environment"]],
            metrics=["conditional", "acceptability"],
        ),
        Section.of(
            "RealityBench: documentation per field",
            "Per documentation field on accepted frames (tolerances 1/8 in, 1/4 in, 0.2 deg; "
            "'any named part counts' fields right on any overlap).",
            t["by_field"],
            n=[r["n"] for r in t["by_field"]],
            metrics=["conditional"],
        ),
    ]
    ranks = ranking_rows(ctx.data.get("across") or [])
    t["rankings"] = ranks
    if ranks:
        secs.append(
            Section.of(
                "RealityBench: rankings",
                "Kendall's tau between the models' acceptability F1 and documentation ranks, "
                "and between their documentation ranks on two renderings of the same scenes "
                "(simultaneous rank-confidence-set intervals: pairs resolved in both tasks).",
                ranks,
                n=[r["n"] for r in ranks],
                metrics=["acceptability_documentation_rank", "rendering_transfer"],
            )
        )
    if t["human"]:
        secs.append(
            Section.of(
                "RealityBench: human baseline",
                "Each rater of the acceptability-rating project (and the raters' majority) "
                "scored against the scorer like a model: F1 and false-accept rate.",
                t["human"],
                n=[r["frames"] for r in t["human"]],
                metrics=["acceptability"],
            )
        )
    return secs


def dashboard_sections(ctx: Any, run_ids: Sequence[str]) -> list[Section]:
    """The RealityBench tables on the dashboard's Benchmark page, as report sections (entry
    point ``truthline.dashboard_sections``); none unless the runs carry acceptability
    verdicts."""
    from truthline.benchmark import run_decisions
    from truthline.report import Paragraph, Section, Table

    if "conditional" not in ctx.project.benchmark.metrics:
        return []  # not a RealityBench-style project: no run is loaded
    dec = run_decisions(ctx.store, ctx.project, run_ids, is_pow)
    if dec is None:
        return []
    t = pow_tables(ctx.project, dec, M.Resampling(500, 0))
    caption = (
        "Documentation on scorer-accepted frames; false accepts on the rest (95 % bootstrap CIs)."
    )
    out = [Section("RealityBench", [Paragraph(caption)])]
    for key, title in (
        ("overall", "Overall"),
        ("by_environment", "Per environment"),
        ("by_field", "Per documentation field"),
    ):
        out.append(Section(title, [Table.from_rows(t[key])], level=3))
    return out
