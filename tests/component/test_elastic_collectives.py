"""fleet.util collectives in an elastic job wait for the live members, not the capacity.

Real processes: one pserver and the trainers of a Paddle 2.x-style fleet script
(scripts/elastic_collectives.py) under the elastic environment the operator gives
(PSJOB_MAX_TRAINERS = capacity 2, trainers joining and leaving pserver 0's member
set). Each trainer contributes worker_index + 1 to a summed all_reduce.
"""
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

from psjob.foundation import roles
from psjob.launcher.launch import loopback_endpoints

SCRIPT = pathlib.Path(__file__).parent / "scripts" / "elastic_collectives.py"
BOUND_S = 90


class Job:
    def __init__(self, tmp_path):
        self.tmp, self.procs = tmp_path, {}
        self.topology = roles.JobTopology(job_name="collectives", namespace="default",
                                          pserver_endpoints=tuple(loopback_endpoints(1)),
                                          trainers=2, mode="sync", metrics_port=0)
        self._start("pserver", roles.PSERVER, 0)

    def _start(self, name, role, index, plan=""):
        env = dict(os.environ, **roles.role_environment(self.topology, role, index))
        env.update(PSJOB_MAX_TRAINERS="2", PSJOB_METRICS_PORT="0")
        log = open(self.tmp / f"{name}.log", "w")
        self.procs[name] = subprocess.Popen([sys.executable, str(SCRIPT), "--plan", plan], env=env,
                                            stdout=log, stderr=subprocess.STDOUT)

    def trainer(self, index, plan):
        self._start(f"trainer.{index}", roles.TRAINER, index, plan)

    def log(self, name):
        return (self.tmp / f"{name}.log").read_text()

    def sums(self, name):
        return [float(s) for s in re.findall(r"all_reduce: ([\d.]+)", self.log(name))]

    def wait_for(self, cond, what):
        deadline = time.monotonic() + BOUND_S
        while not cond():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}\n{self.dump()}")
            time.sleep(0.05)

    def finish(self):
        for name, proc in self.procs.items():
            try:
                assert proc.wait(timeout=BOUND_S) == 0, f"{name} failed\n{self.dump()}"
            except subprocess.TimeoutExpired:
                pytest.fail(f"{name} hung\n{self.dump()}")

    def kill(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def dump(self):
        return "\n".join(f"--- {n}\n{self.log(n)[-3000:]}" for n in self.procs)


@pytest.fixture
def job(tmp_path):
    job = Job(tmp_path)
    yield job
    job.kill()


def test_scaled_from_2_to_1_the_remaining_trainer_all_reduces_alone(job, tmp_path):
    both, gone = tmp_path / "both-joined", tmp_path / "trainer-1-gone"
    # (A collective opened before a trainer joined would complete without it: both join first.)
    job.trainer(0, f"wait:{both},reduce,wait:{gone},reduce")
    job.trainer(1, f"wait:{both},reduce")  # then leaves (stop_worker: Complete)
    job.wait_for(lambda: all(f"trainer {i} joined" in job.log(f"trainer.{i}") for i in (0, 1)),
                 "both trainers joined")
    both.touch()
    assert job.procs["trainer.1"].wait(timeout=BOUND_S) == 0, job.dump()
    gone.touch()
    job.finish()
    assert job.sums("trainer.1") == [3.0]  # 1 + 2, both members
    assert job.sums("trainer.0") == [3.0, 1.0]  # then its own value: the only live member


def test_scaled_from_1_to_2_the_joiner_meets_the_member_at_its_next_collective(job, tmp_path):
    joined = tmp_path / "trainer-1-joined"
    job.trainer(0, f"reduce,wait:{joined},reduce,reduce")
    job.wait_for(lambda: job.sums("trainer.0") == [1.0], "trainer 0's all_reduce alone")
    job.trainer(1, "reduce,reduce")  # its collectives count from 0; trainer 0 is at 1
    job.wait_for(lambda: "trainer 1 joined" in job.log("trainer.1"), "trainer 1 joined")
    joined.touch()
    job.finish()
    assert job.sums("trainer.0") == [1.0, 3.0, 3.0]
    assert job.sums("trainer.1") == [3.0, 3.0]
