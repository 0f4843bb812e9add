#!/usr/bin/env bash
# Creates (or refreshes) the project's virtual environment in .venv and installs
# psjob with its operator and test extras. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# The install builds the C kernels (runtime/psjob/foundation/kernels/_native.c) in place: a changed
# source is a new install, as a changed pyproject.toml is.
stamp=.venv/.installed-$(cat pyproject.toml runtime/psjob/foundation/kernels/_native.c | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e ".[operator,test]"
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# Bytecode for psjob's own modules: an editable install has none, and with PYTHONDONTWRITEBYTECODE
# set every process would compile them again (~0.5 CPU-s per `import psjob.distributed.fleet`,
# paid by each pipe_command a dataset starts). Only changed sources are compiled again.
.venv/bin/python -m compileall -q -j 0 runtime/psjob >/dev/null
