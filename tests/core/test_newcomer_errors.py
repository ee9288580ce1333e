"""Issue 26: errors that mislead a newcomer, and tables that hide which model is which.

Each test plants the input a newcomer types (a typo in ``--arm``, a ``postgres://`` URL, a
bad ``--model`` spec, a help text with brackets) and checks what the CLI answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from tests.benchmark.conftest import make_bench_ws
from truthline import _cli_common
from truthline.cli import app
from truthline.store import tables

runner = CliRunner()
MODELS = ("simulated:steel-strong", "simulated:steel-weak")


def cli(root: Path, *args: str):
    return runner.invoke(app, ["--workspace", str(root), *args])


@pytest.fixture
def ws(tmp_path: Path):
    ws, _project, _items, _snap = make_bench_ws(tmp_path / "ws")
    yield ws
    ws.store.close()


def said(r) -> str:
    """What the user reads: the output, and the message ``main()`` prints of an error."""
    return r.output + ("" if r.exception is None else str(r.exception))


def _runs(ws) -> list[tuple[str, str]]:
    with ws.store.begin() as conn:
        return [tuple(r) for r in conn.execute(select(tables.runs.c.id, tables.runs.c.status))]


# -- --model specs ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("nosuchkind:x", "unknown kind 'nosuchkind'"),
        ("rule:nosuchrule", "unknown rule 'nosuchrule'"),
        ("hf:/no/such/model/folder", "not a local model folder"),
        ("steel-strong", "expected KIND:NAME"),
    ],
)
def test_bad_model_spec_fails_before_any_run_is_opened(ws, spec, says):
    r = cli(ws.root, "benchmark", "run", "-m", "simulated:steel-strong", "-m", spec)
    assert r.exit_code != 0
    assert says in said(r)
    assert _runs(ws) == []  # no run left at `running` (nor any other)


def test_unexpected_failure_closes_the_run_as_failed(ws, monkeypatch):
    from truthline.benchmark import RunConfig, _runner, run_benchmark

    def planted_bug(*args, **kwargs):
        raise RuntimeError("planted bug while building the requests")

    monkeypatch.setattr(_runner, "build_requests", planted_bug)
    project = ws.registered(None)
    with pytest.raises(RuntimeError, match="planted bug"):
        run_benchmark(ws.store, project, RunConfig(models=[MODELS[0]], run_id="broken"))
    assert _runs(ws) == [("broken", "failed")]  # not left at `running`
    monkeypatch.undo()
    again = run_benchmark(ws.store, project, RunConfig(models=[MODELS[0]], run_id="broken"))
    assert again["status"] == "done"  # a rerun resumes it


# -- store URLs ---------------------------------------------------------------------------
def test_postgres_scheme_says_to_write_postgresql_psycopg(ws):
    r = cli(ws.root, "--db", "postgres://alice:secret@localhost:5432/tl", "benchmark", "runs")
    assert r.exit_code != 0
    assert "postgresql+psycopg://alice:***@localhost:5432/tl" in said(r)
    assert "Can't load plugin" not in said(r) and "secret" not in said(r)


# -- --arm --------------------------------------------------------------------------------
def test_misspelt_arm_names_the_arms_not_pull_first(ws):
    r = cli(ws.root, "stats", "agreement", "--field", "worker_count", "--arm", "blnd")
    assert r.exit_code != 0
    assert "unknown arm 'blnd'" in said(r) and "blind" in said(r)
    assert "pull annotations first" not in said(r)


# -- help texts ---------------------------------------------------------------------------
def test_help_keeps_bracketed_text_and_flags_have_no_metavar():
    r = runner.invoke(app, ["benchmark", "run", "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "[prompts] variants" in text  # rich markup swallowed "[prompts]"
    assert "gt: [benchmark] given_as_truth" in text
    assert "<bool>" not in text
    assert "--retry-missing Re-send" in text  # a flag: no value shown after it


# -- tables at 100 columns ----------------------------------------------------------------
@pytest.fixture
def narrow(monkeypatch):
    monkeypatch.setattr(_cli_common.console, "width", 100)


def test_benchmark_tables_keep_model_names_whole_at_100_columns(ws, narrow):
    args = [a for m in MODELS for a in ("-m", m)]
    r = cli(ws.root, "benchmark", "run", *args, "--run", "r1", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["status"] == "done"
    for cmd in (["show", "r1"], ["compare-gold", "r1"], ["paired", "r1"], ["runs"]):
        r = cli(ws.root, "benchmark", *cmd)
        assert r.exit_code == 0, (cmd, r.output)
        assert max(len(line) for line in r.output.splitlines()) <= 100, r.output
        if cmd[0] == "runs":
            continue
        if cmd[0] == "show":  # the headline metrics are read whole, not as "0…"
            assert "0…" not in r.output and "macro_f1 0." in " ".join(r.output.split())
        for m in MODELS:
            assert m in r.output, f"benchmark {cmd[0]}: {m} cut at 100 columns:\n{r.output}"


# -- first run: one line per phase, pip's log in a file --------------------------------------
def test_sidecar_build_prints_phases_and_keeps_pips_log(tmp_path, capfd):
    """A Label Studio-like sidecar whose install fails (offline, no such package): a few
    phase lines on stderr, not pip's log; the error carries the log's tail."""
    from truthline._venv import Sidecar, VenvError

    spec = Sidecar(
        name="q3-sidecar",
        title="the test sidecar",
        requirements=("truthline-q3-no-such-package==0.0.1",),
        env_var="TRUTHLINE_Q3_TEST_VENV",
        fix="fix it",
        pip_args=("--no-index",),
    )
    with pytest.raises(VenvError, match="No matching distribution") as err:
        spec.ensure(tmp_path / "venv", progress=True)
    shown = capfd.readouterr().err.splitlines()
    assert len(shown) <= 5, shown
    assert any("pip's log:" in line and "install.log" in line for line in shown)
    assert "pip exited with" in str(err.value)
    assert not (tmp_path / "venv.partial").exists()  # a failed build leaves nothing
