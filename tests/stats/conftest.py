"""Fixtures for the agreement statistics: published reliability data sets."""

from __future__ import annotations

import pytest

_ = None

# Krippendorff, K. (2011). "Computing Krippendorff's Alpha-Reliability", Annenberg School
# for Communication Departmental Papers 43, section C (4 observers x 12 units, missing values).
# Rows are units, columns observers A, B, C, D.
KRIPPENDORFF_2011 = [
    [1, 1, _, 1],
    [2, 2, 3, 2],
    [3, 3, 3, 3],
    [3, 3, 3, 3],
    [2, 2, 2, 2],
    [1, 2, 3, 4],
    [4, 4, 4, 4],
    [1, 1, 2, 1],
    [2, 2, 2, 2],
    [_, 5, 5, 5],
    [_, _, 1, 1],
    [_, _, 3, _],
]


def expand_table(table: list[list[int]]) -> list[list[int]]:
    """A two-rater contingency table as units x 2 raw ratings (category indices)."""
    rows = []
    for i, row in enumerate(table):
        for j, n in enumerate(row):
            rows += [[i, j]] * n
    return rows


@pytest.fixture
def kripp2011() -> list[list[int | None]]:
    return [list(r) for r in KRIPPENDORFF_2011]
