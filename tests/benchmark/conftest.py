"""A tiny gold fixture written straight into the store: SIMULATED steel clips, a gold
snapshot with provenance per the shared contract, arm assignments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from truthline.simulate._scene import make_specs, truth_of
from truthline.store import Store, json_hash, now, tables
from truthline.workspace import Workspace


def gold_rows(truth: dict[str, Any], provenance: str) -> dict[str, tuple[Any, str]]:
    """Decision-level gold of one item (scalar fields by name, workers[P1].sub, membership)."""
    out: dict[str, tuple[Any, str]] = {"worker_count": (truth["worker_count"], provenance)}
    out["workers"] = ([w["worker_id"] for w in truth["workers"]], provenance)
    for w in truth["workers"]:
        for sub in ("action", "helmet", "harness", "safety_violation"):
            out[f"workers[{w['worker_id']}].{sub}"] = (w[sub], provenance)
    return out


def write_gold(
    store: Store,
    project: str,
    per_item: dict[int, dict[str, tuple[Any, str]]],
    arms: dict[int, str],
) -> str:
    ts = now()
    snap = json_hash({k: sorted((p, repr(v)) for p, v in d.items()) for k, d in per_item.items()})
    with store.begin() as conn:
        conn.execute(
            tables.gold_snapshots.insert().values(
                hash=snap, project=project, policy={"fixture": True}, counts={}, created_at=ts
            )
        )
        for item_id, decisions in per_item.items():
            for path, (value, prov) in decisions.items():
                conn.execute(
                    tables.gold.insert().values(
                        snapshot=snap,
                        project=project,
                        item_id=item_id,
                        field_path=path,
                        value=value,
                        provenance=prov,
                        sources=[],
                    )
                )
        for item_id, arm in arms.items():
            conn.execute(
                tables.arm_assignments.insert().values(
                    project=project, item_id=item_id, arm=arm, seed=0, weight=1.0, created_at=ts
                )
            )
    return snap


def add_items(ws: Workspace, project: str, n: int, seed: int = 0) -> list[tuple[int, dict]]:
    """``n`` SIMULATED clip items with one tiny frame each and known truth."""
    from PIL import Image

    media = ws.root / "media"
    media.mkdir(parents=True, exist_ok=True)
    specs = make_specs(n, seed)
    out = []
    ts = now()
    rng = np.random.default_rng(seed)
    with ws.store.begin() as conn:
        for spec in specs:
            rel = f"{spec.key.replace('/', '_')}.png"
            Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(media / rel)
            truth = truth_of(spec)
            iid = conn.execute(
                tables.items.insert().values(
                    project=project,
                    key=spec.key,
                    media_kind="image",
                    media=[rel],
                    media_root=str(media),
                    content_hash=json_hash(spec.key),
                    meta={
                        "site": spec.site,
                        "camera": spec.camera,
                        "video": spec.video,
                        "visibility": spec.visibility,
                        "scene_type": spec.scene_type,
                    },
                    parent=spec.video,
                    sim_truth=truth,
                    created_at=ts,
                    updated_at=ts,
                )
            ).inserted_primary_key[0]
            out.append((int(iid), truth))
    return out


def make_bench_ws(root: Path) -> tuple[Any, Any, list, Any]:
    """Workspace with steel-safety, 16 simulated items; first half blind, second anchored;
    gold = known truth with provenance by arm (anchored items alternate kept/corrected).
    Returns (workspace, project, items, gold snapshot)."""
    ws = Workspace.from_env(root)
    project = ws.init_project("steel-safety")
    items = add_items(ws, project.name, 16)
    per_item, arms = {}, {}
    for k, (iid, truth) in enumerate(items):
        arm = "blind" if k < 8 else "anchored"
        prov = (
            "blind_consensus"
            if arm == "blind"
            else ("anchored_kept" if k % 2 else "anchored_corrected")
        )
        per_item[iid] = gold_rows(truth, prov)
        arms[iid] = arm
    snap = write_gold(ws.store, project.name, per_item, arms)
    return ws, project, items, snap


@pytest.fixture
def bench_ws(tmp_path: Path):
    """``make_bench_ws`` in a fresh folder."""
    ws, project, items, snap = make_bench_ws(tmp_path / "ws")
    yield ws, project, items, snap
    ws.store.close()
