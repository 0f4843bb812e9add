"""`psjob pserver` / `psjob worker`: the container entrypoints, as pods run them.

Real: the entrypoint processes, gRPC on 127.0.0.x, the pserver's Register
handler. A pod's identity comes from its hostname, so the "pod" processes
run in their own UTS namespace (`unshare --uts`) with the pod's hostname;
where unshare is not permitted those tests skip.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

import psjob.fluid as fluid
from psjob.cluster.pserver.pserver_state import PserverOptions, PserverState
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.foundation import roles
from psjob.launcher.launch import free_ports, write_token

PSJOB = [sys.executable, "-m", "psjob.cli"]
ARGS = ["--examples", "3000", "--batch", "300", "--distributed_table", "--log_every", "1"]


def _unshare_prefix():
    if shutil.which("unshare") is None:
        return None
    for prefix in (["unshare", "--uts"], ["unshare", "--uts", "--map-root-user"]):
        probe = subprocess.run(prefix + ["hostname", "probe-0"], capture_output=True)
        if probe.returncode == 0:
            return prefix
    return None


UNSHARE = _unshare_prefix()


def as_pod(hostname, command, env, log):
    """Start `command` with `hostname` as its own hostname (a pod's name)."""
    script = 'hostname "$1" && shift && exec "$@"'
    return subprocess.Popen(UNSHARE + ["sh", "-c", script, "sh", hostname, *command],
                            env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT)


@pytest.mark.skipif(UNSHARE is None, reason="needs `unshare --uts` to give processes pod hostnames")
def test_a_statefulset_pserver_takes_its_index_from_its_hostname_and_deployment_trainers_register_ids(tmp_path):
    port = free_ports(1)[0]
    topo = roles.JobTopology("podjob", "ml", (f"127.0.0.1:{port}",), trainers=2, mode="sync",
                             metrics_port=0, auth_token_file=write_token(str(tmp_path)))
    server_env = roles.role_environment(topo, roles.PSERVER, None)
    worker_env = {**roles.role_environment(topo, roles.TRAINER, None), "POD_IP": "127.0.0.1"}
    assert server_env["PSJOB_PSERVER_INDEX"] == worker_env["PSJOB_TRAINER_ID"] == "auto"
    logs = {name: open(tmp_path / f"{name}.log", "w+") for name in ("ps", "w1", "w2")}
    procs = [as_pod("podjob-pserver-0", PSJOB + ["pserver", *ARGS], server_env, logs["ps"])]
    try:
        # Bound to 0.0.0.0 as in a pod: any loopback address reaches it, not only 127.0.0.1.
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.3", port), timeout=1).close()
                break
            except OSError:
                assert procs[0].poll() is None and time.monotonic() < deadline, \
                    (tmp_path / "ps.log").read_text()
                time.sleep(0.2)
        for name, host in (("w1", "podjob-worker-5d8f9-abcde"), ("w2", "podjob-worker-5d8f9-xyz12")):
            procs.append(as_pod(host, PSJOB + ["worker", *ARGS], worker_env, logs[name]))
        codes = [p.wait(timeout=90) for p in procs[1:]]
        # A StatefulSet pod restarts a pserver that exits: with the job done it stays up
        # until the scale-down's SIGTERM, then exits 0.
        deadline = time.monotonic() + 30
        while "every trainer completed; staying up until stopped" not in (tmp_path / "ps.log").read_text():
            assert procs[0].poll() is None and time.monotonic() < deadline, (tmp_path / "ps.log").read_text()
            time.sleep(0.05)
        procs[0].send_signal(signal.SIGTERM)
        codes.insert(0, procs[0].wait(timeout=60))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    text = {name: (tmp_path / f"{name}.log").read_text() for name in logs}
    assert codes == [0, 0, 0], text
    assert f"pserver index 0 from hostname podjob-pserver-0; serving 127.0.0.1:{port}" in text["ps"]
    ids = sorted(int(line.split()[2]) for name in ("w1", "w2") for line in text[name].splitlines()
                 if line.startswith("[psjob] trainer ") and " of 2:" in line)
    assert ids == [0, 1], text


@pytest.mark.skipif(UNSHARE is None, reason="needs `unshare --uts` to give processes pod hostnames")
def test_a_pserver_whose_hostname_is_not_a_statefulset_pod_says_what_it_expected(tmp_path):
    topo = roles.JobTopology("podjob", "ml", ("127.0.0.1:7001", "127.0.0.1:7002"), trainers=1)
    with open(tmp_path / "ps.log", "w+") as log:
        code = as_pod("laptop", PSJOB + ["pserver", *ARGS], roles.role_environment(topo, roles.PSERVER, None),
                      log).wait(timeout=60)
    text = (tmp_path / "ps.log").read_text()
    assert code == 2 and "hostname 'laptop' is not 'podjob-pserver-<index>'" in text, text


def run_entrypoint(command, env, *args):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PADDLE_", "PSJOB_"))}
    return subprocess.run(PSJOB + [command, *args], env={**clean, **env}, capture_output=True, text=True,
                          timeout=60)


def test_a_worker_started_without_a_job_environment_says_how_to_start_it():
    result = run_entrypoint("worker", {})
    assert result.returncode == 2
    assert "reads its job from the environment" in result.stderr and "psjob run JOB.yaml" in result.stderr


def test_an_entrypoint_started_for_the_wrong_role_names_the_right_command():
    topo = roles.JobTopology("j", "ml", ("127.0.0.1:7001",), trainers=1)
    result = run_entrypoint("pserver", roles.role_environment(topo, roles.TRAINER, 0))
    assert result.returncode == 2 and "PADDLE_TRAINING_ROLE=TRAINER: run psjob worker" in result.stderr


def test_the_builtin_worker_in_a_collective_job_says_to_run_the_jobs_own_script():
    topo = roles.JobTopology("j", "ml", (), trainers=2, mode="collective",
                             trainer_endpoints=("127.0.0.1:7001", "127.0.0.1:7002"))
    result = run_entrypoint("worker", roles.role_environment(topo, roles.TRAINER, 0))
    assert result.returncode == 2
    assert "a collective job (PSJOB_MODE=collective: no pservers) runs its own training script" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "--batch must be >= 1, got 0"),
    (["--id_mode", "hash"], "add --distributed_table"),
    (["--optimizer", "lbfgs"], "invalid choice: 'lbfgs'"),
    (["--table_optimizer", "adam"], "invalid choice: 'adam'"),
])
def test_a_bad_training_argument_is_refused_with_the_flag_named(args, message):
    topo = roles.JobTopology("j", "ml", ("127.0.0.1:7001",), trainers=1)
    result = run_entrypoint("worker", roles.role_environment(topo, roles.TRAINER, 0), *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_the_built_in_jobs_table_optimizer_choices_are_the_transpilers():
    from psjob.fluid.optimizer import TABLE_OPTIMIZERS
    from psjob.training import options
    assert options.TABLE_OPTIMIZERS == TABLE_OPTIMIZERS
    assert options.parse(["--distributed_table", "--table_optimizer", "sgd"]).table_optimizer == "sgd"


class SteppedClock:
    """The pserver's clock of trainer silence, moved by the test instead of slept through."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def pserver_state(trainers, reclaim_after_s, clock=time.monotonic):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1))
        fluid.optimizer.SGD(0.1).minimize(loss)
    t = DistributeTranspiler()
    t.transpile(0, program=main, pservers="127.0.0.1:7001", trainers=trainers, startup_program=startup)
    program, start = t.get_pserver_programs("127.0.0.1:7001")
    state = PserverState(program, options=PserverOptions(reclaim_after_s=reclaim_after_s), clock=clock)
    state.run_startup(start)
    return state


def test_register_gives_stable_ids_and_a_replacement_pod_the_id_of_the_silent_trainer():
    clock = SteppedClock()
    state = pserver_state(trainers=2, reclaim_after_s=30.0, clock=clock)
    assert state.on_register("worker-a") == (0, 2) and state.on_register("worker-b") == (1, 2)
    assert state.on_register("worker-a") == (0, 2)  # a retried Register keeps its id
    with pytest.raises(ValueError, match="all 2 trainer ids are held"):
        state.on_register("worker-c")  # both trainers just spoke: nobody to replace
    clock.now += 29.0
    with pytest.raises(ValueError, match="all 2 trainer ids are held"):
        state.on_register("worker-c")  # silent for less than reclaim_after_s: still held
    clock.now += 2.0
    state.on_get(0, [])  # trainer 0 is alive; trainer 1 (worker-b's pod) went silent
    assert state.on_register("worker-c") == (1, 2)
    with pytest.raises(ValueError, match="held"):
        state.on_register("worker-b")


def test_after_a_pserver_restart_a_new_pod_does_not_take_the_id_of_a_trainer_still_running():
    state = pserver_state(trainers=2, reclaim_after_s=30.0)  # a fresh state: the restarted pserver 0
    state.on_get(0, [])  # trainer 0 kept running and reconnects
    assert state.on_register("worker-new") == (1, 2)
