"""``scripted:PATH`` — a scripted person detector reading detections from a file.

For tests and benchmarks (zero model cost). JSON: ``{"video.mp4": [[start_s, end_s,
confidence], ...]}`` (intervals, inclusive) or ``{"video.mp4": {"12": 0.9, ...}}`` (per
sampled second); CSV: ``video,start,end,confidence`` or ``video,t,confidence``. Videos
match by file name or stem; a time with no entry has no detection. A JSON interval may
carry a fourth element, the persons' boxes in percent of the frame (``[[x, y, width,
height], ...]``): one detection per box (the anchored arm places workers on them); without
it, one detection without a box.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from truthline.errors import TruthlineError
from truthline.models._registry import Backend, Detection, FrameRef, backend

Interval = tuple[float, float, float]


def load_script(path: Path) -> dict[str, list[Interval]]:
    if not path.is_file():
        raise TruthlineError(f"scripted detector: {path} not found")
    out: dict[str, list[Interval]] = {}
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            for rowno, row in enumerate(csv.DictReader(fh), start=2):
                try:
                    if row.get("t") not in (None, ""):
                        t = float(row["t"])
                        iv = (t, t, float(row["confidence"]))
                    else:
                        iv = (float(row["start"]), float(row["end"]), float(row["confidence"]))
                except (KeyError, TypeError, ValueError):
                    raise TruthlineError(
                        f"{path}: row {rowno}: needs video and t or start/end, and confidence"
                    ) from None
                out.setdefault(row["video"], []).append(iv)
        return out
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TruthlineError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    for video, spec in data.items():
        if isinstance(spec, dict):
            out[video] = [(float(t), float(t), float(c)) for t, c in spec.items()]
        else:
            out[video] = [(float(a), float(b), float(c)) for a, b, c, *_ in spec]
    return out


def load_boxes(path: Path) -> dict[str, list[tuple[float, float, list[list[float]]]]]:
    """A JSON script's person boxes per video: ``(start, end, boxes in percent)``."""
    if path.suffix.lower() == ".csv":
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, list[tuple[float, float, list[list[float]]]]] = {}
    for video, spec in data.items():
        if not isinstance(spec, list):
            continue
        for iv in spec:
            if len(iv) > 3 and iv[3]:
                try:
                    boxes = [[float(v) for v in b[:4]] for b in iv[3]]
                except (TypeError, ValueError):
                    raise TruthlineError(
                        f"{path}: {video}: boxes must be [x, y, width, height] in percent"
                    ) from None
                out.setdefault(video, []).append((float(iv[0]), float(iv[1]), boxes))
    return out


@backend("scripted")
class ScriptedDetector(Backend):
    """Detections from a script: confidence of a person at each sampled time."""

    def __init__(self, spec):
        super().__init__(spec)
        self.script = load_script(Path(spec.name))
        self.boxes = load_boxes(Path(spec.name))

    def confidence(self, video: str, t: float) -> float:
        ivs = self.script.get(video) or self.script.get(Path(video).stem) or []
        return max((c for a, b, c in ivs if a - 1e-6 <= t <= b + 1e-6), default=0.0)

    def detect(self, frames: Sequence[FrameRef]) -> list[list[Detection]]:
        out = []
        for f in frames:
            c = self.confidence(f.video, f.t)
            boxes = self.boxes_at(f.video, f.t)
            shape = getattr(f.image, "shape", None)
            if c > 0 and boxes and shape is not None and len(shape) >= 2:
                h, w = float(shape[0]), float(shape[1])
                out.append(
                    [
                        Detection(x * w / 100, y * h / 100, bw * w / 100, bh * h / 100, c)
                        for x, y, bw, bh in boxes
                    ]
                )
            else:
                out.append([Detection(0, 0, 0, 0, c)] if c > 0 else [])
        return out

    def boxes_at(self, video: str, t: float) -> list[list[float]]:
        ivs = self.boxes.get(video) or self.boxes.get(Path(video).stem) or []
        return next((b for a, e, b in ivs if a - 1e-6 <= t <= e + 1e-6), [])
