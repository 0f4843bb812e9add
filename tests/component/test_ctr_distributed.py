"""The CTR model trained by real pservers and trainers reaches single-process quality."""
import json

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.dataset import ctr
from psjob.models import ctr as ctr_model

EXAMPLES, BATCH = 80_000, 512


@pytest.fixture(scope="module")
def ctr_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("ctr")
    ctr.generate(str(d), num_examples=EXAMPLES, num_files=1, seed=3)
    return str(d)


def _late_auc(aucs):
    """Mean batch AUC over the last third of training (the model has settled there).

    Every run here uses SGD: Fluid 1.x updates a distributed lookup table with
    SGD on the pservers, so SGD everywhere keeps the runs mathematically alike.
    """
    return float(np.mean(aucs[-max(5, len(aucs) // 3):]))


@pytest.fixture(scope="module")
def single_process_auc(ctr_data):
    cfg = ctr_model.CTRConfig(sparse_feature_dim=ctr.SPARSE_FEATURE_DIM)
    main, startup = fluid.Program(), fluid.Program()
    model = ctr_model.build(cfg, main, startup, optimizer=fluid.optimizer.SGD(1.0))
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    aucs = []
    for b in ctr.batches(ctr_data, BATCH, drop_last=True):
        a, = exe.run(main, feed=ctr_model.feed_dict(model, b), fetch_list=[model.batch_auc], scope=scope)
        aucs.append(float(a[0]))
    return _late_auc(aucs)


@pytest.mark.parametrize("mode, extra", [
    ("async", ["--distributed_table"]),
    ("geo", ["--k_steps", "5"]),
])
def test_distributed_ctr_training_matches_single_process_auc(tmp_path, script, launch, read_logs, ctr_data,
                                                             single_process_auc, mode, extra):
    r = launch(["--server_num", "2", "--worker_num", "2", "--log_dir", str(tmp_path / "log"),
                script("fleet_train.py"), "--model", "ctr", "--mode", mode, "--data", ctr_data,
                "--batch", str(BATCH), "--steps", "100000", "--out", str(tmp_path), "--optimizer", "sgd",
                "--lr", "1.0", *extra], timeout=600)
    assert r.returncode == 0, r.stderr + read_logs(tmp_path / "log")
    aucs = json.loads((tmp_path / "trainer0.json").read_text())["aucs"]
    got = _late_auc(aucs)
    assert single_process_auc > 0.68, single_process_auc
    assert abs(got - single_process_auc) < 0.01, (got, single_process_auc)
