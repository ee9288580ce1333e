"""Simulation stays off the core's path: core packages never import truthline.simulate or
truthline.demo (the ``simulated:`` backend is an entry point; its truth never rides in a
request)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "truthline"
CORE = [
    "models",
    "prefill",
    "annotate",
    "audit",
    "benchmark",
    "stats",
    "store",
    "fields",
    "media",
    "project",
    "report",
    "dashboards",
]
SIM = ("truthline.simulate", "truthline.demo")


def _is_sim(name: str) -> bool:
    return any(name == s or name.startswith(s + ".") for s in SIM)


def _sim_imports(path: Path) -> list[tuple[int, str, bool]]:
    """``(line, module, inside a function)`` of every import of a simulation module."""
    out: list[tuple[int, str, bool]] = []

    def visit(node: ast.AST, in_fn: bool) -> None:
        for child in ast.iter_child_nodes(node):
            fn = in_fn or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module:
                names = [child.module] + [f"{child.module}.{a.name}" for a in child.names]
                if child.module == "truthline":
                    names = [f"truthline.{a.name}" for a in child.names]
            elif isinstance(child, ast.Call) and getattr(child.func, "attr", "") == "import_module":
                names = [a.value for a in child.args if isinstance(a, ast.Constant)]
            for n in names:
                if isinstance(n, str) and _is_sim(n):
                    out.append((child.lineno, n, fn))
                    break
            visit(child, fn)

    visit(ast.parse(path.read_text()), False)
    return out


def test_core_packages_never_import_simulation():
    bad = []
    for pkg in CORE:
        for path in sorted((PKG / pkg).rglob("*.py")):
            for line, mod, in_fn in _sim_imports(path):
                # A CLI module wires commands: it may reach a SIMULATED tool inside the
                # command's own function (``audit simulate``, ``models list``), never at import.
                if path.name == "_cli.py" and in_fn:
                    continue
                bad.append(f"{path.relative_to(PKG.parent)}:{line}: imports {mod}")
    assert not bad, "\n".join(bad)


def test_the_scan_sees_imports(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import truthline.demo\n"
        "from truthline import simulate\n"
        "def f():\n    from truthline.simulate._vlm import get_profile\n"
        "import importlib\nimportlib.import_module('truthline.simulate._backend')\n"
        "from truthline.models import backend\n"
    )
    found = [(line, in_fn) for line, _mod, in_fn in _sim_imports(src)]
    assert found == [(1, False), (2, False), (4, True), (6, False)]


def test_running_core_code_loads_no_simulation_module():
    code = (
        "import sys\n"
        "import truthline.models, truthline.prefill, truthline.annotate, truthline.audit\n"
        "import truthline.benchmark, truthline.stats, truthline.store, truthline.fields\n"
        "from truthline.models import registered_backends, render_prompt\n"
        "registered_backends()\n"
        "print(sorted(k for k in sys.modules if k.startswith(('truthline.simulate', "
        "'truthline.demo'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_request_building_code_never_names_the_known_truth():
    """Prompts and requests are built in models/, prefill/ and the benchmark runner: none of
    them may carry ``sim_truth`` (the SIMULATED backend reads it from the store itself)."""
    paths = [
        *(PKG / "models").rglob("*.py"),
        *(PKG / "prefill").rglob("*.py"),
        PKG / "benchmark" / "_runner.py",
    ]
    bad = [str(p.relative_to(PKG.parent)) for p in paths if "sim_truth" in p.read_text()]
    assert not bad
