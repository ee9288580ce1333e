"""SynDORBench's remaining analyses on planted decisions whose every number is known by hand:
model-scale groups and their means, compact vs larger models, per-lighting and per-viewpoint
tables, the detector row, and the non-expert human baseline (a SIMULATED sheet)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from truthline.errors import TruthlineError
from truthline.systems.syndorbench import _human as hu
from truthline.systems.syndorbench import _tables as tb

REPS = 10  # each planted item ten times, so paired intervals are decided
CORRECT = {  # items 1-4 at 5.4 m, 5-8 at 23 m
    "a:small1": [1, 1, 1, 1, 1, 1, 1, 1],
    "a:small2": [1, 1, 1, 1, 0, 0, 0, 0],
    "a:big": [1, 1, 1, 1, 1, 1, 0, 0],
    "a:com": [1, 1, 0, 0, 1, 0, 0, 0],
}
ACTION_RIGHT = {"a:small1": True, "a:small2": False, "a:big": True, "a:com": False}
GROUPS = {"a:small1": "small", "a:small2": "small", "a:big": "large", "a:com": "commercial"}


def _meta(i: int) -> dict:
    """Item i (1-8): odd ones have a person; 1, 2, 5, 6 by day; azimuth 0 for odd, 90 even."""
    day = i in (1, 2, 5, 6)
    return {
        "distance_m": "5.4" if i <= 4 else "23.0",  # CSV metadata arrives as text
        "condition": "day" if day else "night",
        "lighting": "noon" if day else "midnight",
        "azimuth": 0.0 if i % 2 else 90.0,
        "elevation": 10.0,
    }


def _decisions(models=CORRECT) -> pd.DataFrame:
    rows = []
    for m, correct in models.items():
        for i, c in enumerate(correct, start=1):
            for r in range(REPS):
                item = 100 * i + r
                gold = bool(i % 2)
                base = {"model": m, "variant": "presence", "item_id": item,
                        "key": f"k{i}-{r}", "meta": _meta(i)}  # fmt: skip
                rows.append(
                    {**base, "path": "present", "gold": gold,
                     "pred": gold if c else not gold, "correct": bool(c)}
                )  # fmt: skip
                if gold:
                    said = "walking" if ACTION_RIGHT.get(m) else "standing"
                    rows.append(
                        {**base, "variant": "action", "path": "action_text", "gold": "walking",
                         "pred": said, "correct": None}
                    )  # fmt: skip
    return pd.DataFrame(rows)


def _embed(texts: list[str]) -> np.ndarray:
    """Identical texts -> identical unit vectors, different ones orthogonal (similarity is
    exact match), so every similarity is known by hand."""
    vocab = {w: k for k, w in enumerate(["walking", "standing", "running"])}
    out = np.zeros((len(texts), len(vocab)))
    for k, t in enumerate(texts):
        out[k, vocab[t]] = 1.0
    return out


@pytest.fixture(scope="module")
def tables():
    return tb.syndor_tables(_decisions(), groups=GROUPS, embed=_embed, resamples=500)


def _row(rows, model, **keys):
    return next(r for r in rows if r["model"] == model and all(r[k] == v for k, v in keys.items()))


def test_group_means_follow_their_members_in_the_papers_order(tables):
    rows = tables["by_distance"]
    assert [r["model"] for r in rows] == ["a:small1", "a:small2", "SVLM (mean)", "a:big", "a:com"]
    svlm = _row(rows, "SVLM (mean)")
    assert svlm["members"] == ["a:small1", "a:small2"]
    assert svlm["5.4"]["acc"] == pytest.approx(1.0) and svlm["23.0"]["acc"] == pytest.approx(0.5)
    assert svlm["avg"]["acc"] == pytest.approx(0.75) and svlm["avg"]["n"] == 160
    # macro-F1: small2 is wrong on every 23 m item -> 0; com at 5.4 m is right on one of each
    # class -> both classes F1 0.5; the group mean is the mean of the members' F1 (1 + 0) / 2
    assert _row(rows, "a:small2")["23.0"]["f1"] == pytest.approx(0.0)
    assert _row(rows, "a:com")["5.4"]["f1"] == pytest.approx(0.5)
    assert svlm["23.0"]["f1"] == pytest.approx(0.5)
    md = tb.tables_markdown(tables)
    assert "| SVLM (mean) | small | 100.0 | 100.0 | 50.0 | 50.0 | 75.0 |" in md


def test_compact_vs_larger_models_with_paired_intervals(tables):
    rows = {(r["model"], r["distance_m"]): r for r in tables["compact_vs_larger"]}
    far = rows[("a:small1", "23.0")]
    # larger models at 23 m: big 0.5, com 0.25 -> mean 0.375, best big
    assert far["larger_mean_acc"] == pytest.approx(0.375) and far["best_larger"] == "a:big"
    assert far["beats_larger_mean"] and far["paired_n"] == 40
    assert far["difference"]["point"] == pytest.approx(0.5) and far["beats_best_larger"]
    near = rows[("a:small1", "5.4")]  # ties with big: beats the mean (0.75), not big
    assert near["beats_larger_mean"] and not near["beats_best_larger"]
    assert near["difference"]["point"] == pytest.approx(0.0)
    worse = rows[("a:small2", "23.0")]
    assert not worse["beats_larger_mean"] and worse["difference"]["point"] == pytest.approx(-0.5)
    assert worse["difference"]["high"] < 0
    overall = rows[("a:small1", "avg")]  # 1.0 vs big 0.75 over all items
    assert overall["best_larger_acc"] == pytest.approx(0.75) and overall["paired_n"] == 80
    assert "Compact vs larger models" in tb.tables_markdown(tables)


def test_per_lighting_and_per_viewpoint_tables(tables):
    com = [r for r in tables["by_condition"] if r["model"] == "a:com"]
    assert [r["condition"] for r in com] == ["day", "night"]
    assert com[0]["5.4"]["acc"] == pytest.approx(1.0) and com[1]["5.4"]["acc"] == pytest.approx(0.0)
    assert com[0]["23.0"]["acc"] == pytest.approx(0.5)  # items 5 (right), 6 (wrong)
    light = _row(tables["by_lighting"], "a:com", lighting="midnight")
    assert light["condition"] == "night" and light["avg"]["acc"] == pytest.approx(0.0)
    assert light["avg"]["n"] == 40
    az0 = _row(tables["by_azimuth"], "a:com", azimuth=0.0)  # items 1, 3, 5, 7: 1, 0, 1, 0
    az90 = _row(tables["by_azimuth"], "a:com", azimuth=90.0)  # items 2, 4, 6, 8: 1, 0, 0, 0
    assert az0["avg"]["acc"] == pytest.approx(0.5) and az90["avg"]["acc"] == pytest.approx(0.25)
    assert az0["23.0"]["acc"] == pytest.approx(0.5) and az90["23.0"]["acc"] == pytest.approx(0.0)
    assert _row(tables["by_elevation"], "a:big", elevation=10.0)["avg"]["acc"] == pytest.approx(
        0.75
    )
    svlm_night = _row(tables["by_condition"], "SVLM (mean)", condition="night")
    assert svlm_night["23.0"]["acc"] == pytest.approx(0.5)  # small1 1.0, small2 0.0
    md = tb.tables_markdown(tables)
    for title in ("by lighting (condition, raw scene lighting)", "camera azimuth", "elevation"):
        assert title in md


def test_action_group_means_and_z(tables):
    near = [r for r in tables["action"] if r["distance_m"] == 5.4]
    sims = {r["model"]: r["similarity"] for r in near}
    assert sims == {
        "a:small1": 1.0,
        "a:small2": 0.0,
        "SVLM (mean)": 0.5,
        "a:big": 1.0,
        "a:com": 0.0,
    }
    z = {r["model"]: r["z"] for r in near}
    assert z["a:small1"] == pytest.approx(1.0) and z["SVLM (mean)"] == pytest.approx(0.0)


def test_groups_come_from_spec_options_and_yolo_weights():
    man = {
        "entries": {
            "1": {"model": "hf:smol", "spec": "hf:/m/smol;group=small"},
            "2": {"model": "openai:gpt-4o-mini", "spec": "openai:gpt-4o-mini;group=commercial"},
            "3": {"model": "yolo:/w/yolo11x.pt", "spec": "yolo:/w/yolo11x.pt;conf=0.25"},
            "4": {"model": "yolo:yolo11n.yaml", "spec": "yolo:yolo11n.yaml;imgsz=64"},
            "5": {"model": "simulated-dori:strong", "spec": "simulated-dori:strong"},
        }
    }
    g = tb.model_groups([man], {"simulated-dori:strong": "medium"})
    assert g == {
        "hf:smol": "small",
        "openai:gpt-4o-mini": "commercial",
        "yolo:/w/yolo11x.pt": tb.DETECTOR,
        "yolo:yolo11n.yaml": tb.UNTRAINED,
        "simulated-dori:strong": "medium",
    }
    with pytest.raises(TruthlineError, match="use one of"):
        tb.model_groups([man], {"hf:smol": "tiny"})
    with pytest.raises(TruthlineError, match="answered nothing"):
        tb.model_groups([man], {"hf:smoll": "small"})  # a typo is named, not ignored


def test_detector_row_is_labelled_and_first():
    models = {**CORRECT, "yolo:/w/yolo11x.pt": [1, 0, 1, 0, 0, 0, 0, 0]}
    groups = {**GROUPS, "yolo:/w/yolo11x.pt": tb.DETECTOR}
    t = tb.syndor_tables(_decisions(models), groups=groups, action=False, resamples=0)
    first = t["by_distance"][0]
    assert first["model"] == "yolo:/w/yolo11x.pt" and first["group"] == "detector baseline"
    assert first["5.4"]["acc"] == pytest.approx(0.5)
    assert "| yolo:/w/yolo11x.pt | detector baseline |" in tb.tables_markdown(t)
    # the detector is not one of the larger models the compact ones are compared with
    assert {r["best_larger"] for r in t["compact_vs_larger"]} <= {"a:big", "a:com"}
    # an untrained config is never shown as the baseline
    groups[next(iter(models.keys() - CORRECT.keys()))] = tb.UNTRAINED
    t = tb.syndor_tables(_decisions(models), groups=groups, action=False, resamples=0)
    assert t["by_distance"][-1]["group"] == tb.UNTRAINED
    assert "detector baseline" not in tb.tables_markdown(t)


def _sheet(tmp_path, present, action, simulated=False):
    df = pd.DataFrame({"key": [f"k{i}-0" for i in range(1, 9)], "image": "x.png",
                       "present": present, "action_text": action})  # fmt: skip
    if simulated:
        df["simulated"] = "SIMULATED"
    df.to_csv(tmp_path / "answers.csv", index=False)
    return hu.read_answers(tmp_path / "answers.csv")


def test_human_row_scored_like_a_model_on_its_items(tmp_path):
    # replica 0 of each item; wrong on item 8 only (said present); item 4 skipped;
    # the action right on 1, 3, 5 and wrong on 7 (gold: walking where a person is)
    ans = _sheet(tmp_path, ["1", "0", "yes", "", "1", "0", "1", "1"],
                 ["walking", "", "walking", "", "walking", "", "running", ""], simulated=True)  # fmt: skip
    t = tb.syndor_tables(_decisions(), groups=GROUPS, embed=_embed, resamples=0, human=ans)
    h = {r["model"]: r for r in t["human"]["rows"]}
    label = "Non-Expert Human (SIMULATED)"
    assert t["human"]["label"] == label and next(iter(h)) == label
    me = h[label]["presence"]
    assert me["5.4"] == {"acc": pytest.approx(1.0), "f1": pytest.approx(1.0), "n": 3}
    assert me["23.0"]["acc"] == pytest.approx(0.75) and me["avg"]["n"] == 7
    # the models on the same seven items: com is right on 1, 2 of 1, 2, 3 and on 5 of 5-8
    assert h["a:com"]["presence"]["5.4"]["acc"] == pytest.approx(2 / 3)
    assert h["a:com"]["presence"]["avg"]["n"] == 7
    assert h[label]["action"]["5.4"] == {"similarity": 1.0, "n": 2}
    assert h[label]["action"]["23.0"] == {"similarity": 0.5, "n": 2}
    assert h["a:small2"]["action"]["avg"]["similarity"] == 0.0
    first = t["action"][0]  # the human heads the action table, without a z-score
    assert first["model"] == label and first["z"] is None and first["similarity"] == 1.0
    md = tb.tables_markdown(t)
    assert "Non-expert human baseline" in md and f"| {label} | 100.0 | 1.000 |" in md


def test_human_answers_are_checked(tmp_path):
    with pytest.raises(TruthlineError, match="use 1/0"):
        _sheet(tmp_path, ["maybe"] * 8, [""] * 8)
    ans = _sheet(tmp_path, ["1"] * 8, [""] * 8)
    assert ans.attrs["simulated"] is False
    with pytest.raises(TruthlineError, match="outside the recorded sample"):
        hu.human_tables(_decisions(), ans, sample={"keys": ["k1-0"]}, action=False)


def test_cli_groups_viewpoints_and_a_simulated_human_row(tmp_path):
    """`syndor human-sample` -> SIMULATED answers -> `syndor tables RUN --human` on a small
    daylight grid (synthetic frames), with groups from spec options and --group; the report's new sections."""
    import json
    from pathlib import Path

    from typer.testing import CliRunner

    from truthline.cli import app

    from .test_syndor_cli import _store

    store = _store(tmp_path, lightings=("noon",))
    runner = CliRunner()

    def tl(*args: str):
        res = runner.invoke(app, ["--workspace", str(tmp_path / "ws"), *args])
        assert res.exit_code == 0, (res.output, res.exception)
        return json.loads(res.stdout)

    tl("syndor", "prepare", "--store", str(store), "--json")
    tl("syndor", "propagate", "--json")
    run = tl("benchmark", "run", "--project", "dori-visibility", "--model",
             "simulated-dori:strong;group=small", "--model", "simulated-dori:weak;group=large",
             "--json")  # fmt: skip
    rec = tl("syndor", "human-sample", "--n", "5", "--seed", "3", "--json")
    assert (rec["n"], rec["population"], rec["seed"]) == (5, 12, 3)
    again = json.loads((tmp_path / "ws/scenes/dori-items/human_sample.json").read_text())
    sheet = pd.read_csv(rec["csv"], keep_default_na=False)
    assert list(sheet["key"]) == again["keys"] and (sheet["present"] == "").all()
    assert all(Path(p).is_file() for p in sheet["image"])  # the person sees the item's image
    sim = tl("syndor", "simulate-human", "--json")
    assert sim["simulated_answers"].endswith("human_answers.SIMULATED.csv")
    t = tl("syndor", "tables", run["run_id"], "--no-action", "--group", "simulated-dori:weak=commercial",
           "--human", sim["simulated_answers"], "--resamples", "200", "--json")  # fmt: skip
    assert t["groups"] == {"simulated-dori:strong": "small", "simulated-dori:weak": "commercial"}
    assert [r["model"] for r in t["by_distance"]] == [
        "simulated-dori:strong",
        "simulated-dori:weak",
    ]
    assert {r["azimuth"] for r in t["by_azimuth"]} == {0.0, 45.0, 90.0, 135.0}
    assert {r["lighting"] for r in t["by_lighting"]} == {"noon"}
    assert {r["distance_m"] for r in t["compact_vs_larger"]} == {"5.4", "10.8", "23.0", "avg"}
    human = t["human"]["rows"][0]
    assert human["model"] == "Non-Expert Human (SIMULATED)"
    assert human["presence"]["avg"]["n"] == 5 and t["human"]["sample"]["keys"] == again["keys"]
    from truthline.benchmark import write_report
    from truthline.workspace import Workspace

    ws = Workspace.from_env(tmp_path / "ws")
    out = write_report(ws.store, ws.registered("dori-visibility"), [run["run_id"]],
                       tmp_path / "report.md", resamples=0)  # fmt: skip
    text = (tmp_path / "report.md").read_text()
    for title in ("presence by lighting", "presence by camera azimuth",
                  "presence by camera elevation", "compact vs larger models"):  # fmt: skip
        assert f"SynDORBench: {title}" in text
    assert out["syndorbench"]["groups"] == {  # the spec options; --group is the tables' own
        "simulated-dori:strong": "small", "simulated-dori:weak": "large"
    }  # fmt: skip
    # the draw is seeded: another seed draws other items
    other = tl("syndor", "human-sample", "--n", "5", "--seed", "4", "--json")
    assert other["n"] == 5
    keys = json.loads((tmp_path / "ws/scenes/dori-items/human_sample.json").read_text())["keys"]
    assert keys != again["keys"]
