"""Cluster codes order as their text does, without formatting them (issue 28)."""

from __future__ import annotations

import numpy as np
import pytest

from truthline.stats._bootstrap import _group_codes, _text_order


@pytest.mark.parametrize("seed", range(40))
def test_text_order_is_the_order_of_the_labels_as_text(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scale = 10 ** int(rng.integers(1, 19))
    low = -scale if seed % 2 else 0
    x = rng.integers(low, scale, int(rng.integers(1, 500)), dtype=np.int64)
    x = np.unique(np.concatenate([x, [0, 1, 9, 10, 11, 99, 100, 101]]))
    if seed % 2:
        x = np.unique(np.concatenate([x, [-1, -9, -10, -100]]))
    assert (_text_order(x) == np.argsort(x.astype(str), kind="stable")).all()


def test_text_order_edges() -> None:
    for x in (
        np.array([], dtype=np.int64),
        np.array([7], dtype=np.int32),
        np.array([3, 20, 100], dtype=np.uint8),
        np.array([-(2**63), -1, 0, 2**63 - 1], dtype=np.int64),  # past padding: text itself
        np.array([0, 2**64 - 1], dtype=np.uint64),
    ):
        assert (_text_order(x) == np.argsort(x.astype(str), kind="stable")).all(), x


def test_group_codes_of_integers_match_their_text() -> None:
    labels = np.array([12, 3, 100, 3, 12, 25, 1])
    codes, g = _group_codes(labels)
    as_text, g_text = _group_codes([str(v) for v in labels])
    assert g == g_text == 5
    # as text: "1" < "100" < "12" < "25" < "3"
    assert codes.tolist() == as_text.tolist() == [2, 4, 1, 4, 2, 3, 0]
