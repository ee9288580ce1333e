"""SIMULATED stand-ins for SynDORBench's people and models (demos and tests, never a study).

The SIMULATED observer follows what the paper says governs discernibility (§3.2, A.1.4-5):

* pixel density - the person's height in pixels at the camera's native 1080p (the render's
  visible-mask bbox height as a fraction of the frame, so a small preview render is judged
  like the frame it previews), :data:`H50_PX` giving half visibility;
* contrast of subject vs background - the luminance KS statistic person vs context (rank
  based, so a global gain or tone curve does not change it; noise does), :data:`KS50`;
* illumination - :data:`ILLUMINATION` per lighting (day, dusk, night, midnight);
* the ISP - night vision wins back :data:`ISP_RECOVERY` of what darkness costs, and its
  denoising smears the figure (:data:`NV_SMEAR` of its height resolves).

:func:`simulated_visibility` multiplies the three terms and adds a seeded per-image
idiosyncrasy (:data:`IMAGE_SPREAD`), the part of an image's visibility the factors do not
explain, shared by everyone who looks at that image. SIMULATED annotators
(:func:`simulate_labels`, source ``simulated``) judge it with a little noise of their own.
The ``simulated-dori:strong|weak`` viewers (:func:`simulated_presence`) see the person when
its visibility clears their threshold; when they do not, they answer "no person" only if
they could see the scene well enough to rule one out (:func:`scene_visibility`: density at
that distance x illumination), and otherwise guess - a dark frame makes a viewer guess,
while a person judging discernibility says "cannot make anyone out". Every row they write is
marked simulated.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any

import numpy as np
import pandas as pd

from truthline.errors import TruthlineError
from truthline.fields import render_answer
from truthline.systems.syndorbench._syndor import action_words

__all__ = [
    "ILLUMINATION",
    "SIM_ANNOTATORS",
    "SIM_PROFILES",
    "illumination",
    "person_px",
    "presence_probability",
    "scene_visibility",
    "simulate_labels",
    "simulated_presence",
    "simulated_visibility",
]

NATIVE_H_PX = 1080
"""The paper camera's image height: density is judged at the native resolution."""
SUBJECT_H_M = 1.75
H50_PX = 30.0
"""Person height (px at 1080p) that density alone lets an observer see half the time
(DORI Detection is 25 px/m: about 44 px for a standing person)."""
KS50 = 0.2
"""Luminance KS statistic (person vs context) that contrast alone makes half visible."""
ILLUMINATION = {
    "noon": 1.0, "day": 1.0, "morning": 0.95, "evening": 0.8, "dusk": 0.8,
    "night": 0.2, "midnight": 0.1,
}  # fmt: skip
"""What each lighting leaves of the evidence a well-lit frame carries (SIMULATED values)."""
ISP_RECOVERY = 0.7
"""Share of what darkness costs that the night-vision ISP wins back (not all: noise)."""
NV_SMEAR = 0.75
"""The night-vision denoiser smears edges: the figure resolves like one this much smaller."""
IMAGE_SPREAD = 0.08
"""SD of the seeded per-image visibility idiosyncrasy every observer of that image shares."""


def illumination(lighting: str, condition: str) -> float:
    """The illumination term of a shown image: its lighting's, raised by the night-vision ISP
    by :data:`ISP_RECOVERY` of the gap to full light."""
    if lighting not in ILLUMINATION:
        raise TruthlineError(f"SIMULATED observer: unknown lighting {lighting!r}")
    e = ILLUMINATION[lighting]
    return e + ISP_RECOVERY * (1.0 - e) if condition == "night-vision" else e


def _density(h_px: np.ndarray) -> np.ndarray:
    return h_px**2 / (h_px**2 + H50_PX**2)


def _idiosyncrasy(key: str) -> float:
    h = hashlib.sha256(f"simulated-dori-image\x1f{key}".encode()).digest()
    return float(np.random.default_rng(int.from_bytes(h[:8], "big")).normal(0.0, IMAGE_SPREAD))


def simulated_visibility(items: pd.DataFrame) -> np.ndarray:
    """A SIMULATED observer's visibility (0-1) of the person in each item's shown image:
    density x contrast x illumination (module docstring) plus the image's seeded
    idiosyncrasy; 0 where no person is in view. Stands in for people in the demo and tests;
    never a label of a real run."""
    nv = items["condition"].to_numpy() == "night-vision"
    h_px = items["raw_bbox_h_frac"].to_numpy(dtype=float) * NATIVE_H_PX
    density = _density(np.where(nv, NV_SMEAR * h_px, h_px))
    # nv_lum_ks: the day image's own (day items carry it twice), or the night render's
    # after gain and colour normalisation, which the raw dark frame and its NV output share
    ks = items["nv_lum_ks"].to_numpy(dtype=float)
    contrast = ks**2 / (ks**2 + KS50**2)
    light = np.array(
        [
            illumination(str(lt), str(c))
            for lt, c in zip(items["lighting"], items["condition"], strict=True)
        ]
    )
    spread = np.array([_idiosyncrasy(str(k)) for k in items["key"]])
    v = np.clip(density * contrast * light + spread, 0.0, 1.0)
    return np.where(items["visible_px_mask"].to_numpy() > 0, v, 0.0)


def person_px(ppm: float, condition: str) -> float:
    """A standing person's height (px at 1080p) at density ``ppm``, as resolved in the
    shown image (smeared by the night-vision denoiser)."""
    return ppm * SUBJECT_H_M * (NV_SMEAR if condition == "night-vision" else 1.0)


def scene_visibility(ppm: float, lighting: str, condition: str) -> float:
    """How well an observer sees the spot a person would stand on: a person's size at that
    distance's density (``ppm`` at 1080p) x the image's illumination. A viewer can rule a
    person out only as well as it could have seen one. Unknown density (``ppm`` 0): light only."""
    density = float(_density(np.array(person_px(ppm, condition)))) if ppm > 0 else 1.0
    return density * illumination(lighting, condition)


ANNOTATOR_NOISE = 0.05
"""SD of each SIMULATED annotator's own reading of an image's visibility."""
SIM_ANNOTATORS = (
    "sim-annotator-1@simulated.invalid",
    "sim-annotator-2@simulated.invalid",
    "sim-annotator-3@simulated.invalid",
)


def simulate_labels(store: Any, label_project: str, sample: pd.DataFrame, *, seed: int = 0) -> int:
    """SIMULATED annotators label the sample in the labelling project's store (source
    ``simulated``, users ``sim-annotator-N@simulated.invalid``): each says yes / partial /
    no from :func:`simulated_visibility` plus their own noise (:data:`ANNOTATOR_NOISE`).
    Idempotent."""
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
            u = float(np.clip(v + rng.normal(0, ANNOTATOR_NOISE), 0, 1))
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
                        "simulated": True,
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
    # h50: the viewer's own density half-point (px at 1080p): it sees visibility x
    # h^2 / (h^2 + h50^2). Sees the person: sigmoid(k (seen visibility - v0)); rules one out:
    # the same curve of the scene's; neither: says "person" with probability ``guess``;
    # ``false_alarm`` when it ruled one out. P(action right | saw the person) = act x visibility
    "strong": {"h50": 15.0, "k": 30.0, "v0": 0.45, "guess": 0.3, "false_alarm": 0.01, "act": 0.9},
    "weak": {"h50": 70.0, "k": 10.0, "v0": 0.55, "guess": 0.55, "false_alarm": 0.05, "act": 0.55},
}


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def presence_probability(
    profile: str, visibility: float, scene: float, h_px: float
) -> tuple[float, float]:
    """``(P(sees the person), P(answers "person"))`` of a SIMULATED viewer, from the person's
    ``visibility`` (0 when nobody is in view), the ``scene``'s (:func:`scene_visibility`) and
    the person's size ``h_px`` at 1080p (:func:`person_px`), which its acuity discounts."""
    p = SIM_PROFILES[profile]
    acuity = h_px**2 / (h_px**2 + p["h50"] ** 2) if h_px > 0 else 1.0  # 0: size unknown
    sees = _sigmoid(p["k"] * (visibility * acuity - p["v0"])) if visibility > 0 else 0.0
    rules_out = _sigmoid(p["k"] * (scene * acuity - p["v0"]))
    says = rules_out * p["false_alarm"] + (1.0 - rules_out) * p["guess"]
    return sees, sees + (1.0 - sees) * says


def simulated_presence(
    profile: str, visibility: float, scene: float, h_px: float, rng: random.Random
) -> tuple[bool, bool]:
    """A SIMULATED viewer's presence answer and whether it saw the person (drawn from
    :func:`presence_probability`)."""
    sees, says = presence_probability(profile, visibility, scene, h_px)
    if rng.random() < sees:
        return True, True
    return rng.random() < (says - sees) / (1.0 - sees), False


def _register_backend() -> None:
    from truthline.models._registry import BACKENDS, Backend, backend
    from truthline.models._types import Completion, ModelRequest

    if "simulated-dori" in BACKENDS.as_dict():  # loaded already (``in`` also counts
        return  # entry points not yet imported: this module IS that entry point)

    @backend("simulated-dori")
    class SimulatedDoriBackend(Backend):
        """``simulated-dori:strong|weak`` — a SIMULATED VLM for rendered DORI frames: it
        reads the item's known truth, how visible the person is (``sim_truth._view``) and
        the item's lighting and condition (its metadata), and answers presence and action
        as :func:`simulated_presence` draws them. Not a model."""

        simulated = True
        reads_context = True

        def __init__(self, spec: Any):
            super().__init__(spec)
            if spec.name not in SIM_PROFILES:
                raise TruthlineError(
                    f"model spec {spec.text!r}: unknown profile (use {', '.join(SIM_PROFILES)})"
                )
            self.prof = SIM_PROFILES[spec.name]

        def _truth(self, request: ModelRequest) -> tuple[dict[str, Any], dict[str, Any]]:
            truth, meta = request.context.get("sim_truth"), None
            if self.store is not None and request.item_id is not None:
                from sqlalchemy import select

                from truthline.store import tables

                it = tables.items
                with self.store.begin() as conn:
                    row = conn.execute(
                        select(it.c.sim_truth, it.c.meta).where(it.c.id == request.item_id)
                    ).first()
                if row is not None:
                    truth, meta = row.sim_truth or truth, row.meta
            if not truth or "_view" not in truth:
                raise TruthlineError(
                    f"{self.spec.alias}: item {request.item_id} has no rendered-scene truth; "
                    "simulated-dori only answers items imported by truthline.systems.syndorbench._syndor"
                )
            return dict(truth), dict(meta or {})

        async def complete(self, request: ModelRequest) -> Completion:
            from truthline.simulate import seeded_rng

            t, meta = self._truth(request)
            key = str(request.context.get("key") or request.item_id)
            rng = seeded_rng("simulated-dori", self.spec.name, key)
            vis = float(t["_view"].get("visibility") or 0.0)
            ppm = float(t["_view"].get("ppm") or 0.0)
            lighting, cond = meta.get("lighting"), meta.get("condition")
            if not lighting or not cond:
                raise TruthlineError(
                    f"{self.spec.alias}: item {request.item_id} has no lighting / condition "
                    "metadata; import it with truthline.systems.syndorbench._syndor"
                )
            lighting, cond = str(lighting), str(cond)
            scene = scene_visibility(ppm, lighting, cond)
            yes, saw = simulated_presence(self.spec.name, vis, scene, person_px(ppm, cond), rng)
            words = action_words() or {"walking": "walking", "standing": "standing"}
            answer: dict[str, Any] = {"present": yes}
            if yes:
                right = saw and "action" in t and rng.random() < self.prof["act"] * vis
                act = t["action"] if right else rng.choice(sorted(words))
                answer["action"] = act
                answer["action_text"] = words.get(act, act.replace("_", " "))
            else:
                answer["action"] = "cannot_tell"
                answer["action_text"] = "no person"
            out = {k: v for k, v in answer.items() if k in request.fields}
            text = render_answer(request.fields, out)  # a bare 1/0 when presence is asked alone
            return Completion(text=text, tokens_in=0, tokens_out=len(text) // 4)


_register_backend()
