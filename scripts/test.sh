#!/usr/bin/env bash
# The test command (README): installs everything the tests need from scratch, starts the
# services they use (PostgreSQL, Label Studio is started by the tests themselves), then runs
# ruff (lint + format check), mypy and pytest. Extra pytest arguments pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
VENV=${TRUTHLINE_VENV:-$ROOT/.venv}
export PIP_DISABLE_PIP_VERSION_CHECK=1

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "python environment ($VENV)"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q -U pip 2>&1 | grep -v '^WARNING: Location' || true
# torch + torchvision first, as the working CPU pair (DEPENDENCIES.md §1): ultralytics needs torchvision.
"$VENV/bin/python" -m pip install -q "torch==2.14.1" "torchvision==0.29.1" 2>&1 | grep -v '^WARNING: Location' || true
"$VENV/bin/python" -m pip install -q -e ".[vlm,embed,detect,scenes,dev]" 2>&1 | grep -v '^WARNING: Location' || true
"$VENV/bin/python" -c "import cv2, torch, torchvision, ultralytics, transformers, truthline; print('imports ok: cv2', cv2.__version__, 'torch', torch.__version__)"
export PATH="$VENV/bin:$PATH"

# Offline settings for model libraries (DEPENDENCIES.md): nothing downloads at run time.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export YOLO_OFFLINE=1 YOLO_VERBOSE=False YOLO_AUTOINSTALL=False
export TRUTHLINE_TEST_TMP=${TRUTHLINE_TEST_TMP:-$(mktemp -d /tmp/truthline-test.XXXXXX)}
chmod 755 "$TRUTHLINE_TEST_TMP"  # the postgres OS user must reach its data dir inside
export YOLO_CONFIG_DIR=$TRUTHLINE_TEST_TMP/yolo MPLCONFIGDIR=$TRUTHLINE_TEST_TMP/mpl

step "system packages (PostgreSQL, Chromium)"
need=()
command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing system packages: ${need[*]} (install them, or run as root on Debian)" >&2; exit 1
  fi
fi

step "PostgreSQL (private cluster on 127.0.0.1)"
source scripts/pg.sh
pg_start "$TRUTHLINE_TEST_TMP/pg"
trap 'pg_stop "$TRUTHLINE_TEST_TMP/pg"' EXIT
export TRUTHLINE_TEST_PG_URL

step "Label Studio server environment"
"$VENV/bin/python" -m truthline.annotate.server_env --ensure

step "scenes environment (bpy 5.0.1 in its own venv)"
# ~820 MB from PyPI once (~35 s), then cached; the scene tests render real frames in it and
# fail, rather than skip, when it is missing
"$VENV/bin/python" -m truthline.scenes.env --ensure --quiet

step "ruff"
ruff check .
ruff format --check .

step "mypy"
mypy

step "import-linter (layering contracts in pyproject.toml)"
lint-imports --no-cache

step "pytest"
set +e
pytest "$@"
rc=$?
set -e
exit $rc
