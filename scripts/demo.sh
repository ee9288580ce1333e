#!/usr/bin/env bash
# The main job (README): installs truthline's core into .venv, then runs the demo loop on
# embedded defaults with SIMULATED data. Arguments pass through to `truthline demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
VENV=${TRUTHLINE_VENV:-$PWD/.venv}
export PIP_DISABLE_PIP_VERSION_CHECK=1
echo "== installing truthline into $VENV (first run takes a few minutes)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q -U pip 2>&1 | grep -v '^WARNING: Location' || true
"$VENV/bin/python" -m pip install -q -e . 2>&1 | grep -v '^WARNING: Location' || true
exec "$VENV/bin/truthline" demo "$@"
