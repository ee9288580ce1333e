"""Drawing: generated diagrams (matplotlib, Agg, no display) and localized probe views (Pillow).

The diagram axes map one data unit to one pixel with the origin top-left, so shapes are
drawn at their recorded coordinates; each text label's box is measured from the renderer
after drawing (the exact pixel box a region annotation should have).
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from truthline.systems.physalign._scenes import HEIGHT, WIDTH, Scene

DPI = 100


def render_scene(scene: Scene, path: Path) -> list[list[float]]:
    """Draw ``scene`` to ``path`` (PNG); returns each label's box ``[x, y, w, h]`` in pixels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyArrowPatch, Polygon, Rectangle

    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(HEIGHT, 0)
    ax.axis("off")
    for ent in scene.entities:
        for sh in ent.shapes:
            if sh.kind == "rect":
                (x0, y0), (x1, y1) = sh.pts
                fill = "#d9d9d9" if ent.kind == "support" else "#f4e3c1"
                ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fc=fill, ec="black", lw=1.5))
            elif sh.kind == "poly":
                fill = "#e6e6e6" if ent.kind == "support" else "#cfe3f7"
                ax.add_patch(Polygon(sh.pts, closed=True, fc=fill, ec="black", lw=1.5))
            elif sh.kind == "circle":
                fc = "black" if ent.kind == "point" else "white"
                ax.add_patch(Circle(sh.pts[0], sh.r, fc=fc, ec="black", lw=1.5))
            elif sh.kind in ("line", "zigzag"):
                xs, ys = zip(*sh.pts, strict=True)
                ls = "--" if ent.subkind == "axis" else "-"
                ax.plot(xs, ys, color="black", lw=1.6, ls=ls)
            elif sh.kind == "arrow":
                color = "#b2182b" if ent.kind == "force" else "#2166ac"
                ax.add_patch(
                    FancyArrowPatch(
                        sh.pts[0], sh.pts[1], arrowstyle="-|>", mutation_scale=16, lw=2, color=color
                    )
                )
    texts = [
        ax.text(lab.xy[0], lab.xy[1], lab.math, ha=lab.ha, va=lab.va, fontsize=13, zorder=5)
        for lab in scene.labels
    ]
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = []
    for t in texts:
        bb = t.get_window_extent(renderer)
        # display coordinates have their origin bottom-left; pixels top-left
        # whole pixels, one more on each side for the anti-aliased edge: every pixel the
        # label inks lies inside its box
        x0 = max(0, math.floor(bb.x0) - 1)
        y0 = max(0, math.floor(HEIGHT - bb.y1) - 1)
        x1 = min(WIDTH, math.ceil(bb.x1) + 1)
        y1 = min(HEIGHT, math.ceil(HEIGHT - bb.y0) + 1)
        boxes.append([float(x0), float(y0), float(x1 - x0), float(y1 - y0)])
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png")
    return boxes


def render_view(image: Path, public: dict[str, Any], out: Path) -> None:
    """The localized view of a probe: the anchor box (R1) and every candidate's views with its
    alias, drawn on the original diagram (text anchors are shown in the prompt, not here)."""
    from PIL import ImageDraw

    st = Path(image).stat()
    canvas = _decoded(str(image), st.st_mtime_ns, st.st_size).copy()
    draw = ImageDraw.Draw(canvas)
    for cand in public["candidates"]:
        for v in cand["views"]:
            if v.get("kind") != "image_region":
                continue
            x, y, w, h = v["bbox"]
            if v.get("polyline"):  # a cable or an arrow: its path, not its (large) box
                draw.line([tuple(p) for p in v["polyline"]], fill=(33, 102, 172), width=3)
                x, y = v["polyline"][0]
            else:
                draw.rectangle([x, y, x + w, y + h], outline=(33, 102, 172), width=2)
            draw.text((x + 2, max(0, y - 12)), cand["alias"], fill=(33, 102, 172))
    for a in public["evidence"]:
        if a["kind"] == "image_region":
            x, y, w, h = a["bbox"]
            draw.rectangle([x - 2, y - 2, x + w + 2, y + h + 2], outline=(215, 48, 39), width=3)
            draw.text((x + w + 4, y), a["anchor_id"], fill=(215, 48, 39))
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(out, format="PNG", compress_level=1)  # ~4x faster to write than the default


@functools.lru_cache(maxsize=4)
def _decoded(image: str, mtime_ns: int, size: int) -> Any:
    """A parent's diagram, decoded once for all of its probes' views (probes come by parent;
    the file's mtime and size are part of the key, so a rewritten diagram is read again)."""
    from PIL import Image

    with Image.open(image) as im:
        return im.convert("RGB")
