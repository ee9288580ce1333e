"""``--help`` loads no stage's heavy libraries (issue 28: ``benchmark --help`` imported
1,273 modules). Each case runs in a fresh interpreter and names what it found in
``sys.modules``: an assertion on module names, not on a timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "numpy",
    "scipy",
    "pandas",
    "sqlalchemy",
    "pyarrow",
    "jinja2",
    "matplotlib",
    "httpx",
    "PIL",
    "cv2",
    "torch",
    "streamlit",
)

PROBE = """
import json, sys
from truthline.cli import app
try:
    app(args=sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(HEAVY)))
print("\\n" + json.dumps({"heavy": heavy, "modules": len(sys.modules)}))
"""

COMMANDS = [
    [],
    ["audit"],
    ["benchmark"],
    ["benchmark", "run"],
    ["stats"],
    ["stats", "agreement"],
    ["prefill"],
    ["models"],
    ["annotate"],
    ["dashboard"],
    ["demo"],
    ["scenes"],
]


def _help(args: list[str]) -> dict:
    probe = PROBE.replace("json.loads(HEAVY)", repr(list(HEAVY)))
    out = subprocess.run(
        [sys.executable, "-c", probe, *args, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Usage" in out.stdout, out.stdout + out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a) or "truthline")
def test_help_imports_no_heavy_library(args):
    got = _help(args)
    assert got["heavy"] == [], f"`truthline {' '.join(args)} --help` imported {got['heavy']}"


def test_a_stage_package_attribute_still_loads_its_module():
    # lazy package attributes: the public API is unchanged, it is imported on first use
    probe = (
        "import sys, truthline.audit as a, truthline.benchmark as b\n"
        "assert 'numpy' not in sys.modules\n"
        "assert callable(a.run_audit) and callable(b.run_benchmark)\n"
        "assert b.metrics.__name__ == 'truthline.benchmark._metrics'\n"
        "assert 'numpy' in sys.modules and 'run_audit' in dir(a)\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=120)
