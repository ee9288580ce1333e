"""SynDORBench's non-expert human baseline (A.3, Table 6): one person answers the paper's
two questions on a uniformly random sample of items, scored like a model.

The route is a CSV: :func:`write_sample` draws the sample (seeded; the draw is recorded
beside the items) and writes ``human_sample.csv`` (key, image, blank ``present`` and
``action_text``) for the person to fill in; :func:`read_answers` reads it back and
:func:`human_tables` scores it on the run's gold beside every model on the same items.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from truthline.errors import TruthlineError
from truthline.systems.syndorbench._syndor import as_float

__all__ = [
    "HUMAN",
    "SAMPLE_N",
    "human_action_rows",
    "human_tables",
    "read_answers",
    "sample_items",
    "write_sample",
]

HUMAN = "Non-Expert Human"
SAMPLE_N = 300
"""A.3: one non-expert annotator on a uniformly random sample of 300 instances."""
_YES = {"1", "yes", "y", "true", "t", "present"}
_NO = {"0", "no", "n", "false", "f", "absent"}


def sample_items(store: Any, project: str, *, n: int = SAMPLE_N, seed: int = 0) -> pd.DataFrame:
    """``n`` items of ``project`` drawn uniformly at random without replacement (all of
    them when fewer), in key order of the draw; columns ``key``, ``image``. ``attrs``
    records the draw (seed, n, population)."""
    items = sorted(store.items(project), key=lambda r: str(r["key"]))
    if not items:
        raise TruthlineError(f"{project}: no items to sample; run `truthline syndor propagate`")
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(items), size=min(n, len(items)), replace=False)
    rows = [
        {
            "key": str(items[i]["key"]),
            "image": str(Path(items[i]["media_root"]) / items[i]["media"][0]),
        }
        for i in pick
    ]
    df = pd.DataFrame(rows, columns=["key", "image"])
    df.attrs["draw"] = {"seed": seed, "n": len(df), "population": len(items), "project": project}
    return df


def write_sample(
    store: Any, project: str, out_dir: Path, *, n: int = SAMPLE_N, seed: int = 0
) -> dict[str, Any]:
    """Draw the sample, write ``human_sample.csv`` (blank answer columns) and record the draw
    with its keys in ``human_sample.json``; returns the record."""
    df = sample_items(store, project, n=n, seed=seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    sheet = df.assign(present="", action_text="")
    sheet.to_csv(out_dir / "human_sample.csv", index=False)
    record = {**df.attrs["draw"], "keys": list(df["key"]), "csv": str(out_dir / "human_sample.csv")}
    (out_dir / "human_sample.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    return record


def _presence(v: Any) -> bool | None:
    s = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip().lower()
    if not s:
        return None
    if s in _YES or s in _NO:
        return s in _YES
    raise TruthlineError(f"presence answer {v!r}: use 1/0 (or yes/no), blank to skip")


def read_answers(path: Path) -> pd.DataFrame:
    """The person's answers: ``key``, ``present`` (bool, None = skipped), ``action_text``
    (None = skipped); ``attrs['simulated']`` when the sheet says it is SIMULATED."""
    if not path.is_file():
        raise TruthlineError(f"{path}: no such answer sheet (write one with `syndor human-sample`)")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"key", "present", "action_text"} - set(df.columns)
    if missing:
        raise TruthlineError(f"{path}: missing columns {sorted(missing)}")
    out = pd.DataFrame(
        {
            "key": df["key"].astype(str),
            "present": [_presence(v) for v in df["present"]],
            "action_text": [v.strip() or None for v in df["action_text"]],
        }
    )
    out.attrs["simulated"] = bool("simulated" in df and (df["simulated"] == "SIMULATED").any())
    return out


def human_tables(
    decisions: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    action: bool = True,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    sample: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The human scored like a model on the items they answered, and every model of the run
    on the same items: presence accuracy / macro-F1 and action embedding similarity per
    distance and over all (cells carry their n)."""
    from truthline.systems.syndorbench._tables import _cell, _prepare

    label = HUMAN + (" (SIMULATED)" if answers.attrs.get("simulated") else "")
    d = _prepare(decisions, {})
    keys = set(answers["key"])
    d = d[d["key"].astype(str).isin(keys)]
    if sample and set(keys) - set(sample.get("keys", keys)):
        raise TruthlineError("human answers: keys outside the recorded sample")
    pres = d[d["path"] == "present"]
    gold = pres.drop_duplicates("key").set_index("key")
    ans = answers.set_index("key")
    dists = sorted({x for x in pres["distance_m"].dropna()})
    h = ans["present"].dropna()
    h = h[h.index.isin(gold.index)]
    human = pd.DataFrame(
        {"gold": gold.loc[h.index, "gold"].to_numpy(), "pred": h.to_numpy(), "key": h.index,
         "distance_m": gold.loc[h.index, "distance_m"].to_numpy()}
    )  # fmt: skip
    human["correct"] = [
        bool(g) == bool(p) for g, p in zip(human["gold"], human["pred"], strict=True)
    ]
    answered = set(human["key"])
    by: dict[str, pd.DataFrame] = {label: human}
    for m, g in pres[pres["key"].isin(answered)].groupby("model_label", sort=True):
        by[str(m)] = g
    rows: list[dict[str, Any]] = [
        {
            "model": m,
            "presence": {
                **{str(x): _cell(g[g["distance_m"] == x]) for x in dists},
                "avg": _cell(g),
            },
        }
        for m, g in by.items()
    ]
    if action:
        texts = d[(d["path"] == "action_text") & d["gold"].notna()].drop_duplicates(
            ["model_label", "key"]
        )
        said = ans["action_text"].dropna()
        texts = texts[texts["key"].isin(set(said.index))]
        if len(texts):
            sims = _similarities(texts, said, label, embed)
            for r in rows:
                r["action"] = sims.get(r["model"], {})
    return {
        "label": label,
        "sample": dict(sample or {}),
        "distances": [str(x) for x in dists],
        "rows": rows,
    }


def _similarities(
    texts: pd.DataFrame, said: pd.Series, label: str, embed: Any
) -> dict[str, dict[str, Any]]:
    """Mean similarity to the reference per answerer and distance, on the items the person
    described (a model's missing answer scores 0, as in the models' table)."""
    from truthline.benchmark import _metrics as M
    from truthline.systems.syndorbench._tables import _text

    ref = texts.drop_duplicates("key").set_index("key")
    keys = list(ref.index)
    answers: dict[str, list[str | None]] = {label: [str(said[k]) for k in keys]}
    for m, g in texts.groupby("model_label", sort=True):
        pred = g.set_index("key")["pred"]
        answers[str(m)] = [_text(pred.get(k)) for k in keys]
    r = M.open_answer_similarity(answers, [str(g) for g in ref["gold"]], embed=embed)
    dist = [as_float(x) for x in ref["distance_m"]]
    out: dict[str, dict[str, Any]] = {}
    for m, per in r["per_item"].items():
        cells: dict[str, Any] = {}
        for x in sorted({v for v in dist if v is not None}):
            idx = [i for i, v in enumerate(dist) if v == x]
            cells[str(x)] = {"similarity": float(np.mean([per[i] for i in idx])), "n": len(idx)}
        cells["avg"] = {"similarity": float(np.mean(per)), "n": len(per)}
        out[m] = cells
    return out


def human_action_rows(h: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The human's row of the action table (similarity per distance on the sample; no z:
    the z-score is across models)."""
    for r in h.get("rows", []):
        if r["model"] == h.get("label"):
            return [
                {"model": r["model"], "group": "human", "distance_m": as_float(d),
                 "similarity": c["similarity"], "z": None, "n": c["n"]}
                for d, c in (r.get("action") or {}).items()
                if d != "avg"
            ]  # fmt: skip
    return []
