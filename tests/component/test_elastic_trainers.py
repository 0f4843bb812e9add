"""Elastic trainers with real processes: the pservers learn the trainer set at run time.

A job of 2 pservers starts with 2 trainers (capacity PSJOB_MAX_TRAINERS=3); a
third trainer joins mid-job, or one of the first two is scaled away (SIGTERM)
mid-job. No running trainer restarts and the job succeeds. In sync mode every
round must have had a gradient from every member it had: the pservers log each
membership change with the version (rounds applied) at which it happened, and
the trainers' steps must add up to the sum over rounds of the members of that
round — a round that went ahead without a member, or a step that never made a
round, breaks the equality.
"""
import contextlib
import dataclasses
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import yaml

from psjob import cli as psjob_cli
from psjob.foundation import roles
from psjob.launcher.launch import loopback_endpoints

_spec = importlib.util.spec_from_file_location(
    "faultkit", os.path.join(os.path.dirname(os.path.abspath(__file__)), "faultkit.py"))
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)

BOUND_S = 90


def trainer_args(epochs, examples=800):
    """800 examples in batches of 20: 20 steps a trainer an epoch with 2 trainers. One epoch
    where the trainers cannot outrun the event under test (it is awaited with them paused, or
    sync rounds gate them); two where an async trainer must still be training when it is
    stopped (at ~25 steps/s, 5 steps into a 20-step epoch leaves too little margin)."""
    return ["--examples", str(examples), "--batch", "20", "--epochs", str(epochs), "--log_every", "0.2"]


class ElasticJob:
    """2 pservers and the trainers the test starts, each a `psjob pserver|worker` process."""

    def __init__(self, tmp_path, mode, epochs, examples=800):
        self.tmp, self.procs, self.args = tmp_path, {}, trainer_args(epochs, examples)
        self.topology = roles.JobTopology(job_name="elastic", namespace="default",
                                          pserver_endpoints=tuple(loopback_endpoints(2)), trainers=2,
                                          mode=mode, metrics_port=0, k_steps=5 if mode == "geo" else 0)
        for i in range(2):
            self._start(f"pserver.{i}", roles.PSERVER, i, "pserver")

    def _start(self, name, role, index, subcommand, trainers=2):
        topology = dataclasses.replace(self.topology, trainers=trainers)  # as started at that moment
        env = dict(os.environ, **roles.role_environment(topology, role, index))
        env.update(PADDLE_TRAINERS=str(trainers), PSJOB_MAX_TRAINERS="3", PSJOB_METRICS_PORT="0")
        log = open(self.tmp / f"{name}.log", "w")
        self.procs[name] = (subprocess.Popen([sys.executable, "-m", "psjob.cli", subcommand, *self.args],
                                             env=env, stdout=log, stderr=subprocess.STDOUT), time.monotonic())

    def start_trainer(self, index, trainers=2):
        self._start(f"trainer.{index}", roles.TRAINER, index, "worker", trainers)

    def log(self, name):
        return (self.tmp / f"{name}.log").read_text()

    def steps(self, name):
        """The newest step count the trainer printed (progress lines and the final line)."""
        found = re.findall(r"\bsteps?=(\d+)", self.log(name))
        return int(found[-1]) if found else 0

    def wait_for(self, cond, what):
        deadline = time.monotonic() + BOUND_S
        while not cond():
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"timed out waiting for {what}\n" + self.dump())
            time.sleep(0.05)

    def wait_all(self):
        for name, (proc, _) in self.procs.items():
            try:
                rc = proc.wait(timeout=BOUND_S)
            except subprocess.TimeoutExpired:
                self.kill()
                pytest.fail(f"{name} hung\n" + self.dump())
            assert rc == 0, f"{name} exited {rc}\n" + self.dump()

    @contextlib.contextmanager
    def paused(self, *names):
        """These processes stopped (SIGSTOP) for the block: a trainer cannot finish its share
        meanwhile, however slowly the machine runs the others."""
        for name in names:
            self.procs[name][0].send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            for name in names:
                self.procs[name][0].send_signal(signal.SIGCONT)

    def kill(self):
        for proc, _ in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def dump(self):
        return "\n".join(f"--- {n}\n{self.log(n)[-3000:]}" for n in self.procs)

    def rounds_by_members(self, pserver):
        """[(from_version, member count)] of one pserver, from its membership log lines."""
        changes = re.findall(r"trainer \d+ (?:joined|left) at version (\d+); members \[([\d, ]*)\]",
                             self.log(pserver))
        return [(int(v), len([m for m in members.split(",") if m.strip()])) for v, members in changes]


def member_steps(changes, final_version):
    """Σ over rounds of the members that round had: each change holds from its version on."""
    total = 0
    for (version, members), nxt in zip(changes, changes[1:] + [(final_version, 0)]):
        total += members * (nxt[0] - version)
    return total


def final_version(job, pserver):
    # Every trainer's final line prints its steps; the pserver's version is the rounds applied.
    found = re.findall(r"at version (\d+); members \[\]", job.log(pserver))
    assert found, f"{pserver} never saw its last member leave\n" + job.log(pserver)
    return int(found[-1])


def resume_seconds(job, change, pserver="pserver.0"):
    """Seconds from a membership change ("trainer 2 joined") of a sync pserver to the first round
    applied with the new members (the pserver logs it)."""
    log = job.log(pserver)
    after = log[log.index(change):]
    return float(re.search(r"applied with members \[[\d, ]*\], ([\d.]+)s after they changed", after).group(1))


def check_sync_rounds(job, trainers):
    steps = sum(job.steps(t) for t in trainers)
    for pserver in ("pserver.0", "pserver.1"):
        changes = job.rounds_by_members(pserver)
        assert member_steps(changes, final_version(job, pserver)) == steps, (
            f"{pserver}: rounds × members {changes} do not account for the trainers' {steps} steps\n"
            + job.dump())


@pytest.mark.parametrize("mode", ["sync", "async", "half_async", "geo"])
def test_a_third_trainer_joins_mid_job(tmp_path, mode):
    # 60 steps a trainer: a geo trainer (no RPC per step) ran its 20 steps in 0.4 s, past the
    # progress line at step 4 and done before the test could pause it.
    job = ElasticJob(tmp_path, mode, epochs=1, examples=2400)
    try:
        job.start_trainer(0)
        job.start_trainer(1)
        job.wait_for(lambda: job.steps("trainer.0") >= 1, "trainer 0 to train")
        pids = {n: p.pid for n, (p, _) in job.procs.items()}
        # Trainers 0 and 1 cannot finish (and the pservers end) before the new one has joined.
        with job.paused("trainer.0", "trainer.1"):
            assert not any("finished" in job.log(t) for t in ("trainer.0", "trainer.1")), (
                "a trainer finished before the test could pause it: give it more steps\n" + job.dump())
            job.start_trainer(2, trainers=3)
            job.wait_for(lambda: all("trainer 2 joined" in job.log(p) for p in ("pserver.0", "pserver.1")),
                         "the new trainer joining")
        job.wait_for(lambda: job.steps("trainer.2") >= 1, "the new trainer's first step")
        resume_s = time.monotonic() - job.procs["trainer.2"][1]
        job.wait_all()
    finally:
        job.kill()
    assert {n: p.pid for n, (p, _) in job.procs.items() if n in pids} == pids  # nobody restarted
    for name in ("trainer.0", "trainer.1", "trainer.2"):
        assert re.search(r"finished steps=\d+", job.log(name)), job.dump()
    assert "trainer 2 joined" in job.log("pserver.0")
    stall = ""
    if mode == "sync":
        check_sync_rounds(job, ["trainer.0", "trainer.1", "trainer.2"])
        waited = resume_seconds(job, "trainer 2 joined")
        stall = f"; the round in progress waited {waited:.2f}s for the joiner"
    print(f"\n[elastic] {mode}: process start → first step of the new trainer {resume_s:.2f}s{stall}; "
          f"steps redone: 0")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_trainer_scaled_away_mid_job_leaves_cleanly(tmp_path, mode):
    # Async: enough epochs that trainer 1, running alone while trainer 0 is paused, is still
    # training when its SIGTERM lands (at 2 epochs a fast machine finished it first).
    job = ElasticJob(tmp_path, mode, epochs=1 if mode == "sync" else 10)
    try:
        job.start_trainer(0)
        job.start_trainer(1)
        # Trainer 0 must still have steps to train alone once trainer 1 has left. In sync mode
        # it cannot get ahead (every round waits for trainer 1 until it leaves); an async
        # trainer does not wait for the other, so it is paused from its first step until then.
        alone = contextlib.nullcontext()
        if mode == "async":
            job.wait_for(lambda: job.steps("trainer.0") >= 1, "trainer 0 to train")
            alone = job.paused("trainer.0")
        with alone:
            job.wait_for(lambda: job.steps("trainer.1") >= 5, "trainer 1 to train 5 steps")
            t0 = time.monotonic()
            job.procs["trainer.1"][0].send_signal(signal.SIGTERM)
            job.wait_for(lambda: "left the job" in job.log("trainer.1"), "trainer 1 to leave")
            leave_s = time.monotonic() - t0
        job.wait_all()
    finally:
        job.kill()
    assert "trainer 1 left" in job.log("pserver.0")
    # Trainer 0 went on alone: the pservers applied its updates after trainer 1 left.
    left = int(re.search(r"trainer 1 left at version (\d+)", job.log("pserver.0")).group(1))
    assert final_version(job, "pserver.0") > left + 2, job.dump()
    assert re.search(r"finished steps=\d+", job.log("trainer.0")), job.dump()
    resumed = ""
    if mode == "sync":
        check_sync_rounds(job, ["trainer.0", "trainer.1"])
        resumed = f"; next round {resume_seconds(job, 'trainer 1 left'):.2f}s after the leave"
    print(f"\n[elastic] {mode}: SIGTERM → trainer left {leave_s:.2f}s{resumed}; steps redone: 0")


# -- `psjob run` + `psjob scale` ---------------------------------------------------------------

def _run_job(tmp_path, worker):
    job = tmp_path / "elastic.yaml"
    job.write_text(yaml.safe_dump({
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob", "metadata": {"name": "elastic"},
        "spec": {"image": "psjob:test", "mode": "sync", "args": trainer_args(epochs=1),
                 "pserver": {"replicas": 2}, "worker": worker}}))
    return job


def _scale(workdir, workers):
    """`psjob scale` as a process: the command itself is under test."""
    return subprocess.run([sys.executable, "-m", "psjob.cli", "scale", str(workdir), "--workers", str(workers)],
                          capture_output=True, text=True)


def _scale_in_process(workdir, workers):
    """`psjob scale` run in this process (psjob.cli.main, as the command does) → exit code: the
    request lands at once, not after an interpreter start (~0.5 CPU-s of imports) that, on a
    loaded machine, lets the trainers run on. The command as a process is tested in
    test_psjob_scale_refuses_what_cannot_apply."""
    return psjob_cli.main(["scale", str(workdir), "--workers", str(workers)])


def test_psjob_scale_resizes_a_running_psjob_run(tmp_path):
    job, work = _run_job(tmp_path, {"replicas": 2, "maxReplicas": 3}), tmp_path / "work"
    proc = subprocess.Popen([sys.executable, "-m", "psjob.cli", "run", str(job), "--workdir", str(work)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    logs = work / "logs"

    def steps(i):
        path = logs / f"worker-{i}.log"
        found = re.findall(r"\bsteps?=(\d+)", path.read_text()) if path.exists() else []
        return int(found[-1]) if found else 0

    def wait_for(cond, what):
        deadline = time.monotonic() + BOUND_S
        while not cond():
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail(f"{what}: not seen\n{proc.communicate()[0]}")
            time.sleep(0.05)

    @contextlib.contextmanager
    def paused(index):
        """Trainer `index` stopped (SIGSTOP) for the block: in sync mode no round completes
        without it, so no other trainer gets ahead — on a loaded machine as on an idle one."""
        pid = kit.job_processes(proc.pid)[("TRAINER", index)]
        os.kill(pid, signal.SIGSTOP)
        try:
            yield pid
        finally:
            with contextlib.suppress(ProcessLookupError):  # killed with the run on a failure
                os.kill(pid, signal.SIGCONT)

    def joined(index):
        return all(f"trainer {index} joined" in (logs / f"pserver-{i}.log").read_text() for i in (0, 1))
    try:
        wait_for(lambda: steps(0) >= 3, "trainer 0 training")
        with paused(0):  # trainers 0 and 1 cannot finish before trainer 2, however slowly it starts
            assert _scale_in_process(work, 3) == 0
            wait_for(lambda: joined(2), "trainer 2 added by psjob scale joining")
        wait_for(lambda: steps(2) >= 2, "trainer 2 training")
        with paused(2) as trainer_2:  # it cannot finish its share before it is scaled away
            assert _scale_in_process(work, 2) == 0
            wait_for(lambda: kit.signal_pending(trainer_2, signal.SIGTERM), "psjob run stopping trainer 2")
        wait_for(lambda: "left the job" in (logs / "worker-2.log").read_text(), "trainer 2 scaled away")
        out, _ = proc.communicate(timeout=BOUND_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    pserver = (logs / "pserver-0.log").read_text()
    assert "trainer 2 joined" in pserver and "trainer 2 left" in pserver, pserver
    assert out.count("started worker.0") <= 1 and "restarting" not in out, out  # nobody restarted


def test_psjob_scale_refuses_what_cannot_apply(tmp_path):
    from psjob.foundation import roles
    work = tmp_path / "work"
    work.mkdir()
    topology = roles.JobTopology(job_name="fixed", namespace="default", pserver_endpoints=("127.0.0.1:1",),
                                 trainers=2)
    (work / "topology.json").write_text(json.dumps(roles.topology_to_dict(topology)))
    refused = _scale(work, 3)
    assert refused.returncode == 2 and "spec.worker.maxReplicas" in refused.stderr
    (work / "topology.json").write_text(json.dumps(roles.topology_to_dict(
        dataclasses.replace(topology, max_trainers=3))))
    refused = _scale(work, 4)
    assert refused.returncode == 2 and "scales from 1 to spec.worker.maxReplicas=3" in refused.stderr
    assert not (work / "scale-request.json").exists()
