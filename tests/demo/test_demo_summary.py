"""Issue 26: the demo's summary leads with the tool's finding (the provenance gradient of
the prefill VLM), then the flagged annotator, then the benchmark slices; at 100 columns the
model names in its table are printed whole, so the models can be told apart."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from truthline.demo._loop import Demo, gradient_lines
from truthline.workspace import Workspace


def _ci(point: float, low: float, high: float) -> dict[str, float]:
    return {"point": point, "low": low, "high": high}


GRADIENT = {
    "predictions": "simulated:steel-v1@rerun",
    "blind": _ci(0.612, 0.55, 0.67),
    "anchored": _ci(0.734, 0.69, 0.78),
    "vlm_sourced": _ci(0.871, 0.84, 0.90),
    "inflation_pp": _ci(25.9, 21.0, 30.5),
}
MODELS = ["simulated:steel-strong", "simulated:steel-weak", "rule:majority"]


def _row(model: str) -> dict:
    return {
        "model": model,
        "blind": _ci(0.6, 0.5, 0.7),
        "anchored": _ci(0.7, 0.6, 0.8),
        "vlm-sourced": _ci(0.8, 0.7, 0.9),
        "inflation_anchored_pp": _ci(10.0, 4.0, 16.0),
        "inflation_vlm-sourced_pp": _ci(20.0, 12.0, 28.0),
    }


def _summary(tmp_path: Path, width: int) -> str:
    console = Console(record=True, width=width, force_terminal=False)
    demo = Demo(Workspace.from_env(tmp_path), console=console, quiet=True)
    demo.result.steps = {
        "audit": {
            "flagged": ["rubberstamp@annotators.local"],
            "planted_rubber_stamper": ["rubberstamp@annotators.local"],
            "report": "audit.md",
            "gradient": GRADIENT,
        },
        "benchmark": {"compare_labels": {"models": [_row(m) for m in MODELS]}},
    }
    demo.summary()
    return console.export_text()


def test_summary_leads_with_the_gradient_then_flagged_then_slices(tmp_path: Path) -> None:
    text = _summary(tmp_path, 160)
    grad = text.index("provenance gradient")
    assert "61.2%" in text and "73.4%" in text and "87.1%" in text  # blind → anchored → VLM
    assert "+25.9 pp" in text
    assert "simulated:steel-v1@rerun" in text
    flagged = text.index("flagged by the audit")
    table = text.index("The same answers scored against each arm")
    assert grad < flagged < table
    # blind, anchored, VLM-sourced in that order
    assert text.index("blind labels ", grad) < text.index("anchored labels ", grad)
    assert text.index("anchored labels ", grad) < text.index("VLM-sourced gold", grad)


def test_model_names_whole_at_100_columns(tmp_path: Path) -> None:
    text = _summary(tmp_path, 100)
    for m in MODELS:
        assert m in text, f"{m} truncated at 100 columns:\n{text}"


def test_no_gradient_no_lines() -> None:
    assert gradient_lines(None) == []
    assert gradient_lines({"predictions": "x"}) == []
