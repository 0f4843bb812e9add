"""Userland tier: Paddle code psjob's authors did not write, run under psjob by its own harnesses.

The code and harnesses live in the shared folder next to the checkout (`<repo>/../shared/userland`:
PaddleRec's rank models with its PS trainer, PaddlePaddle/models' Fluid 1.x CTR-DNN; in CI the
shared folder sits beside the checkout). PSJOB_USERLAND names the userland folder elsewhere (a git
worktree's checkout has none beside it). Without it every test here is skipped, saying so.

Each test runs one harness from the repository root with PY set to this interpreter, asserts its
verdict line, and puts the figures the harness printed (AUC, loss, examples, saved files) into the
assertion message. A harness keeps a failing run's work directory and names it.

Each test names its run with the `userland` marker; KNOWN_FAILING lists the runs that fail on this
branch and why, and makes them xfail, strict: a run that starts passing fails the tier until its
entry is removed, so the list stays true (`-rxX` shows both kinds). A run takes about a minute
on a quiet machine. The harnesses' own limits (180 s PaddleRec, 200 s CTR-DNN) are raised to 400 s
here (PADDLEREC_TIMEOUT, CTRDNN_TIMEOUT): the suite shares its cores with other work, and at load 13
on two cores PaddleRec's dnn was in its second epoch of three at 180 s.
"""
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# Why a run fails on this branch; the API gaps are closed on other branches.
KNOWN_FAILING: dict[str, str] = {}


def userland_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("PSJOB_USERLAND") or REPO.parent / "shared" / "userland")


@pytest.fixture(scope="session")
def userland() -> pathlib.Path:
    where = userland_dir()
    if not (where / "paddlerec" / "run.sh").is_file():
        pytest.skip(f"userland code not found at {where}: the userland tier needs the shared folder "
                    "beside the checkout (<repo>/../shared/userland), or PSJOB_USERLAND naming it")
    return where


def pytest_configure(config):
    config.addinivalue_line("markers", "userland(name): a run of the userland tier (KNOWN_FAILING's keys)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        mark = item.get_closest_marker("userland")
        if mark is not None and mark.args[0] in KNOWN_FAILING:
            item.add_marker(pytest.mark.xfail(
                reason=f"{mark.args[0]} is known to fail on this branch: {KNOWN_FAILING[mark.args[0]]}",
                strict=True))


@pytest.fixture(name="harness")
def harness_fixture():
    return run_harness


def run_harness(argv, *, timeout, env=None, cwd=REPO) -> subprocess.CompletedProcess:
    """Run a harness in its own process group (killed whole on timeout), output captured;
    `env` adds to this environment (a None value removes the variable)."""
    full = dict(os.environ)
    full["PY"] = sys.executable
    for name, value in (env or {}).items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    proc = subprocess.Popen(argv, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        out += f"\n(the harness ran past {timeout} s and was stopped)"
    return subprocess.CompletedProcess(argv, proc.returncode, out, "")
