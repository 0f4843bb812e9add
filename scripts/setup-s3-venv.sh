#!/usr/bin/env bash
# Creates (or refreshes) .venv-s3: moto's S3 API server, which the s3:// checkpoint
# tests start as a real process on 127.0.0.1. It lives in its own environment because
# moto needs botocore, and botocore's python-dateutil<3 cannot be installed next to the
# kubernetes client of the main .venv (python-dateutil>=3). psjob itself speaks S3 with
# its own small client (runtime/psjob/foundation/checkpoint/s3.py) and needs neither.
# Idempotent: a second run only checks the stamp.
set -euo pipefail
cd "$(dirname "$0")/.."
MOTO_VERSION=5.2.5
VENV=.venv-s3
# Test workers may call this at the same moment: one sets up, the others wait and check.
if command -v flock >/dev/null; then
  exec 9>"$VENV.lock"
  flock 9
fi
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
stamp=$VENV/.installed-moto-$MOTO_VERSION
if [ ! -f "$stamp" ]; then
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
  rm -f "$VENV"/.installed-moto-*
  touch "$stamp"
fi
