"""Peak memory of ``benchmark export`` at 1k / 10k / 100k items (issue 28).

    .venv/bin/python bench/export_memory.py [--sizes 1000,10000,100000] [--format parquet]
        [--against REF] [--no-record]

Each size gets a SIMULATED steel-safety store (items, 32x32 PNG frames, gold with
provenance by arm, inserted in bulk), then each export runs in a fresh child process and
its peak RSS (``VmHWM``, which the child reads from ``/proc/self/status`` as it ends; a
child's ``ru_maxrss`` would count its parent's pages at fork time) is read. The store is
built in a child too, so the parent stays small. The baseline is a child that does
everything but the export: the interpreter, the imports, the store opened and the project
loaded. Printed per size: peak and baseline RSS, their ratio, KB per item over the
baseline, wall time and release size; the cost exponent k (extra memory ∝ n^k) over the
sizes. ``--against REF`` also measures the export module of git revision REF (e.g. HEAD,
before the streaming rewrite) in the same run, up to ``--against-up-to`` items. Goal: peak flat in n, under 400 MB at 100k.
Written to bench/SCALE.md (section "export") unless ``--no-record``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _scale import fit_exponent, record, row  # bench/_scale.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = """
import json, sys, time
from pathlib import Path
mode, root, out, fmt, module = sys.argv[1:6]
if module:
    import importlib.util
    spec = importlib.util.spec_from_file_location("export_under_test", module)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["export_under_test"] = mod
    spec.loader.exec_module(mod)
    export_release = mod.export_release
else:
    from truthline.benchmark._export import export_release
from truthline.models import render_prompt  # what the export imports when it starts
from truthline.workspace import Workspace
ws = Workspace.from_env(root)
project = ws.project("steel-safety")
t = time.perf_counter()
if mode == "export":
    export_release(ws.store, project, Path(out), fmt=fmt)
wall = time.perf_counter() - t
# the peak of this process's own memory since it started (VmHWM); ru_maxrss would also
# count the parent's pages at fork time
hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(json.dumps({"wall_s": wall, "hwm_kb": int(hwm.split()[1])}))
"""


def build_store(root: Path | str, n: int) -> None:
    """A steel-safety workspace with ``n`` SIMULATED items and their gold, in bulk."""
    root = Path(root)
    import numpy as np
    from PIL import Image

    from truthline.simulate._scene import make_specs, truth_of
    from truthline.store import json_hash, now, tables
    from truthline.workspace import Workspace

    ws = Workspace.from_env(root)
    project = ws.init_project("steel-safety")
    media = root / "media"
    media.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    ts = now()
    specs = make_specs(n, 0)
    items, truths = [], []
    for spec in specs:
        rel = f"{spec.key.replace('/', '_')}.png"
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(media / rel)
        truth = truth_of(spec)
        truths.append(truth)
        items.append(
            {
                "project": project.name,
                "key": spec.key,
                "media_kind": "image",
                "media": [rel],
                "media_root": str(media),
                "content_hash": json_hash(spec.key),
                "meta": {
                    "site": spec.site,
                    "camera": spec.camera,
                    "video": spec.video,
                    "visibility": spec.visibility,
                    "scene_type": spec.scene_type,
                },
                "parent": spec.video,
                "sim_truth": truth,
                "created_at": ts,
                "updated_at": ts,
            }
        )
    snap = json_hash({"bench": n})
    with ws.store.begin() as conn:
        conn.execute(tables.items.insert(), items)
        ids = dict(
            conn.execute(
                tables.items.select()
                .with_only_columns(tables.items.c.key, tables.items.c.id)
                .where(tables.items.c.project == project.name)
            ).all()
        )
        conn.execute(
            tables.gold_snapshots.insert().values(
                hash=snap, project=project.name, policy={"bench": True}, counts={}, created_at=ts
            )
        )
        gold, arms = [], []
        for k, (spec, truth) in enumerate(zip(specs, truths, strict=True)):
            iid = ids[spec.key]
            arm = "blind" if k % 2 == 0 else "anchored"
            prov = "blind_consensus" if arm == "blind" else "anchored_kept"
            arms.append(
                {
                    "project": project.name,
                    "item_id": iid,
                    "arm": arm,
                    "seed": 0,
                    "weight": 1.0,
                    "created_at": ts,
                }
            )
            for path, value in _decisions(truth).items():
                gold.append(
                    {
                        "snapshot": snap,
                        "project": project.name,
                        "item_id": iid,
                        "field_path": path,
                        "value": value,
                        "provenance": prov,
                        "sources": ["expert"],
                    }
                )
        conn.execute(tables.arm_assignments.insert(), arms)
        for start in range(0, len(gold), 50_000):
            conn.execute(tables.gold.insert(), gold[start : start + 50_000])
    ws.store.close()


def _decisions(truth: dict[str, Any]) -> dict[str, Any]:
    """Decision-level gold of one item (as ``audit finalize`` writes it)."""
    out: dict[str, Any] = {"worker_count": truth["worker_count"]}
    out["workers"] = [w["worker_id"] for w in truth["workers"]]
    for w in truth["workers"]:
        for sub in ("action", "helmet", "harness", "safety_violation"):
            out[f"workers[{w['worker_id']}].{sub}"] = w[sub]
    return out


def measure(mode: str, root: Path, out: Path, fmt: str, module: str = "") -> dict[str, float]:
    """Peak RSS (MB, the child's own VmHWM) and wall time of one child process."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(root), str(out), fmt, module],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    proc.wait()
    if proc.returncode != 0:
        raise SystemExit(f"{mode} child failed ({proc.returncode}):\n{stderr.decode()[-3000:]}")
    info = json.loads(stdout.decode().strip().splitlines()[-1])
    return {"rss_mb": info["hwm_kb"] / 1024, "wall_s": float(info["wall_s"])}


def _size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def _module_at(ref: str, folder: Path) -> str:
    """The export module as it was at git revision ``ref``, written to ``folder``."""
    text = subprocess.run(
        ["git", "show", f"{ref}:truthline/benchmark/_export.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = folder / "export_at_ref.py"
    path.write_text(text)
    return str(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated item counts")
    ap.add_argument("--format", default="parquet", help="private tables: parquet or jsonl")
    ap.add_argument("--against", help="also measure the export of this git revision")
    ap.add_argument(
        "--against-up-to",
        type=int,
        default=10_000,
        help="measure --against only up to this many items (the old export needs ~10 GB at 100k)",
    )
    ap.add_argument("--no-record", action="store_true", help="do not rewrite bench/SCALE.md")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    rows: list[dict[str, Any]] = []
    results: dict[str, list[tuple[int, float]]] = {"streamed": [], "ref": []}
    with tempfile.TemporaryDirectory(prefix="export-mem-") as tmp:
        tmpd = Path(tmp)
        ref_module = _module_at(args.against, tmpd) if args.against else ""
        for n in sizes:
            root = tmpd / f"ws{n}"
            t = time.perf_counter()
            subprocess.run(  # in a child: this process stays small for the ones it starts
                [
                    sys.executable,
                    "-c",
                    f"import export_memory as m; m.build_store({str(root)!r}, {n})",
                ],
                cwd=Path(__file__).parent,
                env={**os.environ, "PYTHONPATH": f"{ROOT}:{Path(__file__).parent}"},
                check=True,
            )
            print(f"n={n:,}: store built in {time.perf_counter() - t:.1f} s", flush=True)
            base = measure("baseline", root, tmpd / "none", args.format)
            runs = [("streamed", "")]
            if ref_module and n <= args.against_up_to:
                runs.append(("ref", ref_module))
            for label, module in runs:
                out = tmpd / f"release-{label}-{n}"
                got = measure("export", root, out, args.format, module)
                extra = max(got["rss_mb"] - base["rss_mb"], 0.0)
                per_item_kb = extra * 1024 / n
                ratio = got["rss_mb"] / base["rss_mb"]
                name = "export" if label == "streamed" else f"export at {args.against}"
                print(
                    f"  {name:22} peak {got['rss_mb']:7.0f} MB | baseline {base['rss_mb']:5.0f} MB"
                    f" | ratio {ratio:5.2f}x | {per_item_kb:6.2f} KB/item over baseline"
                    f" | {got['wall_s']:6.1f} s | release {_size_mb(out):6.1f} MB",
                    flush=True,
                )
                results[label].append((n, got["rss_mb"]))
                rows.append(
                    row(
                        f"{name} peak RSS ({per_item_kb:.2f} KB/item over baseline, "
                        f"{got['wall_s']:.0f} s)",
                        f"{got['rss_mb']:.0f} MB",
                        f"{base['rss_mb']:.0f} MB (interpreter, imports, store, project)",
                        ratio=ratio,
                        n=n,
                    )
                )
                shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(root, ignore_errors=True)
            _fit(results, rows)
            if not args.no_record:  # after each size: a long 100k run keeps what it measured
                print(f"wrote {record('export', rows, NOTE)}", flush=True)


NOTE = (
    "Peak RSS of one `export_release` in a fresh process (its VmHWM), the baseline a process "
    "that does all but the export; goal: flat in n, under 400 MB at 100k."
)


def _fit(results: dict[str, list[tuple[int, float]]], rows: list[dict[str, Any]]) -> None:
    """The cost exponent k of peak RSS over the sizes run so far, into each row."""
    for label, pts in results.items():
        if len(pts) < 2:
            continue
        k = fit_exponent([n for n, _ in pts], [m for _, m in pts])
        print(f"cost exponent k (peak RSS ∝ n^k), {label}: {k:.2f}", flush=True)
        for r in rows:
            if r["figure"].startswith("export peak" if label == "streamed" else "export at"):
                r["cost exponent k"] = f"{k:.2f}"


if __name__ == "__main__":
    main()
