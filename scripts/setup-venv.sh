#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment in .venv and installs
# psjob with its operator and test extras. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[operator,test]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
