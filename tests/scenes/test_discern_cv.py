"""Propagated labels carry a nested, scene-grouped CV accuracy (METRICS.md §7) that predicts
accuracy on fresh scenes, where ungrouped CV is optimistic.

The frames are SIMULATED: every scene has a latent effect (how easy its person is to make out)
shared by all its frames and visible only through scene-constant background features, so a
model can memorise scenes. The models are the real scikit-learn and XGBoost, kept small.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import StratifiedKFold, cross_val_score

from truthline.systems.syndorbench import _discern as dis

GRIDS = {
    "dt_grid": {"max_depth": [3]},
    "rf_grid": {"n_estimators": [30]},
    "xgb_grid": {"n_estimators": [30], "max_depth": [3]},
}
POSES = ("walking", "kicking", "sneaking", "guard_up")


def _scenes(n_scenes: int, seed: int, per: int = 6) -> tuple[pd.DataFrame, np.ndarray]:
    """SIMULATED frames of ``n_scenes`` scenes, ``per`` frames each (distances x variants),
    with the scene columns (scene, pose, azimuth, elevation) that name a rendered scene."""
    rng = np.random.default_rng(seed)
    effect = rng.normal(0, 1.0, n_scenes)
    background = rng.normal(0, 1, (n_scenes, 3))
    sid = np.repeat(np.arange(n_scenes), per)
    visibility = rng.normal(0, 1, len(sid))
    X = pd.DataFrame(
        {
            "signal": visibility + rng.normal(0, 0.3, len(sid)),
            **{
                f"bg{k}": background[sid, k] + rng.normal(0, 0.02, len(sid))
                for k in range(background.shape[1])
            },
            "scene": [f"s{seed}-{s // 32}" for s in sid],
            "pose": [POSES[s % 4] for s in sid],
            "azimuth": [45.0 * ((s // 4) % 8) for s in sid],
            "elevation": 0.0,
        }
    )
    y = visibility + 1.2 * effect[sid] + rng.normal(0, 0.5, len(sid)) > 0
    return X, y


FEATURES = ["signal", "bg0", "bg1", "bg2"]


def test_grouped_nested_cv_predicts_fresh_scenes_where_ungrouped_cv_is_optimistic():
    X, y = _scenes(80, seed=0)
    m = dis.fit_discernibility(X, y, features=FEATURES, holdout=0, seed=0, **GRIDS)
    # grouped by the scene columns: 80 scenes, every frame of one in one fold
    assert m.grouped_by == list(dis.SCENE_KEY) and m.n_groups == 80 and m.n_train == 480
    assert len(m.outer_choices) == m.folds == 5
    assert set(m.outer_choices) <= set(m.candidates)
    fresh_X, fresh_y = _scenes(1000, seed=100)
    fresh = float((m.predict(fresh_X) == fresh_y).mean())
    # what ungrouped CV would have reported on the same labels
    ungrouped = cross_val_score(
        RandomForestClassifier(30, random_state=0, n_jobs=1),
        X[FEATURES].to_numpy(float),
        y.astype(int),
        cv=StratifiedKFold(5, shuffle=True, random_state=0),
    ).mean()
    assert abs(m.cv_accuracy - fresh) < 0.05, (m.cv_accuracy, fresh)
    assert ungrouped - fresh > 0.08, (ungrouped, fresh)
    assert ungrouped - m.cv_accuracy > 0.05
    # propagated labels carry the nested outer accuracy
    out = dis.propagate(fresh_X.assign(key=[f"f{i}" for i in range(len(fresh_X))]), m)
    assert (out["discernible_model_cv_accuracy"] == m.cv_accuracy).all()


def test_the_held_out_test_share_shares_no_scene_and_groups_can_be_given():
    X, y = _scenes(60, seed=3)
    groups = dis.scene_groups(X)
    assert len(set(groups)) == 60
    m = dis.fit_discernibility(X, y, features=FEATURES, groups=groups, seed=1, **GRIDS)
    assert m.grouped_by == ["groups"] and m.holdout is not None
    # whole scenes are held out: 6 frames each, so train and test are multiples of 6
    assert m.n_train % 6 == 0 and m.holdout["n"] % 6 == 0
    assert m.n_train + m.holdout["n"] == 360 and m.n_groups == m.n_train // 6
