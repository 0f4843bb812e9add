#!/usr/bin/env bash
# First command of the README: set up, then train the example CTR job locally
# (2 pservers + 4 trainers as processes on this machine, the same
# ParameterServerJob YAML the operator runs on Kubernetes). Extra arguments go
# to `psjob run`, e.g. --summary run.json or --metrics-port 9100.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh
exec .venv/bin/python -m psjob.cli run examples/ctr-cpu.yaml "$@"
