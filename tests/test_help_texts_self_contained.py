"""Help texts and messages never cite files a user of the installed tool does not have (issue 14).

The design notes (METRICS.md, DESIGN.md, ...) and the shared/ folder live beside the source
tree, not in the installed package: a help page or an error that points there sends the user
nowhere. Walks the whole command tree's ``--help`` pages, and every string literal in the
package that is not a docstring (messages, help=, prints).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import typer
from typer.testing import CliRunner

import truthline
from truthline.cli import app

UNSHIPPED = re.compile(
    r"METRICS\.md|DESIGN\.md|LABEL_STUDIO\.md|DEPENDENCIES\.md|PHYSALIGN\.md|SCENES\.md"
    r"|DEVELOPING\.md|\bshared/|\bseeds/"
)


def _paths(cmd, ctx, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    out = [prefix]
    if hasattr(cmd, "list_commands"):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            out += _paths(
                sub, typer._click.Context(sub, parent=ctx, info_name=name), (*prefix, name)
            )
    return out


def test_every_help_page_is_self_contained() -> None:
    root = typer.main.get_command(app)
    paths = _paths(root, typer._click.Context(root, info_name="truthline"), ())
    assert len(paths) > 20  # the walk reached the lazily loaded stage commands
    runner = CliRunner()
    bad = {}
    for p in paths:
        res = runner.invoke(app, [*p, "--help"], env={"COLUMNS": "200"})
        assert res.exit_code == 0, (p, res.output)
        found = UNSHIPPED.findall(res.output)
        if found:
            bad[" ".join(p) or "truthline"] = found
    assert not bad, f"help pages citing files users do not have: {bad}"


def _non_docstring_strings(tree: ast.AST) -> list[ast.Constant]:
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
        # an attribute docstring (a bare string after an assignment) documents code, too
        if hasattr(node, "body") and isinstance(node.body, list):
            for prev, cur in zip(node.body, node.body[1:], strict=False):
                if (
                    isinstance(prev, ast.Assign | ast.AnnAssign)
                    and isinstance(cur, ast.Expr)
                    and isinstance(cur.value, ast.Constant)
                ):
                    docs.add(id(cur.value))
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_no_message_or_help_string_cites_unshipped_files() -> None:
    pkg = Path(truthline.__file__).parent
    bad = []
    for f in sorted(pkg.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in _non_docstring_strings(tree):
            if UNSHIPPED.search(node.value):
                bad.append(f"{f.relative_to(pkg)}:{node.lineno}: {node.value[:80]!r}")
    assert not bad, "strings users see citing files they do not have:\n" + "\n".join(bad)
