"""Issue 26: the dataset card's own "How to evaluate" snippet runs as written against the
release it describes (it used ``ex["image"]`` on a release whose column is ``frames``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PIL import Image

from truthline.benchmark._export import export_release
from truthline.store import tables


def _snippet(public: Path) -> str:
    """The card's first ``python`` block, pointed at this release's public folder."""
    card = (public / "README.md").read_text(encoding="utf-8")
    section = card.split("## How to evaluate", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block, section
    code = block.group(1)
    assert "path/to/this/folder" in code
    return code.replace("path/to/this/folder", str(public))


def _run(code: str) -> dict:
    scope: dict = {}
    exec(compile(code, "<dataset card>", "exec"), scope)  # the user's copy-paste
    return scope


def _two_frames(ws) -> None:
    with ws.store.begin() as conn:
        for r in conn.execute(tables.items.select()).all():
            second = f"{Path(r.media[0]).stem}_2.png"
            Image.new("RGB", (4, 6), (9, 9, 9)).save(Path(r.media_root) / second)
            conn.execute(
                tables.items.update()
                .where(tables.items.c.id == r.id)
                .values(media=[r.media[0], second])
            )


@pytest.mark.parametrize("frames", [False, True], ids=["image", "frames"])
@pytest.mark.parametrize("hide", [False, True], ids=["answers", "withheld"])
def test_card_snippet_runs_on_its_release(bench_ws, tmp_path, capsys, frames, hide):
    ws, project, _items, _snap = bench_ws
    if frames:
        _two_frames(ws)
    out = tmp_path / "release"
    rel = export_release(ws.store, project, out, fmt="jsonl", hide_test_answers=hide)
    column = "frames" if frames else "image"
    assert rel["media_column"] == column
    code = _snippet(out / "public")
    assert f'ex["{column}"]' in code
    assert ('ex["image"]' in code) is (not frames)  # never names a column the release lacks
    scope = _run(code)
    ex = scope["ex"]
    assert column in ex and ex["gold"] is not None  # the example split carries answers
    media = ex[column]
    if frames:
        assert [f.size for f in media] == [(8, 8), (4, 6)]
    else:
        assert media.size == (8, 8)
    assert str(ex["item"]) in capsys.readouterr().out
