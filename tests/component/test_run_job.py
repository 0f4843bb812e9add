"""`psjob run JOB.yaml`: a ParameterServerJob run as real local processes.

Each test writes a small job YAML, runs the real `psjob run` command (which
starts real `psjob pserver` / `psjob worker` processes speaking gRPC on
127.0.0.x) and checks its exit status, its terminal output and the JSON
summary. The training data is synthetic and tiny so each run takes seconds.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

PSJOB = [sys.executable, "-m", "psjob.cli"]


def write_job(tmp_path, name="tiny", *, args=(), spec=None):
    body = {"image": "psjob:test", "mode": "sync",
            "args": ["--examples", "6000", "--batch", "300", "--distributed_table", "--log_every", "0.5",
                     *args],
            "pserver": {"replicas": 2}, "worker": {"replicas": 2},
            "checkpoint": {"intervalSteps": 50}, "runPolicy": {"backoffLimit": 1}}
    body.update(spec or {})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob",
                                    "metadata": {"name": name}, "spec": body}))
    return path


def start_run(job, tmp_path, *extra):
    cmd = PSJOB + ["run", str(job), "--workdir", str(tmp_path / "work"),
                   "--summary", str(tmp_path / "summary.json"), "--progress-interval", "1", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp_path, start_new_session=True)


def finish(proc, timeout=90):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        pytest.fail(f"psjob run did not finish in {timeout}s:\n{out}")
    return proc.returncode, out


def free_port_block(count):
    from psjob.launcher.launch import free_port_block as block
    first = block(count)
    if first is None:
        pytest.skip("no block of free ports")
    return first


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
        return response.read().decode()


def sample(text, name):
    match = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", text, re.M)
    return float(match.group(1)) if match else None


def test_a_small_job_trains_to_completion_with_a_summary_while_its_trainers_serve_metrics(tmp_path):
    job = write_job(tmp_path, args=["--examples", "16000"])
    first = free_port_block(4)
    proc = start_run(job, tmp_path, "--metrics-port", str(first))
    trainer_port = first + 2  # pservers take first, first+1; then the trainers
    scraped = None
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            text = scrape(trainer_port)
            if (sample(text, "psjob_trainer_steps_total") or 0) >= 2:
                scraped = text
                break
        except OSError:
            pass
        time.sleep(0.1)
    status, out = finish(proc)
    assert status == 0, out
    assert scraped is not None, f"trainer 0 never served /metrics on {trainer_port}:\n{out}"
    for name in ("psjob_trainer_examples_total", "psjob_trainer_loss", "psjob_trainer_auc",
                 "psjob_trainer_examples_per_second"):
        assert sample(scraped, name) is not None, name
    assert 'psjob_trainer_batch_seconds_count{phase="push"}' in scraped
    assert 'psjob_trainer_batch_seconds_count{phase="compute"}' in scraped

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "Succeeded" and summary["exit_code"] == 0
    assert summary["examples"] == 16000
    assert summary["steps"] == 2 * -(-8000 // 300)
    assert 0.0 < summary["loss"] < 1.0 and 0.0 <= summary["auc"] <= 1.0
    assert [p["exit_code"] for p in summary["processes"]] == [0, 0, 0, 0]
    assert all(p["restarts"] == 0 for p in summary["processes"])
    assert re.search(r"worker 1: .*ex/s +loss \d\.\d{4} +auc \d\.\d{4}", out), out
    assert re.search(r"\[psjob\] tiny succeeded in \d+s: 54 steps, 16,000 examples, loss \d\.\d+, "
                     r"AUC \d\.\d+", out), out
    work = tmp_path / "work"
    assert (work / "auth-token").stat().st_mode & 0o777 == 0o600
    assert json.loads((work / "topology.json").read_text())["pserver_endpoints"][1].startswith("127.0.0.2:")


def test_a_pserver_killed_mid_run_is_restarted_with_its_index_restores_a_checkpoint_and_the_job_completes(
        tmp_path):
    job = write_job(tmp_path, args=["--examples", "40000", "--batch", "500"],
                    spec={"mode": "async", "checkpoint": {"intervalSteps": 5}})
    proc = start_run(job, tmp_path)
    logs = tmp_path / "work" / "logs"
    pid = None
    deadline = time.monotonic() + 60
    while pid is None and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            server = (logs / "pserver-1.log").read_text()
            worker = (logs / "worker-0.log").read_text()
        except FileNotFoundError:
            continue
        found = re.search(r"pserver 1 of 2 at (127\.0\.0\.2:\d+) .*pid (\d+)", server)
        if found and "[psjob] checkpoint step 5 saved" in worker:
            endpoint, pid = found.group(1), int(found.group(2))
    assert pid is not None, "the job never got going:\n" + (proc.poll() is not None and proc.stdout.read() or "")
    os.kill(pid, signal.SIGKILL)
    status, out = finish(proc)
    assert status == 0, out
    assert re.search(r"pserver 1 failed with status 137; restarting it", out), out
    restarted = (logs / "pserver-1.log").read_text()
    assert restarted.count(f"pserver 1 of 2 at {endpoint}") == 2  # same index, same endpoint
    assert "pserver 1 restores its shard from" in restarted.split(f"pserver 1 of 2 at {endpoint}")[2]
    summary = json.loads((tmp_path / "summary.json").read_text())
    by_name = {p["name"]: p for p in summary["processes"]}
    assert by_name["pserver-1"]["restarts"] == 1 and by_name["pserver-1"]["exit_history"][0] == 137
    assert by_name["worker-0"]["exit_code"] == by_name["worker-1"]["exit_code"] == 0
    assert summary["status"] == "Succeeded" and summary["examples"] == 40000


def test_a_job_with_heter_workers_runs_the_mlp_on_them_and_completes(tmp_path):
    job = write_job(tmp_path, spec={"mode": "async", "heterWorker": {"replicas": 1, "device": "cpu"}})
    status, out = finish(start_run(job, tmp_path))
    assert status == 0, out
    heter = (tmp_path / "work" / "logs" / "heter-worker-0.log").read_text()
    assert "trainers [0, 1] on CPUPlace" in heter and "every trainer it serves completed" in heter
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["examples"] == 6000
    assert {p["name"]: p["exit_code"] for p in summary["processes"]}["heter-worker-0"] == 0


def test_a_worker_failing_beyond_the_backoff_limit_fails_the_run_and_says_why(tmp_path):
    job = write_job(tmp_path, spec={"worker": {"replicas": 1, "command": [
        "python", "-c", "import sys; print('the worker broke'); sys.exit(3)"]},
        "runPolicy": {"backoffLimit": 1}})
    status, out = finish(start_run(job, tmp_path))
    assert status != 0, out
    assert "BackoffLimitExceeded: worker 0 failed (exit 3), worker failure 2 of this run" in out, out
    assert "runPolicy.backoffLimit=1 allows 1 retries" in out
    assert "the worker broke" in out  # the tail of the worker's log shows its own error
    summary = json.loads((tmp_path / "summary.json").read_text())
    worker = {p["name"]: p for p in summary["processes"]}["worker-0"]
    assert summary["status"] == "Failed"
    assert worker["exit_history"] == [3, 3] and worker["restarts"] == 1


@pytest.mark.parametrize("spec, problem", [
    ({"worker": {"replicas": 1, "args": ["--data", "nowhere"]}}, "nowhere"),
    ({"mode": "geo"}, "geo mode trains local copies of every parameter"),  # --distributed_table
])
def test_a_configuration_error_fails_the_job_at_once_instead_of_spending_the_retries(tmp_path, spec, problem):
    job = write_job(tmp_path, spec={**spec, "runPolicy": {"backoffLimit": 40}})
    status, out = finish(start_run(job, tmp_path))
    assert status == 2, out
    assert re.search(r"ConfigError: exit status 2 is a usage or configuration problem, which a restart "
                     r"cannot fix: (worker|pserver) \d failed \(exit 2\), not retried", out), out
    assert problem in out, out  # the tail of the failed process's log names it
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "Failed" and summary["reason"].startswith("ConfigError")
    assert sum(p["restarts"] for p in summary["processes"]) == 0, summary["processes"]


def test_a_job_past_its_active_deadline_is_stopped_and_fails(tmp_path):
    job = write_job(tmp_path, args=["--examples", "1000000"],
                    spec={"runPolicy": {"activeDeadlineSeconds": 4}})
    started = time.monotonic()
    status, out = finish(start_run(job, tmp_path))
    assert status == 124, out
    assert "DeadlineExceeded" in out and "activeDeadlineSeconds=4" in out
    # Every process exits on its SIGTERM. A sync pserver stopped while a pull waited for the next
    # round used to hang until the 10 s stop grace ran out (SIGKILL): 14 s and more in all, in 1
    # of 4 runs at load ~10 (which stop catches a pull waiting is timing). The deterministic
    # check is tests/unit/test_pserver_elastic.py's close() test.
    assert time.monotonic() - started < 13, out


@pytest.mark.parametrize("spec, field, fix", [
    ({"pserver": {"replicas": 0}}, "spec.pserver.replicas", "must be >= 1"),
    ({"worker": {"replica": 2}}, "spec.worker.replica", "did you mean 'replicas'"),
    ({"mode": "fast"}, "spec.mode", "use one of sync, async, half_async, geo"),
    ({"worker": {"env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}},
     "spec.worker.env[0].valueFrom", "give a literal value"),
    ({"tls": {"secretName": "ctr-tls"}}, "spec.tls.secretName (ctr-tls)",
     "export PSJOB_TLS_CERT_FILE, PSJOB_TLS_KEY_FILE and PSJOB_TLS_CA_FILE for psjob run instead"),
    # What no process can be started with is refused before anything starts.
    ({"worker": {"env": [{"name": "BIG", "value": "x" * (129 << 10)}]}}, "spec.worker.env[0].value",
     "is 132,100 bytes; Linux starts no process with an argument or NAME=value entry of 128 KiB"),
    ({"worker": {"env": [{"name": "NUL", "value": "a\0b"}]}}, "spec.worker.env[0].value",
     "contains a NUL character"),
    ({"worker": {"command": [""]}}, "spec.worker.command[0]", "is empty: name the program to run"),
    ({"command": ["no-such-program-here"]}, "spec.command[0]",
     "'no-such-program-here' is not a program this machine can run"),
])
def test_an_invalid_job_is_refused_with_the_field_and_the_fix_named(tmp_path, spec, field, fix):
    job = write_job(tmp_path, spec=spec)
    result = subprocess.run(PSJOB + ["run", str(job), "--workdir", str(tmp_path / "w")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert field in result.stderr and fix in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "w").exists() or not any((tmp_path / "w" / "logs").iterdir())


@pytest.mark.parametrize("text, problem", [
    (b"apiVersion: psjob.dev/v1alpha1\n# caf\xe9\n", "is not UTF-8 text: byte 0xe9 on line 2"),
    (b"spec:\n  pserver:\n    replicas: " + b"9" * 5000 + b"\n", "holds a value YAML cannot read on line 3"),
    (b"spec: " + b"[" * 5000 + b"]" * 5000 + b"\n", "is not valid YAML"),
    (b"spec: " + b"[" * 100 + b"]" * 100 + b"\n", "nests mappings and lists more than 64 levels deep"),
])
def test_a_file_that_is_no_readable_yaml_is_refused_naming_the_problem(tmp_path, text, problem):
    path = tmp_path / "job.yaml"
    path.write_bytes(text)
    result = subprocess.run(PSJOB + ["run", str(path), "--workdir", str(tmp_path / "w")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"psjob run: {path}: ") and problem in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_cluster_only_fields_such_as_a_pod_template_are_named_as_ignored(tmp_path):
    template = {"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
                "spec": {"serviceAccountName": "trainer"}}
    job = write_job(tmp_path, spec={"worker": {"replicas": 2, "template": template,
                                               "image": "psjob:test-cuda"},
                                    "runPolicy": {"suspend": True}})
    result = subprocess.run(PSJOB + ["run", str(job), "--workdir", str(tmp_path / "w")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("psjob run ignores what only a cluster uses: spec.image, spec.worker.image, "
            "spec.worker.template\n") in result.stderr


def test_the_wide_and_deep_model_trains_its_wide_weights_beside_the_distributed_table(tmp_path):
    job = write_job(tmp_path, "wide", args=["--model", "wide_deep"], spec={"checkpoint": {"intervalSteps": 5}})
    status, out = finish(start_run(job, tmp_path))
    assert status == 0, out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["status"] == "Succeeded" and summary["examples"] == 6000, summary
    assert 0.0 < summary["loss"] < 1.0 and 0.0 <= summary["auc"] <= 1.0
    checkpoint = summary["newest_checkpoint"]["path"]
    saved = " ".join(name for _, dirs, files in os.walk(checkpoint) for name in dirs + files)
    manifests = " ".join(open(os.path.join(d, f)).read() for d, _, files in os.walk(checkpoint)
                         for f in files if f.endswith(".json"))
    assert "WideFactors" in saved + manifests and "SparseFeatFactors" in saved + manifests


# -- a trainer killed after its completion was recorded -------------------------------------

# Runs the built-in worker (`psjob worker`) with fault points. KILL_AT ("stop_worker": right
# after stop_worker returned; "announce": after the pservers acknowledged the completion,
# before the trainer says so in its log) SIGKILLs trainer KILL_TRAINER there, on its first
# start only. HOLD_TRAINER waits at its stop_worker until the file RELEASE exists.
COMPLETION_WRAPPER = r"""
import os, signal, sys, time
from psjob.launcher import entrypoints
from psjob.fleet.fleet import Fleet
from psjob.cluster.trainer import client_service

tid = os.environ["PADDLE_TRAINER_ID"]
marker = os.environ["KILL_MARKER"]
first = not os.path.exists(marker)

def die():
    open(marker, "w").close()
    os.kill(os.getpid(), signal.SIGKILL)

stop_worker, announce = Fleet.stop_worker, client_service.announce_completion

def held_stop_worker(self):
    if tid == os.environ.get("HOLD_TRAINER"):
        while not os.path.exists(os.environ["RELEASE"]):
            time.sleep(0.05)
    stop_worker(self)
    if first and tid == os.environ["KILL_TRAINER"] and os.environ["KILL_AT"] == "stop_worker":
        die()

def killed_announce(trainer_id):
    if first and tid == os.environ["KILL_TRAINER"] and os.environ["KILL_AT"] == "announce":
        die()
    announce(trainer_id)

Fleet.stop_worker = held_stop_worker
client_service.announce_completion = killed_announce
sys.exit(entrypoints.worker_main(sys.argv[1:]))
"""


def completion_job(tmp_path, kill_at, trainers=1, hold=None):
    wrapper = tmp_path / "completion_wrapper.py"
    wrapper.write_text(COMPLETION_WRAPPER)
    env = [{"name": "KILL_MARKER", "value": str(tmp_path / "killed")},
           {"name": "KILL_TRAINER", "value": "0"}, {"name": "KILL_AT", "value": kill_at},
           {"name": "HOLD_TRAINER", "value": "" if hold is None else str(hold)},
           {"name": "RELEASE", "value": str(tmp_path / "release")}]
    return write_job(tmp_path, spec={"worker": {"replicas": trainers, "command": ["python", str(wrapper)],
                                                "env": env},
                                     "runPolicy": {"backoffLimit": 1}})


@pytest.mark.parametrize("kill_at", ["stop_worker", "announce"])
def test_a_trainer_killed_after_its_completion_was_recorded_does_not_keep_the_job_running(tmp_path, kill_at):
    """stop_worker: the trainer had said it completed; it is not restarted. announce: it had
    not said so yet; it is restarted, finds the pservers gone (they exited once every trainer
    completed) or past every trainer, and the job ends Succeeded in seconds, not after the
    trainer's 300 s wait for pservers that never come back."""
    started = time.monotonic()
    status, out = finish(start_run(completion_job(tmp_path, kill_at), tmp_path), timeout=120)
    assert status == 0, out
    assert (tmp_path / "killed").exists(), "the fault point was never reached:\n" + out
    assert time.monotonic() - started < 100, out
    summary = json.loads((tmp_path / "summary.json").read_text())
    worker = {p["name"]: p for p in summary["processes"]}["worker-0"]
    assert summary["status"] == "Succeeded", summary
    assert worker["exit_history"][0] == 137, worker
    log = (tmp_path / "work" / "logs" / "worker-0.log").read_text()
    if kill_at == "stop_worker":
        assert "worker 0 exited with status 137 after the pservers recorded its completion; not " \
               "restarted" in out, out
        assert worker["exit_history"] == [137] and worker["restarts"] == 0, worker
    else:
        assert worker["restarts"] == 1, worker
        # The restart saw the pservers past every trainer and exited 0, or found them gone and
        # was stopped once every pserver had exited 0.
        assert ("had already completed (pserver" in log and worker["exit_history"] == [137, 0]) or (
            "was restarted after it had completed" in out), out + log


def test_a_trainer_restarted_after_its_completion_while_others_train_exits_0_at_once(tmp_path):
    """The pservers still serve trainer 1 (held before its stop_worker): restarted trainer 0
    asks them, finds its completion recorded and exits 0 instead of training again."""
    proc = start_run(completion_job(tmp_path, "announce", trainers=2, hold=1), tmp_path)
    log = tmp_path / "work" / "logs" / "worker-0.log"
    deadline = time.monotonic() + 90
    while proc.poll() is None and time.monotonic() < deadline:
        if log.exists() and "had already completed (pserver" in log.read_text():
            break
        time.sleep(0.1)
    (tmp_path / "release").touch()
    status, out = finish(proc)
    assert status == 0, out + log.read_text()
    text = log.read_text()
    assert re.search(r"trainer 0 had already completed \(pserver 127\.0\.0\.\d:\d+ recorded its "
                     r"completion\): nothing left to do; exiting 0", text), text
    assert text.count("trainer=0 epoch=") == text.split("had already completed")[0].count("trainer=0 epoch="), \
        "the restarted trainer trained again"
    summary = json.loads((tmp_path / "summary.json").read_text())
    worker = {p["name"]: p for p in summary["processes"]}["worker-0"]
    assert worker["exit_history"] == [137, 0] and summary["status"] == "Succeeded", summary


@pytest.mark.parametrize("content, summary", [
    (b"", "0 examples from 0 lines"),
    (b"1\t0.5\n0\t1,2\t3\n" * 20, "0 examples from 40 lines; skipped 40 malformed (dense_count=20, field_count=20)"),
    (bytes(range(256)) * 64, "0 examples from "),
])
def test_a_job_that_reads_no_example_fails_naming_the_files(tmp_path, content, summary):
    """An empty file, every line malformed, binary garbage: nothing was trained, so the job
    fails at once (exit 2, a problem of its input) instead of ending Succeeded."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "part-00000").write_bytes(content)
    job = write_job(tmp_path, spec={"args": ["--data", str(data), "--batch", "64"],
                                    "pserver": {"replicas": 1}, "worker": {"replicas": 1},
                                    "runPolicy": {"backoffLimit": 3}})
    status, out = finish(start_run(job, tmp_path))
    assert status == 2, out
    assert f"no examples were read from {data / 'part-00000'} ({summary}" in out, out
    result = json.loads((tmp_path / "summary.json").read_text())
    assert result["status"] == "Failed" and result["reason"].startswith("ConfigError"), result
    assert result["examples"] == 0
