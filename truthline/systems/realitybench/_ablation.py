"""RealityBench §7 and App. D from stored runs: the prompt-order ablation (Table 4), error
tracing of wrong rejections (Table 12) and documentation on acceptable vs other frames.

A *defect claim* is a documentation answer that reports a defect: a boolean field whose
answer equals its defect value in ``DEFECTS`` (the one place that says which answers are
defects), or a list field (missing parts) that names anything. Error tracing covers the environments whose acceptability depends on a field the
model also documents (``SHARED``): of the model's wrong rejections (the scorer accepts, the
model rejects) a *scene misreading* is one where the model's own answer for that field is
wrong against the scene's ground truth, a *requirement misreading* one where the answer is
right and the model rejects anyway. The ablation compares the same items under prompt
variants (the verdict asked first, last, or not at all) with the default, paired by item and
resampled by scene, against a rerun of the default (run-to-run noise).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from truthline.stats import CI, design_ci, proportion_ci
from truthline.systems.realitybench._conditional import (
    ACCEPT_FIELD,
    any_match_fields,
    doc_correct,
    environment_of,
    verdicts,
)

NON_EMPTY = "non-empty"
"""The defect value of a list field: any element named (a missing part) is a defect."""
DEFECTS: Mapping[str, bool | str] = {
    "tape_leans": True,
    "lag_bolt": False,
    "missing_parts": NON_EMPTY,
    "flashing_under_shingles": False,
    "wire_touches_roof": True,
    "wire_secured": False,
}
"""Documentation field -> the answer that reports a defect: a leaning tape, a lag bolt not
installed, any part named missing, flashing laid on top of the shingles, a wire on the roof
or not clipped."""
SHARED: Mapping[str, tuple[str, ...]] = {
    "tape_gap": ("tape_leans",),
    "slope_gauge": ("slope",),
    "rail_attachment": ("missing_parts", "lag_bolt"),
}
"""Environment -> the documentation field its acceptability shares (paper §7): the first
of these the run's decisions have."""
DEFAULT_VARIANT = ""
"""The variant of a run without ``--variant``: the verdict asked first."""
RERUN = "rerun"
"""The variant label given to a rerun of the default (a second run with a distinct cache
key, see ``prompt_order_ablation``)."""
ALL = "all"


def _is(v: Any, value: bool) -> bool:
    return v is not None and not (isinstance(v, float) and np.isnan(v)) and bool(v) is value


def claims_defect(field: str, answer: Any) -> bool:
    """Whether ``answer`` to the defect field ``field`` reports a defect (``DEFECTS``)."""
    value = DEFECTS[field]
    if value == NON_EMPTY:
        return isinstance(answer, list | tuple) and len(answer) > 0
    return _is(answer, bool(value))


def _env(d: pd.DataFrame, env_col: str | None) -> pd.DataFrame:
    return d.assign(environment=environment_of(d, env_col).to_numpy()) if len(d) else d


# -- Table 4: prompt-order ablation -------------------------------------------------------------
def defect_claims(decisions: pd.DataFrame, env_col: str | None = "environment") -> pd.DataFrame:
    """Per (model, variant, item): whether any defect field's answer reports a defect, with
    the item's scene (``parent``) and environment; items without a defect field are left
    out, and so are items whose defect fields all went unanswered."""
    cols = ["model", "variant", "item_id", "parent", "environment", "claim"]
    d = decisions[decisions["field"].isin(list(DEFECTS))] if len(decisions) else decisions
    if not len(d):
        return pd.DataFrame(columns=cols)
    d = _env(d, env_col)
    d = d[d["pred"].map(lambda p: p is not None and not (isinstance(p, float) and np.isnan(p)))]
    d = d.assign(claim=[claims_defect(f, p) for f, p in zip(d["field"], d["pred"], strict=True)])
    keys = ["model", "variant", "item_id"]
    g = d.groupby(keys, sort=False).agg(
        parent=("parent", "first"), environment=("environment", "first"), claim=("claim", "any")
    )
    return g.reset_index()[cols]


@dataclass(frozen=True)
class AblationRow:
    """One model, environment and variant against the default on the same items."""

    model: str
    environment: str
    variant: str
    items: int
    default_rate: float
    variant_rate: float
    difference: CI
    rerun_difference: CI | None
    changed_beyond_noise: bool | None
    """The difference's CI excludes zero and the difference exceeds the rerun's (in
    magnitude); None without a rerun (noise unknown)."""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["difference"] = self.difference.as_dict()
        out["rerun_difference"] = self.rerun_difference.as_dict() if self.rerun_difference else None
        return out


def _paired(
    base: pd.DataFrame, other: pd.DataFrame, resamples: int, seed: int
) -> tuple[int, float, float, CI] | None:
    m = base.merge(other, on="item_id", suffixes=("_b", "_o"))
    if not len(m):
        return None
    b = m["claim_b"].astype(float).to_numpy()
    o = m["claim_o"].astype(float).to_numpy()
    clusters = m["parent_b"].fillna(m["item_id"].astype(str)).astype(str).tolist()
    diff = o - b

    def mean(W: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray((W @ diff) / W.sum(axis=1))

    # design_ci, not paired_diff_ci: a difference is no proportion, so no Wilson floor
    ci = design_ci(
        float(diff.mean()), mean, len(m), clusters=clusters, resamples=resamples, seed=seed
    )
    return len(m), float(b.mean()), float(o.mean()), ci


def prompt_order_ablation(
    decisions: pd.DataFrame,
    *,
    env_col: str | None = "environment",
    resamples: int = 2000,
    seed: int = 0,
) -> list[AblationRow]:
    """Table 4: per model and environment (and pooled over environments, ``all``), each
    prompt variant's defect-claim rate against the default's on the same items, the paired
    difference with a scene-cluster bootstrap CI, and the rerun's difference (``RERUN``
    variant rows: the default asked again under a distinct cache key) as the noise band."""
    c = defect_claims(decisions, env_col)
    rows: list[AblationRow] = []
    for model, cm in c.groupby("model", sort=False):
        for env in [ALL, *sorted(set(cm["environment"]))]:
            ce = cm if env == ALL else cm[cm["environment"] == env]
            base = ce[ce["variant"] == DEFAULT_VARIANT]
            if not len(base):
                continue
            rr = ce[ce["variant"] == RERUN]
            noise = _paired(base, rr, resamples, seed) if len(rr) else None
            for variant in sorted(set(ce["variant"]) - {DEFAULT_VARIANT}):
                p = _paired(base, ce[ce["variant"] == variant], resamples, seed)
                if p is None:
                    continue
                n, rb, ro, diff = p
                rerun = noise[3] if noise is not None and variant != RERUN else None
                changed = None
                if rerun is not None:  # the rerun's own row is the noise band: no flag
                    changed = diff.excludes_zero() and abs(diff.point) > abs(rerun.point)
                rows.append(AblationRow(str(model), env, variant, n, rb, ro, diff, rerun, changed))
    return rows


@dataclass(frozen=True)
class VariantDocRow:
    """One model's documentation score on scorer-acceptable frames under a prompt variant
    against the default, on the same items (§7: asking the verdict first can cost answers)."""

    model: str
    variant: str
    items: int
    default_score: float
    variant_score: float
    difference: CI

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "difference": self.difference.as_dict()}


def _doc_per_item(project: Any, d: pd.DataFrame) -> pd.DataFrame:
    """Per item of one entry: correct and total documentation decisions on the frames the
    scorer accepts, with the item's scene."""
    ok = verdicts(d)
    doc = d[(d["field"] != ACCEPT_FIELD) & d["item_id"].astype(str).map(ok).eq(True)]
    doc = doc.assign(c=doc_correct(doc, any_match_fields(project)), n=1.0)
    return doc.groupby("item_id").agg(c=("c", "sum"), n=("n", "sum"), parent=("parent", "first"))


def variant_documentation(
    project: Any, decisions: pd.DataFrame, *, resamples: int = 2000, seed: int = 0
) -> list[VariantDocRow]:
    """Per model and prompt variant: the documentation score on scorer-acceptable frames
    against the default's on the same items, the difference with a scene-cluster CI."""
    rows: list[VariantDocRow] = []
    for model, dm in decisions.groupby("model", sort=False):
        base = _doc_per_item(project, dm[dm["variant"] == DEFAULT_VARIANT])
        if not len(base):
            continue
        for variant in sorted(set(dm["variant"]) - {DEFAULT_VARIANT}):
            other = _doc_per_item(project, dm[dm["variant"] == variant])
            m = base.merge(
                other[["c", "n"]], left_index=True, right_index=True, suffixes=("_b", "_o")
            )
            if not len(m):
                continue
            cb, nb, co, no = (m[k].to_numpy(float) for k in ("c_b", "n_b", "c_o", "n_o"))
            clusters = m["parent"].fillna(pd.Series(m.index.astype(str), index=m.index))

            def stat(W: np.ndarray, cb=cb, nb=nb, co=co, no=no) -> np.ndarray:
                with np.errstate(invalid="ignore", divide="ignore"):
                    return np.asarray((W @ co) / (W @ no) - (W @ cb) / (W @ nb))

            sb, so = float(cb.sum() / nb.sum()), float(co.sum() / no.sum())
            ci = design_ci(
                so - sb,
                stat,
                len(m),
                clusters=clusters.astype(str).tolist(),
                resamples=resamples,
                seed=seed,
            )
            rows.append(VariantDocRow(str(model), str(variant), len(m), sb, so, ci))
    return rows


# -- §7 / Table 12: error tracing ---------------------------------------------------------------
@dataclass(frozen=True)
class TraceRow:
    """Wrong rejections of one model (or of all models pooled) in one environment, split by
    what the model's own answer for the shared field says."""

    model: str
    environment: str
    field: str
    wrong_rejections: int
    scene_misreading: int
    requirement_misreading: int
    unanswered: int
    """Wrong rejections whose shared field went unanswered (in neither share)."""
    scene_share: CI | None
    """scene misreadings / (scene + requirement misreadings), Wilson interval."""
    defect_claims: int | None
    """Frames where the model reported a defect (None: the field has no defect value)."""
    defect_rejected: int | None
    defect_rejection_share: CI | None
    """Reported defects that came with a rejection, Wilson interval."""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("scene_share", "defect_rejection_share"):
            v = getattr(self, k)
            out[k] = v.as_dict() if v is not None else None
        return out


def _trace_one(model: str, env: str, field: str, acc: pd.DataFrame, doc: pd.DataFrame) -> TraceRow:
    answer = {
        (m, i): (p, c)
        for m, i, p, c in zip(
            doc["model"], doc["item_id"], doc["pred"], doc["correct"], strict=True
        )
    }
    wrong = acc[acc["gold"].map(lambda g: _is(g, True)) & acc["pred"].map(lambda p: _is(p, False))]
    scene = req = missing = 0
    for m, i in zip(wrong["model"], wrong["item_id"], strict=True):
        p, ok = answer.get((m, i), (None, False))
        if p is None or (isinstance(p, float) and np.isnan(p)):
            missing += 1
        elif bool(ok):
            req += 1
        else:
            scene += 1
    share = proportion_ci(scene, scene + req) if scene + req else None
    claims = rejected = None
    claim_share = None
    if field in DEFECTS:
        rejects = {
            (m, i): _is(p, False)
            for m, i, p in zip(acc["model"], acc["item_id"], acc["pred"], strict=True)
        }
        said = [k for k, (p, _) in answer.items() if claims_defect(field, p)]
        claims = len(said)
        rejected = sum(rejects.get(k, False) for k in said)
        claim_share = proportion_ci(rejected, claims) if claims else None
    return TraceRow(
        model, env, field, len(wrong), scene, req, missing, share, claims, rejected, claim_share
    )


def error_tracing(
    decisions: pd.DataFrame, *, env_col: str | None = "environment", pooled: bool = True
) -> list[TraceRow]:
    """§7: per model and ``SHARED`` environment present in the run, the wrong rejections
    split into scene and requirement misreadings, and the share of reported defects that
    triggered a rejection; with ``pooled`` also one row per environment over all models
    (Table 12's pooled statistics)."""
    if not len(decisions):
        return []
    d = _env(decisions, env_col)
    rows: list[TraceRow] = []
    for env, candidates in SHARED.items():
        de = d[d["environment"] == env]
        have = set(de["field"])
        field = next((f for f in candidates if f in have), None)
        if field is None:
            continue
        acc = de[de["field"] == ACCEPT_FIELD]
        doc = de[de["field"] == field]
        for model in de["model"].drop_duplicates():
            rows.append(
                _trace_one(
                    str(model), env, field, acc[acc["model"] == model], doc[doc["model"] == model]
                )
            )
        if pooled:
            rows.append(_trace_one(ALL, env, field, acc, doc))
    return rows


# -- §7: documentation on acceptable vs other frames ----------------------------------------------
@dataclass(frozen=True)
class DocGapRow:
    """One model's documentation score on scorer-acceptable frames and on the rest."""

    model: str
    environment: str
    on_acceptable: float | None
    on_other: float | None
    acceptable_n: int
    other_n: int

    @property
    def gap(self) -> float | None:
        if self.on_acceptable is None or self.on_other is None:
            return None
        return self.on_acceptable - self.on_other

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "gap": self.gap}


def documentation_gap(
    project: Any, decisions: pd.DataFrame, *, env_col: str | None = "environment"
) -> list[DocGapRow]:
    """§7: per model, overall (``all``) and per environment, the documentation score
    (share of correct documentation decisions, "any named part counts" fields as the
    conditional metric scores them) on the frames the scorer accepts and on the others."""
    rows: list[DocGapRow] = []
    if not len(decisions):
        return rows
    anyf = any_match_fields(project)
    for model, d in decisions.groupby("model", sort=False):
        ok = verdicts(d)
        doc = _env(d[d["field"] != ACCEPT_FIELD], env_col)
        doc = doc.assign(c=doc_correct(doc, anyf), ok=doc["item_id"].astype(str).map(ok).to_numpy())
        doc = doc[doc["ok"].notna()]
        for env in [ALL, *sorted(set(doc["environment"]))]:
            g = doc if env == ALL else doc[doc["environment"] == env]
            a, o = g[g["ok"].astype(bool)], g[~g["ok"].astype(bool)]
            rows.append(
                DocGapRow(
                    str(model),
                    env,
                    float(a["c"].mean()) if len(a) else None,
                    float(o["c"].mean()) if len(o) else None,
                    len(a),
                    len(o),
                )
            )
    return rows


def with_rerun(decisions: pd.DataFrame, rerun: pd.DataFrame | None) -> pd.DataFrame:
    """The ablation's input: a run's decisions plus a rerun run's default-variant decisions
    relabelled ``RERUN`` (same models, same items, a distinct cache key)."""
    if rerun is None or not len(rerun):
        return decisions
    r = rerun[rerun["variant"] == DEFAULT_VARIANT].assign(variant=RERUN)
    return pd.concat([decisions, r], ignore_index=True)


def rows_of(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Typed rows as plain dicts (the JSON edge)."""
    return [r.as_dict() for r in rows]
