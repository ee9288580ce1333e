"""Budget inputs: negative or non-finite prices and budgets are refused before anything is
sent (a negative price once reported a cost of $-0.60 and let a run past --max-cost)."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from truthline.cli import app
from truthline.errors import TruthlineError
from truthline.models import PRICES, ModelSpec, Price, price_for, register_price
from truthline.models._prices import check_budget
from truthline.models._spec import ModelSpecError, parse_model_spec
from truthline.store import tables

runner = CliRunner()


@pytest.fixture
def steel_ws(tmp_path):
    """steel-safety with 16 SIMULATED items and their gold (prefill and benchmark run)."""
    from tests.benchmark.conftest import make_bench_ws

    ws, _, _, _ = make_bench_ws(tmp_path / "ws")
    yield ws
    ws.store.close()


@pytest.mark.parametrize("rate", [-0.01, -1e9, math.nan, math.inf, -math.inf])
def test_a_price_must_be_finite_and_not_negative(rate):
    with pytest.raises(TruthlineError, match="finite number of USD per million tokens >= 0"):
        Price(rate, 1.0)
    with pytest.raises(TruthlineError, match="output rate"):
        Price(1.0, rate)


def test_register_price_refuses_a_negative_rate_and_keeps_the_table():
    before = dict(PRICES)
    with pytest.raises(TruthlineError, match=r"model 'cheap-model'.*input rate -0\.6"):
        register_price("cheap-model", -0.6, 1.0)
    assert before == PRICES
    assert Price(0.0, 0.0).cost(10, 10) == 0.0


@pytest.mark.parametrize("opt", ["price_in=-1", "price_out=-0.6", "price_in=nan", "price_out=inf"])
def test_spec_price_options_are_checked_when_parsed(opt):
    with pytest.raises(ModelSpecError) as info:
        parse_model_spec(
            f"openai:gpt-4o;{opt};price_in=1" if "price_in" not in opt else f"openai:gpt-4o;{opt}"
        )
    assert "must be a number >= 0" in str(info.value) and "\n" not in str(info.value)


def test_price_for_refuses_a_negative_option_that_skipped_the_parser():
    spec = ModelSpec("openai", "gpt-4o", options={"price_in": "-2"}, text="openai:gpt-4o;x")
    with pytest.raises(TruthlineError, match=r"model spec 'openai:gpt-4o;x'.*input rate -2"):
        price_for(spec)


@pytest.mark.parametrize("value", [-1.0, -0.0001, math.nan, math.inf, -math.inf])
def test_check_budget_refuses_what_is_no_amount(value):
    with pytest.raises(TruthlineError, match="give a finite amount of USD >= 0"):
        check_budget(value)


def test_check_budget_keeps_real_amounts():
    assert check_budget(None) is None and check_budget(0) == 0.0 and check_budget(2.5) == 2.5


def _counts(ws) -> tuple[int, int, int]:
    with ws.store.begin() as conn:
        return tuple(  # type: ignore[return-value]
            conn.execute(select(func.count()).select_from(t)).scalar()
            for t in (tables.runs, tables.responses, tables.predictions)
        )


@pytest.mark.parametrize("command", ["prefill", "benchmark"])
@pytest.mark.parametrize("value", ["-1", "nan", "inf", "-inf", "NaN", "1e999"])
def test_max_cost_that_is_no_amount_is_a_usage_error(steel_ws, command, value):
    before = _counts(steel_ws)
    r = runner.invoke(
        app,
        [
            "--workspace",
            str(steel_ws.root),
            command,
            "run",
            "-m",
            "simulated:steel-v1",
            "--max-cost",
            value,
        ],
    )
    assert r.exit_code == 2, r.output
    errors = [ln for ln in r.output.splitlines() if "--max-cost" in ln]
    assert errors and "give a finite amount of USD >= 0" in r.output
    assert _counts(steel_ws) == before


def test_a_negative_spec_price_stops_the_run_before_it_starts(steel_ws):
    before = _counts(steel_ws)
    spec = "simulated:steel-v1;price_in=-1;price_out=1"
    for command in ("prefill", "benchmark"):
        r = runner.invoke(
            app,
            ["--workspace", str(steel_ws.root), command, "run", "-m", spec, "--max-cost", "1"],
        )
        assert r.exit_code == 1, r.output
        msg = str(r.exception)
        assert "price_in='-1' must be a number >= 0" in msg and "\n" not in msg
    assert _counts(steel_ws) == before


def test_zero_budget_still_works(steel_ws):
    spec = "simulated:steel-v1;price_in=1;price_out=1"
    r = runner.invoke(
        app, ["--workspace", str(steel_ws.root), "prefill", "run", "-m", spec, "--max-cost", "0"]
    )
    assert r.exit_code == 0, r.output
