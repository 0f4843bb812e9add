#!/usr/bin/env bash
# Second command of the README: set up, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh
exec .venv/bin/python -m pytest -q "$@"
