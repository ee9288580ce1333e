"""SIMULATED stand-ins for SynDORBench's people and models (demos and tests, never a study).

A SIMULATED observer's chance of making the person out (:func:`simulated_visibility`) drives
both the SIMULATED annotators (:func:`simulate_labels`, stored with source ``simulated``) and
the ``simulated-dori:strong|weak`` viewer backend, whose presence and action errors grow as
visibility falls. Every row they write is marked simulated.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd

from truthline.errors import TruthlineError
from truthline.systems.syndorbench._syndor import action_words

__all__ = [
    "SIM_ANNOTATORS",
    "SIM_PROFILES",
    "simulate_labels",
    "simulated_visibility",
]


def simulated_visibility(items: pd.DataFrame) -> np.ndarray:
    """A SIMULATED observer's chance of making the person out in the image it is shown:
    a contrast term (mean L* difference person vs context) times a size term (the person's
    height in pixels of the image shown) times an outline term (edge IoU), all of the shown
    variant. Stands in for people in the demo and tests; never a label of a real run."""
    nv = items["is_nv"].to_numpy() == 1

    def shown(name: str) -> np.ndarray:
        return np.where(nv, items[f"nv_{name}"], items[f"raw_{name}"]).astype(float)

    def sig(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))

    h_px = shown("bbox_h_frac") * items["image_h"].to_numpy(dtype=float)
    p = sig((shown("delta_l") - 4.0) / 1.5) * sig((h_px - 12.0) / 4.0)
    p = p * (0.7 + 0.3 * shown("edge_iou"))
    return np.where(items["visible_px_mask"].to_numpy() > 0, p, 0.0)


SIM_ANNOTATORS = (
    "sim-annotator-1@simulated.invalid",
    "sim-annotator-2@simulated.invalid",
    "sim-annotator-3@simulated.invalid",
)


def simulate_labels(store: Any, label_project: str, sample: pd.DataFrame, *, seed: int = 0) -> int:
    """SIMULATED annotators label the sample in the labelling project's store (source
    ``simulated``, users ``sim-annotator-N@simulated.invalid``): each says yes / partial /
    no from :func:`simulated_visibility` plus their own noise. Idempotent."""
    from sqlalchemy import select

    from truthline.store import now, tables

    ids = store.item_ids_by_key(label_project)
    vis = simulated_visibility(sample)
    rng = np.random.default_rng(seed)
    rows = []
    for key, v in zip(sample["key"], vis, strict=True):
        if key not in ids:
            raise TruthlineError(f"simulated labels: {key} is not an item of {label_project}")
        for who in SIM_ANNOTATORS:
            u = float(np.clip(v + rng.normal(0, 0.12), 0, 1))
            level = "yes" if u > 0.6 else "partial" if u > 0.45 else "no"
            for fld, val in (("discernible", level), ("present", level != "no")):
                rows.append(
                    {
                        "project": label_project,
                        "item_id": ids[key],
                        "field_path": fld,
                        "annotator": who,
                        "arm": "blind",
                        "tier": 1,
                        "value": val,
                        "source": "simulated",
                        "source_id": f"sim:{label_project}:{key}:{who}",
                        "stored_at": now(),
                    }
                )
    a = tables.annotations
    with store.begin() as conn:
        have = {
            (r.source_id, r.field_path)
            for r in conn.execute(
                select(a.c.source_id, a.c.field_path).where(a.c.project == label_project)
            )
        }
        new = [r for r in rows if (r["source_id"], r["field_path"]) not in have]
        if new:
            conn.execute(a.insert(), new)
    return len(new)


SIM_PROFILES: dict[str, dict[str, float]] = {
    # P(yes | person discernible) = sigmoid(k (visibility - v0)); P(yes | not) = false_alarm;
    # P(action right | says yes) = act * min(1, ppm / 150) * visibility
    "strong": {"k": 12.0, "v0": 0.3, "false_alarm": 0.03, "act": 0.9},
    "weak": {"k": 5.0, "v0": 0.55, "false_alarm": 0.2, "act": 0.55},
}


def _register_backend() -> None:
    from truthline.models._registry import BACKENDS, Backend, backend
    from truthline.models._types import Completion, ModelRequest

    if "simulated-dori" in BACKENDS.as_dict():  # loaded already (``in`` also counts
        return  # entry points not yet imported: this module IS that entry point)

    @backend("simulated-dori")
    class SimulatedDoriBackend(Backend):
        """``simulated-dori:strong|weak`` — a SIMULATED VLM for rendered DORI frames: it
        reads the item's known truth and how visible the person is (``sim_truth._view``)
        and answers presence and action with visibility-dependent errors. Not a model."""

        simulated = True
        reads_context = True

        def __init__(self, spec: Any):
            super().__init__(spec)
            if spec.name not in SIM_PROFILES:
                raise TruthlineError(
                    f"model spec {spec.text!r}: unknown profile (use {', '.join(SIM_PROFILES)})"
                )
            self.prof = SIM_PROFILES[spec.name]

        def _truth(self, request: ModelRequest) -> dict[str, Any]:
            truth = request.context.get("sim_truth")
            if truth is None and self.store is not None and request.item_id is not None:
                from sqlalchemy import select

                from truthline.store import tables

                with self.store.begin() as conn:
                    truth = conn.execute(
                        select(tables.items.c.sim_truth).where(tables.items.c.id == request.item_id)
                    ).scalar()
            if not truth or "_view" not in truth:
                raise TruthlineError(
                    f"{self.spec.alias}: item {request.item_id} has no rendered-scene truth; "
                    "simulated-dori only answers items imported by truthline.systems.syndorbench._syndor"
                )
            return dict(truth)

        async def complete(self, request: ModelRequest) -> Completion:
            from truthline.simulate import seeded_rng

            t = self._truth(request)
            key = str(request.context.get("key") or request.item_id)
            rng = seeded_rng("simulated-dori", self.spec.name, key)
            vis = float(t["_view"].get("visibility") or 0.0)
            ppm = float(t["_view"].get("ppm") or 0.0)
            p = self.prof
            in_view = bool(t.get("present"))
            p_see = 1.0 / (1.0 + math.exp(-p["k"] * (vis - p["v0"])))
            yes = rng.random() < (p_see if in_view else p["false_alarm"])
            words = action_words() or {"walking": "walking", "standing": "standing"}
            answer: dict[str, Any] = {"present": yes}
            if yes:
                right = "action" in t and rng.random() < p["act"] * min(1.0, ppm / 150) * vis
                act = t["action"] if right else rng.choice(sorted(words))
                answer["action"] = act
                answer["action_text"] = words.get(act, act.replace("_", " "))
            else:
                answer["action"] = "cannot_tell"
                answer["action_text"] = "no person"
            out = {k: v for k, v in answer.items() if k in request.fields}
            text = json.dumps(out)
            return Completion(text=text, tokens_in=0, tokens_out=len(text) // 4)


_register_backend()
