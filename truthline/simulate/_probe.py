"""SIMULATED models that answer evidence-anchored probes (PhysAlign, seeds/002) the way the
paper's models err, so the probe protocol's read/ground, +GT and control analyses see
something: reading errors, grounding errors (some biased to the nearest region), +GT
repairs and harms, and image dependence.

One answer is a pure function of (profile, item, condition, control): every random draw is
seeded by the profile, the item and the draw's name only, so Base and +GT of one item share
their draws and differ by what the condition changes, exactly as planted:

* a **misread** (``read_error`` of the probe type) makes the transcription wrong, and with
  ``misread_misgrounds`` also the owner (a reading-linked grounding error);
* an **independent grounding error** (``ground_error`` of the type) makes the owner wrong
  whatever the reading; a wrong owner is the nearest-region candidate with ``nearest_bias``
  (when that one is wrong), else a uniformly drawn wrong candidate;
* **+GT** (the verified reading given) removes the misread, so reading-linked errors are
  repaired; of the owners right at Base, ``gt_harm`` turn wrong (the model over-reacts to the
  supplied text); independent errors stay;
* **no-image** (no attachment): the owner is a uniform guess among the item's candidates and
  the transcription is made up, so accuracy falls to 1/K;
* **reorder**: answers are those of Base, except ``reorder_flip`` of them redrawn uniformly.

Planted rates, per item of a type: Base reading accuracy ``1 - r``; Base grounding accuracy
``(1 - g)(1 - r m)``; +GT repairs ``(1 - g) r m``, harms ``(1 - g)(1 - r m) h`` (r, g, m, h:
read_error, ground_error, misread_misgrounds, gt_harm). Nothing here is a real model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PROBE_TYPES = ("T02-single", "T03-image", "T03-text")
READING_TYPE = "T03-image"
"""The probe type that returns a transcription (T02-single and T03-text: the owner only)."""


@dataclass(frozen=True)
class ProbeBehaviour:
    """How a SIMULATED probe answerer errs; rates are probabilities per item."""

    read_error: Mapping[str, float] = field(default_factory=dict)
    """Per probe type: P(the anchored content is misread). T03-text anchors are public text
    (nothing to read), so their entry is ignored."""
    ground_error: Mapping[str, float] = field(default_factory=dict)
    """Per probe type: P(a wrong owner whatever the reading)."""
    misread_misgrounds: float = 0.8
    """P(the owner is wrong too | a misread): the reading-linked errors +GT repairs."""
    nearest_bias: float = 0.0
    """Share of wrong owners that are the nearest-region candidate (when it is wrong)."""
    gt_harm: float = 0.0
    """P(an owner right at Base turns wrong when the reading is given)."""
    reorder_flip: float = 0.0
    """P(an answer is redrawn uniformly under the candidate-reorder control)."""

    def read_rate(self, ptype: str) -> float:
        return 0.0 if ptype == "T03-text" else float(self.read_error.get(ptype, 0.0))

    def ground_rate(self, ptype: str) -> float:
        return float(self.ground_error.get(ptype, 0.0))


def _draw(*parts: str) -> float:
    """A uniform number in [0, 1) from strings (stable across processes and platforms)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def misread(text: str) -> str:
    """A wrong transcription that the reading rules still tell apart: a subscript dropped,
    else the first letter's case flipped, else the last digit changed, else a prime added."""
    if "_" in text:
        return text.replace("_{", "").replace("}", "").replace("_", "")
    for i, ch in enumerate(text):
        if ch.isalpha() and ch.swapcase() != ch:
            return text[:i] + ch.swapcase() + text[i + 1 :]
    for i in range(len(text) - 1, -1, -1):
        if text[i].isdigit():
            return text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :]
    return text + "'"


def candidate_aliases(cands: Any) -> list[str]:
    """The aliases of a public candidates value (an alias -> region map or a list)."""
    if isinstance(cands, Mapping):
        return [str(k) for k in cands]
    if isinstance(cands, Sequence) and not isinstance(cands, str):
        return [
            str(c.get("alias", c.get("id", ""))) if isinstance(c, Mapping) else str(c)
            for c in cands
        ]
    return []


@dataclass(frozen=True)
class ProbeOutcome:
    """One SIMULATED probe answer and the path that produced it (for tests and audits)."""

    owner: str | None
    read: str | None
    path: str
    """``right``, ``misread``, ``ground``, ``harm``, ``blind`` or ``reorder``."""


def probe_outcome(
    beh: ProbeBehaviour,
    profile: str,
    item: str,
    truth: Mapping[str, Any],
    *,
    probe_type: str,
    candidates: Sequence[str],
    condition: str,
    control: str,
    has_images: bool,
    read_field: str,
    ground_field: str,
) -> ProbeOutcome:
    """The answer of ``profile`` on ``item`` under ``condition`` / ``control`` (module doc)."""

    def u(name: str) -> float:
        return _draw("physalign-sim", profile, item, name)

    gold = truth.get(ground_field)
    gold_read = truth.get(read_field)
    hints = truth.get("_probe") or {}
    nearest = hints.get("nearest") if isinstance(hints, Mapping) else None
    ids = list(candidates) or ([str(gold)] if gold else [])

    def wrong(name: str) -> str | None:
        others = [c for c in ids if c != gold]
        if not others:
            return gold
        if nearest in others and u(f"{name}:bias") < beh.nearest_bias:
            return str(nearest)
        return others[int(u(f"{name}:pick") * len(others))]

    if not has_images:  # nothing to look at: a guess among the item's own candidates
        guess = ids[int(u("blind") * len(ids))] if ids else None
        return ProbeOutcome(guess, misread(str(gold_read)) if gold_read else None, "blind")
    given = condition == "gt"
    misreads = u("read") < beh.read_rate(probe_type)  # one draw per item: Base and +GT share it
    linked = misreads and u("link") < beh.misread_misgrounds
    read = misread(str(gold_read)) if misreads and gold_read and not given else gold_read
    if u("ground") < beh.ground_rate(probe_type):
        out = ProbeOutcome(wrong("ground"), read, "ground")
    elif linked and not given:
        out = ProbeOutcome(wrong("misread"), read, "misread")
    elif given and not linked and u("harm") < beh.gt_harm:  # right at Base, turned wrong
        out = ProbeOutcome(wrong("harm"), read, "harm")
    else:
        out = ProbeOutcome(gold, read, "right")
    if control == "reorder" and ids and u("reorder") < beh.reorder_flip:
        return ProbeOutcome(ids[int(u("reorder:pick") * len(ids))], out.read, "reorder")
    return out


def probe_answer(
    beh: ProbeBehaviour,
    profile: str,
    item: str,
    truth: Mapping[str, Any],
    context: Mapping[str, Any],
    *,
    has_images: bool,
    read_field: str,
    ground_field: str,
    asked: Sequence[str],
    confidence_field: str = "confidence",
) -> dict[str, Any]:
    """The JSON answer object: the probe type's keys (the read field only for T03-image),
    and a stated confidence when ``asked`` includes ``confidence_field``."""
    meta = context.get("meta") or {}
    ptype = str(meta.get("probe_type") or READING_TYPE)
    cands = meta.get("candidates")
    if isinstance(cands, str):
        try:
            cands = json.loads(cands)
        except ValueError:
            cands = None
    out = probe_outcome(
        beh,
        profile,
        item,
        truth,
        probe_type=ptype,
        candidates=candidate_aliases(cands),
        condition=str(context.get("condition") or "base"),
        control=str(context.get("control") or ""),
        has_images=has_images,
        read_field=read_field,
        ground_field=ground_field,
    )
    answer: dict[str, Any] = {ground_field: out.owner}
    if ptype == READING_TYPE and read_field in asked:
        answer = {read_field: out.read, **answer}
    if confidence_field in asked:
        answer[confidence_field] = {"right": 0.85, "blind": 0.3}.get(out.path, 0.6)
    return answer
