"""Bootstrap multiplicities in memory-bounded blocks (units x resamples never held at once).

The plain unit bootstrap draws ``int32`` picks per block and counts them with one
``bincount``; cluster and stratified schemes use ``draw`` from ``_bootstrap`` per block.
Blocks get independent child seeds of ``SeedSequence(seed)``, so the whole stream is a
function of (units, resamples, seed, clusters, strata) only: the same call gives the same
resamples, and two data sets on the same units (paired comparisons) share them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from truthline.stats._bootstrap import draw

BLOCK_CELLS = 20_000_000
"""Resamples per seeded block: ``BLOCK_CELLS // n`` (fixes the random stream; not memory)."""

CHUNK_CELLS = 1_000_000
"""At most this many (resample, unit) cells are held at once (~8 MB as int64): a seeded
block is drawn and yielded in row chunks of its own stream, so the resamples are the same
as drawing the block whole, memory stays flat in n and ``bincount`` works in cache."""


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
    """Yield blocks ``W`` (b x n): ``W[k, i]`` = times unit i is drawn in resample k.

    The plain unit bootstrap yields row chunks of at most ``CHUNK_CELLS`` cells; the
    stream does not depend on the chunking (a generator's integers come out the same
    whether asked for in one call or in several)."""
    if resamples <= 0 or n == 0:
        return
    size = block_size(n, resamples)
    n_blocks = -(-resamples // size)
    children = np.random.SeedSequence(seed).spawn(n_blocks)
    rows = max(1, CHUNK_CELLS // n)
    for j, child in enumerate(children):
        b = min(size, resamples - j * size)
        if clusters is None and strata is None:
            rng = np.random.default_rng(child)
            for lo in range(0, b, rows):
                yield _unit_counts(rng, n, min(rows, b - lo))
        else:
            sub_seed = int(child.generate_state(1)[0])
            yield draw(n, b, sub_seed, clusters=clusters, strata=strata)


def _unit_counts(rng: np.random.Generator, n: int, b: int) -> np.ndarray:
    """``b`` rows of a unit bootstrap: n uniform picks per row, counted per unit."""
    dtype = np.int32 if n < 2**31 else np.int64
    picks = rng.integers(0, n, size=(b, n), dtype=dtype)
    if b == 1:
        return np.bincount(picks[0], minlength=n)[None, :]
    flat = picks + (np.arange(b, dtype=np.int64) * n)[:, None]  # one int64 pass
    del picks
    return np.bincount(flat.ravel(), minlength=b * n).reshape(b, n)


# -- compressed resampling: units with identical features are interchangeable -------------
MIN_COMPRESSION = 8
"""Use pattern draws only when there are at least this many resampling units per pattern:
a multinomial over k patterns costs ~k binomial draws, a unit draw ~n integers + a count."""

MAX_DENSE_CELLS = 50_000_000
"""Sparse features are densified to find identical rows only below this many cells."""

MAX_PATTERN_COLUMNS = 1024
"""Wider sparse features (nominal alpha on plates: one column per distinct value) are not
densified: rows are nearly all distinct, and densifying costs units x values memory."""


@dataclass(frozen=True)
class Patterns:
    """Resampling units (units, or clusters) grouped by identical per-unit feature rows.

    A coefficient that is a function of feature sums cannot tell two units with the same
    row apart, so the bootstrap only needs how many draws land on each pattern. Drawing
    those counts from the multinomial over patterns (per stratum) is exactly the first
    stage of the unit bootstrap: drawing that many units uniformly from each pattern's
    members (``unit_indices``) completes it into ordinary resample indices.
    """

    inverse: np.ndarray  # resampling unit -> pattern
    sizes: np.ndarray  # pattern -> number of resampling units in it
    stratum: np.ndarray  # pattern -> stratum code
    features: list[np.ndarray]  # per coefficient: pattern x k feature sums of one member

    @property
    def k(self) -> int:
        return len(self.sizes)


def _dense(F: Any) -> np.ndarray | None:
    if sparse.issparse(F):
        if F.shape[0] * F.shape[1] > MAX_DENSE_CELLS or F.shape[1] > MAX_PATTERN_COLUMNS:
            return None
        return np.asarray(F.toarray(), dtype=float)
    return np.asarray(F, dtype=float)


def compress(
    features: Sequence[Any],
    n: int,
    *,
    clusters: Sequence[Any] | None = None,
    strata: Sequence[Any] | None = None,
) -> Patterns | None:
    """Patterns of identical resampling units, or None when that does not pay off.

    With ``clusters`` the resampling unit is the cluster and its row is the sum of its
    units' features; ``strata`` keeps patterns of different strata apart.
    """
    dense = [_dense(F) for F in features]
    if n == 0 or any(F is None for F in dense):
        return None
    mats = [F for F in dense if F is not None]
    if clusters is not None:
        codes, nc = _codes(clusters, n)
        agg = sparse.csr_matrix((np.ones(n), (codes, np.arange(n))), shape=(nc, n))
        mats = [np.asarray(agg @ F) for F in mats]
        unit_of = codes
    else:
        nc, unit_of = n, np.arange(n)
    s_code = np.zeros(nc, dtype=np.int64)
    if strata is not None:
        sc, _ = _codes(strata, n)
        s_code[unit_of] = sc
        if np.any(s_code[unit_of] != sc):
            raise ValueError(
                "a cluster spans several strata; strata must be constant within a cluster"
            )
    key = np.column_stack([s_code.astype(float), *mats]) if mats else s_code[:, None]
    rows, first, inverse, sizes = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    if len(rows) * MIN_COMPRESSION > nc:
        return None
    return Patterns(
        inverse.ravel().astype(np.int64),
        sizes.astype(np.int64),
        rows[:, 0].astype(np.int64),
        [F[first] for F in mats],
    )


def _codes(labels: Sequence[Any], n: int) -> tuple[np.ndarray, int]:
    if len(labels) != n:
        raise ValueError(f"{len(labels)} labels for {n} units")
    _, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    codes = codes.ravel().astype(np.int64)
    return codes, int(codes.max()) + 1 if n else 0


def pattern_blocks(p: Patterns, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Yield blocks of draws per pattern (b x k); each stratum keeps its size."""
    if resamples <= 0 or p.k == 0:
        return
    size = block_size(p.k, resamples)
    n_blocks = -(-resamples // size)
    strata = [np.flatnonzero(p.stratum == s) for s in np.unique(p.stratum)]
    for j, child in enumerate(np.random.SeedSequence(seed).spawn(n_blocks)):
        rng = np.random.default_rng(child)
        b = min(size, resamples - j * size)
        out = np.zeros((b, p.k), dtype=np.int64)
        for members in strata:
            m = p.sizes[members]
            total = int(m.sum())
            out[:, members] = rng.multinomial(total, m / total, size=b)
        yield out


def unit_indices(p: Patterns, counts: np.ndarray, seed: int) -> np.ndarray:
    """Second stage for one resample: draw ``counts[k]`` members of each pattern uniformly
    with replacement. Returns resampling-unit indices (units, or cluster codes), so a
    unit-level tool can recompute the same resample (as ``bench/agreement.py`` does)."""
    rng = np.random.default_rng(seed)
    order = np.argsort(p.inverse, kind="stable")
    starts = np.concatenate([[0], np.cumsum(p.sizes)])
    picks = [
        order[starts[k] + rng.integers(0, p.sizes[k], size=int(c))]
        for k, c in enumerate(counts)
        if c
    ]
    return np.concatenate(picks) if picks else np.empty(0, dtype=np.int64)
