"""Transpiled jobs as real processes: seed 004's script, the Fleet modes, sync equivalence."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from psjob.foundation import roles
from psjob.launcher.launch import loopback_endpoints


def _epoch_losses(log_text):
    losses = {}
    for line in log_text.splitlines():
        if line.startswith("Epoch:"):
            parts = line.replace(",", "").split()
            losses.setdefault(int(parts[1]), []).append(float(parts[-1]))
    return {e: float(np.mean(v)) for e, v in losses.items()}


def test_seed_dist_train_runs_under_psjob_launch_with_two_pservers_and_two_trainers(tmp_path, script, launch,
                                                                                   read_logs):
    log_dir = tmp_path / "log"
    r = launch(["--server_num", "2", "--worker_num", "2", "--log_dir", str(log_dir),
                script("dist_train.py")], env={"EPOCH_NUM": "10"})
    assert r.returncode == 0, r.stderr + read_logs(log_dir)
    # Every process exited 0 on its own: pservers stop once both trainers completed.
    assert r.stderr.count("exited 0") == 4, r.stderr
    losses = _epoch_losses((log_dir / "workerlog.0").read_text())
    assert len(losses) == 10
    # The seed script prints a few shuffled batches per epoch: compare the last three
    # epochs' mean, not one epoch (one epoch's mean wandered by +-30%).
    assert np.mean([losses[e] for e in (7, 8, 9)]) < 0.7 * losses[0], losses


def test_seed_dist_train_runs_from_the_environment_variables_alone(tmp_path, script):
    """Start every process by hand with the PADDLE_* table of seed 004 (no launcher)."""
    endpoints = loopback_endpoints(2)
    topo = roles.JobTopology(job_name="byhand", namespace="local", pserver_endpoints=tuple(endpoints),
                             trainers=2, mode="sync", metrics_port=0)
    procs = []
    try:
        for role, count in ((roles.PSERVER, 2), (roles.TRAINER, 2)):
            for i in range(count):
                env = dict(os.environ)
                env.update(roles.role_environment(topo, role, i))
                env["EPOCH_NUM"] = "2"
                log = open(tmp_path / f"{role}.{i}.log", "w")
                procs.append((role, subprocess.Popen([sys.executable, script("dist_train.py")], env=env,
                                                     stdout=log, stderr=subprocess.STDOUT)))
        codes = [p.wait(timeout=120) for _, p in procs]
    finally:
        for _, p in procs:
            if p.poll() is None:
                p.kill()
    logs = "".join((tmp_path / n).read_text() for n in sorted(os.listdir(tmp_path)))
    assert codes == [0, 0, 0, 0], logs
    assert "Epoch: 1" in (tmp_path / "TRAINER.0.log").read_text()


def _single_process_linear(steps, batch, optimizer):
    """The same model and global batches as fleet_train.py --model linear, in one process."""
    import psjob.fluid as fluid
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[13])
        y = fluid.layers.data(name="y", shape=[1])
        pred = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(initializer=fluid.initializer.Constant(0.1)))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        opt = fluid.optimizer.SGD(0.01) if optimizer == "sgd" else fluid.optimizer.Adam(0.01)
        opt.minimize(loss)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    w_true = rng.normal(size=(13, 1)).astype("float32")
    for _ in range(steps):
        X = rng.normal(size=(batch, 13)).astype("float32")
        exe.run(main, feed={"x": X, "y": X @ w_true + 0.5}, fetch_list=[loss], scope=scope)
    return {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in main.all_parameters()}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_sync_mode_over_real_processes_equals_single_machine_training(tmp_path, script, optimizer, launch,
                                                                     read_logs):
    r = launch(["--server_num", "2", "--worker_num", "2", "--log_dir", str(tmp_path / "log"),
                script("fleet_train.py"), "--mode", "sync", "--out", str(tmp_path), "--steps", "15",
                "--optimizer", optimizer])
    assert r.returncode == 0, r.stderr + read_logs(tmp_path / "log")
    got = dict(np.load(tmp_path / "trainer0.npz"))
    want = _single_process_linear(15, 32, optimizer)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("mode", ["async", "half_async", "geo"])
def test_asynchronous_modes_train_and_every_process_exits(tmp_path, script, mode, launch, read_logs):
    r = launch(["--server_num", "2", "--worker_num", "2", "--log_dir", str(tmp_path / "log"),
                script("fleet_train.py"), "--mode", mode, "--out", str(tmp_path), "--steps", "80",
                "--sleep_ms", "10"])
    assert r.returncode == 0, r.stderr + read_logs(tmp_path / "log")
    # Each process exited 0 by itself, once: the pservers after their trainers completed,
    # not stopped by the launcher once its grace ran out (which leaves the status 0 too).
    exits = re.findall(r"\[psjob\] (\S+): exit (-?\d+) after (\d+) start", r.stderr)
    assert sorted(name for name, _, _ in exits) == ["pserver.0", "pserver.1", "trainer.0", "trainer.1"], r.stderr
    assert all((code, starts) == ("0", "1") for _, code, starts in exits), r.stderr
    losses = json.loads((tmp_path / "trainer0.json").read_text())["losses"]
    # Asynchronous trainers see parameters a few steps stale: compare averages. The
    # 10 ms per step stands for a model's compute: a linear model's 0.5 ms steps
    # outrun the sends, and the communicator averages what queued up.
    assert np.mean(losses[-15:]) < 0.7 * np.mean(losses[:15]), losses


def test_an_invalid_strategy_combination_is_a_clear_error():
    from psjob.fleet import DistributedStrategy, strategy
    s = DistributedStrategy()
    s.a_sync = False
    s.a_sync_configs = {"k_steps": 4}
    with pytest.raises(ValueError, match="k_steps=4 needs a_sync=True"):
        strategy.resolve(s)
    with pytest.raises(ValueError, match="unknown a_sync_configs"):
        s.a_sync_configs = {"k_step": 1}


def test_once_every_trainer_exited_0_a_dying_pserver_is_not_restarted_and_a_lingering_one_is_stopped(tmp_path):
    """Real processes under the launcher's Supervisor: a restarted pserver could not learn
    which trainers completed (it would wait for them forever), so after the trainers are
    done a pserver's death is reported, not restarted, and the job has succeeded."""
    import signal as _signal
    import time as _time

    from psjob.launcher.supervisor import PSERVER, TRAINER, ProcessSpec, Supervisor, SupervisorOptions
    done = tmp_path / "trainer-pid"
    trainer = ["-c", f"import os; open({str(done)!r}, 'w').write(str(os.getpid()))"]
    # pserver 0 dies by SIGKILL once the supervisor has reaped the finished trainer (its pid is
    # gone); pserver 1 never exits on its own.
    dies = ["-c", f"import os, signal, time\n"
                  f"while not (os.path.exists({str(done)!r}) and open({str(done)!r}).read()) or "
                  f"os.path.exists('/proc/' + open({str(done)!r}).read()): time.sleep(0.05)\n"
                  "os.kill(os.getpid(), signal.SIGKILL)"]
    lingers = ["-c", "import time; time.sleep(600)"]
    specs = [ProcessSpec(PSERVER, 0, [sys.executable, *dies], {}, str(tmp_path / "ps0.log"), restarts_left=3),
             ProcessSpec(PSERVER, 1, [sys.executable, *lingers], {}, str(tmp_path / "ps1.log"), restarts_left=3),
             ProcessSpec(TRAINER, 0, [sys.executable, *trainer], {}, str(tmp_path / "tr0.log"))]
    events = []
    t0 = _time.monotonic()
    status = Supervisor(specs, SupervisorOptions(pserver_exit_grace_s=2.0, stop_grace_s=2.0),
                        on_event=events.append).run()
    assert status == 0, events
    assert _time.monotonic() - t0 < 15
    ps0, ps1, tr0 = specs
    assert (ps0.starts, ps0.history) == (1, [-_signal.SIGKILL]), events
    assert ps1.starts == 1 and ps1.exit_code is not None and tr0.history == [0]
    assert "pserver.0 exited with status 137 after every trainer completed; not restarted: training is " \
           "complete" in "\n".join(events)
    assert any(e.startswith("pserver.1 did not exit within 2s after every trainer completed: stopping them "
                            "(training is complete)") for e in events), events


def test_a_pserver_that_dies_while_trainers_still_run_is_restarted(tmp_path):
    from psjob.launcher.supervisor import PSERVER, TRAINER, ProcessSpec, Supervisor, SupervisorOptions
    first, second, done = tmp_path / "first-start", tmp_path / "second-start", tmp_path / "trainer-done"
    # The first start dies at once; the restarted one exits 0 once the trainer is done, and
    # the trainer finishes only once the pserver was restarted: the death lands mid-training.
    pserver = ["-c", f"import os, sys, time\nif not os.path.exists({str(first)!r}):\n"
                     f"    open({str(first)!r}, 'w').close(); sys.exit(3)\n"
                     f"open({str(second)!r}, 'w').close()\n"
                     f"while not os.path.exists({str(done)!r}): time.sleep(0.05)"]
    trainer = ["-c", f"import os, time\nwhile not os.path.exists({str(second)!r}): time.sleep(0.05)\n"
                     f"open({str(done)!r}, 'w').close()"]
    specs = [ProcessSpec(PSERVER, 0, [sys.executable, *pserver], {}, str(tmp_path / "ps0.log"), restarts_left=1),
             ProcessSpec(TRAINER, 0, [sys.executable, *trainer], {}, str(tmp_path / "tr0.log"))]
    events = []
    assert Supervisor(specs, SupervisorOptions(pserver_exit_grace_s=5.0), on_event=events.append).run() == 0
    assert specs[0].starts == 2 and specs[0].history == [3, 0], events
    assert "pserver.0 failed with status 3; restarting it (0 restarts left)" in events


def test_processes_share_the_cores_math_library_threads_unless_the_user_chose(tmp_path, monkeypatch):
    from psjob.foundation import roles
    from psjob.launcher.supervisor import PSERVER, TRAINER, ProcessSpec, Supervisor, SupervisorOptions
    monkeypatch.setenv("MKL_NUM_THREADS", "7")  # exported by the user: kept
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    dump = ["-c", "import os, sys; open(sys.argv[1], 'w').write(' '.join(os.environ.get(v, '-') for v in "
                  "('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS')))"]
    specs = [ProcessSpec(role, 0, [sys.executable, *dump, str(tmp_path / role)], {}, str(tmp_path / f"{role}.log"))
             for role in (PSERVER, TRAINER)]
    assert Supervisor(specs, SupervisorOptions(pserver_exit_grace_s=5.0), on_event=lambda m: None).run() == 0
    share = str(roles.math_threads(2))
    for role in (PSERVER, TRAINER):
        assert (tmp_path / role).read_text() == f"{share} {share} 7"
    assert roles.math_threads(4, cores=2) == 1 and roles.math_threads(2, cores=16) == 8


def _free_port_block(count):
    from psjob.launcher.launch import free_port_block as block
    first = block(count)
    if first is None:
        pytest.skip("no block of free ports")
    return first


def test_a_fleet_script_under_launch_serves_trainer_metrics_and_shows_progress_and_a_summary(tmp_path, script,
                                                                                            read_logs):
    """fleet_train.py knows nothing of metrics: fleet.init_worker() observes its main program."""
    import re
    import time
    import urllib.request

    from psjob.foundation.progress import parse_line
    first = _free_port_block(3)
    log_dir = tmp_path / "log"
    proc = subprocess.Popen([sys.executable, "-m", "psjob.cli", "launch", "--server_num", "1", "--worker_num", "2", "--log_dir", str(log_dir),
                                     "--metrics-port", str(first), "--progress-interval", "0.5",
                                     "--summary", str(tmp_path / "summary.json"),
                                     script("fleet_train.py"), "--mode", "sync", "--out", str(tmp_path),
                                     "--steps", "120", "--sleep_ms", "15"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    scraped, deadline = None, time.monotonic() + 60
    try:
        while proc.poll() is None and time.monotonic() < deadline:  # trainer 1: after pserver 0, trainer 0
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{first + 2}/metrics", timeout=2) as response:
                    text = response.read().decode()
                steps = re.search(r"^psjob_trainer_steps_total ([0-9.]+)$", text, re.M)
                if steps and float(steps.group(1)) >= 3:
                    scraped = text
                    break
            except OSError:
                pass
            time.sleep(0.1)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err + read_logs(log_dir)
    assert scraped is not None, f"trainer 1 never served /metrics on {first + 2}:\n{out}{err}{read_logs(log_dir)}"
    loss = re.search(r"^psjob_trainer_loss ([0-9.e+-]+)$", scraped, re.M)
    assert loss and 0 < float(loss.group(1)) < 100, scraped
    assert re.search(r"^psjob_trainer_examples_total ([1-9][0-9.]*)$", scraped, re.M), scraped
    assert 'psjob_trainer_batch_seconds_count{phase="push"}' in scraped
    assert "psjob_trainer_staleness_steps_count" in scraped  # the send ops' confirmed pushes (sync: 0)

    # The trainers print the progress lines, psjob launch shows them and sums them up.
    finals = [parse_line(line) for line in (log_dir / "workerlog.0").read_text().splitlines()
              if parse_line(line) and parse_line(line)["finished"]]
    assert len(finals) == 1 and finals[0]["steps"] == 120 and finals[0]["examples"] == 120 * 16, finals
    assert re.search(r"worker 1: done in \d+s, 120 steps +1,920 ex +[\d,]+ ex/s +loss \d\.\d{4} +auc - +ckpt none",
                     out), out
    assert re.search(r"\[psjob\] local succeeded in \d+s: 240 steps, 3,840 examples, loss \d\.\d{4}, AUC -, "
                     r"newest checkpoint none, 0 restart\(s\)", out), out
    assert "trainer.0 exited 0" in err  # the supervisor's events stay on stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "Succeeded" and summary["steps"] == 240 and summary["examples"] == 3840
    assert [p["exit_code"] for p in summary["processes"]] == [0, 0, 0]


def test_launch_refuses_metrics_ports_that_are_taken(tmp_path, script, launch):
    import socket
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        r = launch(["--server_num", "1", "--worker_num", "1", "--log_dir", str(tmp_path / "log"),
                    "--metrics-port", str(port), script("fleet_train.py"), "--out", str(tmp_path)], timeout=60)
    assert r.returncode != 0
    assert f"psjob launch: --metrics-port {port}: port {port} is in use; the job's 2 processes need " \
           f"{port}..{port + 1} free" in r.stderr, r.stderr
    assert not (tmp_path / "log" / "workerlog.0").exists()  # nothing started
