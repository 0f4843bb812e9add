"""fluid.io.save / fluid.io.load (and fluid.save / fluid.load, Fluid 1.6+): the program's state
under a path prefix, as PaddlePaddle/models' Fluid 1.x examples save each epoch. Paddle 1.8.5
writes <prefix>.pdparams, .pdopt and .pdmodel for such a program (checked with Paddle 1.8.5's
fluid.io.save on the same network)."""
import os

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.foundation.checkpoint.format import CheckpointError


def _program():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.data(name="x", shape=[None, 3], dtype="float32")
        y = fluid.layers.fc(x, size=2, act="relu")
        loss = fluid.layers.mean(y)
        fluid.optimizer.Adam(learning_rate=0.1).minimize(loss)
    return main, startup, loss


def test_save_then_load_restores_every_persistable(tmp_path):
    main, startup, loss = _program()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    feed = {"x": np.arange(12, dtype="float32").reshape(4, 3) / 10}
    with fluid.scope_guard(scope):
        exe.run(startup)
        exe.run(main, feed=feed, fetch_list=[loss])
        prefix = os.path.join(str(tmp_path), "epoch_1", "checkpoint")
        fluid.io.save(main, prefix)
        names = [v.name for v in main.list_vars() if fluid.io.is_persistable(v)]
        saved = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
        assert sorted(os.listdir(os.path.dirname(prefix))) == [
            "checkpoint.pdmodel", "checkpoint.pdopt", "checkpoint.pdparams"]
        for n in names:  # clobber, then load back
            scope.find_var(n).get_tensor().set(np.zeros_like(saved[n]), fluid.CPUPlace())
        fluid.load(main, prefix, exe)
        for n in names:
            np.testing.assert_array_equal(np.array(scope.find_var(n).get_tensor()), saved[n])
        state = fluid.io.load_program_state(prefix)
        assert set(state) == set(names)
    assert fluid.save is fluid.io.save and fluid.load is fluid.io.load


def test_load_of_a_missing_save_names_the_file(tmp_path):
    main, _, _ = _program()
    with pytest.raises(CheckpointError, match="nothing"):
        fluid.load(main, str(tmp_path / "nothing"), fluid.Executor(fluid.CPUPlace()))
