"""paddle.static.load_program_state / set_program_state / load read a save written by
Paddle itself (its .pdparams / .pdopt pickles), so a model trained with Paddle can be
loaded as a starting point under psjob (PaddleRec's static_trainer `runner.model_init_path`)."""
from __future__ import annotations

import os
import pickle
import shutil

import numpy as np
import pytest

import psjob as paddle
from psjob.foundation.checkpoint.format import CheckpointError

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "zoo-multi")
FEED = {"x": np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.25]], "float32")}


def _program():
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data(name="x", shape=[None, 3], dtype="float32")
        w = paddle.create_parameter([3, 1], "float32", name="w",
                                    default_initializer=paddle.nn.initializer.Assign(
                                        np.array([[0.5], [-0.3], [0.2]], "float32")))
        loss = paddle.mean(paddle.matmul(x, w) ** 2)
        paddle.optimizer.Adam(learning_rate=0.1).minimize(loss)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    return main, exe, loss, w


def test_paddle_save_resumes_training_as_in_paddle():
    main, exe, loss, w = _program()
    state = paddle.static.load_program_state(os.path.join(DATA, "tiny_paddle300"))
    assert sorted(state) == sorted(["w", "w_moment1_0", "w_moment2_0", "w_beta1_pow_acc_0", "w_beta2_pow_acc_0",
                                    "learning_rate_0"])
    paddle.static.set_program_state(main, state)
    got_loss, got_w = exe.run(main, feed=FEED, fetch_list=[loss, w])
    # Paddle 3.0.0, the same program: its second step from the start (the save is after
    # the first) prints loss 0.20031249523162842, w [0.3161296844..., -0.3622563183..., 0.0397092401...].
    np.testing.assert_allclose(float(np.asarray(got_loss).reshape(-1)[0]), 0.20031249523162842, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got_w).reshape(-1),
                               [0.3161296844482422, -0.36225631833076477, 0.039709240198135376], rtol=1e-6)


def test_paddle_save_parameters_alone(tmp_path):
    """A .pdparams without .pdopt or program file (what PaddleRec's init dirs may hold)."""
    shutil.copy(os.path.join(DATA, "tiny_paddle300.pdparams"), tmp_path / "m.pdparams")
    main, exe, loss, w = _program()
    paddle.static.load(main, str(tmp_path / "m"), exe, var_list=[w])
    np.testing.assert_array_equal(np.asarray(paddle.static.global_scope().find_var("w").get_tensor()).reshape(-1),
                                  np.array([0.4, -0.4, 0.1], "float32"))


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo never",))


def test_a_pickle_of_anything_but_arrays_is_refused(tmp_path):
    with open(tmp_path / "m.pdparams", "wb") as f:
        pickle.dump({"w": _Evil()}, f, protocol=4)
    with pytest.raises(CheckpointError, match="os.system|posix.system|is not a numpy array"):
        paddle.static.load_program_state(str(tmp_path / "m"))


def test_not_a_pickle_is_a_clear_error(tmp_path):
    (tmp_path / "m.pdparams").write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="cannot read .* as a Paddle save"):
        paddle.static.load_program_state(str(tmp_path / "m"))
