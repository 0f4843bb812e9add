"""Component tier: real pserver and trainer processes talking gRPC on 127.0.0.x.

Real: every process (started by `psjob launch` or by the tests with the role
environment), the gRPC transport, the pserver runtime, the transpiled programs.
Faked: nothing. Each run is bounded by a timeout and leaves no process behind.
"""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(REPO, "tests", "component", "scripts")
PSJOB = [sys.executable, "-m", "psjob.cli"]


def launch(args, *, timeout=240, env=None, cwd=None):
    """Run `psjob launch ARGS...`; returns the CompletedProcess (output captured)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(PSJOB + ["launch", *args], capture_output=True, text=True, timeout=timeout,
                          env=full_env, cwd=cwd)


def read_logs(log_dir):
    out = []
    for name in sorted(os.listdir(log_dir)):
        if "log" in name:
            with open(os.path.join(log_dir, name), errors="replace") as f:
                out.append(f"--- {name}\n{f.read()[-3000:]}")
    return "\n".join(out)


@pytest.fixture(name="launch")
def launch_fixture():
    return launch


@pytest.fixture(name="read_logs")
def read_logs_fixture():
    return read_logs


@pytest.fixture
def script():
    return lambda name: os.path.join(SCRIPTS, name)
