#!/usr/bin/env bash
# Creates (or refreshes) .venv-helm: a Python >= 3.12 environment holding
# helm-sdkpy, which bundles the Helm library (helm-sdkpy needs 3.12; the main
# .venv is 3.11). The chart tests drive this interpreter in a subprocess.
# Idempotent: a second run only checks the stamp.
#
# The interpreter is $PSJOB_HELM_PYTHON, else ~/.pyenv/versions/3.12.1, else the
# first python3.13/python3.12 on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
HELM_SDKPY_VERSION=0.1.32
VENV=.venv-helm
# Test workers may call this at the same moment: one sets up, the others wait and check.
if command -v flock >/dev/null; then
  exec 9>"$VENV.lock"
  flock 9
fi

find_python() {
  if [ -n "${PSJOB_HELM_PYTHON:-}" ]; then echo "$PSJOB_HELM_PYTHON"; return; fi
  for candidate in "$HOME/.pyenv/versions/3.12.1/bin/python" \
                   "$(command -v python3.13 || true)" "$(command -v python3.12 || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; return; fi
  done
  echo "setup-helm-venv: no Python >= 3.12 found; set PSJOB_HELM_PYTHON" >&2
  exit 1
}

if [ ! -x "$VENV/bin/python" ]; then
  PY=$(find_python)
  "$PY" -c 'import sys; assert sys.version_info >= (3, 12), sys.version' \
    || { echo "setup-helm-venv: $PY is older than 3.12" >&2; exit 1; }
  "$PY" -m venv "$VENV"
fi
stamp=$VENV/.installed-helm-sdkpy-$HELM_SDKPY_VERSION
if [ ! -f "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "helm-sdkpy==$HELM_SDKPY_VERSION" "PyYAML>=6.0"
  rm -f "$VENV"/.installed-helm-sdkpy-*
  touch "$stamp"
fi
