"""Regions (labelled boxes) and entity lists (repeated groups such as per-worker fields).

Both need matching: two annotators' boxes or workers are paired one-to-one before any
per-field comparison — by a declared key, or by Hungarian matching on box IoU.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import Field

from truthline.fields._base import FieldSpec, FieldType, field_type

BOX_KEYS = ("x", "y", "width", "height")


class RegionSpec(FieldSpec):
    labels: list[str] = []
    iou: float = Field(0.5, gt=0, le=1)
    """Two boxes match when IoU >= this and their labels are equal."""
    shape: Literal["rectangle"] = "rectangle"


def box_iou(a: dict[str, float], b: dict[str, float]) -> float:
    """IoU of two boxes given as x, y, width, height (any consistent unit)."""
    ax2, ay2 = a["x"] + a["width"], a["y"] + a["height"]
    bx2, by2 = b["x"] + b["width"], b["y"] + b["height"]
    iw = max(0.0, min(ax2, bx2) - max(a["x"], b["x"]))
    ih = max(0.0, min(ay2, by2) - max(a["y"], b["y"]))
    inter = iw * ih
    union = a["width"] * a["height"] + b["width"] * b["height"] - inter
    return inter / union if union > 0 else 0.0


def match_boxes(xs: list[dict], ys: list[dict], threshold: float) -> list[tuple[int, int]]:
    """Hungarian matching maximizing IoU; pairs below ``threshold`` are dropped."""
    if not xs or not ys:
        return []
    from scipy.optimize import linear_sum_assignment  # lazy: keeps CLI start-up fast

    cost = np.zeros((len(xs), len(ys)))
    for i, a in enumerate(xs):
        for j, b in enumerate(ys):
            cost[i, j] = -box_iou(a, b)
    rows, cols = linear_sum_assignment(cost)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True) if -cost[i, j] >= threshold]


@field_type("region")
class Region(FieldType):
    """Labelled boxes in percent of the image (Label Studio's convention)."""

    Spec = RegionSpec
    spec: RegionSpec
    level = None

    def expected(self) -> str:
        labels = f", label one of {self.spec.labels}" if self.spec.labels else ""
        return f"a list of boxes {{x, y, width, height}} in percent of the image{labels}"

    def _box(self, raw: Any, idx: int) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise self.fail(f"region {idx}: expected an object with x, y, width, height, label")
        try:
            box: dict[str, Any] = {k: float(raw[k]) for k in BOX_KEYS}
        except (KeyError, TypeError, ValueError):
            raise self.fail(
                f"region {idx}: needs numeric x, y, width, height; got {raw!r}"
            ) from None
        if not all(math.isfinite(box[k]) for k in BOX_KEYS):
            raise self.fail(f"region {idx}: x, y, width, height must be finite; got {raw!r}")
        if box["width"] < 0 or box["height"] < 0:
            raise self.fail(f"region {idx}: negative width or height")
        label = raw.get("label")
        if label is None and isinstance(raw.get("labels"), list) and raw["labels"]:
            label = raw["labels"][0]
        if self.spec.labels:
            if label is None and len(self.spec.labels) == 1:
                label = self.spec.labels[0]
            if label not in self.spec.labels:
                raise self.fail(f"region {idx}: label {label!r} is not one of {self.spec.labels}")
        box["label"] = label
        return box

    def normalize(self, value: Any) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        if isinstance(value, dict):
            value = [value]
        if not isinstance(value, list):
            raise self.fail(f"expected a list of boxes, got {type(value).__name__}")
        return [self._box(v, i) for i, v in enumerate(value)]

    def matches(self, xs: list[dict], ys: list[dict]) -> list[tuple[int, int]]:
        pairs = match_boxes(xs, ys, self.spec.iou)
        return [(i, j) for i, j in pairs if xs[i]["label"] == ys[j]["label"]]

    def agree(self, x: Any, y: Any) -> bool:
        if x is None or y is None or len(x) != len(y):
            return False
        return len(self.matches(x, y)) == len(x)

    def credit(self, x: Any, y: Any) -> float:
        """F1 of matched boxes (both empty: 1)."""
        if x is None or y is None:
            return 0.0
        if not x and not y:
            return 1.0
        m = len(self.matches(x, y))
        return 2 * m / (len(x) + len(y))


class EntityListSpec(FieldSpec):
    key: str | None = None
    """Subfield identifying an entity (e.g. a worker/track id); entities match by equal keys."""
    match_region: str | None = None
    """Region subfield used to match entities by box IoU when no key is declared."""
    fields: dict[str, Any] = {}


@field_type("entity_list")
class EntityList(FieldType):
    """A repeated group of fields (per worker); matched by key or box IoU, then compared per field."""

    Spec = EntityListSpec
    spec: EntityListSpec
    level = None

    def __init__(self, path: str, spec: FieldSpec, taxonomies: dict[str, Any] | None = None):
        super().__init__(path, spec, taxonomies)
        from truthline.fields._base import get_field_type

        self.subfields: dict[str, FieldType] = {}
        for name, sub in self.spec.fields.items():
            self.subfields[name] = get_field_type(sub.type)(f"{path}.{name}", sub, self.taxonomies)

    def expected(self) -> str:
        return "a list of objects, one per entity"

    def normalize(self, value: Any) -> list[dict[str, Any]] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(f"expected a list of entities, got {type(value).__name__}")
        out = []
        seen: set[Any] = set()
        for i, ent in enumerate(value):
            if not isinstance(ent, dict):
                raise self.fail(f"entity {i}: expected an object, got {type(ent).__name__}")
            norm: dict[str, Any] = {}
            for name, ft in self.subfields.items():
                if name in ent:
                    norm[name] = ft.normalize(ent[name])
            if self.spec.key:
                k = norm.get(self.spec.key)
                if k is None:
                    raise self.fail(f"entity {i}: missing key field {self.spec.key!r}")
                if k in seen:
                    raise self.fail(f"entity {i}: duplicate key {k!r}")
                seen.add(k)
            out.append(norm)
        return out

    def align(self, xs: list[dict], ys: list[dict]) -> list[tuple[int | None, int | None]]:
        """Pair entities of two values: matched pairs, then unmatched ones with ``None``."""
        pairs: list[tuple[int, int]]
        if self.spec.key:
            yk = {e.get(self.spec.key): j for j, e in enumerate(ys)}
            pairs = [
                (i, yk[e.get(self.spec.key)])
                for i, e in enumerate(xs)
                if e.get(self.spec.key) in yk
            ]
        elif self.spec.match_region:
            reg = self.subfields[self.spec.match_region]
            thr = getattr(reg.spec, "iou", 0.5)
            first = [(e.get(self.spec.match_region) or [None])[0] for e in xs]
            second = [(e.get(self.spec.match_region) or [None])[0] for e in ys]
            xi = [i for i, b in enumerate(first) if b]
            yi = [j for j, b in enumerate(second) if b]
            pairs = [
                (xi[a], yi[b])
                for a, b in match_boxes([first[i] for i in xi], [second[j] for j in yi], thr)
            ]
        else:
            pairs = [(i, i) for i in range(min(len(xs), len(ys)))]
        mx = {i for i, _ in pairs}
        my = {j for _, j in pairs}
        out: list[tuple[int | None, int | None]] = list(pairs)
        out += [(i, None) for i in range(len(xs)) if i not in mx]
        out += [(None, j) for j in range(len(ys)) if j not in my]
        return out

    def entity_id(self, ent: dict[str, Any], index: int) -> str:
        if self.spec.key and ent.get(self.spec.key) is not None:
            return str(ent[self.spec.key])
        return str(index)

    def decisions(self, x: Any, y: Any) -> list[tuple[str, Any, Any]]:
        """Per-subfield comparisons after alignment: ``(path, x_value, y_value)``; unmatched
        entities contribute their values against ``None``."""
        xs, ys = x or [], y or []
        out = []
        for i, j in self.align(xs, ys):
            ex = xs[i] if i is not None else {}
            ey = ys[j] if j is not None else {}
            eid = self.entity_id(ex or ey, i if i is not None else (j or 0))
            for name in self.subfields:
                if name == self.spec.key:
                    continue
                out.append((f"{self.path}[{eid}].{name}", ex.get(name), ey.get(name)))
        return out

    def agree(self, x: Any, y: Any) -> bool:
        if x is None or y is None or len(x) != len(y):
            return False
        for path, a, b in self.decisions(x, y):
            sub = self.subfields[path.rsplit(".", 1)[1]]
            if (a is None) != (b is None) or (a is not None and not sub.agree(a, b)):
                return False
        return True
