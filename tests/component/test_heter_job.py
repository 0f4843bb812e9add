"""Heterogeneous parameter-server jobs under `psjob launch`: CTR with its MLP on heter trainers.

Every process is real (pserver, CPU trainers, heter trainer, all running
tests/component/scripts/heter_train.py with the roles `psjob launch` gives
them) and talks gRPC on 127.0.0.x. Heter trainers run the MLP on CPUPlace
(heter_worker_device_guard="cpu"), so the whole protocol runs without a GPU.
Each heter job is compared with the plain PS job on the same data in the
same mode. One sync job runs over TLS (certificates from a throwaway CA,
scripts/make_certs.py); one runs under `psjob run` with metrics ports, and
its heter trainer's /metrics is scraped while it trains.
"""
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
import yaml

STEPS = 80
BATCH = 64


@pytest.fixture(scope="module")
def ctr_data(tmp_path_factory):
    from psjob.dataset import ctr
    path = tmp_path_factory.mktemp("ctr")
    ctr.generate(str(path), num_examples=STEPS * BATCH + 2048, num_files=1, seed=1)
    return str(path)


def run(tmp_path, launch, read_logs, script, data, *, mode, trainers, heter, extra=(), env=None):
    out = tmp_path / ("heter" if heter else "plain")
    out.mkdir()
    args = ["--server_num", "1", "--worker_num", str(trainers), "--log_dir", str(out / "log")]
    if heter:
        args += ["--heter_worker_num", str(heter)]
    args += [script("heter_train.py"), "--data", data, "--out", str(out), "--mode", mode, "--steps", str(STEPS),
             "--batch", str(BATCH), "--distributed_table", *(["--heter"] if heter else []), *extra]
    r = launch(args, timeout=180, env=env)
    assert r.returncode == 0, r.stderr + read_logs(out / "log")
    assert r.stderr.count("exit 0") == 1 + trainers + heter, r.stderr  # every process finished by itself
    return json.loads((out / "trainer0.json").read_text())


@pytest.fixture(scope="module")
def sync_plain(tmp_path_factory, ctr_data):
    """The plain sync job (2 trainers) the sync heter jobs are compared with: run once."""
    kit = _load("conftest.py")
    return run(tmp_path_factory.mktemp("sync"), kit.launch, kit.read_logs,
               lambda name: os.path.join(kit.SCRIPTS, name), ctr_data, mode="sync", trainers=2, heter=0)


def test_a_sync_heter_job_trains_exactly_like_the_plain_job(tmp_path, launch, read_logs, script, ctr_data,
                                                            sync_plain):
    plain = sync_plain
    heter = run(tmp_path, launch, read_logs, script, ctr_data, mode="sync", trainers=2, heter=1)
    assert (plain["stage_ops"], heter["stage_ops"]) == (0, 2)  # the MLP's forward and backward stages
    np.testing.assert_allclose(heter["losses"], plain["losses"], rtol=1e-5, atol=1e-6)
    assert abs(heter["auc"] - plain["auc"]) < 0.01
    assert abs(heter["test_auc"] - plain["test_auc"]) < 0.01
    assert heter["test_auc"] > 0.65, heter  # it learned: chance is 0.5


@pytest.mark.parametrize("mode", ["half_async", "async"])
def test_an_asynchronous_heter_job_reaches_the_auc_of_the_plain_job(tmp_path, launch, read_logs, script, ctr_data,
                                                                     mode):
    # One CPU trainer: with two, the trainers' interleaving alone moves the AUC by ~0.01.
    plain = run(tmp_path, launch, read_logs, script, ctr_data, mode=mode, trainers=1, heter=0)
    heter = run(tmp_path, launch, read_logs, script, ctr_data, mode=mode, trainers=1, heter=1)
    assert heter["stage_ops"] == 2
    # Async: the heter hop changes how far the trainer's reads lag its own queued pushes,
    # which moved the test AUC by up to 0.0103 on a loaded machine; half-async has no such lag.
    tolerance = 0.01 if mode == "half_async" else 0.02
    assert abs(heter["test_auc"] - plain["test_auc"]) < tolerance, (plain["test_auc"], heter["test_auc"])
    assert heter["test_auc"] > 0.65, heter


def test_heter_ops_in_a_job_without_heter_trainers_stop_it_with_a_clear_error(tmp_path, launch, read_logs,
                                                                             script, ctr_data):
    log = tmp_path / "log"
    r = launch(["--server_num", "1", "--worker_num", "1", "--log_dir", str(log), script("heter_train.py"),
                "--data", ctr_data, "--out", str(tmp_path), "--heter", "--steps", "1"], timeout=120)
    assert r.returncode != 0
    # Every role refuses the program; whichever fails first stops the others.
    text = read_logs(log)
    assert "placed on 'gpu' by fluid.device_guard but the job has no heter trainers" in text, text


def test_an_xpu_heter_trainer_stops_the_job_with_a_not_available_error(tmp_path, launch, script, ctr_data):
    log = tmp_path / "log"
    r = launch(["--server_num", "1", "--worker_num", "1", "--heter_worker_num", "1", "--log_dir", str(log),
                script("heter_train.py"), "--data", ctr_data, "--out", str(tmp_path), "--heter",
                "--device_guard", "xpu", "--steps", "1"], timeout=120)
    assert r.returncode != 0
    text = (log / "heterlog.0").read_text()
    assert "heter_worker_device_guard='xpu': XPU devices are not available" in text, text[-2000:]


def _load(relative):
    """A helper module of this directory by path (the component conftest, scripts/make_certs.py)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), relative)
    spec = importlib.util.spec_from_file_location(f"_heter_job_{os.path.basename(relative)[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_certs(directory):
    return _load(os.path.join("scripts", "make_certs.py")).make_certs(str(directory))


def test_a_sync_heter_job_over_tls_trains_exactly_like_the_plain_job(tmp_path, launch, read_logs, script,
                                                                     ctr_data, sync_plain):
    ca, cert, key = make_certs(tmp_path / "certs")
    tls = {"PSJOB_TLS_CERT_FILE": cert, "PSJOB_TLS_KEY_FILE": key, "PSJOB_TLS_CA_FILE": ca}
    heter = run(tmp_path, launch, read_logs, script, ctr_data, mode="sync", trainers=2, heter=1, env=tls)
    # The heter trainer served TLS; the CPU trainers could only reach it (and the pserver) over TLS.
    log = (tmp_path / "heter" / "log" / "heterlog.0").read_text()
    assert re.search(r"heter trainer 127\.0\.0\.1:\d+ serves trainers \[0, 1\] on CPUPlace.* over TLS", log), log
    assert heter["stage_ops"] == 2
    np.testing.assert_allclose(heter["losses"], sync_plain["losses"], rtol=1e-5, atol=1e-6)


def test_a_heter_trainer_serves_its_metrics_while_it_trains(tmp_path):
    """`psjob run` with --metrics-port: pserver 0 gets P, the heter trainer P+1, the trainers P+2, P+3."""
    job = tmp_path / "heter.yaml"
    job.write_text(yaml.safe_dump({
        "apiVersion": "psjob.dev/v1alpha1", "kind": "ParameterServerJob", "metadata": {"name": "hmetrics"},
        "spec": {"image": "psjob:test", "mode": "async",
                 "args": ["--examples", "12000", "--batch", "300", "--distributed_table", "--log_every", "0.5"],
                 "pserver": {"replicas": 1}, "worker": {"replicas": 2},
                 "heterWorker": {"replicas": 1, "device": "cpu"}}}))
    first = free_port_block(4)
    proc = subprocess.Popen([sys.executable, "-m", "psjob.cli", "run", str(job), "--workdir", str(tmp_path / "work"),
                             "--metrics-port", str(first)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path,
                            start_new_session=True)
    scraped = None
    deadline = time.monotonic() + 90
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{first + 1}/metrics", timeout=2) as response:
                text = response.read().decode()
            if (sample(text, "psjob_heter_batches_total") or 0) >= 4:
                scraped = text
                if (sample(text, "psjob_heter_batches_total") or 0) >= 10:
                    break
        except OSError:
            pass
        time.sleep(0.1)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        pytest.fail(f"psjob run did not finish:\n{out}")
    assert proc.returncode == 0, out
    assert scraped is not None, f"the heter trainer never served /metrics on {first + 1}:\n{out}"
    runs = sample(scraped, 'psjob_heter_rpc_requests_total{method="RunStage",status="OK"}')
    batches = sample(scraped, "psjob_heter_batches_total")
    # A forward and a backward stage per batch; a scrape may fall between a stage and its RPC's
    # observation, or a batch's two stages, for each of the 2 trainers.
    assert batches >= 4 and runs >= 2 * (batches - 2)
    assert sample(scraped, 'psjob_heter_stage_seconds_count{stage="0"}') == batches
    assert sample(scraped, 'psjob_heter_stage_seconds_sum{stage="1"}') > 0
    assert sample(scraped, 'psjob_heter_received_bytes_total{method="RunStage"}') > 0
    assert sample(scraped, 'psjob_heter_sent_bytes_total{method="RunStage"}') > 0
    assert abs(sample(scraped, 'psjob_heter_rpc_duration_seconds_count{method="RunStage"}') - runs) <= 2
    assert sample(scraped, "psjob_heter_staleness_steps_count") is not None


def sample(text, name):
    match = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", text, re.M)
    return float(match.group(1)) if match else None


def free_port_block(count):
    from psjob.launcher.launch import free_port_block as block
    first = block(count)
    if first is None:
        pytest.skip("no block of free ports")
    return first
