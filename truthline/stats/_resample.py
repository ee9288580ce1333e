"""Bootstrap multiplicities in memory-bounded blocks (units x resamples never held at once).

The plain unit bootstrap draws ``int32`` picks per block and counts them with one
``bincount``; cluster and stratified schemes use ``draw`` from ``_bootstrap`` per block.
Blocks get independent child seeds of ``SeedSequence(seed)``, so the whole stream is a
function of (units, resamples, seed, clusters, strata) only: the same call gives the same
resamples, and two data sets on the same units (paired comparisons) share them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from truthline.stats._bootstrap import draw

BLOCK_CELLS = 20_000_000
"""At most this many (resample, unit) cells per block: ~160 MB as float64."""


def block_size(n: int, resamples: int) -> int:
    return max(1, min(resamples, BLOCK_CELLS // max(n, 1)))


def multiplicity_blocks(
    n: int,
    resamples: int,
    seed: int,
    *,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
) -> Iterator[np.ndarray]:
    """Yield blocks ``W`` (b x n): ``W[k, i]`` = times unit i is drawn in resample k."""
    if resamples <= 0 or n == 0:
        return
    size = block_size(n, resamples)
    n_blocks = -(-resamples // size)
    children = np.random.SeedSequence(seed).spawn(n_blocks)
    for j, child in enumerate(children):
        b = min(size, resamples - j * size)
        if clusters is None and strata is None:
            rng = np.random.default_rng(child)
            dtype = np.int32 if n < 2**31 else np.int64
            picks = rng.integers(0, n, size=(b, n), dtype=dtype)
            flat = picks + (np.arange(b, dtype=np.int64) * n)[:, None]  # one int64 pass
            del picks
            yield np.bincount(flat.ravel(), minlength=b * n).reshape(b, n)
        else:
            sub_seed = int(child.generate_state(1)[0])
            yield draw(n, b, sub_seed, clusters=clusters, strata=strata)
