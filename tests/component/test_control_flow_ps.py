"""A dense model with paddle.static.nn.cond in its forward trains under the parameter-server
transpiler (1 pserver + 1 trainer, sync, real processes under `psjob launch`) exactly as in
one process: the conditional_block ops and their gradient blocks run on the trainer, the
optimizer on the pserver."""
import os
import sys

import numpy as np

import psjob as paddle
import psjob.fluid as fluid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts"))
import cond_train  # noqa: E402


def single_process():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        loss, positive = cond_train.build()
        paddle.optimizer.SGD(0.01).minimize(loss)
    exe, scope = fluid.Executor(), fluid.Scope()
    exe.run(startup, scope=scope)
    runs = [exe.run(main, feed={"x": x, "y": y}, fetch_list=[loss, positive], scope=scope)
            for x, y in cond_train.batches()]
    assert {bool(p.reshape(-1)[0]) for _, p in runs} == {True, False}  # both branches train
    losses = [float(loss.reshape(-1)[0]) for loss, _ in runs]
    return losses, {p.name: np.array(scope.vars[p.name]) for p in main.all_parameters()}


def test_a_model_with_cond_trains_under_the_transpiler_as_in_one_process(tmp_path, launch, script, read_logs):
    paddle.enable_static()
    r = launch(["--server_num", "1", "--worker_num", "1", "--log_dir", str(tmp_path / "log"),
                script("cond_train.py"), "--out", str(tmp_path)])
    assert r.returncode == 0, r.stderr + read_logs(tmp_path / "log")
    got = dict(np.load(tmp_path / "trainer0.npz"))
    losses, params = single_process()
    np.testing.assert_allclose(got.pop("losses"), losses, rtol=1e-5, atol=1e-6)
    assert set(got) == set(params)
    for name in params:
        np.testing.assert_allclose(got[name], params[name], rtol=0, atol=1e-5, err_msg=name)


def test_the_cond_model_trains_in_async_mode(tmp_path, launch, script, read_logs):
    """Async: the pserver applies each gradient as it arrives (so no equality with one process,
    and 12 batches are too few for a loss trend); the run completes and the branch's own
    parameter moves through its conditional_block_grad."""
    paddle.enable_static()
    r = launch(["--server_num", "1", "--worker_num", "1", "--log_dir", str(tmp_path / "log"),
                script("cond_train.py"), "--out", str(tmp_path), "--async"])
    assert r.returncode == 0, r.stderr + read_logs(tmp_path / "log")
    got = dict(np.load(tmp_path / "trainer0.npz"))
    losses = got["losses"]
    assert np.isfinite(losses).all() and len(losses) == 12
    assert not np.allclose(got["branch_w"], 0.3)  # trained from its initial 0.3
