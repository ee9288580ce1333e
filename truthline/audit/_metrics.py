"""The provenance-audit statistics of METRICS.md §3, each as a bootstrap estimate.

Every function takes the decision table and a mask of retained decisions, so the same
code gives the "before" and "after" of an exclusion. Values are ``Est`` (point + the
shared resamples); ``_audit`` turns them into ``CI`` objects.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from truthline.audit._boot import Boot, Est
from truthline.audit._data import REVIEW_ARMS, AuditData, leaf_of, number_tolerance
from truthline.audit._gold import GoldValue
from truthline.vocab import Direction

DIRECTIONS = tuple(Direction)


def _item_weights(items: np.ndarray, weights: dict[int, float]) -> np.ndarray:
    """Per decision, its item's review weight (1 without one): one lookup per item."""
    if not weights:
        return np.ones(len(items))
    uniq, inv = np.unique(items, return_inverse=True)
    per = np.array([weights.get(int(i), 1.0) for i in uniq], dtype=float)
    return per[inv.ravel()]


class Ctx:
    """Decision arrays and annotation-level arrays for one set of retained annotators.

    Team figures (``team``, ``all``, ``by_field``, pairs, gold) use the retained annotators
    only; per-annotator rows cover ``everyone``, excluded annotators included, so an exclusion
    never hides the evidence it rests on (issue 14)."""

    def __init__(self, data: AuditData, boot: Boot, excluded: set[str]):
        self.data = data
        self.boot = boot
        self.excluded = excluded
        d = data.d
        self.d = d
        self._eq: dict[tuple[str, Any], np.ndarray] = {}
        keep = np.ones(len(d["unit"]), dtype=bool)
        for a in excluded:
            keep &= ~self.eq("annotator", a)
        self.keep = keep
        self.anch = keep & self.eq("arm", "anchored")
        self.blind = keep & self.eq("arm", "blind")
        self.has = {k: ~np.isnan(d[k]) for k in ("hv", "he", "ve")}
        self.w = _item_weights(d["item"], data.review_weights)
        self.fts = {f: data.project.field(f) for f in data.fields}
        """Audited leaf field -> its field type, looked up once (not once per decision)."""
        anns = data.annotations
        self.a_unit = np.array([data.item_index[a.item] for a in anns], dtype=np.int64)
        self.a_name = np.array([a.annotator for a in anns], dtype=object)
        # tier-1 annotations of any annotator; ``a_ok``: of retained annotators only
        self.a_tier1 = np.array(
            [a.tier == 1 and a.arm not in REVIEW_ARMS for a in anns], dtype=bool
        )
        self.a_ok = self.a_tier1 & np.array([a.annotator not in excluded for a in anns], dtype=bool)
        self.anch_any = d["arm"] == "anchored"
        # per annotation: decisions and overrides in the anchored arm (any annotator; selecting
        # annotations by ``a_ok`` or by name decides who counts)
        m = self.anch_any & self.has["hv"]
        n = len(anns)
        self.a_dec = np.bincount(d["ann"][m], minlength=n).astype(float)
        self.a_ov = np.bincount(d["ann"][m], weights=(d["hv"][m] == 0), minlength=n)
        self.annotators = sorted({str(a) for a in self.a_name[self.a_ok]})
        self.everyone = sorted({str(a) for a in self.a_name[self.a_tier1]})

    def eq(self, column: str, value: Any) -> np.ndarray:
        """``d[column] == value``, computed once per audit (the tables ask for the same
        annotator and field masks many times; each is a pass over an object column)."""
        key = (column, value)
        mask = self._eq.get(key)
        if mask is None:
            mask = self._eq[key] = np.asarray(self.d[column] == value, dtype=bool)
        return mask

    def rate(self, mask: np.ndarray, hits: np.ndarray, weighted: bool = False) -> Est:
        return self.boot.rate(
            self.d["unit"][mask], hits[mask].astype(float), self.w[mask] if weighted else None
        )


# -- override and edit depth ------------------------------------------------------------
def override(c: Ctx, team_only: bool = False) -> dict[str, Any]:
    """Override rate (share of anchored annotations with >= 1 changed field), edit depth
    (mean changed fields per annotation), and per-field decision-level override rates.
    ``team_only``: the team block alone (an exclusion's other side needs no more)."""
    sel_all = c.a_ok & (c.a_dec > 0)
    sel_any = c.a_tier1 & (c.a_dec > 0)

    def block(sel: np.ndarray) -> dict[str, Any]:
        u = c.a_unit[sel]
        ones = c.boot.per_unit(u)
        return {
            "override_rate": c.boot.ratio(
                c.boot.per_unit(u, (c.a_ov[sel] > 0) * 1.0), ones, share=True
            ),
            "edit_depth": c.boot.ratio(c.boot.per_unit(u, c.a_ov[sel]), ones),
            "decision_override_rate": c.boot.ratio(
                c.boot.per_unit(u, c.a_ov[sel]), c.boot.per_unit(u, c.a_dec[sel]), share=True
            ),
            "annotations": int(sel.sum()),
        }

    if team_only:
        return {"team": block(sel_all)}
    m = c.anch & c.has["hv"]
    by_field = {f: c.rate(m & c.eq("field", f), c.d["hv"] == 0) for f in c.data.fields}
    return {
        "team": block(sel_all),
        "by_annotator": {a: block(sel_any & (c.a_name == a)) for a in c.everyone},
        "by_field": by_field,
    }


# -- direction table ----------------------------------------------------------------------
def _cats(c: Ctx) -> dict[str, np.ndarray]:
    d = c.d
    hv, he, ve = d["hv"], d["he"], d["ve"]
    return {
        "productive_anchoring": (ve == 1) & (hv == 1),
        "harmful_anchoring": (ve == 0) & (hv == 1),
        "harmful_override": (ve == 1) & (hv == 0),
        "productive_override": (ve == 0) & (hv == 0) & (he == 1),
        "wrong_override": (ve == 0) & (hv == 0) & (he == 0),
    }


def direction(c: Ctx, team_only: bool = False) -> dict[str, Any]:
    """Direction table (anchored decisions with an expert reference), per field, per
    annotator, per annotator x field and per taxonomy group; IPW when review weights exist.
    ``team_only``: ``all`` and ``by_field`` alone (per-annotator rows cover every annotator
    whoever is excluded, so the other side of an exclusion does not repeat them)."""
    evidence = c.has["hv"] & c.has["he"] & c.has["ve"]
    base = c.anch & evidence
    base_any = c.anch_any & evidence
    cats = _cats(c)
    weighted = bool(c.data.review_weights)
    vlm_wrong = c.d["ve"] == 0
    vlm_right = c.d["ve"] == 1

    def table(sel: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"n": int(sel.sum())}
        for k in DIRECTIONS:
            out[k] = {"count": int((sel & cats[k]).sum()), "rate": c.rate(sel, cats[k], weighted)}
        out["vlm_errors"] = int((sel & vlm_wrong).sum())
        out["conditional"] = {
            "kept_when_vlm_wrong": c.rate(sel & vlm_wrong, cats["harmful_anchoring"], weighted),
            "corrected_when_vlm_wrong": c.rate(
                sel & vlm_wrong, cats["productive_override"], weighted
            ),
            "changed_when_vlm_right": c.rate(sel & vlm_right, cats["harmful_override"], weighted),
        }
        return out

    res: dict[str, Any] = {
        "all": table(base),
        "by_field": {f: table(base & c.eq("field", f)) for f in c.data.fields},
    }
    if team_only:
        return res | {"weighted": weighted}
    res["by_annotator"] = {a: table(base_any & c.eq("annotator", a)) for a in c.everyone}
    res["by_annotator_field"] = {
        a: {f: table(base_any & c.eq("annotator", a) & c.eq("field", f)) for f in c.data.fields}
        for a in c.everyone
    }
    res["weighted"] = weighted
    groups: dict[str, Any] = {}
    for f in c.data.fields:
        ft = c.data.project.field(f)
        group_of = getattr(ft, "group_of", None)
        if group_of is None or not getattr(ft.spec, "taxonomy", None):
            continue
        sel_f = base & c.eq("field", f)
        g = np.array([group_of(e) if isinstance(e, str) else None for e in c.d["e"]], dtype=object)
        groups[f] = {
            str(grp): table(sel_f & (g == grp))
            for grp in sorted({x for x in g[sel_f] if x is not None})
        }
    res["by_group"] = groups
    return res


# -- correct labels, anchoring bias, VLM kappa --------------------------------------------------
def correct_label(c: Ctx, team_only: bool = False) -> dict[str, Any]:
    """Share of tier-1 decisions equal (field ``agree``) to the expert's, any arm."""
    m = c.keep & c.has["he"]
    he = c.d["he"] == 1
    if team_only:
        return {"all": c.rate(m, he)}
    return {
        "all": c.rate(m, he),
        "by_annotator": {a: c.rate(c.has["he"] & c.eq("annotator", a), he) for a in c.everyone},
        "by_field": {f: c.rate(m & c.eq("field", f), he) for f in c.data.fields},
        "by_arm": {arm: c.rate(m & c.eq("arm", arm), he) for arm in ("blind", "anchored")},
    }


def anchoring_bias(c: Ctx) -> dict[str, Any]:
    """VLM agreement anchored minus blind, per field, in percentage points."""
    out = {}
    hv = c.d["hv"] == 1
    for f in [*c.data.fields, "all"]:
        fm = np.ones_like(c.keep) if f == "all" else c.eq("field", f)
        a = c.rate(c.anch & c.has["hv"] & fm, hv)
        b = c.rate(c.blind & c.has["hv"] & fm, hv)
        out[f] = {"anchored": a, "blind": b, "bias_pp": (a - b).scale(100.0)}
    return out


def vlm_kappa(c: Ctx, team_only: bool = False) -> dict[str, Any]:
    """Cohen's kappa between the prefill and each annotator (anchored arm): pooled over the
    audited fields with field-qualified categories, and per field. ``team_only``: the
    retained team's pooled kappa alone."""
    m = c.anch & c.has["hv"]
    d = c.d

    def k(sel: np.ndarray) -> Est:
        # codes are (field, value) categories: pooled kappa never mixes two fields' labels;
        # the code table makes chance agreement use each field's tolerance, as ``hv`` does
        return c.boot.kappa(
            d["unit"][sel], d["hv"][sel], d["vc"][sel], d["hc"][sel], codes=c.data.codes
        )

    if team_only:
        return {"team": k(m)}
    m_any = c.anch_any & c.has["hv"]
    by_a = {a: k(m_any & c.eq("annotator", a)) for a in c.everyone}
    by_af = {
        a: {f: k(m_any & c.eq("annotator", a) & c.eq("field", f)) for f in c.data.fields}
        for a in c.everyone
    }
    # the team ceiling: retained annotators only
    finite = [by_a[a].point for a in c.annotators if np.isfinite(by_a[a].point)]
    return {
        "team": k(m),
        "by_annotator": by_a,
        "by_annotator_field": by_af,
        "by_field": {f: k(m & c.eq("field", f)) for f in c.data.fields},
        "ceiling": max(finite) if finite else float("nan"),
    }


# -- inter-annotator agreement, blind vs anchored ----------------------------------------------------
def _pairs(c: Ctx, arm: str) -> dict[str, tuple[list[int], list[float], list[Any], list[Any]]]:
    """Double-annotated decisions in one arm: the first two retained annotators per item."""
    first: dict[int, list] = defaultdict(list)
    for a in c.data.annotations:
        if (
            a.tier == 1
            and a.arm == arm
            and a.annotator not in c.excluded
            and all(b.annotator != a.annotator for b in first[a.item])
            and len(first[a.item]) < 2
        ):
            first[a.item].append(a)
    out: dict[str, tuple[list[int], list[float], list[Any], list[Any]]] = {
        f: ([], [], [], []) for f in c.data.fields
    }
    fields = set(c.data.fields)
    for item, pair in first.items():
        if len(pair) < 2:
            continue
        x, y = pair
        for path, xv in x.values.items():
            leaf = leaf_of(path)
            yv = y.values.get(path)
            if leaf not in fields or xv is None or yv is None:
                continue
            ft = c.fts[leaf]
            u, ag, av, bv = out[leaf]
            u.append(c.data.item_index[item])
            ag.append(1.0 if ft.agree(xv, yv) else 0.0)
            av.append(xv)
            bv.append(yv)
    return out


def iaa(c: Ctx) -> dict[str, Any]:
    """Kappa over blind double-annotated pairs vs anchored pairs per field, and the
    difference (anchored - blind) with its bootstrap CI."""
    res: dict[str, Any] = {}
    pb, pa = _pairs(c, "blind"), _pairs(c, "anchored")
    for f in c.data.fields:
        tol = number_tolerance(c.data.project.field(f))  # observed and chance alike
        kb = c.boot.kappa(
            np.asarray(pb[f][0], dtype=np.int64), np.asarray(pb[f][1]), *pb[f][2:], tol
        )
        ka = c.boot.kappa(
            np.asarray(pa[f][0], dtype=np.int64), np.asarray(pa[f][1]), *pa[f][2:], tol
        )
        res[f] = {
            "blind": kb,
            "anchored": ka,
            "diff": ka - kb,
            "blind_pairs": len(set(pb[f][0])),
            "anchored_pairs": len(set(pa[f][0])),
        }
    return res


# -- time, flags, safety, residual risk ------------------------------------------------------------
def timing(c: Ctx) -> dict[str, Any]:
    """Mean lead time of anchored annotations that kept every prefill vs changed >= 1."""
    lead = np.array(
        [a.lead_time if a.lead_time is not None else np.nan for a in c.data.annotations]
    )
    ok = c.a_ok & (c.a_dec > 0) & ~np.isnan(lead)

    def mean(sel: np.ndarray) -> Est:
        u = c.a_unit[sel]
        return c.boot.ratio(c.boot.per_unit(u, lead[sel]), c.boot.per_unit(u))

    kept, changed = mean(ok & (c.a_ov == 0)), mean(ok & (c.a_ov > 0))
    out: dict[str, Any] = {
        "all": {"kept": kept, "overridden": changed, "diff": changed - kept},
        "by_field": {},
    }
    d = c.d
    for f in c.data.fields:
        m = c.anch & c.has["hv"] & c.eq("field", f)
        n = len(c.data.annotations)
        dec = np.bincount(d["ann"][m], minlength=n)
        ov = np.bincount(d["ann"][m], weights=(d["hv"][m] == 0), minlength=n)
        okf = c.a_ok & (dec > 0) & ~np.isnan(lead)
        k, o = mean(okf & (ov == 0)), mean(okf & (ov > 0))
        out["by_field"][f] = {"kept": k, "overridden": o, "diff": o - k}
    return out


def flags(c: Ctx) -> dict[str, Any]:
    """Flag rate (annotations flagged) and skip rate (fields skipped) per annotator."""
    anns = c.data.annotations
    flagged = np.array([a.flagged for a in anns], dtype=float)
    skipped = np.array([len(a.skipped) for a in anns], dtype=float)
    total = np.array([len(a.skipped) + a.n_fields for a in anns], dtype=float)
    out = {}
    for a in c.everyone:
        sel = c.a_tier1 & (c.a_name == a)
        u = c.a_unit[sel]
        out[a] = {
            "flag_rate": c.boot.ratio(
                c.boot.per_unit(u, flagged[sel]), c.boot.per_unit(u), share=True
            ),
            "skip_rate": c.boot.ratio(
                c.boot.per_unit(u, skipped[sel]), c.boot.per_unit(u, total[sel]), share=True
            ),
            "annotations": int(sel.sum()),
        }
    return out


def safety(c: Ctx) -> dict[str, Any]:
    """Safety fields: VLM false alarms, VLM misses, and misses caught only by the expert."""
    out = {}
    d = c.d
    for f in c.data.fields:
        if not getattr(c.data.project.field(f).spec, "safety", False):
            continue
        m = c.anch & c.has["hv"] & c.has["he"] & c.has["ve"] & c.eq("field", f)
        v = np.array([x is True for x in d["v"]])
        h = np.array([x is True for x in d["h"]])
        e = np.array([x is True for x in d["e"]])
        hits = {
            "vlm_false_alarm": v & ~e,
            "vlm_miss": ~v & e,
            "expert_only_catch": ~v & ~h & e,
        }
        row: dict[str, Any] = {"n": int(m.sum())}
        for k, hit in hits.items():
            row[k] = {"count": int((m & hit).sum()), "rate": c.rate(m, hit)}
        out[f] = row
    return out


RESIDUAL_LEVEL = 0.95
RESIDUAL_BOUND = (
    "one-sided 95% upper prediction bound on the unreviewed items carrying >= 1 harmful "
    "anchor: the 95th percentile of BetaBinomial(N, k + 1/2, n_eff - k + 1/2), counting the "
    "per-item rate's uncertainty and the unreviewed items' binomial spread; "
    "it assumes the reviewed items are a random share of the anchored items"
)


def residual_bound(k: float, n_eff: float, unreviewed: int, level: float = RESIDUAL_LEVEL) -> int:
    """Upper prediction bound for X ~ Binomial(N, q) from k of n_eff reviewed items: the
    ``level`` quantile of BetaBinomial(N, k + ½, n_eff − k + ½) (the Jeffreys posterior of q
    mixed over X's own spread). A confidence limit of q times N leaves the spread out and,
    with few unreviewed items, covers X far less often than its level (issue 24: 75 %)."""
    from scipy import stats as sps  # lazy: scipy.stats costs ~1 s of CLI start-up

    if unreviewed <= 0:
        return 0
    if n_eff <= 0:
        return int(unreviewed)  # nothing reviewed: any of them may carry one
    k = min(max(float(k), 0.0), float(n_eff))
    return int(sps.betabinom.ppf(level, int(unreviewed), k + 0.5, n_eff - k + 0.5))


def design_effect(hits: np.ndarray, clusters: np.ndarray) -> float:
    """Cluster design effect (>= 1) of a share of 0/1 items: the ratio-estimator variance
    over clusters against simple random sampling, as ``stats.proportion_ci`` computes it."""
    n = len(hits)
    labels, codes = np.unique(clusters, return_inverse=True)
    g = len(labels)
    if n == 0 or g < 2 or g == n:
        return 1.0
    p = float(hits.sum()) / n
    var_srs = p * (1 - p) / n
    if var_srs <= 0:
        return 1.0
    yg = np.bincount(codes, weights=hits, minlength=g)
    mg = np.bincount(codes, minlength=g).astype(float)
    var_ratio = g / (g - 1) * float(((yg - p * mg) ** 2).sum()) / n**2
    return max(1.0, var_ratio / var_srs)


def residual_risk(c: Ctx, harmful: Est) -> dict[str, Any]:
    """Items finalized without expert review that carry at least one uncorrected harmful
    anchor: the per-item rate q among expert-reviewed anchored items (share of items with
    >= 1 harmful anchor) times the N unreviewed items, and a predictive upper bound on that
    count (``residual_bound``, n_eff = n / deff over the items' clusters). The per-decision
    harmful anchoring rate is kept for context: multiplying it by an item count is neither
    a count of items nor a bound."""
    items = {
        a.item
        for a in c.data.annotations
        if a.tier == 1 and a.arm == "anchored" and a.annotator not in c.excluded
    }
    n = len(items - set(c.data.expert))
    d = c.d
    base = c.anch & c.has["hv"] & c.has["he"] & c.has["ve"]
    hit = base & (d["ve"] == 0) & (d["hv"] == 1)
    size = c.boot.n
    reviewed = (np.bincount(d["unit"][base], minlength=size) > 0).astype(float)
    with_harm = (np.bincount(d["unit"][hit], minlength=size) > 0).astype(float)
    item_rate = c.boot.ratio(with_harm, reviewed, share=True)
    ci = c.boot.ci(item_rate)
    rev = np.flatnonzero(reviewed)
    deff = design_effect(with_harm[rev], c.boot.cluster_of[rev]) if c.boot.clustered else 1.0
    n_eff = len(rev) / deff
    k = float(with_harm[rev].sum()) / deff
    return {
        "items_without_review": n,
        "harmful_anchoring_rate": harmful,
        "reviewed_items": int(reviewed.sum()),
        "reviewed_items_with_harmful_anchor": int(with_harm.sum()),
        "item_harmful_rate": ci,
        "expected_items": item_rate.point * n,
        "upper_bound_items": residual_bound(k, n_eff, n) if len(rev) else float("nan"),
        "design_effect": deff,
        "effective_reviewed_items": n_eff,
        "bound": RESIDUAL_BOUND,
    }


def _pred_agreement(c: Ctx, pred: dict[int, dict[str, Any]]) -> np.ndarray:
    """Per decision, whether ``pred`` agrees with the annotator's value (NaN: no prediction).
    Who is excluded does not change it: computed once per set of predictions."""
    memo = c.data.memo.get("pred_agreement")
    if memo is not None and memo[0] is pred:
        return memo[1]
    d = c.d
    p_ag = np.full(len(d["unit"]), np.nan)
    items, paths, leaves, hs = d["item"], d["path"], d["field"], d["h"]
    none: dict[str, Any] = {}
    for k, (item, path, leaf, h) in enumerate(zip(items.tolist(), paths, leaves, hs, strict=True)):
        p = pred.get(item, none).get(path)
        if p is not None:
            p_ag[k] = 1.0 if c.fts[leaf].agree(p, h) else 0.0
    c.data.memo["pred_agreement"] = (pred, p_ag)
    return p_ag


def gradient(
    c: Ctx, pred: dict[int, dict[str, Any]], kept: list[GoldValue], label: str | None
) -> dict[str, Any]:
    """One set of predictions scored against blind labels, anchored labels and
    VLM-sourced gold (decisions on the audited fields)."""
    fields = set(c.data.fields)
    p_ag = _pred_agreement(c, pred).copy()
    p_ag[~c.keep] = np.nan
    has = ~np.isnan(p_ag)
    hit = p_ag == 1
    units, agr = [], []
    for g in kept:  # the VLM-sourced gold values
        if g.provenance != "anchored_kept" or leaf_of(g.path) not in fields:
            continue
        p = pred.get(g.item, {}).get(g.path)
        if p is None:
            continue
        units.append(c.data.item_index[g.item])
        agr.append(1.0 if c.fts[leaf_of(g.path)].agree(p, g.value) else 0.0)
    vs = c.boot.rate(np.asarray(units, dtype=np.int64), np.asarray(agr))
    blind = c.rate(c.blind & has, hit)
    anchored = c.rate(c.anch & has, hit)
    return {
        "predictions": label,
        "blind": blind,
        "anchored": anchored,
        "vlm_sourced": vs,
        "inflation_pp": (vs - blind).scale(100.0),
    }
