"""paddle.static.save/load and save_inference_model/load_inference_model (2.x signatures):
round trips, a fresh process predicting the saved model's outputs, and bad files refused
without touching the scope."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.foundation.checkpoint.format import CheckpointError

paddle.enable_static()
RNG = np.random.default_rng(21)
X = RNG.normal(size=(6, 4)).astype("float32")
IDS = RNG.integers(0, 30, size=(6, 1))


def model(dropout=0.3):
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 5
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data("x", [None, 4])
        ids = paddle.static.data("ids", [None, 1], "int64")
        emb = paddle.reshape(paddle.nn.Embedding(30, 3, sparse=True)(ids), [-1, 3])
        h = paddle.nn.Dropout(dropout)(paddle.nn.functional.relu(paddle.nn.Linear(7, 8)(paddle.concat([x, emb], 1))))
        pred = paddle.nn.functional.sigmoid(paddle.nn.Linear(8, 1)(h))
        loss = paddle.mean(paddle.square(pred - 0.5))
        paddle.optimizer.Adam(0.05).minimize(loss)
    return main, startup, pred, loss


def trained(steps=3, dropout=0.3):
    main, startup, pred, loss = model(dropout)
    scope = fluid.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for _ in range(steps):
            exe.run(main, feed={"x": X, "ids": IDS}, fetch_list=[loss])
    return main, startup, pred, loss, scope, exe


def test_save_and_load_restore_parameters_and_optimizer_state(tmp_path):
    main, startup, pred, loss, scope, exe = trained(dropout=0.0)  # no random masks: runs compare
    prefix = str(tmp_path / "ckpt" / "epoch_3")
    with paddle.static.scope_guard(scope):
        paddle.static.save(main, prefix)
        after_save = exe.run(main, feed={"x": X, "ids": IDS}, fetch_list=[loss])
    assert {os.path.basename(p) for p in os.listdir(tmp_path / "ckpt")} == {
        "epoch_3.pdparams", "epoch_3.pdopt", "epoch_3.pdmodel"}
    state = paddle.static.load_program_state(prefix)
    assert "linear_0.w_0" in state and "linear_0.w_0_moment1_0" in state

    main2, startup2, _, loss2 = model(dropout=0.0)
    scope2 = fluid.Scope()
    with paddle.static.scope_guard(scope2):
        exe.run(startup2)
        paddle.static.load(main2, prefix, exe)
        resumed = exe.run(main2, feed={"x": X, "ids": IDS}, fetch_list=[loss2])
    np.testing.assert_allclose(resumed[0], after_save[0], rtol=1e-6)


def test_load_refuses_a_corrupt_file_and_keeps_the_scope(tmp_path):
    main, _, _, _, scope, exe = trained(1)
    prefix = str(tmp_path / "m")
    with paddle.static.scope_guard(scope):
        paddle.static.save(main, prefix)
    other_main, other_startup, _, _ = model()
    fresh = fluid.Scope()
    with paddle.static.scope_guard(fresh):
        exe.run(other_startup)
    before = {k: np.array(v) for k, v in fresh.vars.items()}
    doc = json.loads(open(prefix + ".pdmodel").read())
    doc["arrays"]["params"]["linear_0.w_0"]["sha256"] = "0" * 64
    open(prefix + ".pdmodel", "w").write(json.dumps(doc))
    with paddle.static.scope_guard(fresh), pytest.raises(CheckpointError, match="linear_0.w_0"):
        paddle.static.load(other_main, prefix, exe)
    for k, v in before.items():
        np.testing.assert_array_equal(np.array(fresh.vars[k]), v)
    with pytest.raises(CheckpointError, match="cannot read"):
        paddle.static.load(other_main, str(tmp_path / "missing"))


FRESH_PROCESS = textwrap.dedent("""
    import sys
    import numpy as np
    import psjob as paddle
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    program, feed_names, fetch_targets = paddle.static.load_inference_model(sys.argv[1], exe)
    data = np.load(sys.argv[2])
    out = exe.run(program, feed={n: data[n] for n in feed_names}, fetch_list=fetch_targets)
    np.save(sys.argv[3], out[0])
    print(feed_names)
""")


def test_an_inference_model_predicts_the_same_in_a_fresh_process(tmp_path):
    main, _, pred, _, scope, exe = trained()
    prefix = str(tmp_path / "infer" / "rec_inference")
    with paddle.static.scope_guard(scope):
        x, ids = main.global_block().var("x"), main.global_block().var("ids")
        paddle.static.save_inference_model(prefix, [x, ids], [pred], exe, program=main)
        want = exe.run(main.clone(for_test=True), feed={"x": X, "ids": IDS}, fetch_list=[pred])[0]
    assert os.path.isfile(prefix + ".pdmodel") and os.path.isfile(prefix + ".pdiparams")
    np.savez(tmp_path / "feed.npz", x=X, ids=IDS)
    script = tmp_path / "predict.py"
    script.write_text(FRESH_PROCESS)
    done = subprocess.run([sys.executable, str(script), prefix, str(tmp_path / "feed.npz"),
                           str(tmp_path / "out.npy")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['x', 'ids']"
    got = np.load(tmp_path / "out.npy")
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # The inference program is pruned and for test: no optimizer state, dropout in inference mode.
    program, _, _ = paddle.static.load_inference_model(prefix, exe)
    assert not any("moment" in v.name for v in program.list_vars())
    assert all(op.attr("is_test") for op in program.global_block().ops if op.type == "dropout")


def test_save_inference_model_refuses_a_feed_the_targets_do_not_need(tmp_path):
    main, _, pred, _, scope, exe = trained(1)
    with paddle.static.program_guard(main):
        unused = paddle.static.data("unused", [None, 2])
    with paddle.static.scope_guard(scope), pytest.raises(ValueError, match="'unused' is not needed"):
        paddle.static.save_inference_model(str(tmp_path / "m"), [unused], [pred], exe, program=main)
    with pytest.raises(TypeError, match="fetch_vars must be Variables"):
        paddle.static.save_inference_model(str(tmp_path / "m"), [], ["pred"], exe, program=main)


def test_static_data_input_spec_and_places():
    main = paddle.static.Program()
    with paddle.static.program_guard(main):
        v = paddle.static.data("v", [None, 3, -1], "int64", lod_level=1)
        assert paddle.static.data("v", [None, 3, -1], "int64") is v
        with pytest.raises(ValueError, match="already declared"):
            paddle.static.data("v", [None, 4], "int64")
    assert list(v.shape) == [-1, 3, -1] and v.dtype == "int64" and v.lod_level == 1 and v.stop_gradient
    spec = paddle.static.InputSpec([None, 3], "float32", "x")
    assert spec.shape == (-1, 3) and spec.batch(8).shape == (8, -1, 3)
    # batch and unbatch change the spec itself and return it, as Paddle 3.0.0's do
    assert spec.shape == (8, -1, 3) and spec.unbatch() is spec and spec.shape == (-1, 3)
    assert repr(spec) == "InputSpec(shape=(-1, 3), dtype=paddle.float32, name=x, stop_gradient=False)"
    assert paddle.static.InputSpec.from_tensor(v).name == "v"
    assert len(paddle.static.cpu_places(2)) == 2
    main._fleet_opt = {"worker": {}}  # PaddleRec's helpers set private program attributes


def test_a_save_holds_paddles_pickles(tmp_path):
    """.pdparams / .pdopt are what Paddle's paddle.static.save writes and its load reads: pickled
    {name: ndarray} dicts (read here with the plain pickle module, as Paddle reads them)."""
    import pickle
    main, _, _, _, scope, _ = trained()
    prefix = str(tmp_path / "m")
    with paddle.static.scope_guard(scope):
        paddle.static.save(main, prefix)
    with open(prefix + ".pdparams", "rb") as f:
        params = pickle.load(f)
    with open(prefix + ".pdopt", "rb") as f:
        opt = pickle.load(f)
    assert set(params) == {p.name for p in main.all_parameters()} and "linear_0.w_0_moment1_0" in opt
    for name, value in {**params, **opt}.items():
        assert type(value) is np.ndarray
        np.testing.assert_array_equal(value, np.asarray(scope.vars[name]))
