"""Paddle 2.x fleet saves are collective (scripts/fleet2_collective_save.py): two real trainers
and a real pserver under `psjob launch`. Every trainer calls save_inference_model and
save_persistables, trainer 0 alone writes, each returns once the files are complete, and a
write that fails on trainer 0 raises on both. What was saved is real: the inference model and
the persistables load in this process and predict what the trainers' DistributedInfer program
predicted, and a new job started from the persistables (DistributedInfer's
init_distributed_infer_env) predicts the same."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "fleet2_collective_save.py")


def run_phase(out, phase, workers):
    """`psjob launch` of the script: 1 pserver, `workers` trainers (the conftest's launch, for a
    module-scoped fixture)."""
    log = out / f"log-{phase}"
    r = subprocess.run([sys.executable, "-m", "psjob.cli", "launch", "--server_num", "1", "--worker_num",
                        str(workers), "--log_dir", str(log), SCRIPT, "--out", str(out), "--phase", phase],
                       capture_output=True, text=True, timeout=240)
    logs = "".join(f"\n--- {f.name}\n{f.read_text(errors='replace')[-3000:]}" for f in sorted(log.glob("*log*")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:] + logs


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("collective-save")
    run_phase(out, "train", 2)
    return out


def records(out):
    return [json.loads((out / f"record-{t}.json").read_text()) for t in (0, 1)]


def test_every_trainer_calls_the_save_and_only_trainer_0_writes(trained):
    assert (trained / "infer-0" / "__manifest__.json").exists()
    assert (trained / "persist-0" / "__manifest__.json").exists()
    # trainer 1 passed its own directory names: nothing was written there
    assert not (trained / "infer-1").exists() and not (trained / "persist-1").exists()


def test_every_trainer_returns_after_trainer_0_wrote(trained):
    for record in records(trained):
        assert record["infer_complete_at_return"], record
        assert record["persist_complete_at_return"], record


def test_a_failing_write_on_trainer_0_raises_on_both_trainers(trained):
    for record in records(trained):
        assert record["failed_save"] is not None, record
        assert "worker 0's write failed" in record["failed_save"]
        assert "a-file/sub" in record["failed_save"] and "NotADirectoryError" in record["failed_save"]
    assert not (trained / "a-file" / "sub").exists()


def _probe(out):
    with np.load(out / "probe.npz") as z:
        return {k: z[k] for k in z.files}


def test_both_trainers_dist_infer_programs_read_the_pservers(trained):
    a, b = np.load(trained / "dist-infer-0.npy"), np.load(trained / "dist-infer-1.npy")
    assert a.shape == (16, 1) and np.all((a > 0) & (a < 1))
    np.testing.assert_array_equal(a, b)  # after barrier_worker both read the same final model


def test_the_saved_inference_model_loads_and_predicts_what_the_trainers_did(trained):
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with fluid.scope_guard(fluid.Scope()):
        program, feeds, fetches = paddle.static.load_inference_model(
            str(trained / "infer-0"), exe, model_filename=None, params_filename=None)
        probe = _probe(trained)
        got, = exe.run(program, feed={n: probe[n] for n in feeds}, fetch_list=fetches)
    np.testing.assert_allclose(got, np.load(trained / "dist-infer-0.npy"), rtol=0, atol=1e-6)


def test_the_saved_persistables_load_into_a_single_process_program(trained):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        pred = _net()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    with fluid.scope_guard(scope):
        fluid.io.load_persistables(exe, str(trained / "persist-0"), main)
    assert scope.vars["table"].shape == (1000, 4)  # the distributed table, assembled from its shard
    probe = {k: v for k, v in _probe(trained).items() if k != "label"}
    got, = exe.run(main, feed=probe, fetch_list=[pred], scope=scope)
    np.testing.assert_allclose(got, np.load(trained / "dist-infer-0.npy"), rtol=0, atol=1e-6)


def _net():
    """The script's net, forward only (parameter names as the script's)."""
    paddle.enable_static()
    ids = [paddle.static.data(f"slot{i}", [None, 1], "int64") for i in range(3)]
    dense = paddle.static.data("dense", [None, 2], "float32")
    embs = [paddle.reshape(paddle.static.nn.sparse_embedding(i, [1000, 4], param_attr=paddle.ParamAttr(name="table")),
                           [-1, 4]) for i in ids]
    h = paddle.static.nn.fc(paddle.concat(embs + [dense], axis=1), 8, activation="relu")
    return paddle.nn.functional.sigmoid(paddle.static.nn.fc(h, 1))


def test_a_new_job_started_from_the_persistables_predicts_the_same(trained):
    run_phase(trained, "infer", 1)
    np.testing.assert_allclose(np.load(trained / "infer-phase.npy"), np.load(trained / "dist-infer-0.npy"),
                               rtol=0, atol=1e-6)
