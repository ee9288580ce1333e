"""The PhysAlign reporting checklist per model (PHYSALIGN.md §13) as one metric across
the entries of a run: ``probe_protocol``.

Supports (§1): G = items with a grounding decision; L = T03-image items that also have a
reading decision; P_m = T03-image items with both a Base and a +GT record of the model;
H = items where the frozen nearest-region rule is applicable; H_hard = those it gets wrong
(from public geometry and gold only, never from a model). Every number is a balanced
aggregate (§7.2: parents within type, types equally) on the observed support, with a
parent-cluster bootstrap CI (§8); paired quantities share one draw. Under 20 parents an
interval is the delete-one-parent jackknife-t, never narrower than the percentile one
(METRICS.md §2), and a share or difference over a few events is never zero width.
Infra-missing answers are not in the decisions, so they leave the support and show as
coverage N/n. A rule baseline is scored on its own support (H for the frozen rule), with
the coverage beside. H_hard and the net on P_m are this report's hard subset and net
change: the decision-count ``hard_subset`` / ``paired_conditions`` sections give way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from truthline.benchmark import _metrics as M
from truthline.benchmark._baselines import load_project_rules, rule_applies
from truthline.benchmark._registry import RunScored, metric
from truthline.models._prompt import typed_meta
from truthline.stats import fmt_ci
from truthline.systems.physalign._nearest import NEAREST_RULE, nearest_region

if TYPE_CHECKING:
    from truthline.report import Section

T03_IMAGE = "T03-image"
SUPERSEDES = ("hard_subset", "paired_conditions")
"""Generic metrics across models whose report sections this one replaces: their hard
subset (rule-wrong *decisions*) and net change (over decisions) are other definitions of
H_hard and of the Base -> +GT net; one report shows the paper's."""


def _type_col(v: RunScored) -> str | None:
    cols = [c for c in v.settings.balance if c != "parent"]
    return cols[0] if cols else None


def _items(v: RunScored, label: str) -> pd.DataFrame:
    """One row per item of an entry: parent, type, meta, G (grounding correct), C (reading
    correct, NaN when the item has no reading decision), status."""
    d = v.entries[label].decisions
    gf, rf = v.settings.ground_field, v.settings.read_field
    if not len(d) or not gf:
        return pd.DataFrame(columns=["item_id", "parent", "type", "meta", "G", "C", "status"])
    tcol = _type_col(v)
    g = d[d["field"] == gf].drop_duplicates("item_id").set_index("item_id")
    rows = pd.DataFrame(
        {
            "item_id": g.index,
            "parent": g["parent"].fillna(pd.Series(g.index.astype(str), index=g.index)).astype(str),
            "type": [str((m or {}).get(tcol, "")) if tcol else "" for m in g["meta"]],
            "meta": [typed_meta(m) for m in g["meta"]],
            "gold": g["gold"].tolist(),
            "G": g["correct"].astype(float).to_numpy(),
            "status": g["status"].tolist(),
        }
    ).reset_index(drop=True)
    if rf:
        r = d[d["field"] == rf].drop_duplicates("item_id").set_index("item_id")["correct"]
        rows["C"] = rows["item_id"].map(r.astype(float))
    else:
        rows["C"] = np.nan
    return rows


DIFF = (-1.0, 1.0)
SHARE = (0.0, 1.0)
BOUNDS = {
    "C+G-": SHARE,
    "P(G|C)": SHARE,
    "err(G|C)": SHARE,
    "net": DIFF,
    "repair_rate": SHARE,
    "harm_rate": SHARE,
    "model-nearest": DIFF,
    "model-random": DIFF,
    "delta": DIFF,
    "a-b": DIFF,
}
"""Where each derived quantity lives (a thin-design jackknife-t interval is clipped to it)."""
SHARES = {
    "P(G|C)": ("JAcc", "CAcc"),
    "err(G|C)": ("C+G-", "CAcc"),
    "repair_rate": ("repair", "base_wrong"),
    "harm_rate": ("harm", "base"),
}
"""Derived count shares (numerator, denominator columns): never a zero-width interval on
one or two events (the Wilson floor of ``support_ci``)."""
DIFFERENCES = {
    "net": ("gt", "base"),
    "model-nearest": ("model", "nearest"),
    "model-random": ("model", "random"),
    "delta": ("control", "reference"),
    "a-b": ("a", "b"),
}
"""Derived paired differences (a, b): on fewer than 3 discordant probes (none: an exact
0 [0, 0] otherwise) at least the Wilson bounds of the discordant shares."""


def _ci(v: RunScored, rows: pd.DataFrame, cols: dict[str, Any], derive: Any = None) -> Any:
    """Balanced aggregates with parent-cluster CIs; under 20 parents the jackknife-t
    fallback of ``support_ci`` (METRICS.md §2), shares with a Wilson floor."""
    s = M.Support.of(rows["parent"].tolist(), rows["type"].tolist())
    rs = M.Resampling(v.rs.resamples, v.rs.seed, v.rs.level)
    shares = {k: c for k, c in SHARES.items() if c[0] in cols and c[1] in cols}
    diffs = {k: c for k, c in DIFFERENCES.items() if c[0] in cols and c[1] in cols}
    return M.support_ci(s, cols, derive, rs=rs, bounds=BOUNDS, shares=shares, differences=diffs)


def _rule_name(v: RunScored, lab: str) -> str | None:
    """The rule an entry runs (``rule:nearest-region``), None for a model."""
    if v.kinds.get(lab) != "rule" and not lab.startswith("rule:"):
        return None
    return str(v.keys.get(lab, (lab, "", "", ""))[0]).split("|", 1)[0]


def _rule_support(v: RunScored, lab: str, rows: pd.DataFrame) -> pd.Series | None:
    """Which of a rule entry's probes the rule applies to (PHYSALIGN.md §9: a rule is
    compared on its own support): H for the frozen nearest-region rule (the project's
    ``hard_rule``), else the rule's declared ``applies``; None for a model or a rule that
    applies everywhere."""
    name = _rule_name(v, lab)
    if name is None or not len(rows):
        return None
    if name == (v.settings.hard_rule or ""):
        return _geometry(rows)["H"].astype(bool)
    load_project_rules(v.project)
    applies = rule_applies(name)
    if applies is None:
        return None
    return pd.Series([bool(applies(m)) for m in rows["meta"]], index=rows.index, dtype=bool)


def _on_support(v: RunScored, lab: str) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    """An entry's item rows, restricted to the rule's support for a rule (with the
    support's size beside: ``{"N": in support, "of": rows, "rule": name}``)."""
    rows = _items(v, lab)
    sup = _rule_support(v, lab, rows)
    if sup is None:
        return rows, None
    info = {"N": int(sup.sum()), "of": len(rows), "rule": _rule_name(v, lab)}
    return rows[sup].reset_index(drop=True), info


def _entries(v: RunScored) -> dict[tuple[str, str], dict[tuple[str, str], str]]:
    """(model, variant) -> (condition, control) -> entry label (rule baselines included:
    their own G, L and H rows sit beside the models')."""
    out: dict[tuple[str, str], dict[tuple[str, str], str]] = {}
    for lab in v.models(rules=True):
        model, variant, cond, control = v.keys.get(lab, (lab, "", "base", ""))
        out.setdefault((model, variant), {})[(cond, control)] = lab
    return out


def _n_items(v: RunScored) -> int:
    ids: set[Any] = set()
    for s in v.entries.values():
        if len(s.decisions):
            ids |= set(s.decisions["item_id"])
    return len(ids)


def _coverage(rows: pd.DataFrame, n: int) -> dict[str, Any]:
    st = rows["status"].value_counts().to_dict() if len(rows) else {}
    return {
        "N": len(rows),
        "n": n,
        "scored": int(st.get("parsed", 0)),
        "model_failure": int(st.get("model_failure", 0)),
        "error": int(st.get("error", 0)),
        "infra_missing": n - len(rows),
    }


def _flag(meta: Mapping[str, Any], col: str) -> bool | None:
    """A release-time eligibility column (``in_L``, ``in_P``, ``in_H``, ``in_H_hard``, as
    ``truthline.systems.physalign`` exports them), None when the item has none."""
    v = meta.get(col)
    if v is None or v == "":
        return None
    return str(v).strip().lower() in ("1", "true", "yes")


def _in(rows: pd.DataFrame, col: str, default: pd.Series) -> pd.Series:
    """Release-time membership where the items carry it, else ``default``."""
    flags = [_flag(m, col) for m in rows["meta"]]
    return pd.Series(
        [d if f is None else f for f, d in zip(flags, default, strict=True)],
        index=rows.index,
        dtype=bool,
    )


def _L(rows: pd.DataFrame) -> pd.DataFrame:
    """T03-image probes with a reading decision (``in_L`` when the release decided it)."""
    if not len(rows):
        return rows
    base = rows["type"].isin([T03_IMAGE, ""]) & rows["C"].notna()
    return rows[base & _in(rows, "in_L", base)].reset_index(drop=True)


def _four(v: RunScored, rows: pd.DataFrame) -> dict[str, Any]:
    if not len(rows):
        return {"n": 0}
    C, G = rows["C"].to_numpy(), rows["G"].to_numpy()
    out = _ci(
        v,
        rows,
        {
            "CAcc": C,
            "GAcc_L": G,
            "JAcc": C * G,
            # = CAcc - JAcc (the aggregate is linear); a column, so its share has a floor
            "C+G-": C * (1 - G),
            "C-G+": (1 - C) * G,
            "C-G-": (1 - C) * (1 - G),
        },
        lambda a: {"P(G|C)": a["JAcc"] / a["CAcc"], "err(G|C)": a["C+G-"] / a["CAcc"]},
    )
    out["n"] = len(rows)
    return out


def _geometry(rows: pd.DataFrame) -> pd.DataFrame:
    """H membership, the rule's hit h_j and K_j per item, from public geometry and gold;
    where the release froze them (``in_H``, ``in_H_hard``, ``K``) those are used."""
    app, hit, K = [], [], []
    for meta, gold in zip(rows["meta"], rows["gold"], strict=True):
        try:
            nr = nearest_region(meta)
        except (ValueError, TypeError, KeyError):
            nr = None
        in_h, hard = _flag(meta, "in_H"), _flag(meta, "in_H_hard")
        app.append(bool(nr and nr.applicable) if in_h is None else in_h)
        h = float(bool(nr and nr.alias is not None and str(nr.alias) == str(gold)))
        hit.append(h if hard is None else float(not hard))
        k = meta.get("K")
        K.append(float(k) if k not in (None, "") else len(nr.distances) if nr else np.nan)
    return rows.assign(H=app, h=hit, K=K)


def _model(v: RunScored, conds: dict[tuple[str, str], str], n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ref = conds.get(("base", ""))
    if ref is None:
        return {"note": "no Base entry"}
    full = _items(v, ref)
    base, support = _on_support(v, ref)
    out["G"] = {
        "coverage": _coverage(full, n),
        **(_ci(v, base, {"GAcc": base["G"].to_numpy()}) if len(base) else {}),
    }
    if support is not None:
        out["G"]["support"] = support
    L = _L(base)
    out["L"] = _four(v, L)
    # P_m: T03-image probes with both records (paired Base/+GT), §10
    gt = conds.get(("gt", ""))
    if gt is not None:
        g = _on_support(v, gt)[0][["item_id", "G"]].rename(columns={"G": "Gg"})
        img = base["type"].isin([T03_IMAGE, ""])
        P = base[img & _in(base, "in_P", img)].merge(g, on="item_id")
        if len(P):
            b, gg = P["G"].to_numpy(), P["Gg"].to_numpy()
            res = _ci(
                v,
                P,
                {
                    "base": b,
                    "gt": gg,
                    "repair": (1 - b) * gg,
                    "harm": b * (1 - gg),
                    "stay_right": b * gg,
                    "stay_wrong": (1 - b) * (1 - gg),
                    "base_wrong": 1 - b,
                },
                lambda a: {
                    "net": a["gt"] - a["base"],
                    "repair_rate": a["repair"] / a["base_wrong"],
                    "harm_rate": a["harm"] / a["base"],
                },
            )
            res.pop("base_wrong")
            res["counts"] = {
                "repairs": int(((1 - b) * gg).sum()),
                "harms": int((b * (1 - gg)).sum()),
                "stay_right": int((b * gg).sum()),
                "stay_wrong": int(((1 - b) * (1 - gg)).sum()),
            }
            res["N"], res["n_base"], res["n_gt"] = len(P), len(base), len(g)
            out["P_m"] = res
        else:
            out["P_m"] = {"N": 0, "note": "no T03-image item has both a Base and a +GT record"}
    # H and H_hard (§9): same support, same weights for the model and the baselines
    geo = _geometry(base)
    H = geo[geo["H"]].reset_index(drop=True)
    if len(H):
        out["H"] = _ci(
            v,
            H,
            {"model": H["G"].to_numpy(), "nearest": H["h"].to_numpy(), "random": 1 / H["K"]},
            lambda a: {"model-nearest": a["model"] - a["nearest"]},
        )
        hard = H[H["h"] == 0].reset_index(drop=True)
        if len(hard):
            out["H_hard"] = _ci(
                v,
                hard,
                {"model": hard["G"].to_numpy(), "random": 1 / hard["K"]},
                lambda a: {"model-random": a["model"] - a["random"]},
            )
            out["H_hard_L"] = _four(v, _L(hard))
        else:
            out["H_hard"] = {"N": 0}
    else:
        out["H"] = {"N": 0, "note": "the nearest-region rule is applicable to no item"}
    # input controls (§11): delta = Agg(G^ctrl) - Agg(G^ref) on items with both records
    ctrls: dict[str, Any] = {}
    for (cond, control), lab in conds.items():
        if cond != "base" or not control:
            continue
        c = _on_support(v, lab)[0][["item_id", "G"]].rename(columns={"G": "Gc"})
        S = base.merge(c, on="item_id")
        if not len(S):
            continue
        r, k = S["G"].to_numpy(), S["Gc"].to_numpy()
        res = _ci(
            v,
            S,
            {"reference": r, "control": k},
            lambda a: {"delta": a["control"] - a["reference"]},
        )
        res["counts"] = {
            "changed_right_to_wrong": int((r * (1 - k)).sum()),
            "changed_wrong_to_right": int(((1 - r) * k).sum()),
        }
        res["N"] = len(S)
        ctrls[control] = res
    if ctrls:
        out["controls"] = ctrls
    return out


def _pairs(v: RunScored) -> list[dict[str, Any]]:
    """Model A - model B grounding on the probes both answered (Base, no control), with
    one parent draw serving both terms (§8)."""
    base = {
        model + (f"|{variant}" if variant else ""): conds[("base", "")]
        for (model, variant), conds in _entries(v).items()
        if ("base", "") in conds
    }
    labels = list(base)
    out = []
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            ra = _on_support(v, base[a])[0]
            rb = _on_support(v, base[b])[0][["item_id", "G"]].rename(columns={"G": "Gb"})
            S = ra.merge(rb, on="item_id")
            if not len(S):
                continue
            res = _ci(
                v,
                S,
                {"a": S["G"].to_numpy(), "b": S["Gb"].to_numpy()},
                lambda x: {"a-b": x["a"] - x["b"]},
            )
            out.append({"model_a": a, "model_b": b, "N": len(S), **res})
    return out


@metric("probe_protocol", across=True)
def _probe_protocol(v: RunScored) -> dict[str, Any]:
    """PHYSALIGN.md §13 per model: G (coverage, GAcc), L (CAcc, JAcc, the four cells,
    P(G|C), err(G|C)), P_m (Base/+GT, net, repairs/harms, rates), H (model vs nearest and
    random), H_hard (model vs random, C+G- and err(G|C) on H_hard ∩ L), input controls;
    balanced aggregation with parent-cluster CIs."""
    if not v.settings.ground_field:
        return {"value": None, "note": "needs [benchmark] ground_field (and read_field)"}
    n = _n_items(v)
    models = {
        model + (f"|{variant}" if variant else ""): _model(v, conds, n)
        for (model, variant), conds in _entries(v).items()
    }
    if not models:
        return {"value": None, "note": "no model entries in this run"}
    return {
        "value": None,
        "models": models,
        "pairs": _pairs(v),
        # the paper's hard subset (balanced H_hard) and net change (on P_m) are this
        # metric's: the decision-count sections of the generic metrics are not shown beside
        "supersedes": list(SUPERSEDES),
        "manifest": {
            "nearest_rule": NEAREST_RULE,
            "aggregation": "balanced: parents equal within a probe type, probe types equal",
            "type_column": _type_col(v),
            "bootstrap": {"resamples": v.rs.resamples, "seed": v.rs.seed, "unit": "parent"},
        },
    }


def _pct(ci: dict[str, Any] | None) -> str:
    """A share with its interval (the report's CI format)."""
    return fmt_ci(ci)


def _support(sup: dict[str, Any] | None) -> str:
    """Where an entry is scored: every probe, or a rule's support with its coverage."""
    if not sup:
        return "all probes"
    share = f" ({100 * sup['N'] / sup['of']:.0f}%)" if sup["of"] else ""
    return f"rule's support {sup['N']}/{sup['of']}{share}"


def _cov(c: dict[str, Any]) -> str:
    return (
        f"{c['N']}/{c['n']} ({c['scored']} scored, {c['model_failure']} failed, "
        f"{c['error']} errors, {c['infra_missing']} infra missing)"
    )


def protocol_sections(r: dict[str, Any], rid: str) -> list[Section]:
    """Report sections of ``probe_protocol`` (the PHYSALIGN.md §13 checklist): G and L,
    Base -> +GT on P_m, rules on H and H_hard, input controls, model pairs; every row with
    its n."""
    models: dict[str, dict[str, Any]] = r["models"]
    man = r.get("manifest") or {}
    boot = man.get("bootstrap") or {}
    how = (
        f"Balanced aggregates ({man.get('aggregation', 'parents within type, types equal')}; "
        f"type column {man.get('type_column') or 'none'}), parent-cluster bootstrap "
        f"B = {boot.get('resamples')}, seed {boot.get('seed')}; nearest rule "
        f"{man.get('nearest_rule')}."
    )
    return [
        *_g_sections(models, rid, how),
        *_pm_sections(models, rid),
        *_h_sections(models, rid),
        *_control_sections(models, rid),
        *_pair_sections(r, rid),
    ]


def _g_sections(models: dict[str, dict[str, Any]], rid: str, how: str) -> list[Section]:
    """G and L per model (rules on their support)."""
    from truthline.report import Section

    out: list[Section] = []
    rows: list[dict[str, Any]] = []
    n: list[int | str | None] = []
    for m, v in models.items():
        if "G" not in v:  # no Base entry (e.g. a +GT-only run of this model)
            continue
        g, L = v["G"], v.get("L") or {}
        sup = g.get("support")
        rows.append(
            {
                "model": m,
                "coverage N/n": _cov(g["coverage"]) if "coverage" in g else "—",
                "scored on": _support(sup),
                "GAcc": _pct(g.get("GAcc")),
                "CAcc (L)": _pct(L.get("CAcc")),
                "JAcc (L)": _pct(L.get("JAcc")),
                "C+G- (L)": _pct(L.get("C+G-")),
                "P(G|C)": _pct(L.get("P(G|C)")),
                "err(G|C)": _pct(L.get("err(G|C)")),
            }
        )
        n_g = sup["N"] if sup else g.get("coverage", {}).get("N", 0)
        n.append(f"G {n_g} / L {L.get('n', 0)}")
    out.append(
        Section.of(
            f"Probe protocol: grounding and reading ({rid})",
            "G: every grounding probe; L: T03-image probes with a verified reading. "
            "A rule baseline is scored on the probes it applies to (its support, with its "
            "coverage beside), never 0 on those it cannot answer. "
            "C+G- = CAcc - JAcc; P(G|C) = JAcc / CAcc (ratios of aggregates). " + how,
            rows,
            n=n,
            n_column="n probes",
        )
    )
    return out


def _pm_sections(models: dict[str, dict[str, Any]], rid: str) -> list[Section]:
    """Base -> +GT on P_m: net, transitions, rates."""
    from truthline.report import Section

    out: list[Section] = []
    rows: list[dict[str, Any]] = []
    n: list[int | str | None] = []
    for m, v in models.items():
        p = v.get("P_m")
        if not p or not p.get("N"):
            continue
        c = p["counts"]
        rows.append(
            {
                "model": m,
                "Base GAcc": _pct(p["base"]),
                "+GT GAcc": _pct(p["gt"]),
                "net": _pct(p["net"]),
                "repairs": c["repairs"],
                "harms": c["harms"],
                "stay right": c["stay_right"],
                "stay wrong": c["stay_wrong"],
                "repair rate": _pct(p["repair_rate"]),
                "harm rate": _pct(p["harm_rate"]),
            }
        )
        n.append(f"{p['N']} (Base {p['n_base']}, +GT {p['n_gt']})")
    if rows:
        out.append(
            Section.of(
                f"Probe protocol: Base -> +GT on P_m ({rid})",
                "T03-image probes with both records; the +GT input is the verified reading "
                "of the probe's own anchor, given only where admissible. net = +GT - Base "
                "(= repairs - harms, balanced; the net change of this report). Paired "
                "estimates are conditional on the observed P_m: Base on P_m can differ from "
                "Base on L.",
                rows,
                n=n,
                n_column="N paired",
            )
        )
    return out


def _h_sections(models: dict[str, dict[str, Any]], rid: str) -> list[Section]:
    """Rules and the model on H and H_hard (the report's hard subset)."""
    from truthline.report import Section

    out: list[Section] = []
    rows: list[dict[str, Any]] = []
    n: list[int | str | None] = []
    for m, v in models.items():
        H, hard, hl = v.get("H") or {}, v.get("H_hard") or {}, v.get("H_hard_L") or {}
        if "model" not in H:
            continue
        rows.append(
            {
                "model": m,
                "model (H)": _pct(H["model"]),
                "nearest (H)": _pct(H["nearest"]),
                "random (H)": _pct(H["random"]),
                "model - nearest": _pct(H["model-nearest"]),
                "model (H_hard)": _pct(hard.get("model")),
                "random (H_hard)": _pct(hard.get("random")),
                "model - random": _pct(hard.get("model-random")),
                "C+G- (H_hard ∩ L)": _pct(hl.get("C+G-")),
                "err(G|C) (H_hard ∩ L)": _pct(hl.get("err(G|C)")),
            }
        )
        n_hard = (hard.get("model") or {}).get("n", 0)
        n.append(f"H {H['model']['n']} / H_hard {n_hard}")
    if rows:
        out.append(
            Section.of(
                f"Probe protocol: rule baselines on the same support ({rid})",
                "H: probes where the frozen nearest-region rule applies; H_hard: those it "
                "gets wrong, fixed from public geometry and gold before any model runs (the "
                "hard subset of this report). Model and baselines share one support and one "
                "weighting; differences use one parent draw for both terms.",
                rows,
                n=n,
                n_column="n probes",
            )
        )
    return out


def _control_sections(models: dict[str, dict[str, Any]], rid: str) -> list[Section]:
    """Input controls on the probes with both records."""
    from truthline.report import Section

    out: list[Section] = []
    rows: list[dict[str, Any]] = []
    n: list[int | str | None] = []
    for m, v in models.items():
        for ctl, c in (v.get("controls") or {}).items():
            k = c["counts"]
            rows.append(
                {
                    "model": m,
                    "control": ctl,
                    "reference GAcc": _pct(c["reference"]),
                    "control GAcc": _pct(c["control"]),
                    "delta": _pct(c["delta"]),
                    "right -> wrong": k["changed_right_to_wrong"],
                    "wrong -> right": k["changed_wrong_to_right"],
                }
            )
            n.append(c["N"])
    if rows:
        out.append(
            Section.of(
                f"Probe protocol: input controls ({rid})",
                "Same probes with and without the control (no-image: no attachment; "
                "reorder: candidates shown in reverse, aliases bound to their regions).",
                rows,
                n=n,
            )
        )
    return out


def _pair_sections(r: dict[str, Any], rid: str) -> list[Section]:
    """Model A - model B on the probes both answered (a rule: on its support)."""
    from truthline.report import Section

    out: list[Section] = []
    pairs = r.get("pairs") or []
    if pairs:
        out.append(
            Section.of(
                f"Probe protocol: model pairs ({rid})",
                "Grounding of model A minus model B on the probes both answered.",
                [
                    {
                        "model A": p["model_a"],
                        "model B": p["model_b"],
                        "A": _pct(p["a"]),
                        "B": _pct(p["b"]),
                        "A - B": _pct(p["a-b"]),
                    }
                    for p in pairs
                ],
                n=[p["N"] for p in pairs],
            )
        )
    return out
