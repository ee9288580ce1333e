"""Every bootstrap-count option of every command, the paper systems' included, is bounded
by TRUTHLINE_MAX_RESAMPLES: the command tree is walked, so a new command that forgets the
bound fails here (issue 27's leftover: the SynDORBench and RealityBench CLIs had their own
unbounded ``--resamples``)."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer import _click as click
from typer.testing import CliRunner

from truthline.cli import app


def _counting_options() -> list[tuple[list[str], str]]:
    """(command path, option) of every option that sets a number of resamples."""
    root = typer.main.get_command(app)
    found: list[tuple[list[str], str]] = []

    def walk(cmd: Any, path: list[str], ctx: click.Context) -> None:
        if hasattr(cmd, "list_commands"):  # a group
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None:
                    walk(sub, [*path, name], click.Context(sub, info_name=name, parent=ctx))
            return
        for p in cmd.params:
            for opt in getattr(p, "opts", []):
                if opt.startswith("--") and ("resampl" in opt or "bootstrap" in opt):
                    found.append((path, opt))

    walk(root, [], click.Context(root, info_name="truthline"))
    return found


OPTIONS = _counting_options()


def test_the_walk_finds_the_core_and_the_systems_options() -> None:
    paths = {" ".join(p) for p, _ in OPTIONS}
    assert {"audit run", "stats agreement", "benchmark compare-gold"} <= paths
    assert {"syndor tables", "pow validate", "pow tables humans", "pow photos transfer"} <= paths


@pytest.mark.parametrize(("path", "opt"), OPTIONS, ids=[" ".join(p) for p, _ in OPTIONS])
def test_every_resamples_option_is_bounded(path: list[str], opt: str) -> None:
    res = CliRunner().invoke(app, [*path, opt, "100001"])
    assert res.exit_code == 2, res.output
    assert "100001 bootstrap resamples is over the limit of 100000" in res.output
    assert "TRUTHLINE_MAX_RESAMPLES" in res.output


@pytest.mark.parametrize("path", [["syndor", "tables"], ["pow", "validate"]])
def test_the_variable_raises_the_systems_bound(path: list[str]) -> None:
    res = CliRunner().invoke(
        app, [*path, "--resamples", "100001"], env={"TRUTHLINE_MAX_RESAMPLES": "200000"}
    )
    assert "over the limit" not in res.output  # past the bound: the command's own checks
