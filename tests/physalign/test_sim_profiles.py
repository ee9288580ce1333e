"""SIMULATED PhysAlign probe answerers (truthline.simulate._probe): their planted reading
errors, grounding errors (nearest-region bias), +GT repairs and harms and image dependence
come out of the answers, first on many synthetic probes (tight bounds), then through the
real benchmark runner and the probe-protocol metric over generated problems."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from tests.physalign.probe_workspace import ProbeWorkspace, build
from truthline.benchmark import RunConfig, across_metrics, run_benchmark
from truthline.simulate._probe import ProbeBehaviour, misread, probe_outcome
from truthline.simulate._vlm import PROBE_PROFILES, get_profile, registered_profiles
from truthline.store import tables

TYPES = ("T02-single", "T03-image", "T03-text")
CANDS = ["E1", "E2", "E3", "E4"]
TRUTH = {"read": "m_1", "owner": "E2", "_probe": {"nearest": "E3"}}


def _within(got: float, want: float, n: int, z: float = 4.0) -> bool:
    """``got`` is ``want`` within z binomial standard errors (plus a hair for p = 0)."""
    return abs(got - want) <= z * math.sqrt(max(want * (1 - want), 1e-4) / n) + 1e-9


def _outcome(beh: ProbeBehaviour, name: str, i: int, ptype: str, cond="base", ctl="", img=True):
    return probe_outcome(
        beh,
        name,
        f"item{i}",
        TRUTH,
        probe_type=ptype,
        candidates=CANDS,
        condition=cond,
        control=ctl,
        has_images=img,
        read_field="read",
        ground_field="owner",
    )


def test_profiles_are_registered_and_named_simulated():
    for name in PROBE_PROFILES:
        assert name in registered_profiles()
        prof = get_profile(name)
        assert prof.probe is not None and prof.description.startswith("SIMULATED")


@pytest.mark.parametrize("name", sorted(PROBE_PROFILES))
def test_planted_rates_come_out_on_synthetic_probes(name: str):
    beh = PROBE_PROFILES[name][1]
    n = 3000
    for ptype in TYPES:
        r, g = beh.read_rate(ptype), beh.ground_rate(ptype)
        m, h = beh.misread_misgrounds, beh.gt_harm
        base = [_outcome(beh, name, i, ptype) for i in range(n)]
        gt = [_outcome(beh, name, i, ptype, "gt") for i in range(n)]
        blind = [_outcome(beh, name, i, ptype, img=False) for i in range(n)]
        b_ok = [o.owner == "E2" for o in base]
        g_ok = [o.owner == "E2" for o in gt]
        if ptype == "T03-image":
            read_ok = sum(o.read == "m_1" for o in base) / n
            assert _within(read_ok, 1 - r, n), (ptype, read_ok)
        assert _within(sum(b_ok) / n, (1 - g) * (1 - r * m), n), (ptype, "base G")
        repairs = sum(not b and a for b, a in zip(b_ok, g_ok, strict=True)) / n
        harms = sum(b and not a for b, a in zip(b_ok, g_ok, strict=True)) / n
        assert _within(repairs, (1 - g) * r * m, n), (ptype, "repairs", repairs)
        assert _within(harms, (1 - g) * (1 - r * m) * h, n), (ptype, "harms", harms)
        # +GT leaves independent grounding errors where they were, with the same answer
        assert all(a.owner == b.owner for a, b in zip(base, gt, strict=True) if b.path == "ground")
        # no image: a uniform guess among the item's candidates
        assert _within(sum(o.owner == "E2" for o in blind) / n, 1 / len(CANDS), n)
        assert all(o.read != "m_1" for o in blind)
        # wrong owners lean to the nearest region as planted (the rest are uniform)
        wrong = [o.owner for o in base if o.owner != "E2"]
        if len(wrong) > 100:
            share = sum(w == "E3" for w in wrong) / len(wrong)
            bias = beh.nearest_bias
            assert _within(share, bias + (1 - bias) / (len(CANDS) - 1), len(wrong))


def test_answers_are_deterministic_per_profile_item_condition_and_control():
    beh = PROBE_PROFILES["physalign-nearest"][1]
    for i in range(50):
        for cond, ctl, img in (("base", "", True), ("gt", "", True), ("base", "no-image", False)):
            a = _outcome(beh, "physalign-nearest", i, "T03-image", cond, ctl, img)
            assert a == _outcome(beh, "physalign-nearest", i, "T03-image", cond, ctl, img)
    # another profile with the same behaviour draws differently (its own seed)
    diff = sum(
        _outcome(beh, "physalign-nearest", i, "T03-image") != _outcome(beh, "other", i, "T03-image")
        for i in range(200)
    )
    assert diff > 20
    # reorder keeps Base's answers but for the declared flip share
    flips = sum(
        _outcome(beh, "physalign-nearest", i, "T03-image", ctl="reorder").path == "reorder"
        for i in range(2000)
    )
    assert _within(flips / 2000, beh.reorder_flip, 2000)


def test_a_misread_is_wrong_under_the_reading_rules():
    from truthline.benchmark._scoring import READ_RULES, read_normal_form

    for text in ("m_1", "m_{1}", "M", "2 kg", "F = 10 N", "v^2", "30°"):
        bad = misread(text)
        assert read_normal_form(bad, READ_RULES) != read_normal_form(text, READ_RULES), text


# -- end to end: the runner, the SIMULATED backend and the probe-protocol metric ------------------
@pytest.fixture(scope="module")
def pw(tmp_path_factory: pytest.TempPathFactory) -> ProbeWorkspace:
    return build(tmp_path_factory.mktemp("simprofiles"), n=24, seed=5)


def _rows(pw: ProbeWorkspace, run_id: str) -> dict[tuple[str, str, str], dict[int, Any]]:
    """(model, condition, control) -> item id -> its scored decisions by field."""
    t = tables.run_results
    with pw.ws.store.begin() as conn:
        rows = conn.execute(select(t).where(t.c.run_id == run_id)).all()
    out: dict[tuple[str, str, str], dict[int, Any]] = defaultdict(dict)
    for r in rows:
        assert r.status == "parsed"
        out[(r.model, r.condition, r.control)][r.item_id] = {
            d["field"]: d["correct"] for d in r.scores["decisions"]
        }
    return out


def _types(pw: ProbeWorkspace) -> dict[int, str]:
    t = tables.items
    with pw.ws.store.begin() as conn:
        rows = conn.execute(select(t.c.id, t.c.meta).where(t.c.project == pw.project.name)).all()
    return {r.id: r.meta["probe_type"] for r in rows}


@pytest.mark.parametrize("name", ["physalign-misreader", "physalign-nearest"])
def test_a_run_over_generated_problems_shows_the_planted_behaviour(pw: ProbeWorkspace, name):
    beh = PROBE_PROFILES[name][1]
    model = f"simulated:{name}"
    run_id = f"sim-{name}"
    for cond, ctl in (("base", ""), ("gt", ""), ("base", "no-image")):
        run_benchmark(
            pw.ws.store,
            pw.project,
            RunConfig([model], condition=cond, control=ctl, run_id=run_id),
            progress=False,
        )
    res = _rows(pw, run_id)
    types = _types(pw)
    base, gt, blind = (
        res[(model, "base", "")],
        res[(model, "gt", "")],
        res[(model, "base", "no-image")],
    )
    assert len(base) == len(types) == len(blind) == len(pw.public)
    # reading errors: T03-image reading accuracy at Base is 1 - read_error
    reads = [d["read"] for d in base.values() if "read" in d]
    assert len(reads) > 80
    r = beh.read_rate("T03-image")
    assert _within(sum(reads) / len(reads), 1 - r, len(reads), z=3.5)
    # grounding errors per type (a T03-text anchor is text: no misread there)
    for ptype in TYPES:
        ok = [d["owner"] for i, d in base.items() if types[i] == ptype]
        rr, g = beh.read_rate(ptype), beh.ground_rate(ptype)
        want = (1 - g) * (1 - rr * beh.misread_misgrounds)
        assert _within(sum(ok) / len(ok), want, len(ok), z=3.5), (ptype, sum(ok) / len(ok), want)
    # +GT: the T03-image probes with a verified reading; repairs and harms both occur
    assert gt and all(types[i] == "T03-image" and "read" not in d for i, d in gt.items())
    pairs = [(base[i]["owner"], d["owner"]) for i, d in gt.items()]
    rep = sum(not b and a for b, a in pairs)
    harm = sum(b and not a for b, a in pairs)
    rm = r * beh.misread_misgrounds
    g = beh.ground_rate("T03-image")
    assert rep > 0 and harm > 0
    assert _within(rep / len(pairs), (1 - g) * rm, len(pairs), z=3.5)
    assert _within(harm / len(pairs), (1 - g) * (1 - rm) * beh.gt_harm, len(pairs), z=3.5)
    # no image: grounding falls to the 1/K guess level, well below Base
    k = {pid: len(p["candidates"]) for pid, p in pw.public.items()}
    keys = _keys(pw)
    guess = sum(1 / k[keys[i]] for i in blind) / len(blind)
    got = sum(d["owner"] for d in blind.values()) / len(blind)
    assert _within(got, guess, len(blind), z=3.5)
    assert got < sum(d["owner"] for d in base.values()) / len(base) - 0.15
    # the probe-protocol metric sees the same transitions (balanced weights, same items)
    pp = across_metrics(pw.ws.store, pw.project, run_id, names=["probe_protocol"])
    m = pp["metrics"]["probe_protocol"]["models"][model]
    assert m["P_m"]["repair"]["point"] > 0 and m["P_m"]["harm"]["point"] > 0
    assert m["P_m"]["repair"]["n"] == len(pairs)
    assert m["controls"]["no-image"]["delta"]["point"] < -0.15


def _keys(pw: ProbeWorkspace) -> dict[int, str]:
    t = tables.items
    with pw.ws.store.begin() as conn:
        rows = conn.execute(select(t.c.id, t.c.key).where(t.c.project == pw.project.name)).all()
    return {r.id: Path(r.key).name for r in rows}
