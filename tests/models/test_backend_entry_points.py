"""Backends come from the ``truthline.backends`` entry-point group, loaded on first use."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from truthline.errors import TruthlineError
from truthline.models import get_backend, registered_backends
from truthline.models._registry import BACKENDS, ENTRY_POINT_GROUP

ROOT = Path(__file__).resolve().parents[2]


def _declared() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data["project"]["entry-points"][ENTRY_POINT_GROUP]


def _decorated_kinds() -> set[str]:
    """Every ``@backend("kind")`` in the package source."""
    kinds = set()
    for path in (ROOT / "truthline").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "backend"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                kinds.add(node.args[0].value)
    return kinds


def test_every_backend_is_declared_and_installed():
    declared = _declared()
    assert set(declared) == _decorated_kinds()
    installed = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert installed == declared, "stale install: run pip install -e . again"
    assert set(declared) <= set(registered_backends())


def test_importing_models_imports_no_client_library_or_simulation():
    code = (
        "import sys, truthline.models as m\n"
        "kinds = m.registered_backends()\n"
        "heavy = sorted(k for k in sys.modules if k.split('.')[0] in "
        "('openai', 'torch', 'transformers', 'ultralytics') "
        "or k.startswith(('truthline.simulate', 'truthline.demo')) "
        "or k in ('truthline.models._openai', 'truthline.models._hf', "
        "'truthline.models._yolo', 'truthline.models._scripted'))\n"
        "print(','.join(kinds)); print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert {"openai", "hf", "yolo", "simulated", "scripted", "rule"} <= set(out[0].split(","))
    assert out[1] == ""


@pytest.mark.parametrize("kind", sorted(_declared()))
def test_each_entry_point_loads_its_backend(kind):
    cls = BACKENDS.get(kind)
    assert cls.kind == kind


def test_unknown_kind_lists_the_entry_point_kinds():
    with pytest.raises(TruthlineError, match=r"unknown kind 'nope' \(known: .*openai.*yolo"):
        get_backend("nope:x")


def test_a_fresh_process_resolves_every_simulated_profile_through_the_entry_point():
    """``--model simulated:pow-strong`` in a process that imported nothing else: the
    profiles come with the simulated backend, not with a core package importing them."""
    code = (
        "from truthline.models import get_backend\n"
        "for p in ('steel-v1', 'pow-strong', 'pow-mid', 'pow-weak'):\n"
        "    print(get_backend('simulated:' + p).spec.name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["steel-v1", "pow-strong", "pow-mid", "pow-weak"]
