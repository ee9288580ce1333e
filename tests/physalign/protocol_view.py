"""Hand-built runs of the physics-diagrams template for the probe-protocol tests: every
entry's scored decisions written out directly (known by construction), so a planted answer
pattern gives a hand-computed number without a workspace or a model server.

Field names come from the template's declarations (``read_field``, ``ground_field``),
never hard-coded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from truthline.benchmark import RunScored, Scored
from truthline.benchmark import metrics as M
from truthline.project import Project, load_project
from truthline.workspace import templates_dir

BLOCKS = {"E1": [10, 50, 40, 30], "E2": [80, 50, 40, 30], "E3": [150, 50, 40, 30]}


def project(**bench: Any) -> Project:
    p = load_project(templates_dir() / "physics-diagrams")
    if bench:
        p = p.model_copy(update={"benchmark": p.benchmark.model_copy(update=bench)})
    return p


@dataclass(frozen=True)
class Probe:
    """One probe: its parent, type, gold owner and gold reading (None: no reading)."""

    key: str
    parent: str
    probe_type: str
    owner: str
    reading: str | None = None
    at: str | None = None
    """The block whose top edge the anchor sits on (default: the owner's, so the
    nearest-region rule is right; another block's makes the probe hard)."""

    def meta(self) -> dict[str, Any]:
        cands = {a: {"bbox": b} for a, b in BLOCKS.items()}
        if self.probe_type == "T03-text":
            anchor: dict[str, Any] = {"anchor_id": "R1", "kind": "text_span", "start": 0}
        else:  # the anchor box sits on the gold owner's top edge: the rule gets it right
            x, y, w, _ = BLOCKS[self.at or self.owner]
            anchor = {
                "anchor_id": "R1",
                "kind": "image_region",
                "bbox": [x + w / 2 - 5, y - 5, 10, 6],
            }
        return {
            "probe_type": self.probe_type,
            "problem": self.parent,
            "anchor": anchor,
            "candidates": cands,
        }


def decisions(
    p: Project, probes: list[Probe], owners: dict[str, str | None], reads: dict[str, str] | None
) -> pd.DataFrame:
    """One entry's decisions: its owner answer per probe (``None``: a model failure) and
    its reading where the probe has one."""
    rf, gf = p.benchmark.read_field, p.benchmark.ground_field
    rows = []
    for pr in probes:
        meta = pr.meta()
        pairs = [(gf, pr.owner, owners.get(pr.key))]
        if pr.reading is not None and reads is not None:
            pairs.append((rf, pr.reading, reads.get(pr.key)))
        for f, gold, pred in pairs:
            ok = pred is not None and pred == gold
            rows.append(
                {
                    "item_id": pr.key,
                    "parent": pr.parent,
                    "stratum": None,
                    "condition": None,
                    "path": f,
                    "field": f,
                    "entity": None,
                    "gold": gold,
                    "pred": pred,
                    "correct": ok,
                    "credit": float(ok),
                    "provenance": "",
                    "status": "parsed" if pred is not None else "model_failure",
                    "confidence": None,
                    "meta": meta,
                }
            )
    return pd.DataFrame(rows)


def view(
    p: Project,
    probes: list[Probe],
    entries: dict[tuple[str, str], tuple[dict[str, str | None], dict[str, str] | None]],
    rs: M.Resampling = M.Resampling(0),
) -> RunScored:
    """A run: (model, condition) -> (owner answers, readings); ``rule:*`` models are rules."""
    sc, kinds, keys = {}, {}, {}
    for (model, cond), (owners, reads) in entries.items():
        lab = model if cond == "base" else f"{model}||{cond}|"
        d = decisions(p, probes, owners, reads)
        sc[lab] = Scored(p, d, pd.DataFrame(columns=["item_id", "list", "tp", "fp", "fn"]), rs)
        kinds[lab] = "rule" if model.startswith("rule:") else "simulated"
        keys[lab] = (model, "", cond, "")
    return RunScored(p, sc, kinds, keys, rs)


def probes(n_parents: int, *, hard: tuple[str, ...] = (), text: bool = True) -> list[Probe]:
    """Per parent ``pK``: three T03-image probes (owners E1-E3, readings ``mK_E*``) and,
    with ``text``, one T03-text probe owned by E2. A key in ``hard`` (``pK_E3``) has its
    anchor on E2's edge instead: the nearest-region rule picks E2 there."""
    out = []
    for k in range(n_parents):
        for a in BLOCKS:
            key = f"p{k}_{a}"
            at = "E2" if key in hard else None
            out.append(Probe(key, f"p{k}", "T03-image", a, f"m{k}_{a}", at))
        if text:
            out.append(Probe(f"p{k}_text", f"p{k}", "T03-text", "E2"))
    return out


def nearest_answers(ps: list[Probe]) -> dict[str, str | None]:
    """What the nearest-region rule answers: the anchor's block, nothing on a text anchor."""
    return {p.key: (None if p.probe_type == "T03-text" else p.at or p.owner) for p in ps}
