"""``compare_labels``: the same answers scored against each arm's own labels (SteelBench
Fig. 13 design; seeds/001 App. E.7 and the provenance-slices paragraph).

``compare_gold`` scores a run on the *gold* it was scored on, sliced by provenance. That
is a different question from the paper's: blind gold keeps only the decisions two blind
annotators agreed on (the easy ones), so its accuracy is high by composition. The paper
instead lets every retained tier-1 annotator's labels enter the slice of their arm as a
reference of their own — "the comparison is not blind clips vs anchored clips, it is
same predictions, different references" — and a clip annotated in both arms enters both.

Here, per entry of a run (its stored answers, unchanged):

* ``blind``: each blind-arm tier-1 label of a retained annotator is a reference;
* ``anchored``: each anchored-arm tier-1 label (annotators who saw the prefill);
* ``vlm-sourced``: the anchored labels whose value equals the prefill shown (the VLM's
  value the annotator kept);
* ``all``: blind and anchored together.

Excluded annotators, withdrawn and unusable items (not in the run's gold), skipped
fields and items the annotator flagged are left out. Every slice and every difference
comes from ONE resampling draw over the project's design (clusters such as videos,
strata) shared by all entries, so the mean inflation over entries has an interval too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select

from truthline.benchmark import _metrics as M
from truthline.benchmark._registry import Scored, plain
from truthline.benchmark._results import (
    ENTRY,
    _diff_pp,
    load_run,
    sliced_accuracies,
)
from truthline.benchmark._scoring import score_answer
from truthline.benchmark._types import (
    EntryKey,
    FieldBalanced,
    GoldComparison,
    SliceScores,
)
from truthline.project import Project
from truthline.store import Store, tables
from truthline.vocab import Slice

REFERENCE_SLICES: tuple[str, ...] = tuple(str(s) for s in Slice)
"""The reference slices: the vocabulary's gold slices, read as label references."""


def entry_answers(store: Store, run_id: str) -> dict[EntryKey, dict[int, dict[str, Any] | None]]:
    """Each entry's normalized answer per item (``None``: a model failure, scored wrong);
    infrastructure-missing answers are left out, as everywhere in the loop."""
    r, resp = tables.run_results, tables.responses
    with store.begin() as conn:
        rows = conn.execute(
            select(r.c.model, r.c.variant, r.c.condition, r.c.control, r.c.item_id)
            .add_columns(r.c.status, resp.c.parsed)
            .outerjoin(resp, resp.c.id == r.c.response_id)
            .where(r.c.run_id == run_id)
            .order_by(r.c.model, r.c.item_id)
        ).all()
    out: dict[EntryKey, dict[int, dict[str, Any] | None]] = {}
    for row in rows:
        if row.status not in ("parsed", "model_failure"):
            continue
        key = EntryKey(row.model, row.variant, row.condition, row.control)
        parsed = row.parsed if row.status == "parsed" and isinstance(row.parsed, dict) else None
        out.setdefault(key, {})[int(row.item_id)] = parsed
    return out


def _references(store: Store, project: Project, items: set[int]) -> list[dict[str, Any]]:
    """The tier-1 labels that serve as references: retained annotators, blind or anchored
    arm, not flagged, on the run's items; each with its decision paths' slice."""
    from truthline.audit._data import load

    data = load(store, project)
    excluded = set(data.exclusions)
    refs: list[dict[str, Any]] = []
    for a in data.annotations:
        if a.tier != 1 or a.arm not in ("blind", "anchored") or a.flagged:
            continue
        if a.annotator in excluded or a.item not in items:
            continue
        values = {
            p: v
            for p, v in a.values.items()
            if p.split("[", 1)[0].split(".", 1)[0] not in a.skipped
        }
        if not values:
            continue
        shown = data.pred.get(a.item, {}) if a.arm == "anchored" else {}
        kept = set()
        for path, v in values.items():
            s = shown.get(path)
            if s is None or v is None or _is_list(project, path):
                continue
            if project.field(_leaf(path)).agree(s, v):
                kept.add(path)
        refs.append(
            {
                "item": a.item,
                "annotator": a.annotator,
                "arm": a.arm,
                "values": values,
                "kept": kept,
                "parent": data.clusters[data.item_index[a.item]],
            }
        )
    return refs


def _leaf(path: str) -> str:
    from truthline.benchmark._scoring import leaf_of

    return leaf_of(path)


def _is_list(project: Project, path: str) -> bool:
    from truthline.fields import EntityList

    return isinstance(project.field_types.get(path), EntityList)


def _scored_rows(
    project: Project,
    answers: Mapping[int, dict[str, Any] | None],
    refs: list[dict[str, Any]],
    targets: list[str],
    entry: int,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for k, ref in enumerate(refs):
        if ref["item"] not in answers:
            continue
        prov = dict.fromkeys(ref["values"], ref["arm"])
        scored = score_answer(project, ref["values"], prov, answers[ref["item"]], targets)
        for dec in scored["decisions"]:
            rows.append(
                {
                    "entry": entry,
                    "ref": k,
                    "item_id": ref["item"],
                    "arm": ref["arm"],
                    "kept": dec["path"] in ref["kept"],
                    "field": dec["field"],
                    "correct": bool(dec["correct"]),
                }
            )
    return rows


def compare_labels(
    store: Store, project: Project, run_id: str, *, resamples: int | None = None
) -> GoldComparison:
    """Every entry of ``run_id`` scored against blind-arm labels, anchored-arm labels and
    VLM-sourced labels (see the module docstring), with the inflation over blind in pp and
    the mean inflation over entries, all on one paired draw over the project's design."""
    run = load_run(store, run_id, project)
    b = project.benchmark
    rs = M.Resampling(b.bootstrap_resamples if resamples is None else resamples, b.seed)
    answers = entry_answers(store, run_id)
    entries = [e for e in run.entries() if e in answers]
    items = {i for e in entries for i in answers[e]}
    gold_items = set(run.decisions["item_id"]) if len(run.decisions) else set()
    refs = _references(store, project, items & gold_items)
    targets = list(b.target_fields) or sorted(
        {str(f) for f in run.decisions.get("field", pd.Series(dtype=object))}
    )
    rows: list[dict[str, Any]] = []
    for n, e in enumerate(entries):
        rows += _scored_rows(project, answers[e], refs, targets, n)
    cols = ["entry", "ref", "item_id", "arm", "kept", "field", "correct"]
    d = pd.DataFrame(rows, columns=cols)
    if not len(d):
        return GoldComparison(run_id, run.manifest.get("gold_snapshot"), (), rs.resamples, rs.seed)
    design = run.decisions.drop_duplicates("item_id").set_index("item_id")
    d["parent"] = d["item_id"].map(design["parent"]) if "parent" in design else None
    d["stratum"] = d["item_id"].map(design["stratum"]) if "stratum" in design else None
    args = Scored(project, d, pd.DataFrame(), rs).boot_args(d)
    e_col, arm, kept = d["entry"].to_numpy(), d["arm"].to_numpy(), d["kept"].to_numpy()
    masks: dict[tuple[int, str], np.ndarray] = {}
    for n in range(len(entries)):
        mine = e_col == n
        masks[(n, "all")] = mine
        masks[(n, "blind")] = mine & (arm == "blind")
        masks[(n, "anchored")] = mine & (arm == "anchored")
        masks[(n, "vlm-sourced")] = mine & (arm == "anchored") & kept
    res = sliced_accuracies(d, masks, args, rs)
    models: list[SliceScores] = []
    diffs: dict[str, list[tuple[Any, ...]]] = {"anchored": [], "vlm-sourced": []}
    for n, e in enumerate(entries):
        cis = {sl: _plain(res["ci"][(n, sl)]) for sl in REFERENCE_SLICES}
        boots = {sl: res["boot"][(n, sl)] for sl in REFERENCE_SLICES}
        stats = {sl: res["stat"][(n, sl)] for sl in REFERENCE_SLICES}
        infl = {
            other: _diff_pp(cis, boots, other, rs, res["u"], stats)
            for other in ("anchored", "vlm-sourced")
        }
        for other in diffs:
            if e.is_rule:  # shown, not averaged (GoldComparison's mean is over models)
                continue
            if infl[other] is not None and boots[other] is not None and boots["blind"] is not None:
                diffs[other].append((cis, boots, stats, other))
        models.append(SliceScores.of(e, cis, infl, FieldBalanced(fields=())))
    return GoldComparison(
        run_id=run_id,
        gold_snapshot=run.manifest.get("gold_snapshot"),
        models=tuple(models),
        resamples=rs.resamples,
        seed=rs.seed,
        reference="labels",
        mean_inflation_anchored_ci=_mean_diff(diffs["anchored"], rs, res["u"]),
        mean_inflation_vlm_sourced_ci=_mean_diff(diffs["vlm-sourced"], rs, res["u"]),
        references=_reference_counts(d),
    )


def _plain(ci: Any) -> Any:
    return plain(ci) if ci is not None else None


def _mean_diff(parts: list[tuple], rs: M.Resampling, u: Any) -> Any:
    """The mean over entries of (slice − blind) in pp, its CI from the same draw."""
    if not parts:
        return None
    point = float(np.mean([100 * (c[o]["point"] - c["blind"]["point"]) for c, _, _, o in parts]))
    boot = np.mean([100 * (bt[o] - bt["blind"]) for _, bt, _, o in parts], axis=0)
    stats = [(st[o], st["blind"]) for _, _, st, o in parts]
    if any(a is None or b is None for a, b in stats):
        return plain(M._ci(point, boot, rs, u))

    def stat(V: np.ndarray) -> np.ndarray:
        return np.mean([100 * (a(V) - b(V)) for a, b in stats], axis=0)

    return plain(M._ci(point, boot, rs, u, stat))


def _reference_counts(d: pd.DataFrame) -> dict[str, int]:
    """How many labels (annotator × item) and items serve each reference slice."""
    first = d[d["entry"] == 0]
    out: dict[str, int] = {}
    for arm in ("blind", "anchored"):
        sub = first[first["arm"] == arm]
        out[f"{arm}_labels"] = int(sub["ref"].nunique())
        out[f"{arm}_items"] = int(sub["item_id"].nunique())
    out["vlm-sourced_decisions"] = int(first["kept"].sum())
    return out


__all__ = ["ENTRY", "REFERENCE_SLICES", "compare_labels", "entry_answers"]
