#!/usr/bin/env bash
# The main job (README): installs truthline's core into .venv, then runs the demo loop on
# embedded defaults with SIMULATED data. Arguments pass through to `truthline demo`.
# One line per phase; pip's output goes to a log file (shown when a step fails).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
VENV=${TRUTHLINE_VENV:-$PWD/.venv}
LOG=${TRUTHLINE_INSTALL_LOG:-$VENV/install.log}
export PIP_DISABLE_PIP_VERSION_CHECK=1
step() { printf '== %s\n' "$*"; }
fail() {
    echo "!! $1 failed; the last lines of $LOG:" >&2
    tail -n 20 "$LOG" >&2 || true
    exit 1
}
if [ ! -x "$VENV/bin/python" ]; then
    step "[1/3] creating the virtual environment $VENV"
    "$PY" -m venv "$VENV"
else
    step "[1/3] virtual environment $VENV (exists)"
fi
mkdir -p "$(dirname "$LOG")"
: >"$LOG"
step "[2/3] installing truthline into it (first run: a few minutes; log: $LOG)"
t0=$SECONDS
"$VENV/bin/python" -m pip install -U pip >>"$LOG" 2>&1 || fail "upgrading pip"
"$VENV/bin/python" -m pip install -e . >>"$LOG" 2>&1 || fail "installing truthline"
step "      installed in $((SECONDS - t0)) s"
step "[3/3] truthline demo $*"
exec "$VENV/bin/truthline" demo "$@"
