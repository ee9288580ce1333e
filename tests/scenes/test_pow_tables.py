"""RealityBench's evaluation tables (Tables 5-7, 11, 13) from a benchmark run of SIMULATED
models over proxy frames (no Blender): each number checked against the run's decisions
counted by hand, or against a planted model whose answers are known."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from typer.testing import CliRunner

from truthline.simulate._vlm import SimProfile, registered_profiles, simulated_profile
from truthline.systems.realitybench import _pow as P
from truthline.systems.realitybench import _tables as T

ENVS = ("tape_gap", "slope_gauge", "plate")
ORACLE = "simulated:perfect"
FLIPPER = "simulated:pow-sim-flip-all"
"""SIMULATED: every verdict and every tape-lean answer the opposite of the truth."""
MID = "simulated:pow-mid"
VARIANTS = {"verdict_last": "prompts/user.md", "no_verdict": "prompts/user.md"}

if "pow-sim-flip-all" not in registered_profiles():

    @simulated_profile("pow-sim-flip-all")
    def _flip() -> SimProfile:
        return SimProfile(
            description="SIMULATED: flips every verdict and every tape-lean answer",
            default_error=0.0,
            field_error={"acceptable": 1.0, "tape_leans": 1.0},
        )


def with_variants(ws, name: str = P.BENCH_PROJECT):
    """The proof-of-work project with the Table 4 prompt variants declared (the template's
    own declaration when it has one)."""
    proj = ws.registered(name)
    if not set(VARIANTS) <= set(proj.prompts.variants):
        toml = ws.projects_dir / name / "project.toml"
        text = toml.read_text()
        decl = ", ".join(f'{k} = "{v}"' for k, v in VARIANTS.items())
        toml.write_text(text.replace("[prompts]\n", f"[prompts]\nvariants = {{ {decl} }}\n", 1))
        proj = ws.registered(name)
    assert set(VARIANTS) <= set(proj.prompts.variants)
    return proj


def pow_workspace(tmp, models, *, variants=(), rerun=None, per_env=12):
    """Proxy frames (two frames per scene), imported with gold, run by ``models`` under the
    default prompt (and each of ``variants``; ``rerun``: the default again under a distinct
    cache key, as run id ``pow-rerun``)."""
    from truthline.benchmark import RunConfig, run_benchmark
    from truthline.workspace import Workspace

    frames = P.proxy_frames(per_env, envs=ENVS, seed=3)
    frames["scene"] = [
        f"{e}-{i // 2}" for e, i in zip(frames["environment"], range(len(frames)), strict=True)
    ]
    paths = []
    for i in range(len(frames)):
        p = tmp / f"{i}.png"
        Image.fromarray(np.full((12, 16, 3), 5 * (i % 40), np.uint8)).save(p)
        paths.append(str(p))
    frames["image"] = paths
    ws = Workspace.from_env(tmp / "ws")
    P.import_benchmark(ws, frames)
    proj = with_variants(ws)
    P.write_gold(ws.store, proj, frames)
    runs = []
    for v in (None, *variants):
        cfg = RunConfig(
            models=list(models), variant=v, concurrency=2, run_id=f"pow-{v or 'default'}"
        )
        runs.append(run_benchmark(ws.store, proj, cfg, progress=False)["run_id"])
    if rerun:
        cfg = RunConfig(
            models=[f"{m};replicate=1" for m in rerun], concurrency=2, run_id="pow-rerun"
        )
        run_benchmark(ws.store, proj, cfg, progress=False)
    return ws, proj, frames, runs


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("powt")
    ws, proj, frames, runs = pow_workspace(tmp, [ORACLE, FLIPPER, MID])
    dec = T.load_decisions(ws.store, proj, runs)
    return ws, proj, frames, runs, dec


def _ci(row, name):
    return getattr(row, name).point


def gold_verdicts(dec):
    """item key -> the scorer's verdict, as the run's gold holds it (a frame the gold leaves
    out, e.g. withdrawn, is in no table)."""
    a = dec[(dec["field"] == "acceptable") & (dec["model"] == ORACLE)]
    return dict(zip(a["key"], a["gold"].astype(bool), strict=True))


def test_table5_oracle_and_flipper_against_counts(bench):
    ws, proj, frames, runs, dec = bench
    use = T.usage(ws.store, runs)
    rows = {r.model: r for r in T.model_rows(proj, dec, use)}
    gold = gold_verdicts(dec)
    accepted = {k for k, v in gold.items() if v}
    assert accepted and len(accepted) < len(gold)
    o, f = rows[ORACLE], rows[FLIPPER]
    assert o.frames == f.frames == len(gold)
    # the oracle: no false accept, no miss, F1 1, every documentation answer right
    assert (_ci(o, "false_accept_rate"), _ci(o, "miss_rate"), _ci(o, "f1")) == (0.0, 0.0, 1.0)
    assert _ci(o, "documentation") == 1.0
    # the flipper accepts exactly the scorer-rejected frames: every one a false accept, every
    # acceptable frame a miss, no true accept
    assert _ci(f, "false_accept_rate") == 1.0 and _ci(f, "miss_rate") == 1.0
    assert _ci(f, "f1") == 0.0 and _ci(f, "recall") == 0.0
    # documentation on accepted frames: all right but its tape-lean answers
    d = dec[(dec["model"] == FLIPPER) & (dec["field"] != "acceptable")]
    on = d[d["key"].isin(accepted)]
    expected = 1 - (on["field"] == "tape_leans").sum() / len(on)
    assert _ci(f, "documentation") == pytest.approx(expected)
    # the intervals resample scenes (two frames each), not frames
    scene = dict(zip(frames["key"], frames["scene"], strict=True))
    assert f.f1.clusters == len({scene[k] for k in gold})
    assert o.documentation.clusters == len({scene[k] for k in accepted})
    for r in rows.values():  # SIMULATED answers: all parse, none cut, no reasoning tokens
        assert r.format_rate == 1.0 and r.truncated == 0 and r.mean_thinking_tokens is None


def test_table5_format_rate_truncation_and_thinking_from_usage(bench):
    ws, proj, _frames, runs, dec = bench
    use = T.usage(ws.store, runs)
    u = use[(MID, "")]
    planted = T.Usage(
        u.model, "", u.spec, True, 10, 8, 6, 2, 100, 50, 40, 4, 0.0
    )  # 8 returned, 6 parsed, 2 cut by the cap, 40 thinking tokens over 4 replies
    assert planted.format_rate == 6 / 8 and planted.mean_thinking == 40 / 8
    row = next(r for r in T.model_rows(proj, dec, {(MID, ""): planted}) if r.model == MID)
    assert (row.format_rate, row.truncated, row.mean_thinking_tokens) == (0.75, 2, 5.0)
    n = dec.loc[dec["model"] == MID, "item_id"].nunique()  # items asked, verdict or not
    assert u.requests == u.returned == u.parsed == n


def test_prices_tables_7_11_unpriced_and_priced(bench, monkeypatch):
    from truthline.models import _prices

    ws, _, _, runs, _ = bench
    rows = {r.model: r for r in T.price_rows(T.usage(ws.store, runs))}
    assert set(rows) == {ORACLE, FLIPPER, MID}
    r = rows[ORACLE]
    assert not r.priced and r.set_cost_usd is None and r.shown()["set cost"] == "unpriced"
    # a declared price with its source date: shown beside the set cost
    monkeypatch.setitem(_prices.PRICES, "gpt-x", _prices.Price(2.0, 8.0, "2026-11-30"))
    u = T.Usage("openai:gpt-x", "", "openai:gpt-x", False, 3, 3, 3, 0, 1000, 500, 250, 3, 0.0065)
    p = T.price_row(u)
    assert (p.input_per_m, p.output_per_m, p.source_date) == (2.0, 8.0, "2026-11-30")
    assert p.set_cost_usd == 0.0065
    assert p.shown()["price read"] == "2026-11-30" and p.shown()["set cost"] == "$0.01"
    spec = T.price_row(
        T.Usage("m", "", "openai:other;price_in=1;price_out=2;price_date=2026-10-01", False,
                1, 1, 1, 0, 1, 1, 0, 0, 0.0)
    )  # fmt: skip
    assert (spec.input_per_m, spec.source_date) == (1.0, "2026-10-01")


def test_table6_paired_differences(bench):
    _ws, proj, frames, _runs, dec = bench
    from truthline.benchmark._metrics import Resampling

    rows = {(p.a, p.b): p for p in T.paired_rows(proj, dec, Resampling(400, 0))}
    assert {frozenset(k) for k in rows} == {
        frozenset(p) for p in ((ORACLE, FLIPPER), (ORACLE, MID), (FLIPPER, MID))
    }
    p = rows[(ORACLE, FLIPPER)]
    items = set(dec.loc[dec["model"] == ORACLE, "key"])
    assert p.items == len(items)
    scene = dict(zip(frames["key"], frames["scene"], strict=True))
    assert p.f1_difference.clusters == len({scene[k] for k in items})  # resampled by scene
    assert p.f1_difference.point == 1.0 and p.f1_distinguishable
    r = next(r for r in T.model_rows(proj, dec) if r.model == FLIPPER)
    assert p.documentation_difference.point == pytest.approx(1 - r.documentation.point)
    dd = p.documentation_difference
    assert dd.low <= dd.point <= dd.high and p.documentation_distinguishable == (dd.low > 0)
    # F1 of one model against itself under a relabelling: difference 0, not distinguishable
    same = dec[dec["model"] == MID].assign(model="copy")
    q = T.paired_rows(proj, pd.concat([dec[dec["model"] == MID], same]), Resampling(200, 0))[0]
    assert q.f1_difference.point == 0.0 and not q.f1_distinguishable


def test_table13_human_rows_match_validate_scorer(bench):
    _ws, _proj, frames, _runs, _dec = bench
    ratings = P.simulated_verdicts(frames, seed=1)
    rows = {r.environment: r for r in T.human_rows(frames, ratings, resamples=200)}
    assert set(rows) == {"all", *ENVS}
    v = P.validate_scorer(frames[frames["environment"] == "plate"],
                          ratings.loc[frames.loc[frames["environment"] == "plate", "key"]],
                          resamples=200)  # fmt: skip
    r = rows["plate"]
    assert (r.krippendorff_alpha, r.pairwise_agreement) == (v.alpha, v.pairwise)
    assert r.frames == 12 and r.raters == 6 and r.held_out == v.counts["held_out_scored"]
    assert rows["all"].frames == len(frames) == 3 * 12


def test_report_sections_and_cli(bench, monkeypatch):
    from types import SimpleNamespace

    from truthline._cli_common import State
    from truthline.systems.realitybench._cli_tables import app

    ws, proj, _frames, runs, _dec = bench
    ctx = SimpleNamespace(store=ws.store, project=proj, run_ids=runs, data={}, resamples=50)
    secs = T.report_sections(ctx)
    titles = [s.title for s in secs]
    assert titles[:4] == [
        "RealityBench: models (Table 5)",
        "RealityBench: paired model differences (Table 6)",
        "RealityBench: prices and set cost (Tables 7, 11)",
        "RealityBench: error tracing of wrong rejections (Table 12)",
    ]
    for s in secs:
        s.model()
    from truthline.report import Report, render_html, render_markdown

    md = render_markdown(Report("t", secs, simulated=True))
    # these runs asked no prompt variant: no ablation section
    assert "Table 12" in md and "unpriced" in md and "Table 4" not in md
    assert "error tracing" in render_html(Report("t", secs, simulated=True))
    assert [r["model"] for r in ctx.data["realitybench_tables"]["models"]][:1] == [ORACLE]
    # not a proof-of-work run (no acceptability verdicts): nothing
    import dataclasses

    import truthline.benchmark._results as R

    real = R.load_run

    def without_verdicts(store, rid, project):
        run = real(store, rid, project)
        d = run.decisions
        return dataclasses.replace(run, decisions=d[d["field"] != "acceptable"])

    monkeypatch.setattr(R, "load_run", without_verdicts)
    ctx2 = SimpleNamespace(store=ws.store, project=proj, run_ids=runs, data={}, resamples=50)
    assert T.report_sections(ctx2) == [] and ctx2.data == {}
    monkeypatch.setattr(R, "load_run", real)
    runner = CliRunner()
    res = runner.invoke(
        app, ["models", "--json", "--resamples", "50"], obj=State(workspace=ws.root)
    )
    assert res.exit_code == 0, res.output
    got = {m["model"]: m for m in json.loads(res.stdout)["models"]}
    assert got[ORACLE]["f1"]["point"] == 1.0 and got[FLIPPER]["f1"]["point"] == 0.0
    for cmd in ("paired", "prices", "environments", "fields", "tracing", "gap", "ablation"):
        res = runner.invoke(app, [cmd, "--json"], obj=State(workspace=ws.root))
        assert res.exit_code == 0, (cmd, res.output)
        assert json.loads(res.stdout)["runs"] == runs


def test_figure2_plots_every_model_against_set_cost(bench, tmp_path):
    from PIL import Image

    from truthline._cli_common import State
    from truthline.systems.realitybench._cli_tables import app

    ws = bench[0]
    out = tmp_path / "fig2.png"
    res = CliRunner().invoke(
        app,
        ["figure2", "--out", str(out), "--json", "--resamples", "20"],
        obj=State(workspace=ws.root),
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["figure"] == str(out) and len(data["models"]) >= 2
    with Image.open(out) as im:
        grey = np.asarray(im.convert("L"))
    assert grey.shape[1] > 800 and len(np.unique(grey)) > 10  # a drawn plot


def test_humans_cli_table13(bench):
    """``pow tables humans``: the frame table and the rating project's (SIMULATED) ratings."""
    from truthline._cli_common import State
    from truthline.systems.realitybench._cli_tables import app

    ws, _proj, frames, _runs, _dec = bench
    d = ws.root / "scenes" / "pow"
    d.mkdir(parents=True, exist_ok=True)
    frames.to_csv(d / "frames.csv", index=False)
    P.write_rating_project(ws, frames)
    P.simulate_ratings(ws.store, P.RATING_PROJECT, frames, seed=2)
    res = CliRunner().invoke(
        app, ["humans", "--json", "--resamples", "100"], obj=State(workspace=ws.root)
    )
    assert res.exit_code == 0, res.output
    rows = {r["environment"]: r for r in json.loads(res.stdout)["humans"]}
    ratings = P.ratings_table(ws.store, ws.registered(P.RATING_PROJECT))
    v = P.validate_scorer(frames, ratings, resamples=100)
    assert rows["all"]["krippendorff_alpha"] == pytest.approx(v.alpha)
    assert rows["all"]["held_out"] == v.counts["held_out_scored"]
    assert rows["all"]["raters"] == len(P.SIM_RATERS) and set(rows) == {"all", *ENVS}
