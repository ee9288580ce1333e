"""A probe as text: what a model or a blind verifier is asked (public record only).

The rendering reads nothing but the public record, so the leak check can run it and search
the result for private values; the benchmark's model prompt is checked the same way.
"""

from __future__ import annotations

from typing import Any


def anchor_text(public: dict[str, Any]) -> str:
    a = public["evidence"][0]
    if a["kind"] == "image_region":
        x, y, w, h = a["bbox"]
        return f"{a['anchor_id']}: image region x={x:.0f}, y={y:.0f}, w={w:.0f}, h={h:.0f} px"
    return f"{a['anchor_id']}: text span [{a['start']}, {a['end']}) = {a['text']!r}"


def candidate_lines(public: dict[str, Any], order: list[int] | None = None) -> list[str]:
    cands = public["candidates"]
    if order is not None:
        cands = [cands[i] for i in order]
    out = []
    for c in cands:
        boxes = "; ".join(
            f"{v['view_id']} box [{', '.join(f'{n:.0f}' for n in v['bbox'])}]"
            for v in c["views"]
            if v.get("bbox")
        )
        out.append(f"{c['alias']}: {c.get('description', '')} ({boxes})")
    return out


def image_lines(public: dict[str, Any]) -> list[str]:
    """The images in the order they are sent (seeds/002 App. C.2): the original diagram(s),
    then the localized view(s) with the anchor and the candidates' locator views drawn."""
    paths = [f"{im['path']} (original diagram)" for im in public["problem"].get("images", [])]
    paths += [
        f"{v['path']} (localized view: anchor and candidate views drawn)"
        for v in public.get("localized_views", [])
    ]
    return [f"  image {i}: {p}" for i, p in enumerate(paths, 1)]


def render_prompt(public: dict[str, Any], condition: str = "base") -> str:
    """The probe's prompt text under ``condition`` (``base`` or ``plus_gt``): the user part
    of the request; the shared system instruction is the benchmark template's."""
    lines = [f"Problem: {public['problem']['text']}"]
    if public["problem"].get("question"):
        lines.append(f"Original question: {public['problem']['question']}")
    images = image_lines(public)
    if images:
        lines.append("Images:")
        lines += images
    lines.append("Evidence anchor " + anchor_text(public))
    lines.append("Candidates:")
    lines += [f"  {c}" for c in candidate_lines(public)]
    if condition == "plus_gt":
        given = public["conditions"].get("plus_gt")
        if not given:
            raise ValueError(f"probe {public['probe_id']} has no +GT input")
        lines.append("Given as truth (local reading):")
        lines += [f"  {r['anchor_id']}: {r['text']}" for r in given["local_reading"]]
    else:  # Base: the local-reading field is None (App. C.2 panel b)
        lines.append("Local reading: None")
    lines.append(public["question"])
    lines.append("Answer with exactly one JSON object with these keys:")
    lines += [f'  "{k}": {v}' for k, v in public["output_schema"].items()]
    return "\n".join(lines)
