#!/usr/bin/env bash
# First command of the README: set up, then run the main example job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh
exec .venv/bin/python -m psjob.examples.fit_a_line "$@"
