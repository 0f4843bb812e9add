"""A checkpoint's freeze cannot outlive trainer 0 by more than its short lease.

Trainer 0 freezes every pserver (no update applied) while it captures a checkpoint,
renews the freeze's lease (PSJOB_CHECKPOINT_FREEZE_LEASE_S) while it saves, and thaws.
To land a fault inside that window every time, trainer 0 runs checkpoint_train.py
through a wrapper that, at chosen checkpoints, stops inside the freeze (after the
pservers acknowledged it, before anything is pulled) and writes a marker with its pid;
the protocol itself is psjob's, over real gRPC between real processes. Then:

- SIGKILL of trainer 0 there, under `psjob run` (workers restart): the restarted
  trainer 0 thaws the freeze its predecessor left and the job finishes in seconds,
  not the 600 s the freeze used to hold;
- a save held longer than the lease still commits (the lease is renewed), while
  trainer 0 SIGSTOPped inside the freeze lets the lease lapse: the other trainer's
  updates flow again within the lease, and the save is abandoned without a manifest.

The newest good checkpoint verifies after every run.
"""
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import yaml

from psjob.cluster import checkpoint_protocol as protocol
from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy
from psjob.foundation.checkpoint import store
from psjob.foundation.checkpoint.format import MANIFEST

_spec = importlib.util.spec_from_file_location(
    "faultkit", os.path.join(os.path.dirname(os.path.abspath(__file__)), "faultkit.py"))
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)

# Runs checkpoint_train.py; trainer 0 stops inside the freeze of the first checkpoint at or
# after each step of FREEZE_HOLD_STEPS, for the matching FREEZE_HOLD_SECONDS, once each
# ("stop": it SIGSTOPs itself there, until the test sends SIGCONT).
HOLDING_WRAPPER = r"""
import os, runpy, signal, sys, time
import psjob.cluster.trainer.checkpoint_save as distributed

HOLD_DIR = os.environ["FREEZE_HOLD_DIR"]
HOLDS = list(zip([int(s) for s in os.environ["FREEZE_HOLD_STEPS"].split(",")],
                 os.environ["FREEZE_HOLD_SECONDS"].split(",")))
capture = distributed._capture

def holding_capture(client, dirname, request, *args, **kwargs):
    if os.environ.get("PADDLE_TRAINER_ID") == "0" and request.step is not None:
        for i, (at, seconds) in enumerate(HOLDS):
            marker = os.path.join(HOLD_DIR, f"hold-{i}")
            if request.step >= at and not os.path.exists(marker):
                with open(marker + ".tmp", "w") as f:
                    json_text = '{"pid": %d, "step": %d}' % (os.getpid(), request.step)
                    f.write(json_text)
                os.replace(marker + ".tmp", marker)  # the pservers are frozen right now
                if seconds == "stop":
                    os.kill(os.getpid(), signal.SIGSTOP)  # renewals stop with it
                else:
                    time.sleep(float(seconds))
                break
    return capture(client, dirname, request, *args, **kwargs)

distributed._capture = holding_capture
script = os.environ["FREEZE_TRAIN_SCRIPT"]
sys.argv = [script] + sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""


def _wrapper(tmp_path):
    path = tmp_path / "holding_train.py"
    path.write_text(HOLDING_WRAPPER)
    (tmp_path / "holds").mkdir()
    return str(path)


def _hold(tmp_path, i):
    marker = tmp_path / "holds" / f"hold-{i}"
    return json.loads(marker.read_text()) if marker.exists() else None


def _wait(cond, bound, alive, what, output=lambda: ""):
    t_end = time.monotonic() + bound
    while not cond():
        assert alive(), f"the job ended before {what}\n{output()}"
        assert time.monotonic() < t_end, f"{what} did not happen within {bound}s\n{output()}"
        time.sleep(0.02)


def _stopped(pid) -> bool:
    """The process is stopped by a signal (state T in /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def _no_manifest(root, step):
    return not os.path.exists(os.path.join(str(root), store.step_dirname(step), MANIFEST))


# -- the pserver's side of the lease, on a real pserver state ------------------------------

class SteppedClock:
    """The freeze leases' clock, moved by the test: lease arithmetic without sleeping."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def _pserver_state(clock=time.monotonic):
    import psjob.fluid as fluid
    from psjob.cluster.pserver.pserver_state import PserverState
    from psjob.fluid.transpiler import DistributeTranspiler
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(fluid.layers.fc(x, 1)))
    ep = "127.0.0.1:6170"
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=ep, trainers=1, sync_mode=False)
    program = tr.get_pserver_program(ep)
    state = PserverState(program, scope=fluid.Scope(), executor=fluid.Executor(), clock=clock)
    state.run_startup(tr.get_startup_program(ep, program))
    return state


def _say(state, command, **params):
    return protocol.decode_reply(state.endpoint, state.on_checkpoint("", 1, protocol.tag(command, **params)))


def _frozen(state):
    return state.frozen


def test_a_freeze_is_renewed_only_by_its_own_save_and_released_by_an_id_less_thaw():
    clock = SteppedClock()
    state = _pserver_state(clock)
    _say(state, protocol.FREEZE, id="a", lease=0.3)
    clock.advance(0.2)
    assert _say(state, protocol.RENEW, id="a", lease=0.3)["expired"] is False
    clock.advance(0.2)
    assert _frozen(state)  # 0.4 s after a 0.3 s freeze: the renewal carried it
    assert _say(state, protocol.RENEW, id="other", lease=30)["expired"] is True  # not its freeze
    clock.advance(0.3)
    assert not _frozen(state)  # the renewed lease ended at 0.5 s
    # A renewal after the lease ran out never freezes anew: the cut is already broken.
    assert _say(state, protocol.RENEW, id="a", lease=30)["expired"] is True and not _frozen(state)
    assert _say(state, protocol.THAW, id="a")["expired"] is True
    # A restarted trainer 0's id-less thaw releases a live freeze; the dead save's own
    # thaw (or a late renewal) then finds its freeze gone.
    _say(state, protocol.FREEZE, id="b", lease=30)
    assert _say(state, protocol.THAW)["released"] is True and not _frozen(state)
    assert _say(state, protocol.RENEW, id="b", lease=30)["expired"] is True
    assert _say(state, protocol.THAW, id="b")["expired"] is True
    # A newer freeze replaces an older one; the older one's thaw leaves it in place.
    _say(state, protocol.FREEZE, id="c", lease=30)
    _say(state, protocol.FREEZE, id="d", lease=30)
    assert _say(state, protocol.THAW, id="c")["expired"] is True and _frozen(state)
    assert _say(state, protocol.THAW, id="d") == {"incarnation": state.incarnation, "expired": False,
                                                  "released": False}
    assert not _frozen(state)


def test_the_lease_comes_from_the_environment_and_bad_values_are_named():
    from psjob.foundation.settings import Settings
    assert Settings({}).checkpoint.freeze_lease_s == protocol.DEFAULT_FREEZE_LEASE_S == 10.0
    assert Settings({"PSJOB_CHECKPOINT_FREEZE_LEASE_S": "2.5"}).checkpoint.freeze_lease_s == 2.5
    for bad in ("soon", "0", "-1", "nan", "inf"):
        with pytest.raises(ValueError, match=f"PSJOB_CHECKPOINT_FREEZE_LEASE_S='{bad}'"):
            Settings({"PSJOB_CHECKPOINT_FREEZE_LEASE_S": bad}).checkpoint
    from psjob.fleet import CheckpointConfig
    assert CheckpointConfig.of(Settings({"PSJOB_CHECKPOINT_FREEZE_LEASE_S": "3"})).freeze_lease_s == 3.0
    with pytest.raises(ValueError, match="lease='x' is not a number"):
        _say(_pserver_state(), protocol.FREEZE, id="a", lease="x")


# -- real jobs ------------------------------------------------------------------------------

RUN_STEPS = 60


def test_trainer_0_killed_inside_a_freeze_is_thawed_by_its_restart_and_the_job_finishes_in_seconds(tmp_path):
    wrapper = _wrapper(tmp_path)
    hold_env = [{"name": "FREEZE_HOLD_DIR", "value": str(tmp_path / "holds")},
                {"name": "FREEZE_HOLD_STEPS", "value": "15"},
                {"name": "FREEZE_HOLD_SECONDS", "value": "600"},  # until it is killed
                {"name": "FREEZE_TRAIN_SCRIPT", "value": kit.CKPT_SCRIPT}]
    job_yaml = tmp_path / "job.yaml"
    job_yaml.write_text(yaml.safe_dump({
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob", "metadata": {"name": "freeze"},
        "spec": {"image": "psjob:test", "mode": "sync", "command": ["python", wrapper],
                 "args": ["--out", str(tmp_path), "--steps", str(RUN_STEPS), "--sleep_ms", "10"],
                 "pserver": {"replicas": 2, "env": hold_env}, "worker": {"replicas": 2, "env": hold_env},
                 "checkpoint": {"intervalSteps": 5},
                 "runPolicy": {"backoffLimit": 1, "activeDeadlineSeconds": 120}}}))
    work, summary_path = tmp_path / "work", tmp_path / "summary.json"
    run = subprocess.Popen([sys.executable, "-m", "psjob.cli", "run", str(job_yaml), "--workdir", str(work),
                            "--summary", str(summary_path), "--progress-interval", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
    reader.start()
    root = work / "checkpoints"
    try:
        _wait(lambda: _hold(tmp_path, 0), 60, lambda: run.poll() is None, "trainer 0's hold inside a freeze",
              lambda: "".join(lines))
        held = _hold(tmp_path, 0)
        os.kill(held["pid"], signal.SIGKILL)
        killed_at = time.monotonic()
        run.wait(timeout=90)
        after_kill = time.monotonic() - killed_at
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    reader.join(5)
    output = "".join(lines)
    summary = json.loads(summary_path.read_text())
    assert run.returncode == 0 and summary["status"] == "Succeeded", output
    worker0 = (work / "logs" / "worker-0.log").read_text()
    assert "released the checkpoint freeze an earlier trainer 0 left" in worker0, worker0[-3000:]
    # The job was over within seconds of the kill, not after the freeze's old 600 s.
    assert after_kill < 60, after_kill
    # The interrupted save never became a checkpoint; the newest good one is whole and
    # the last: the restarted trainer 0 checkpointed on to the end.
    assert _no_manifest(root, held["step"])
    newest = kit.assert_checkpoints_sound(root)
    assert newest.step == RUN_STEPS, newest
    trainer = json.loads((tmp_path / "trainer0.json").read_text())
    assert trainer["start"] < held["step"] and trainer["start"] + len(trainer["losses"]) == RUN_STEPS
    assert np.mean(trainer["losses"][-10:]) < 0.05, trainer["losses"][-10:]
    print(f"\n[faults] trainer 0 SIGKILLed inside the freeze of step {held['step']}: restarted, thawed, "
          f"job succeeded {after_kill:.1f} s later; newest checkpoint step {newest.step}")


# Trainer 0 stops at step 20: trainer 1 (paced like it, and held by the same freezes) still
# has most of its steps to push after the lease lapses.
LAUNCH_STEPS = 100


def test_a_long_save_renews_its_lease_and_a_paused_trainer_0_lets_it_lapse(tmp_path):
    """Async, lease 1 s: a save held 2 s (two leases) inside its freeze commits (renewed); trainer 0
    stopped (SIGSTOP) inside the next freeze lets the lease lapse, trainer 1's updates flow
    again, and that save is abandoned without a manifest."""
    wrapper = _wrapper(tmp_path)
    root = tmp_path / "ckpt"
    env = {"PSJOB_CHECKPOINT_FREEZE_LEASE_S": "1", "FREEZE_HOLD_DIR": str(tmp_path / "holds"),
           "FREEZE_HOLD_STEPS": "10,20", "FREEZE_HOLD_SECONDS": "2,stop", "FREEZE_TRAIN_SCRIPT": kit.CKPT_SCRIPT}
    job = kit.Job(tmp_path, ["--server_num", "1", "--worker_num", "2", "--mode", "async",
                             "--checkpoint_dir", str(root)],
                  [wrapper, "--out", str(tmp_path), "--mode", "async", "--steps", str(LAUNCH_STEPS),
                   "--interval_steps", "5", "--sleep_ms", "20", "--no_table"], env=env)
    try:
        kit.wait_until(lambda: _hold(tmp_path, 1), 60, job, "the second hold inside a freeze")
        held = _hold(tmp_path, 1)  # trainer 0 stops itself right after writing it
        try:
            assert kit.wait_until(lambda: _stopped(held["pid"]), 30, job, "trainer 0 stopped inside the freeze")
            endpoint, token = kit.endpoints_of(job)[0], kit.token_of(job)
            probe = GrpcPSClient([endpoint], auth_token=token, retry=RetryPolicy(deadline_s=2, max_attempts=1))
            # Trainer 0 stays stopped: only the lapse of its lease lets trainer 1's updates through.
            before = probe.status(endpoint).version
            assert kit.wait_until(lambda: probe.status(endpoint).version > before, 30, job,
                                  "trainer 1's updates applied while trainer 0 is stopped")
            after = probe.status(endpoint).version
            probe.close()
        finally:
            os.kill(held["pid"], signal.SIGCONT)
        code = job.wait(kit.JOB_TIMEOUT + 30)
    finally:
        job.kill()
    assert code == 0, job.text + job.logs()
    # Trainer 0 was stopped: only trainer 1's async updates moved the pserver, so the
    # lapsed lease let them through.
    assert after > before, (before, after)
    trainer = json.loads((tmp_path / "trainer0.json").read_text())
    first = _hold(tmp_path, 0)["step"]
    # The first save was held 2 s inside a 1 s lease and committed all the same.
    assert os.path.join(str(root), store.step_dirname(first)) in trainer["saved"], trainer
    # The paused one was abandoned, saying why, and never became a checkpoint.
    assert len(trainer["failures"]) == 1 and "expired or was released before the thaw" in \
        trainer["failures"][0], trainer["failures"]
    assert store.step_dirname(held["step"]) in trainer["failures"][0]
    assert _no_manifest(root, held["step"])
    newest = kit.assert_checkpoints_sound(root)
    assert newest.step == LAUNCH_STEPS
    print(f"\n[faults] lease 1 s: a save held 2 s committed (step {first}); trainer 0 paused in the freeze "
          f"of step {held['step']}: pserver version {before} -> {after} while paused, that save abandoned")
