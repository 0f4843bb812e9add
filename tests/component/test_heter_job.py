"""Heterogeneous parameter-server jobs under `psjob launch`: CTR with its MLP on heter trainers.

Every process is real (pserver, CPU trainers, heter trainer, all running
tests/component/scripts/heter_train.py with the roles `psjob launch` gives
them) and talks gRPC on 127.0.0.x. Heter trainers run the MLP on CPUPlace
(heter_worker_device_guard="cpu"), so the whole protocol runs without a GPU.
Each heter job is compared with the plain PS job on the same data in the
same mode.
"""
import json

import numpy as np
import pytest

STEPS = 80
BATCH = 64


@pytest.fixture(scope="module")
def ctr_data(tmp_path_factory):
    from psjob.dataset import ctr
    path = tmp_path_factory.mktemp("ctr")
    ctr.generate(str(path), num_examples=STEPS * BATCH + 2048, num_files=1, seed=1)
    return str(path)


def run(tmp_path, launch, read_logs, script, data, *, mode, trainers, heter, extra=()):
    out = tmp_path / ("heter" if heter else "plain")
    out.mkdir()
    args = ["--server_num", "1", "--worker_num", str(trainers), "--log_dir", str(out / "log")]
    if heter:
        args += ["--heter_worker_num", str(heter)]
    args += [script("heter_train.py"), "--data", data, "--out", str(out), "--mode", mode, "--steps", str(STEPS),
             "--batch", str(BATCH), "--distributed_table", *(["--heter"] if heter else []), *extra]
    r = launch(args, timeout=180)
    assert r.returncode == 0, r.stderr + read_logs(out / "log")
    assert r.stderr.count("exit 0") == 1 + trainers + heter, r.stderr  # every process finished by itself
    return json.loads((out / "trainer0.json").read_text())


def test_a_sync_heter_job_trains_exactly_like_the_plain_job(tmp_path, launch, read_logs, script, ctr_data):
    plain = run(tmp_path, launch, read_logs, script, ctr_data, mode="sync", trainers=2, heter=0)
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
    assert abs(heter["test_auc"] - plain["test_auc"]) < 0.01, (plain["test_auc"], heter["test_auc"])
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
