"""Local backends through the real spec paths: a tiny transformers VLM built from a config
(hf:) and an untrained YOLO built from its bundled yaml (yolo:). Offline throughout."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from sqlalchemy import select

from tests.models.tiny_vlm import build_tiny_llava
from truthline.models import (
    MODEL_FAILURE,
    PARSED,
    FrameRef,
    ModelRequest,
    get_backend,
    run_requests,
)
from truthline.store import tables


def test_hf_tiny_llava_batched_through_the_runner(tmp_path, tiny, images, store):
    model_dir = build_tiny_llava(tmp_path / "tiny-llava")
    reqs = [
        ModelRequest(
            project="tiny",
            item_id=None,
            purpose="benchmark",
            system="answer in JSON",
            user=f"question {i}",
            images=images[: 1 + i % 2],
            fields=tiny.field_types,
            settings={"max_tokens": 6, "temperature": 0.0, "image_policy": {"max_side": 64}},
        )
        for i in range(3)
    ]
    res = run_requests(store, f"hf:{model_dir};batch=2;device=cpu", reqs, progress=False)
    # an untrained model babbles: every answer is a model failure (truncated at the 6-token
    # cap, or unparseable), with tokens counted and the raw text stored; nothing is infra
    assert [r.status for r in res] == [MODEL_FAILURE] * 3
    assert all(r.reason in ("truncated", "unparseable") for r in res)
    assert all(r.tokens_in > 0 and 0 < r.tokens_out <= 6 for r in res)
    assert res[1].tokens_in > res[0].tokens_in  # two images cost more prompt tokens
    with store.begin() as conn:
        rows = conn.execute(select(tables.responses)).all()
    assert len(rows) == 3 and all(r.raw_response is not None for r in rows)
    assert {r.model_alias for r in rows} == {f"hf:{model_dir}"}
    # deterministic greedy decoding: a second backend instance gives the same raw text
    store2_res = run_requests(store, f"hf:{model_dir};batch=1;device=cpu", reqs[:1], progress=False)
    assert store2_res[0].raw == res[0].raw


def _yolo_env(tmp_path, monkeypatch):
    import matplotlib

    cfg = tmp_path / "yolo-cfg"
    (cfg / "Ultralytics").mkdir(parents=True)
    font = Path(matplotlib.get_data_path()) / "fonts/ttf/DejaVuSans.ttf"
    for name in ("Arial.ttf", "Arial.Unicode.ttf"):
        shutil.copy(font, cfg / "Ultralytics" / name)
    monkeypatch.setenv("YOLO_CONFIG_DIR", str(cfg))


def test_yolo_untrained_from_bundled_yaml(tmp_path, monkeypatch, tiny, images, store):
    _yolo_env(tmp_path, monkeypatch)
    be = get_backend("yolo:yolo11n.yaml;imgsz=64;conf=0.0001;device=cpu")
    frames = [
        FrameRef(
            "v.mp4",
            float(t),
            np.random.default_rng(t).integers(0, 255, (48, 64, 3), dtype=np.uint8),
        )
        for t in range(3)
    ]
    dets = be.detect(frames)
    assert len(dets) == 3
    for ds in dets:
        for d in ds:
            assert d.label == "person" and 0 <= d.confidence <= 1 and d.width >= 0
    req = ModelRequest(
        project="tiny",
        item_id=None,
        purpose="prefill",
        system=None,
        user="",
        images=images[:2],
        fields=tiny.field_types,
        settings={},
    )
    (r,) = run_requests(store, "yolo:yolo11n.yaml;imgsz=64;device=cpu", [req], progress=False)
    assert r.status == PARSED and isinstance(r.values["count"], int) and r.values["count"] >= 0
