"""Failure budget and start-up order under `psjob run` (real processes, real gRPC).

A pserver's trouble must never use up the trainers' failure budget: with
`runPolicy.backoffLimit: 0` a job whose pserver is killed, or frozen long
enough for the trainers to give up, still ends Succeeded. A trainer that gives
up exits 75 (roles.PSERVER_UNREACHABLE_EXIT) and is started again without
counting, as the worker Job's podFailurePolicy does on Kubernetes; a trainer
started while its pservers do not answer waits for them.
"""
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from test_run_job import finish, start_run, write_job

SERVING = re.compile(r"pserver 1 of 2 at (127\.0\.0\.2:\d+) .*pid (\d+)")


def wait_for_log(path, pattern, proc, timeout=90, count=1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            found = re.findall(pattern, path.read_text())
        except FileNotFoundError:
            found = []
        if len(found) >= count:
            return found[count - 1]
        time.sleep(0.05)
    raise AssertionError(f"{path.name} never showed {pattern!r} {count}x (run ended: "
                         f"{proc.poll()})")


def running_pserver_1(tmp_path, proc):
    logs = tmp_path / "work" / "logs"
    wait_for_log(logs / "worker-0.log", r"\[psjob\] checkpoint step 5 saved", proc)
    endpoint, pid = wait_for_log(logs / "pserver-1.log", SERVING, proc)
    return logs, endpoint, int(pid)


def test_a_pserver_killed_mid_job_with_backoff_limit_0_still_succeeds(tmp_path):
    job = write_job(tmp_path, args=["--examples", "40000", "--batch", "500"],
                    spec={"mode": "async", "checkpoint": {"intervalSteps": 5},
                          "runPolicy": {"backoffLimit": 0}})
    proc = start_run(job, tmp_path)
    logs, endpoint, pid = running_pserver_1(tmp_path, proc)
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    # Recovery: killed → restarted with the same index and endpoint → shard restored.
    wait_for_log(logs / "pserver-1.log", r"pserver 1 restores its shard from", proc)
    recovered = time.monotonic() - killed
    status, out = finish(proc)
    assert status == 0, out
    print(f"\npserver 1 killed; restarted and restored its shard {recovered:.2f} s later")
    summary = json.loads((tmp_path / "summary.json").read_text())
    by_name = {p["name"]: p for p in summary["processes"]}
    assert by_name["pserver-1"]["exit_history"] == [137, 0]
    assert all(by_name[f"worker-{i}"]["exit_history"] == [0] for i in (0, 1))
    assert summary["status"] == "Succeeded" and summary["examples"] == 40000


def test_trainers_that_give_up_on_a_frozen_pserver_are_restarted_without_counting(tmp_path):
    # Trainers give up after ~2 s of silence (1 s deadline, 2 s recovery window).
    impatient = [{"name": "PSJOB_RPC_DEADLINE_S", "value": "1"},
                 {"name": "PSJOB_RPC_MAX_ATTEMPTS", "value": "1"},
                 {"name": "PSJOB_PSERVER_RECOVERY_S", "value": "2"}]
    job = write_job(tmp_path, args=["--examples", "40000", "--batch", "500"],
                    spec={"mode": "async", "checkpoint": {"intervalSteps": 5},
                          "runPolicy": {"backoffLimit": 0},
                          "worker": {"replicas": 2, "env": impatient}})
    proc = start_run(job, tmp_path)
    logs, _, pid = running_pserver_1(tmp_path, proc)
    os.kill(pid, signal.SIGSTOP)  # alive but silent: a node that stopped answering
    try:
        wait_for_log(logs / "worker-0.log", r"exiting 75 to be started again", proc, timeout=60)
        # The restarted trainer starts while pserver 1 is still silent, and waits for it.
        wait_for_log(logs / "worker-0.log", r"trainer 0 of 2", proc, timeout=60, count=2)
    finally:
        os.kill(pid, signal.SIGCONT)
    status, out = finish(proc, timeout=180)
    assert status == 0, out
    assert re.search(r"worker 0 exited 75: its pservers were unreachable; restarting it "
                     r"\(not counted against runPolicy\.backoffLimit\)", out), out
    summary = json.loads((tmp_path / "summary.json").read_text())
    worker = {p["name"]: p for p in summary["processes"]}["worker-0"]
    assert worker["exit_history"][0] == 75 and worker["exit_history"][-1] == 0
    assert summary["status"] == "Succeeded"
