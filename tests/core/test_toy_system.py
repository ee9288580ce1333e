"""A system from outside the package plugs into the loop the way the paper systems do.

The toy system is written to a temporary folder as its own installed distribution: the
package ``toy_truthline`` and a ``toy_truthline-0.1.dist-info`` whose ``entry_points.txt``
declares a metric, a report section and a CLI group — exactly what ``pip install`` of a
package with those ``[project.entry-points]`` leaves on ``sys.path``. truthline is never told
about it otherwise: the commands below find it through the metadata alone, and without the
folder on the path the same names are unknown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from truthline.demo import build_simulated_loop

METRICS = '''
from truthline.benchmark import metric


@metric("toy_decisions")
def toy_decisions(scored):
    """How many decisions the model was scored on (a toy metric)."""
    return {"value": float(len(scored.decisions)), "items": int(scored.decisions["item_id"].nunique())}
'''

REPORT = '''
from truthline.report import Section


def sections(ctx):
    """One toy table: the toy metric of every leaderboard entry."""
    rows = [
        {"model": m.model, "toy decisions": m.metrics["toy_decisions"]["value"]}
        for m in ctx.board
        if "toy_decisions" in m.metrics
    ]
    if not rows:
        return []
    n = [int(r["toy decisions"]) for r in rows]
    return [Section.of("Toy system: decisions per model", "Counted by the toy system.", rows, n=n)]
'''

CLI = '''
import json

import typer

app = typer.Typer(help="The toy system's commands.")


@app.command("hello")
def hello(as_json: bool = typer.Option(False, "--json")) -> None:
    """Say which system answered."""
    print(json.dumps({"system": "toy"}) if as_json else "hello from the toy system")
'''

PLUGIN = """
from truthline.plugins import CommandGroup

cli = CommandGroup("toy_truthline.cli:app", "The toy system: a metric, a report section, a command.")
"""

ENTRY_POINTS = """
[truthline.metrics]
toy_decisions = toy_truthline.metrics

[truthline.report_sections]
toy = toy_truthline.report:sections

[truthline.cli]
toy = toy_truthline._plugin:cli
"""


def _install_toy(site: Path) -> None:
    pkg = site / "toy_truthline"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A toy truthline system (tests)."""\n')
    for name, src in {"metrics": METRICS, "report": REPORT, "cli": CLI, "_plugin": PLUGIN}.items():
        (pkg / f"{name}.py").write_text(textwrap.dedent(src).lstrip())
    dist = site / "toy_truthline-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-truthline\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS.lstrip())


def _tl(ws: Path, *args: str, site: Path | None, check: int = 0) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "truthline", "-w", str(ws), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == check, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("toy")
    site = root / "site"
    _install_toy(site)
    ws = build_simulated_loop(root / "ws", n_items=16, seed=3)
    proj = ws.projects_dir / "steel-safety" / "project.toml"
    text = proj.read_text()
    assert 'metrics = ["accuracy"' in text
    proj.write_text(
        text.replace('metrics = ["accuracy"', 'metrics = ["accuracy", "toy_decisions"', 1)
    )
    return ws.root, site


def test_the_cli_lists_and_runs_the_toy_group(toy):
    ws, site = toy
    listing = _tl(ws, "--help", site=site).stdout
    assert "toy" in listing and "The toy system: a metric" in listing
    assert json.loads(_tl(ws, "toy", "hello", "--json", site=site).stdout) == {"system": "toy"}
    # not installed: not a command
    assert "No such command 'toy'" in _tl(ws, "toy", "hello", site=None, check=2).stderr


def test_a_project_naming_the_metric_loads_it_and_the_report_shows_its_section(toy, tmp_path):
    ws, site = toy
    names = json.loads(_tl(ws, "benchmark", "metrics", "--json", site=site).stdout)["metrics"]
    assert "toy_decisions" in names
    run = json.loads(
        _tl(ws, "benchmark", "run", "--model", "rule:majority", "--json", site=site).stdout
    )
    run_id = run["run_id"]
    board = json.loads(_tl(ws, "benchmark", "show", run_id, "--json", site=site).stdout)
    toy_values = [m["metrics"]["toy_decisions"]["value"] for m in board]
    assert toy_values and all(v > 0 for v in toy_values)
    out = tmp_path / "report.md"
    _tl(ws, "benchmark", "report", run_id, "--out", str(out), site=site)
    text = out.read_text()
    assert "Toy system: decisions per model" in text and "Counted by the toy system." in text
    # without the toy distribution the project names an unknown metric: one clear line
    err = _tl(ws, "benchmark", "run", "--model", "rule:majority", site=None, check=1).stderr
    assert "toy_decisions" in err and "registered:" in err


def test_loading_the_toy_system_imports_no_paper_system(toy):
    _ws, site = toy
    code = (
        "import sys; from truthline.benchmark import registered_metrics, is_across; "
        "assert 'toy_decisions' in registered_metrics(); assert not is_across('toy_decisions'); "
        "assert 'toy_truthline.metrics' in sys.modules; "
        "print(sorted(m for m in sys.modules if m.startswith('truthline.systems.')))"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
