"""Discernibility: Cochran sample size, stratified sampling, the labelling project, the model.

Labels here are SIMULATED (drawn from a known rule plus noise); the models are the real
scikit-learn and XGBoost.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from truthline.errors import TruthlineError
from truthline.systems.syndorbench import _discern as dis

SMALL_RF = {"n_estimators": [30], "max_depth": [None, 4]}
SMALL_XGB = {"n_estimators": [30], "max_depth": [2, 4], "learning_rate": [0.3]}


def test_cochran_matches_the_worked_example():
    # 95 %, +-5 %, p = .5: n0 = 1.96^2 * .25 / .05^2 = 384.16 -> 385; for N = 1000 the
    # finite population correction gives 384.16 / (1 + 383.16/1000) = 277.7 -> 278
    assert dis.cochran_n() == 385
    assert dis.cochran_n(1000) == 278
    assert dis.cochran_n(confidence=0.99) == 664  # 2.5758^2 * .25 / .0025 = 663.5
    assert dis.cochran_n(100) == 80  # 384.16 / (1 + 383.16/100) = 79.5
    assert dis.cochran_n(10) == 10
    with pytest.raises(TruthlineError, match="margin"):
        dis.cochran_n(margin=0)


def test_stratified_sample_is_proportional_covers_every_cell_and_is_seeded():
    cells = ["a"] * 60 + ["b"] * 30 + ["c"] * 10
    pick = dis.stratified_sample(cells, 20, seed=3)
    assert len(pick) == len(set(pick)) == 20
    assert Counter(cells[i] for i in pick) == {"a": 12, "b": 6, "c": 2}
    assert pick == dis.stratified_sample(cells, 20, seed=3)
    assert pick != dis.stratified_sample(cells, 20, seed=4)
    skewed = ["a"] * 97 + ["b", "c", "d"]
    few = dis.stratified_sample(skewed, 5, seed=0)
    assert {skewed[i] for i in few} == set("abcd")  # every cell, even a 1 % one
    assert len(dis.stratified_sample(cells, 1000)) == 100


def _simulated_labels(
    n: int, seed: int = 0, noise: float = 0.05
) -> tuple[pd.DataFrame, np.ndarray]:
    """SIMULATED features and labels: discernible when edges or contrast are strong enough."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "raw_edge_iou": rng.random(n) * 0.6,
            "nv_lum_ks": rng.random(n),
            "raw_area_ratio": rng.random(n) * 0.02,
            "nv_chroma_swd": rng.random(n) * 10,
        }
    )
    y = (X["raw_edge_iou"] / 0.6 + X["nv_lum_ks"] > 0.9).to_numpy()
    flip = rng.random(n) < noise
    return X, np.where(flip, ~y, y)


def test_fit_picks_by_cross_validated_accuracy_as_sklearn_computes_it():
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import StratifiedGroupKFold, cross_val_score

    X, y = _simulated_labels(160)
    m = dis.fit_discernibility(X, y, seed=1, holdout=0, rf_grid=SMALL_RF, xgb_grid=SMALL_XGB)
    assert set(m.candidates) == {"decision_tree", "random_forest", "xgboost", "rf+xgboost"}
    assert m.name == max(m.candidates, key=lambda k: m.candidates[k]["cv_accuracy"])
    assert m.cv_accuracy > 0.8 and m.folds == 5 and m.n_train == 160
    # independent check: the RF's selection score is sklearn's on the same grouped folds
    # (no scene columns: every frame is its own scene; the model choice uses seed + 1)
    rf = m.candidates["random_forest"]
    cv = StratifiedGroupKFold(5, shuffle=True, random_state=2)
    ref = cross_val_score(
        RandomForestClassifier(random_state=1, n_jobs=1, **rf["params"]),
        X.to_numpy(float),
        y.astype(int),
        groups=np.arange(160),
        cv=cv,
    ).mean()
    assert rf["cv_accuracy"] == pytest.approx(ref)
    assert (m.predict(X) == y).mean() > 0.9
    assert "estimator" not in m.summary()


def test_fit_reports_a_held_out_test_share():
    X, y = _simulated_labels(250, seed=2)
    m = dis.fit_discernibility(X, y, seed=0, rf_grid=SMALL_RF, xgb_grid=SMALL_XGB)
    assert m.holdout is not None and m.holdout["n"] == 50 and m.n_train == 200
    assert m.holdout["accuracy"] > 0.75


def test_fit_refuses_too_few_of_a_class():
    X, y = _simulated_labels(40)
    y[:] = True
    y[:3] = False
    with pytest.raises(TruthlineError, match="at least 5 of each"):
        dis.fit_discernibility(X, y)


def test_propagate_keeps_human_labels_and_marks_the_rest_model_propagated():
    X, y = _simulated_labels(120, seed=5)
    m = dis.fit_discernibility(X, y, holdout=0, rf_grid=SMALL_RF, xgb_grid=SMALL_XGB)
    frames = X.assign(key=[f"f{i}" for i in range(120)])
    pred = m.predict(frames)
    human = pd.DataFrame({"key": ["f0", "f1"], "discernible": [not pred[0], bool(pred[1])]})
    out = dis.propagate(frames, m, human)
    assert out.loc[0, "discernible"] == (not pred[0])  # the human label wins
    assert list(out.loc[:1, "discernible_source"]) == ["human", "human"]
    rest = out.iloc[2:]
    assert (rest["discernible_source"] == "model-propagated").all()
    assert (rest["discernible_model"] == m.name).all()
    assert (rest["discernible_model_cv_accuracy"] == m.cv_accuracy).all()
    assert out.loc[:1, "discernible_model_cv_accuracy"].isna().all()
    assert (rest["discernible"].to_numpy() == pred[2:]).all()


def test_label_project_is_generated_imported_and_reads_majority_labels(tmp_path):
    from truthline.annotate import label_config
    from truthline.store import now, tables
    from truthline.workspace import Workspace

    ws = Workspace.from_env(tmp_path / "ws")
    src = tmp_path / "renders"
    src.mkdir()
    rows = []
    for i in range(4):
        p = src / f"{i}.png"
        Image.new("RGB", (8, 8), (i * 40, 0, 0)).save(p)
        rows.append(
            {"key": f"frame{i}-nv", "image": str(p), "dori": "observe", "lighting": "midnight"}
        )
    proj = dis.write_label_project(
        ws, "dori-labels", pd.DataFrame(rows), strata=["dori", "lighting"]
    )
    cfg = label_config(proj)
    assert "discernible" in cfg and "partial" in cfg and "present" in cfg
    items = {r["key"]: r for r in ws.store.items("dori-labels")}
    assert set(items) == {f"frame{i}-nv" for i in range(4)}
    assert items["frame0-nv"]["meta"]["lighting"] == "midnight"
    # rerun: idempotent
    dis.write_label_project(ws, "dori-labels", pd.DataFrame(rows), strata=["dori", "lighting"])
    assert len(ws.store.items("dori-labels")) == 4

    def ann(key, who, field, value, tier=1):
        return {
            "project": "dori-labels",
            "item_id": items[key]["id"],
            "field_path": field,
            "annotator": who,
            "arm": "blind",
            "tier": tier,
            "value": value,
            "source": "simulated",
            "source_id": f"sim:{key}:{who}:{tier}",
            "stored_at": now(),
        }

    with ws.store.begin() as conn:
        conn.execute(
            tables.annotations.insert(),
            [
                ann("frame0-nv", "a", "discernible", "yes"),
                ann("frame0-nv", "b", "discernible", "partial"),
                ann("frame0-nv", "c", "discernible", "partial"),
                ann("frame1-nv", "a", "discernible", "no"),
                ann("frame1-nv", "b", "discernible", "yes"),  # a tie: no label
                ann("frame2-nv", "a", "discernible", "no"),
                ann("frame2-nv", "x", "discernible", "yes", tier=2),  # the expert wins
                ann("frame2-nv", "a", "present", True),
            ],
        )
    lab = dis.human_labels(ws.store, "dori-labels").set_index("key")
    assert lab.loc["frame0-nv", "discernible_level"] == "partial"
    assert lab.loc["frame0-nv", "discernible"] == True  # noqa: E712
    assert lab.loc["frame0-nv", "n_annotators"] == 3
    assert lab.loc["frame1-nv", "discernible"] is None
    assert lab.loc["frame2-nv", "discernible_level"] == "yes"
    assert lab.loc["frame2-nv", "present"] == True  # noqa: E712
    assert "frame3-nv" not in lab.index
