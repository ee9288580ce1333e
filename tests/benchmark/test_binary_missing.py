"""A missing binary prediction is the wrong answer, also when a pandas column of numbers and
Nones has turned the None into NaN (bool(NaN) is True: it read as a flagged violation)."""

import math

from truthline.benchmark._metrics import binary_scores


def test_nan_prediction_is_missing_like_none():
    gold = [True, True, False, False]
    for missing in (None, math.nan):
        s = binary_scores(gold, [missing] * 4)
        assert s["recall"].point == 0.0  # a model that listed nothing caught no violation
        assert s["counts"] == {"tp": 0, "fp": 2, "fn": 2, "tn": 0}
