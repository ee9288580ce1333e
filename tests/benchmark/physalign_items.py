"""Minimal generated PhysAlign probe items for tests (until truthline.systems.physalign's generated
problems land): a matplotlib diagram per parent problem with labelled blocks, one probe per
label (T03-image), plus a T03-text probe per parent whose anchor is a text span. Gold is
known by construction; geometry is in pixels, origin top-left."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any


def make_items(root: Path, n_parents: int = 4) -> tuple[Path, list[dict[str, Any]]]:
    """Write ``root/media/*.png`` and ``root/meta.csv``; return the CSV path and one truth
    row per item (key, parent, read, owner, probe_type). The template is a ``frames``
    project: each item is a folder holding the full diagram and its localized view, in the
    order they are sent (here the same picture twice)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    media = root / "media"
    media.mkdir(parents=True, exist_ok=True)
    W, H = 200, 100
    rows: list[dict[str, Any]] = []
    truth: list[dict[str, Any]] = []
    for p in range(n_parents):
        # three blocks E1, E2, E3 side by side; each carries a mass label just above it
        blocks = {"E1": [10, 50, 40, 30], "E2": [80, 50, 40, 30], "E3": [150, 50, 40, 30]}
        labels = {"E1": f"m_{p + 1}", "E2": f"{p + 2} kg", "E3": "M"}
        text = f"Three blocks rest on a table. The middle block has mass {p + 2} kg."
        # parent p: probe of label over block k, the label drawn at its block's top edge;
        # the last parent's "M" label sits between E2 and E3, closer to E2 (a hard item)
        for alias, (x, y, w, _h) in blocks.items():
            lx, ly = x + w / 2, y - 8
            if p == n_parents - 1 and alias == "E3":
                lx = 128.0  # nearer E2's box than E3's: the nearest-region rule fails here
            key = f"p{p}_{alias}"
            fig = plt.figure(figsize=(W / 50, H / 50), dpi=50)
            ax = fig.add_axes((0, 0, 1, 1))
            ax.set_xlim(0, W)
            ax.set_ylim(H, 0)
            ax.axis("off")
            for bx, by, bw, bh in blocks.values():
                ax.add_patch(plt.Rectangle((bx, by), bw, bh, fill=False))
            ax.text(lx, ly, labels[alias], ha="center", va="center", fontsize=6)
            _save(fig, media / key)
            plt.close(fig)
            rows.append(
                {
                    "key": key,
                    "problem": f"par{p}",
                    "domain": "statics",
                    "probe_type": "T03-image",
                    "problem_text": text,
                    "question": "What is the content at R1, and to which candidate entity "
                    "does it belong?",
                    "anchor": json.dumps(
                        {
                            "anchor_id": "R1",
                            "kind": "image_region",
                            "bbox": [lx - 10, ly - 4, 20, 8],
                        }
                    ),
                    "candidates": json.dumps({a: {"bbox": b} for a, b in blocks.items()}),
                }
            )
            truth.append(
                {
                    "key": key,
                    "parent": f"par{p}",
                    "read": labels[alias],
                    "owner": alias,
                    "probe_type": "T03-image",
                }
            )
        # a text-anchored probe: "{p+2} kg" in the problem text belongs to E2 (never +GT)
        start = text.index(f"{p + 2} kg")
        key = f"p{p}_text"
        fig = plt.figure(figsize=(W / 50, H / 50), dpi=50)
        _save(fig, media / key)
        plt.close(fig)
        span = text[start : start + len(f"{p + 2} kg")]
        rows.append(
            {
                "key": key,
                "problem": f"par{p}",
                "domain": "statics",
                "probe_type": "T03-text",
                "problem_text": text,
                "question": "To which candidate entity does the quantity at R1 belong?",
                "anchor": json.dumps(
                    {
                        "anchor_id": "R1",
                        "kind": "text_span",
                        "start": start,
                        "end": start + len(span),
                        "text": span,
                    }
                ),
                "candidates": json.dumps({a: {"bbox": b} for a, b in blocks.items()}),
            }
        )
        truth.append(
            {
                "key": key,
                "parent": f"par{p}",
                "read": None,  # T03-text probes are never scored for reading
                "owner": "E2",
                "probe_type": "T03-text",
            }
        )
    csv_path = root / "meta.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return csv_path, truth


def _save(fig: Any, folder: Path) -> None:
    """The item's images in sending order: ``1-diagram.png``, then ``2-view.png``."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / "1-diagram.png")
    shutil.copyfile(folder / "1-diagram.png", folder / "2-view.png")
