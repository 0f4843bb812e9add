"""psjob launch and psjob run are one launcher (psjob.launcher.local) with two fronts:
same placement, same defaults, same outcome rules."""
import argparse
import os

import pytest

from psjob.foundation import roles
from psjob.foundation.jobspec import parse_job
from psjob.launcher import launch, run_job
from psjob.launcher.local import Deadline, LocalJob, conclude, free_ports, listen_port_pool
from psjob.launcher.supervisor import ProcessSpec


def launch_job(tmp_path, *flags):
    args = launch.build_parser().parse_args(["--log_dir", str(tmp_path / "log"), *flags, "train.py"])
    return launch.plan(args)


def yaml_run(tmp_path, spec):
    job = parse_job({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                     "metadata": {"name": "ctr", "namespace": "ml"}, "spec": {"image": "psjob:1", **spec}})
    args = argparse.Namespace(workdir=str(tmp_path / "run"), metrics_port=0)
    return run_job.plan(job, args)


def env_of(specs, role, index=0):
    return next(sp.env for sp in specs if sp.role == role and sp.index == index)


def test_local_listener_ports_are_distinct_free_and_outside_the_ephemeral_range():
    # bind(0) and connect() draw from the ephemeral range; a port probed there can be taken by
    # another process before the pserver binds it (a pserver then fails on every restart).
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low, high = (int(v) for v in f.read().split())
    pool = listen_port_pool()
    assert pool.stop <= low or pool.start > high
    ports = free_ports(40)
    assert len(set(ports)) == 40 and all(p in pool for p in ports)
    import socket
    for port in ports:  # each one binds now
        with socket.socket() as s:
            s.bind((roles.LOCAL_HOST, port))


def test_geo_mode_exchanges_every_100_steps_by_default_in_both_fronts(tmp_path):
    script = launch_job(tmp_path, "--mode", "geo", "--server_num", "1")
    job = yaml_run(tmp_path, {"mode": "geo", "pserver": {"replicas": 1}, "worker": {"replicas": 1}})
    assert roles.DEFAULT_GEO_K_STEPS == 100
    assert env_of(script.specs, roles.TRAINER)["PSJOB_K_STEPS"] == "100"
    assert env_of(job.specs, roles.TRAINER)["PSJOB_K_STEPS"] == "100"
    given = launch_job(tmp_path, "--mode", "geo", "--k_steps", "7")
    assert env_of(given.specs, roles.TRAINER)["PSJOB_K_STEPS"] == "7"


def test_both_fronts_place_pservers_on_loopback_addresses_sharing_one_port(tmp_path):
    script = launch_job(tmp_path, "--server_num", "2", "--worker_num", "2", "--heter_worker_num", "1")
    job = yaml_run(tmp_path, {"pserver": {"replicas": 2}, "worker": {"replicas": 2},
                              "heterWorker": {"replicas": 1}})
    for specs in (script.specs, job.specs):
        endpoints = env_of(specs, roles.TRAINER)["PADDLE_PSERVER_ENDPOINTS"].split(",")
        assert [ep.rsplit(":", 1)[0] for ep in endpoints] == ["127.0.0.1", "127.0.0.2"]
        assert len({ep.rsplit(":", 1)[1] for ep in endpoints}) == 1
        assert env_of(specs, roles.HETER_TRAINER)["PSJOB_CURRENT_ENDPOINT"].startswith("127.0.0.1:")
        assert [sp.role for sp in specs] == [roles.PSERVER] * 2 + [roles.HETER_TRAINER, roles.TRAINER,
                                                                   roles.TRAINER]


def ended(role, index, *codes, tmp_path):
    spec = ProcessSpec(role, index, ["true"], {}, str(tmp_path / f"{role}.{index}.log"))
    spec.history = list(codes)
    spec.starts = len(codes)
    spec.exit_code = codes[-1] if codes else None
    return spec


def test_one_outcome_rule_with_each_fronts_words(tmp_path):
    done = [ended(roles.PSERVER, 0, 0, tmp_path=tmp_path), ended(roles.TRAINER, 0, 0, tmp_path=tmp_path)]
    job = LocalJob(name="j", mode="sync", trainers=1, checkpoint_dir="", specs=done)
    assert conclude(job, 0) == (0, "Succeeded: every trainer completed")
    assert conclude(job, 143) == (143, "Interrupted: stopped by a signal")

    failing = [ended(roles.PSERVER, 0, tmp_path=tmp_path), ended(roles.TRAINER, 0, 2, 2, tmp_path=tmp_path)]
    script = LocalJob(name="j", mode="sync", trainers=1, checkpoint_dir="", specs=failing,
                      deadline=Deadline(5, "Timeout", "--timeout 5s"))
    assert conclude(script, 124) == (124, "Timeout: the job ran longer than --timeout 5s")
    assert conclude(script, 2)[1].startswith("trainer.0 failed (exit 2); see ")
    yaml = LocalJob(name="j", mode="sync", trainers=1, checkpoint_dir="", specs=failing, backoff_limit=1,
                    label_of=lambda sp: f"worker {sp.index}")
    assert conclude(yaml, 2)[1].startswith(
        "BackoffLimitExceeded: worker 0 failed (exit 2), worker failure 2 of this run; "
        "runPolicy.backoffLimit=1 allows 1 retries; see ")

    # A failure no restart fixes names its class; a trainer killed after its completion succeeded.
    failing[1].fatal = "ConfigError: exit status 2 is a usage or configuration problem"
    assert conclude(yaml, 2)[1].startswith("ConfigError: exit status 2 is a usage or configuration problem: "
                                           "worker 0 failed (exit 2), not retried; see ")
    killed = ended(roles.TRAINER, 0, 137, tmp_path=tmp_path)
    killed.completed = True
    assert conclude(LocalJob(name="j", mode="sync", trainers=1, checkpoint_dir="", specs=[done[0], killed]),
                    0) == (0, "Succeeded: every trainer completed")

    crashed = [ended(roles.PSERVER, 0, 1, 137, tmp_path=tmp_path), ended(roles.TRAINER, 0, tmp_path=tmp_path)]
    assert conclude(LocalJob(name="j", mode="sync", trainers=1, checkpoint_dir="", specs=crashed), 137)[1] \
        .startswith("PserverFailed: pserver.0 failed 2 time(s), last with exit 137; see ")


def test_as_paddle_puts_the_paddle_alias_first_on_every_process_pythonpath_in_both_fronts(tmp_path,
                                                                                           monkeypatch):
    import sys

    from psjob.launcher import aspaddle
    monkeypatch.setenv("PYTHONPATH", "/opt/mine")
    script = launch_job(tmp_path, "--as-paddle", "--server_num", "1", "--worker_num", "2")
    for spec in script.specs:
        assert spec.env["PYTHONPATH"] == aspaddle.SHIM_DIR + ":/opt/mine"
        assert spec.argv[2:] == ["train.py"]
    assert "PYTHONPATH" not in env_of(launch_job(tmp_path).specs, roles.TRAINER)

    # psjob run: spec.asPaddle runs each command under `psjob as-paddle --`, as the operator's pods
    # do; `psjob` and `python` stay this interpreter on both sides of the `--`.
    job = yaml_run(tmp_path, {"asPaddle": True, "command": ["python", "train.py"], "args": ["--x"],
                              "pserver": {"replicas": 1}, "worker": {"replicas": 1}})
    for spec in job.specs:
        assert spec.argv == [sys.executable, "-m", "psjob.cli", "as-paddle", "--", sys.executable,
                             "train.py", "--x"]
    plain = yaml_run(tmp_path, {"command": ["python", "train.py"], "pserver": {"replicas": 1},
                                "worker": {"replicas": 1}})
    assert plain.specs[0].argv == [sys.executable, "train.py"]


@pytest.mark.parametrize("flags", [["--server_num", "0", "--worker_num", "3"], ["--gpus", "0,1,2"],
                                   ["--nproc_per_node", "3"], ["--server_num", "0", "--gpus", "0,1,2"],
                                   ["--mode", "collective", "--worker_num", "3"]])
def test_a_job_with_no_pservers_is_collective_with_paddles_trainer_environment(tmp_path, flags):
    job = launch_job(tmp_path, *flags)
    assert (job.mode, job.trainers, [sp.role for sp in job.specs]) == ("collective", 3, ["TRAINER"] * 3)
    ring = job.specs[0].env["PADDLE_TRAINER_ENDPOINTS"].split(",")
    assert len(set(ring)) == 3
    for t, sp in enumerate(job.specs):
        env = sp.env
        assert (env["PADDLE_TRAINER_ID"], env["PADDLE_TRAINERS_NUM"]) == (str(t), "3")
        assert env["PADDLE_CURRENT_ENDPOINT"] == ring[t]
        assert env["PADDLE_TRAINER_ENDPOINTS"].split(",") == ring
        assert os.path.exists(env["PSJOB_AUTH_TOKEN_FILE"])
        assert "PADDLE_PSERVER_ENDPOINTS" not in env


@pytest.mark.parametrize("flags,message", [
    (["--server_num", "0", "--worker_num", "2", "--gpus", "0,1,2"], r"disagree on the number of trainers \(\[2, 3\]\)"),
    (["--server_num", "0", "--servers", "127.0.0.1:6170"], "has no pservers"),
    (["--gpus", "0,1", "--server_num", "1"], "has no pservers"),
    (["--mode", "collective", "--server_num", "2", "--worker_num", "2"], "has no pservers"),
    (["--server_num", "0", "--worker_num", "2", "--mode", "async"], "--mode async needs pservers"),
])
def test_a_collective_launch_refuses_contradictions(tmp_path, flags, message):
    with pytest.raises(SystemExit, match=message):
        launch_job(tmp_path, *flags)
