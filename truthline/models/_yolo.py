"""``yolo:WEIGHTS`` — an ultralytics detector for person detection and presence.

``yolo:/path/best.pt`` loads trained weights; ``yolo:yolo11n.yaml`` builds an untrained
model from ultralytics' bundled config (tests, no download). Options: ``conf`` (default
0.25), ``imgsz`` (640), ``device``. Nothing downloads: set ``YOLO_OFFLINE=1`` and give a
local weights path. As a request answerer it reports persons per image: a number field
gets the largest count over the frames, a boolean field person presence, an entity list
with a region subfield one entity per person in the middle frame.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.fields import Boolean, EntityList, Number, Region, render_answer
from truthline.models._registry import Backend, Detection, FrameRef, backend
from truthline.models._types import Completion, ModelRequest


@backend("yolo")
class YoloBackend(Backend):
    max_concurrency = 1

    def __init__(self, spec):
        super().__init__(spec)
        name = spec.name
        if not name.endswith((".yaml", ".yml")) and not Path(name).is_file():
            raise TruthlineError(
                f"model spec {spec.text!r}: weights {name} not found (give a local .pt path, "
                "or a bundled config such as yolo11n.yaml for an untrained model)"
            )
        self.conf = spec.opt_float("conf", 0.25) or 0.25
        self.imgsz = spec.opt_int("imgsz", 640)
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from ultralytics import YOLO
                except ImportError as exc:
                    raise TruthlineError(
                        f"yolo: models need the 'detect' extra (pip install truthline[detect]): {exc}"
                    ) from None
                self._model = YOLO(self.spec.name)
            return self._model

    def detect(self, frames: Sequence[FrameRef]) -> list[list[Detection]]:
        model = self._load()
        if not frames:
            return []
        dev = self.spec.opt("device")
        kw: dict[str, Any] = {
            "imgsz": self.imgsz,
            "conf": min(self.conf, 0.25),
            "verbose": False,
            "classes": [0],
        }
        if dev:
            kw["device"] = dev
        results = model.predict([f.image for f in frames], **kw)
        out = []
        names = getattr(model, "names", {}) or {}
        for res in results:
            dets = []
            boxes = res.boxes
            for xyxy, c, k in zip(
                boxes.xyxy.tolist(), boxes.conf.tolist(), boxes.cls.tolist(), strict=True
            ):
                x1, y1, x2, y2 = xyxy
                label = "person" if int(k) == 0 else str(names.get(int(k), int(k)))
                dets.append(Detection(x1, y1, x2 - x1, y2 - y1, float(c), label))
            out.append(dets)
        return out

    async def complete(self, request: ModelRequest) -> Completion:
        import cv2

        frames = []
        for p in request.images:
            img = cv2.imread(str(p))
            if img is None:
                raise TruthlineError(f"{p}: cannot read image")
            frames.append(FrameRef(video=str(p), t=0.0, image=img))
        dets = await asyncio.to_thread(self.detect, frames)
        persons = [
            [d for d in ds if d.label == "person" and d.confidence >= self.conf] for ds in dets
        ]
        answer = answer_from_detections(request.fields, frames, persons)
        raw = render_answer(request.fields, answer)
        return Completion(text=raw, tokens_in=0, tokens_out=0)

    def describe(self) -> str:
        return f"{self.spec.alias} (ultralytics, local)"


def answer_from_detections(
    fields: Any, frames: Sequence[FrameRef], persons: list[list[Detection]]
) -> dict[str, Any]:
    """Map per-frame person detections onto count / presence / entity-list fields."""
    out: dict[str, Any] = {}
    counts = [len(p) for p in persons] or [0]
    mid = len(persons) // 2
    for name, ft in fields.items():
        if isinstance(ft, Number):
            out[name] = max(counts)
        elif isinstance(ft, Boolean) and not ft.spec.safety:
            out[name] = max(counts) > 0
        elif isinstance(ft, EntityList) and persons:
            region = next((n for n, s in ft.subfields.items() if isinstance(s, Region)), None)
            labels = getattr(ft.subfields[region].spec, "labels", None) if region else None
            label = (labels or ["person"])[0]
            h, w = frames[mid].image.shape[:2]
            ents = []
            for j, d in enumerate(sorted(persons[mid], key=lambda d: d.x)):
                ent: dict[str, Any] = {}
                if ft.spec.key:
                    ent[ft.spec.key] = f"P{j + 1}"
                if region:
                    ent[region] = [
                        {
                            "x": 100 * d.x / w,
                            "y": 100 * d.y / h,
                            "width": 100 * d.width / w,
                            "height": 100 * d.height / h,
                            "label": label,
                        }
                    ]
                ents.append(ent)
            out[name] = ents
    return out
