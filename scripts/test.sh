#!/usr/bin/env bash
# Second command of the README: set up, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-venv.sh
# Two workers, each taking whole test files (module fixtures such as the S3 server are
# shared by a file's tests): the suite spends most of its time on processes starting and
# waiting on each other, so two workers finish it in ~0.6x the time of one even on two
# cores. PSJOB_TEST_WORKERS=0 runs it in this process; arguments after ours win.
exec .venv/bin/python -m pytest -q -n "${PSJOB_TEST_WORKERS:-2}" --dist loadfile "$@"
