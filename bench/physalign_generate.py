"""Benchmark: `physalign generate` + compile, against bare matplotlib rendering of the same scenes.

The baseline draws the same N scenes with ``render_scene`` and nothing else (the floor any
generator pays); the measured run is ``generate`` (render + truth records) and then
``compile_release`` (probes, schema validation, leak check, localized views). Both run in
this process, alternating, median of ``--repeat``.

    .venv/bin/python bench/physalign_generate.py [--n 40] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from truthline.systems.physalign import compile_release, generate
from truthline.systems.physalign._render import render_scene
from truthline.systems.physalign._scenes import DOMAINS, build_scene


def bare(n: int, seed: int, out: Path) -> float:
    t0 = time.perf_counter()
    for k in range(n):
        scene = build_scene(DOMAINS[k % len(DOMAINS)], np.random.default_rng([seed, k]))
        render_scene(scene, out / f"{k}.png")
    return time.perf_counter() - t0


def full(n: int, seed: int, out: Path) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    generate(n, seed, out)
    t1 = time.perf_counter()
    info = compile_release(out / "annotations.jsonl", out / "release", seed=seed)
    return t1 - t0, time.perf_counter() - t1, int(info["probes"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    base, gen, comp = [], [], []
    probes = 0
    with tempfile.TemporaryDirectory() as tmp:
        bare(2, 99, Path(tmp) / "warm")  # fonts and mathtext caches, for both sides
        for r in range(args.repeat):
            if r % 2:  # alternate which side runs first
                base.append(bare(args.n, r, Path(tmp) / f"b{r}"))
            g, c, probes = full(args.n, r, Path(tmp) / f"f{r}")
            gen.append(g)
            comp.append(c)
            if not r % 2:
                base.append(bare(args.n, r, Path(tmp) / f"b{r}"))
    b, g, c = statistics.median(base), statistics.median(gen), statistics.median(comp)
    print(f"{args.n} problems, {probes} probes (median of {args.repeat})")
    print(f"bare rendering      {b:6.2f} s  {args.n / b:6.1f} problems/s")
    print(f"generate            {g:6.2f} s  {g / b:5.2f}x bare")
    print(f"compile + leak check{c:6.2f} s  {probes / c:6.1f} probes/s")
    print(f"generate + compile  {g + c:6.2f} s  {(g + c) / b:5.2f}x bare")


if __name__ == "__main__":
    main()
