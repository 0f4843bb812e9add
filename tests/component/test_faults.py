"""Faults on real jobs.

Every run here is a real `psjob launch` or `psjob run` job (pservers and trainers as
processes on 127.0.0.x, real gRPC, real checkpoint files), bounded by the launcher's
--timeout and by the test's own wait; the faults are real signals (SIGKILL, SIGSTOP) and a
really full file system (a small tmpfs). The contract each run checks: within its restart
budget it ends with a correct model — `psjob launch` restarts pservers, so it survives
pserver kills; `psjob run` also restarts trainers, so it survives trainer kills too — and
past it with a clear error naming the failed process; never a hang, and the newest good
checkpoint always verifies. The RPC over TLS is tested in test_tls.py,
a trainer 0 killed or paused inside a checkpoint freeze in test_checkpoint_freeze.py.

Random kill points come from seeded generators, so a failing seed can be rerun; each
test prints one summary line per run (run with -s to see them; PSJOB_FAULTS_DEBUG=1
also prints each `psjob launch` run's output).
"""
import errno
import importlib.util
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
import yaml

from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy
from psjob.foundation.checkpoint import store

_spec = importlib.util.spec_from_file_location(
    "faultkit", os.path.join(os.path.dirname(os.path.abspath(__file__)), "faultkit.py"))
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)

Job, CKPT_SCRIPT, FLEET_SCRIPT, JOB_TIMEOUT = kit.Job, kit.CKPT_SCRIPT, kit.FLEET_SCRIPT, kit.JOB_TIMEOUT
_wait_until, _newest_step, _assert_checkpoints_sound = kit.wait_until, kit.newest_step, kit.assert_checkpoints_sound
_endpoints_of, _token_of = kit.endpoints_of, kit.token_of
_descendants = kit.job_processes
_exited, _alive = kit.exited, kit.alive


# -- (a) SIGKILL at random points -----------------------------------------------------------

KILL_STEPS, KILL_INTERVAL = 80, 5
# `psjob launch` restarts pservers only: its runs kill pservers (trainer kills: under psjob run, below).
VICTIMS = ("pserver.0", "pserver.1")


def _kill_run(out, seed):
    """One job under `--pserver_restarts 3`; SIGKILL 1–3 seeded pserver victims at seeded
    delays once the first checkpoint exists. Returns a summary dict of what happened."""
    rng = random.Random(seed)
    mode = rng.choice(["sync", "async"])
    root = out / "ckpt"
    job = Job(out, ["--server_num", "2", "--worker_num", "2", "--mode", mode, "--checkpoint_dir", str(root),
                    "--pserver_restarts", "3"],
              [CKPT_SCRIPT, "--out", str(out), "--mode", mode, "--steps", str(KILL_STEPS),
               "--interval_steps", str(KILL_INTERVAL), "--sleep_ms", "10"])
    kills = []
    try:
        _wait_until(lambda: _newest_step(root) >= KILL_INTERVAL, 40, job, "the first checkpoint")
        for _ in range(rng.randint(1, 3)):
            # Short delays: the first kill lands while the trainers still have most of their steps.
            victim, delay = rng.choice(VICTIMS), rng.uniform(0.05, 0.5)
            time.sleep(delay)
            pid = job.pid(victim)
            if not job.running() or pid is None:
                break
            starts = job.starts(victim)
            if _exited(pid):
                continue  # it had just finished its work
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue  # it had just exited
            kills.append(f"{victim}@{delay:.2f}s/step{_newest_step(root)}")
            _wait_until(lambda: job.starts(victim) > starts, 20, job, f"the restart of {victim}")
        code = job.wait(JOB_TIMEOUT + 30)
    finally:
        job.kill()
    # A SIGKILL that lands while the victim is already exiting changes nothing: count those that told.
    summary = {"seed": seed, "mode": mode, "kills": kills, "kills_seen": job.text.count("with status 137"),
               "exit": code, "seconds": round(time.monotonic() - job.t0, 1)}
    newest = _assert_checkpoints_sound(root)
    summary["newest_checkpoint"] = newest.step if newest else None
    # A pserver killed after the trainers completed cannot learn the completions when it
    # restarts (they are kept only in the pservers' memory): it lingers or dies, and the
    # launcher stops it — the job succeeded all the same (docs/user/local-runs.md).
    lingered = "after every trainer completed" in job.text
    # At most 3 kills against 3 restarts per pserver: the job completes.
    assert code == 0, job.text + job.logs()
    trainer = json.loads((out / "trainer0.json").read_text())
    assert trainer["start"] + len(trainer["losses"]) == KILL_STEPS, trainer
    assert newest.step == KILL_STEPS
    # Correct model: despite shards rolled back to a checkpoint, the regression is fitted
    # (the first steps' loss is ~0.4).
    assert np.mean(trainer["losses"][-10:]) < 0.05, trainer["losses"][-10:]
    summary["outcome"] = "completed" + ("; pservers stopped after the trainers completed" if lingered else "")
    print(f"\n[faults] kill run {summary}")
    if os.environ.get("PSJOB_FAULTS_DEBUG"):
        print(job.text)
    return summary


@pytest.mark.parametrize("seed", [16, 19, 30])
def test_pserver_sigkills_at_seeded_random_points_under_launch_end_in_a_trained_model(tmp_path, seed):
    summary = _kill_run(tmp_path, seed)
    assert summary["kills"], summary  # the first kill lands within 0.5 s of the first checkpoint


# Victims: both pservers and both workers. Worker 0 coordinates checkpoints: killed between a
# FREEZE and its THAW, its restart thaws the pservers at once (test_checkpoint_freeze.py).
RUN_VICTIMS = (("PSERVER", 0), ("PSERVER", 1), ("TRAINER", 0), ("TRAINER", 1))
TRAINER_VICTIMS = RUN_VICTIMS[2:]


@pytest.mark.parametrize("seed", [24, 26, 33])
def test_sigkills_of_pservers_and_trainers_under_psjob_run_recover_within_the_restart_budget(tmp_path, seed):
    """`psjob run` restarts pservers (same endpoint) and workers (backoffLimit), as Kubernetes would.

    Every plan kills a trainer first, as soon as the first checkpoint exists, then 0–2
    seeded victims of either role: each killed trainer is restarted and the job succeeds."""
    rng = random.Random(seed)
    mode = rng.choice(["sync", "async"])
    job_yaml = tmp_path / "job.yaml"
    job_yaml.write_text(yaml.safe_dump({
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob", "metadata": {"name": f"kill{seed}"},
        "spec": {"image": "psjob:test", "mode": mode,
                 "args": ["--examples", "24000", "--batch", "300", "--distributed_table", "--log_every", "0.5"],
                 "pserver": {"replicas": 2}, "worker": {"replicas": 2}, "checkpoint": {"intervalSteps": 5},
                 "runPolicy": {"backoffLimit": 3, "activeDeadlineSeconds": JOB_TIMEOUT}}}))
    work, summary_path = tmp_path / "work", tmp_path / "summary.json"
    run = subprocess.Popen([sys.executable, "-m", "psjob.cli", "run", str(job_yaml), "--workdir", str(work),
                            "--summary", str(summary_path), "--progress-interval", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    root, kills = work / "checkpoints", []
    try:
        t_end = time.monotonic() + 40
        while _newest_step(root) < 5 and run.poll() is None:
            assert time.monotonic() < t_end, "no first checkpoint within 40 s"
            time.sleep(0.05)
        for kill in range(rng.randint(1, 3)):
            if kill == 0:
                (role, index), delay = rng.choice(TRAINER_VICTIMS), 0.0
            else:
                (role, index), delay = rng.choice(RUN_VICTIMS), rng.uniform(0.1, 1.0)
            time.sleep(delay)
            pid = _descendants(run.pid).get((role, index))
            t_find = time.monotonic() + 10
            while kill == 0 and (pid is None or _exited(pid)) and run.poll() is None \
                    and time.monotonic() < t_find:  # the first kill must land: look again
                time.sleep(0.05)
                pid = _descendants(run.pid).get((role, index))
            if run.poll() is not None:
                break
            if pid is None or _exited(pid):
                continue  # exited (a done worker) or being restarted right now
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            kills.append(f"{role.lower()}.{index}@{delay:.2f}s/step{_newest_step(root)}")
            # The next victim is looked up once the supervisor restarted this one.
            t_end = time.monotonic() + 30
            while _descendants(run.pid).get((role, index)) in (None, pid) and run.poll() is None:
                assert time.monotonic() < t_end, f"{role.lower()}.{index} was not restarted within 30 s"
                time.sleep(0.05)
        out, _ = run.communicate(timeout=JOB_TIMEOUT + 30)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        pytest.fail(f"psjob run hung after kills {kills}:\n{run.communicate()[0]}")
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    summary = json.loads(summary_path.read_text())
    newest = _assert_checkpoints_sound(root)
    restarts = sum(p["restarts"] for p in summary["processes"])
    print(f"\n[faults] psjob run seed={seed} mode={mode} kills={kills} -> {summary['status']} "
          f"(exit {run.returncode}, {summary['seconds']}s, {restarts} restart(s), "
          f"newest checkpoint {newest.step if newest else None})")
    # Within the restart budget every kill is survived: the job succeeds and each worker finished
    # its share, with a loss no worse than an untrained model's (log loss of a coin is 0.69).
    assert run.returncode == 0 and summary["status"] == "Succeeded", out
    assert all(t["finished"] for t in summary["trainers"]), summary["trainers"]
    assert summary["loss"] is not None and summary["loss"] < 0.69, summary
    # The first kill, of a trainer, always landed; each killed process was restarted.
    assert kills and kills[0].startswith("trainer"), kills
    restarted = {(p["role"], p["index"]): p["restarts"] for p in summary["processes"]}
    for victim in {k.split("@")[0] for k in kills}:
        role, index = victim.split(".")
        # A trainer killed after the pservers recorded its completion is done, not restarted.
        done = out.count(f"worker {index} exited with status 137 after") if role == "trainer" else 0
        assert restarted[(role.upper(), int(index))] >= sum(k.startswith(victim + "@") for k in kills) - done, \
            (victim, kills, summary["processes"])


# -- (b) a pserver paused past the RPC deadline ------------------------------------------------

PAUSE_STEPS = 150

def _paused_run(out, pause_s, max_attempts, launch_args=()):
    """A 1-pserver, 1-trainer sync job (deadline 1 s per attempt, no recovery window beyond
    the attempts); SIGSTOP the pserver for `pause_s` (or until the job ended) once 10 rounds
    are done. Returns (job, seconds the job still ran after the SIGSTOP)."""
    env = {"PSJOB_RPC_DEADLINE_S": "1", "PSJOB_RPC_BARRIER_DEADLINE_S": "1",
           "PSJOB_RPC_MAX_ATTEMPTS": str(max_attempts), "PSJOB_PSERVER_RECOVERY_S": "0"}
    job = Job(out, ["--server_num", "1", "--worker_num", "1", *launch_args],
              [FLEET_SCRIPT, "--mode", "sync", "--out", str(out), "--steps", str(PAUSE_STEPS), "--sleep_ms", "20"],
              env=env)
    try:
        _wait_until(lambda: job.pid("trainer.0"), 30, job, "the trainer's start")
        endpoint, token = _endpoints_of(job)[0], _token_of(job)
        probe = GrpcPSClient([endpoint], auth_token=token, retry=RetryPolicy(deadline_s=2, max_attempts=1))
        # The pserver process may still be starting on a loaded machine: wait until it serves.
        probe.wait_server_ready([endpoint], timeout_s=60)
        # Mid-training: the pserver has finished 10 of the rounds (one per step).
        _wait_until(lambda: probe.status(endpoint).version >= 10, 30, job, "10 training rounds")
        probe.close()
        pserver = job.pid("pserver.0")
        os.kill(pserver, signal.SIGSTOP)
        stopped_at = time.monotonic()
        try:
            while time.monotonic() - stopped_at < pause_s and job.running():
                time.sleep(0.05)
        finally:
            if _alive(pserver):
                os.kill(pserver, signal.SIGCONT)
        job.wait(JOB_TIMEOUT + 30)
    finally:
        job.kill()
    return job, time.monotonic() - stopped_at


def test_a_pserver_paused_longer_than_the_deadline_but_within_the_retries_is_waited_for(tmp_path):
    job, _ = _paused_run(tmp_path / "paused", pause_s=2.5, max_attempts=8)
    assert job.proc.returncode == 0, job.text + job.logs()
    # Retried sync pushes are deduplicated: the model is exactly the one of an unpaused run.
    ref = Job(tmp_path / "ref", ["--server_num", "1", "--worker_num", "1"],
              [FLEET_SCRIPT, "--mode", "sync", "--out", str(tmp_path / "ref"), "--steps", str(PAUSE_STEPS)])
    assert ref.wait(60) == 0, ref.text + ref.logs()
    got, want = np.load(tmp_path / "paused" / "trainer0.npz"), np.load(tmp_path / "ref" / "trainer0.npz")
    for name in want.files:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    print("\n[faults] SIGSTOP 2.5 s, deadline 1 s x 8 attempts -> completed, model equal to the unpaused run")


def test_a_pserver_paused_past_every_retry_fails_the_trainer_with_deadline_exceeded_within_a_bound(tmp_path):
    # The paused pserver cannot act on the SIGTERM that stops the job: the launcher kills it once
    # --stop_grace (10 s by default) is over.
    job, after_stop = _paused_run(tmp_path, pause_s=30, max_attempts=2, launch_args=["--stop_grace", "2"])
    assert job.proc.returncode != 0, job.text
    worker_log = (tmp_path / "log" / "workerlog.0").read_text()
    assert "DEADLINE_EXCEEDED" in worker_log and "to pserver 127.0.0.1:" in worker_log, worker_log
    assert "trainer.0 failed with status 1 and has no restarts left" in job.text, job.text
    # 2 attempts of 1 s plus backoff, then the launcher's 2 s stop grace for the frozen pserver.
    assert after_stop < 12, after_stop
    print(f"\n[faults] SIGSTOP 30 s, deadline 1 s x 2 attempts -> trainer failed with DEADLINE_EXCEEDED, "
          f"job over {after_stop:.1f} s after the SIGSTOP")


# -- (c) the checkpoint directory's disk fills up ------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 8 MiB tmpfs (needs root or CAP_SYS_ADMIN; the test is skipped without)."""
    mount_point = tmp_path / "ckpt"
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "psjob-faults", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(directory):
    """Write a filler file until the file system refuses even one more byte; returns its size."""
    size = 0
    with open(os.path.join(directory, "filler"), "wb", buffering=0) as f:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1):
            while True:
                try:
                    size += f.write(b"\0" * chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    return size


def test_a_full_checkpoint_disk_fails_saves_cleanly_and_the_last_good_checkpoint_stays_newest(tmp_path,
                                                                                                small_disk):
    root, steps = small_disk, 80
    job = Job(tmp_path, ["--server_num", "2", "--worker_num", "2", "--checkpoint_dir", str(root)],
              [CKPT_SCRIPT, "--out", str(tmp_path), "--steps", str(steps), "--interval_steps", "5",
               "--sleep_ms", "20"])
    try:
        _wait_until(lambda: _newest_step(root) >= 15, 40, job, "three checkpoints")
        before = _newest_step(root)
        filled = _fill(root)
        at_full = _newest_step(root)
        code = job.wait(JOB_TIMEOUT + 30)
    finally:
        job.kill()
    # Training went on: every step ran and the job succeeded, the failed saves reported.
    assert code == 0, job.text + job.logs()
    trainer = json.loads((tmp_path / "trainer0.json").read_text())
    assert trainer["start"] == 0 and len(trainer["losses"]) == steps
    assert trainer["failures"] and all("No space left on device" in f for f in trainer["failures"]), trainer
    # No save after the disk filled up was committed; the newest good one is whole.
    newest = _assert_checkpoints_sound(root)
    assert before <= newest.step <= at_full < steps, (before, at_full, newest.step)
    print(f"\n[faults] disk full ({filled >> 10} KiB filler) at step {at_full}: {len(trainer['failures'])} "
          f"save(s) failed, job completed, newest good checkpoint step {newest.step} verifies")



# -- (d) psjob run with a full disk ------------------------------------------------------------

def _tmpfs(path, size):
    """Mount a tmpfs of `size` at `path` (skips the test without the privilege); unmount it."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "psjob-faults", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    return lambda: subprocess.run(["umount", "-l", str(path)], check=False)


def _run_job(tmp_path, name, examples, extra=()):
    job_yaml = tmp_path / f"{name}.yaml"
    job_yaml.write_text(yaml.safe_dump({
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob", "metadata": {"name": name},
        "spec": {"image": "psjob:test", "mode": "sync",
                 "args": ["--examples", str(examples), "--batch", "200", "--distributed_table",
                          "--log_every", "0.5"],
                 "pserver": {"replicas": 2}, "worker": {"replicas": 2}, "checkpoint": {"intervalSteps": 5},
                 "runPolicy": {"backoffLimit": 3, "activeDeadlineSeconds": JOB_TIMEOUT * 2}}}))
    return subprocess.Popen([sys.executable, "-m", "psjob.cli", "run", str(job_yaml), "--workdir",
                             str(tmp_path / "work"), "--summary", str(tmp_path / "summary.json"),
                             "--progress-interval", "1", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _until(cond, bound, run, what):
    t_end = time.monotonic() + bound
    while not cond():
        if run.poll() is not None:
            pytest.fail(f"the job ended before {what}:\n{run.communicate()[0]}")
        if time.monotonic() > t_end:
            os.killpg(run.pid, signal.SIGKILL)
            pytest.fail(f"{what} did not happen within {bound}s:\n{run.communicate()[0]}")
        time.sleep(0.05)


def _finish(run, bound):
    try:
        out, _ = run.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        pytest.fail(f"psjob run hung:\n{run.communicate()[0]}")
    return run.returncode, out


def test_a_full_checkpoint_disk_under_psjob_run_is_shown_on_the_terminal_in_the_summary_and_the_metrics(
        tmp_path):
    """Only the checkpoint directory's file system fills up: training goes on, every later save
    fails — shown on trainer 0's progress line, in the summary (line and JSON), and on pserver
    0's /metrics (what the operator puts in status.lastCheckpoint) — and leaves no partial step-*
    directory behind."""
    from psjob.launcher.launch import free_port_block
    root = tmp_path / "work" / "checkpoints"
    unmount = _tmpfs(root, "96m")  # room for the first checkpoints (a few MiB each), then filled
    ports = free_port_block(4)
    run = _run_job(tmp_path, "ckptfull", 60000, ("--metrics-port", str(ports)))
    try:
        _until(lambda: _newest_step(root) >= 10, 60, run, "the second checkpoint")
        filled = _fill(root)
        worker_log = tmp_path / "work" / "logs" / "worker-0.log"
        _until(lambda: "No space left on device" in worker_log.read_text(errors="replace"), 60, run,
               "a failed save")
        page = ""

        def reported():
            nonlocal page
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ports}/metrics", timeout=5) as r:
                    page = r.read().decode()
            except OSError:
                return False
            return "psjob_pserver_checkpoint_failures_total" in page and \
                "psjob_pserver_checkpoint_failures_total 0.0" not in page
        _until(reported, 30, run, "pserver 0 reporting the failed save")
        code, out = _finish(run, JOB_TIMEOUT * 2 + 30)
        newest = _assert_checkpoints_sound(root)
        leftovers = [c.path for c in store.scan(str(root)) if not c.ok]
        listing = [list(os.walk(p)) for p in leftovers]
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        unmount()
    assert code == 0, out
    summary = json.loads((tmp_path / "summary.json").read_text())
    failures = summary["checkpoint_failures"]
    assert summary["status"] == "Succeeded" and failures and failures["count"] >= 1, summary
    assert "No space left on device" in failures["last_error"], failures
    assert failures["since_last_saved"] == failures["count"], failures  # none succeeded after the fill
    assert re.search(r"worker 0: .*ckpt step-\d+ \(\d+ checkpoint save\(s\) failed since, the last at step "
                     r"\d+: \[Errno 28\] No space left on device\)", out), out
    assert re.search(r"\[psjob\] \d+ checkpoint save\(s\) failed, \d+ since the last good one; the last "
                     r"at step \d+: .*No space left on device", out), out
    assert re.search(r'psjob_pserver_last_checkpoint_failure_step\{error="[^"]*No space left on device',
                     page), page
    assert summary["newest_checkpoint"]["step"] == newest.step < failures["last_step"]
    assert not leftovers, f"partial checkpoint directories left behind: {leftovers} {listing}"
    print(f"\n[faults] checkpoint disk full ({filled >> 10} KiB filler): {failures['count']} save(s) failed, "
          f"job succeeded, newest good checkpoint step {newest.step}")


def test_a_full_workdir_fails_the_job_at_once_naming_enospc(tmp_path):
    """The workdir's file system (logs, checkpoints) fills up while the job trains: the first
    process that dies of it ends the job with a reason naming ENOSPC, without burning the
    restart budget on processes that cannot write their log."""
    unmount = _tmpfs(tmp_path / "work", "16m")
    run = _run_job(tmp_path, "diskfull", 2_000_000)
    try:
        worker_log = tmp_path / "work" / "logs" / "worker-0.log"
        _until(lambda: worker_log.exists() and "trainer=0 epoch=" in worker_log.read_text(errors="replace"),
               60, run, "the first progress line")
        # Keep it full: a failed save that removes its partial files, or a log's last page,
        # frees a little room that the processes would otherwise write on for a while.
        fillers = 0
        t_end = time.monotonic() + 90
        while run.poll() is None and time.monotonic() < t_end:
            with open(tmp_path / "work" / f"filler-{fillers}", "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"\0" * 4096)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
            fillers += 1
            time.sleep(0.05)
        code, out = _finish(run, 30)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        unmount()
    assert code != 0, out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["reason"].startswith("DiskFull: the file system holding "), summary["reason"]
    assert "is full (ENOSPC, No space left on device)" in summary["reason"], summary["reason"]
    assert "DiskFull" in out and sum(p["restarts"] for p in summary["processes"]) == 0, out
