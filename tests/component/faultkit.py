"""Shared by the fault tests (test_faults.py, test_tls.py, test_checkpoint_freeze.py) and
test_elastic_trainers.py: a `psjob launch` job in the background, the processes of a
`psjob run`, and what the tests read from them.

Tests have no packages, so the test modules load this file by path (`load`)."""
import importlib.util
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from psjob.foundation.checkpoint import cli as checkpoint_cli
from psjob.foundation.checkpoint import store

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
CKPT_SCRIPT = os.path.join(SCRIPTS, "checkpoint_train.py")
FLEET_SCRIPT = os.path.join(SCRIPTS, "fleet_train.py")
JOB_TIMEOUT = 60  # the launcher stops a run after this; a run that needs it counts as a hang


def load(path, name=None):
    """A helper module loaded by path (sys.path left alone)."""
    name = name or os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Job:
    """A `psjob launch` run in the background; its output is collected line by line
    (the supervisor announces every process start with its pid)."""

    def __init__(self, out, launch_args, script_args, env=None):
        os.makedirs(out, exist_ok=True)
        self.out, self.lines, self.t0 = out, [], time.monotonic()
        full_env = dict(os.environ, **(env or {}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "psjob.cli", "launch", "--log_dir", str(out / "log"),
             "--timeout", str(JOB_TIMEOUT), *launch_args, *script_args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full_env)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def text(self):
        return "".join(self.lines)

    def pid(self, name):
        """The pid of the newest start of process `name` ("pserver.0", "trainer.1"), or None."""
        pids = re.findall(rf"started {re.escape(name)} \(pid (\d+)", self.text)
        return int(pids[-1]) if pids else None

    def starts(self, name):
        return len(re.findall(rf"started {re.escape(name)} \(pid", self.text))

    def running(self):
        return self.proc.poll() is None

    def wait(self, bound):
        """Exit status; fails the test (after killing the job) if it has not ended within `bound` s."""
        try:
            self.proc.wait(timeout=bound)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the job hung: still running {bound}s later\n{self.text}{self.logs()}")
        self._reader.join(5)
        assert "job exceeded" not in self.text, "the job hung until the launcher's timeout\n" + self.logs()
        return self.proc.returncode

    def logs(self):
        log_dir = self.out / "log"
        if not log_dir.exists():
            return ""
        return "".join(f"\n--- {n}\n{(log_dir / n).read_text(errors='replace')[-2500:]}"
                       for n in sorted(os.listdir(log_dir)) if "log" in n)

    def kill(self):
        if self.running():
            self.proc.kill()
            self.proc.wait()


def wait_until(cond, bound, job, what):
    t_end = time.monotonic() + bound
    while not cond():
        if not job.running():
            return False
        assert time.monotonic() < t_end, f"{what} did not happen within {bound}s\n{job.text}{job.logs()}"
        time.sleep(0.02)
    return True


def newest_step(root):
    good = store.newest_good(str(root))
    return good.step if good else -1


def assert_checkpoints_sound(root):
    """The newest good checkpoint reads back whole, and `psjob checkpoint verify` agrees."""
    newest = store.newest_good(str(root))
    if newest is not None:
        assert store.verify(newest.path) == [], newest.path
        assert checkpoint_cli.main(["verify", str(root)]) == 0
    return newest


def environ_of(pid):
    items = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    return dict(i.decode(errors="replace").split("=", 1) for i in items if b"=" in i)


def job_processes(pid):
    """{("PSERVER"|"TRAINER", index): pid} of the job processes under `pid` (walks /proc)."""
    found, todo = {}, [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
            env = environ_of(p)
        except (OSError, ValueError):
            continue
        role = env.get("PADDLE_TRAINING_ROLE", "")
        index = env.get("PSJOB_PSERVER_INDEX") if role == "PSERVER" else env.get("PSJOB_TRAINER_ID")
        if role in ("PSERVER", "TRAINER") and index not in (None, "", "auto") and p != pid:
            found.setdefault((role, int(index)), p)  # the outermost process of that role
    return found


def signal_pending(pid, signum):
    """True while `signum` was sent to `pid` and not yet handled (e.g. the process is stopped)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return False
    bit = 1 << (signum - 1)
    return any(int(status[k], 16) & bit for k in ("SigPnd", "ShdPnd"))


def endpoints_of(job):
    return environ_of(job.pid("trainer.0"))["PADDLE_PSERVER_ENDPOINTS"].split(",")


def token_of(job):
    with open(environ_of(job.pid("trainer.0"))["PSJOB_AUTH_TOKEN_FILE"]) as f:
        return f.read().strip()


def exited(pid):
    """True once `pid` has exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
