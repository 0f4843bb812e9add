"""Per-program names (Paddle 2.x/3.x) against Fluid 1.x's process-wide ones.

Paddle 3.0.0's legacy static graph (FLAGS_enable_pir_api=0) counts the names a
program's layers make in that Program's own generator: building the same net in two
fresh Programs one after the other gives the same `fc_0.w_0`, `sigmoid_0.tmp_0`,
`_generated_var_0..3` in both, so a test program built by building the net again
shares the trained parameters in one scope. The optimizer's names
(`learning_rate_<n>`, `fc_0.w_0_moment1_<n>`) stay process-wide; `unique_name.guard()`
no longer resets a program's names; `Program.clone()` copies the counter. Every name
and value below was printed by Paddle 3.0.0 on the same script (CPU;
tests/data/program_names/make_reference.py), and psjob gives the same. Fluid 1.x (Paddle 1.8) counts everything in one process-wide
generator; psjob keeps that until `paddle.enable_static()` is called, which every
Paddle 2.x/3.x static-graph script does and no Fluid 1.x script does.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import psjob as paddle
from psjob import device
from psjob.fluid import unique_name

paddle.enable_static()


@pytest.fixture
def per_program(monkeypatch):
    monkeypatch.setattr(unique_name, "_per_program", True)


@pytest.fixture
def fluid1(monkeypatch):
    monkeypatch.setattr(unique_name, "_per_program", False)


def _net():
    x = paddle.static.data("x", [-1, 4], "float32")
    lab = paddle.static.data("lab", [-1, 1], "int64")
    h = paddle.nn.functional.relu(paddle.static.nn.fc(x, 3))
    c = paddle.concat([h, x], axis=1)
    p = paddle.nn.functional.sigmoid(paddle.static.nn.fc(c, 1))
    auc, _, stats = paddle.static.auc(paddle.concat([1 - p, p], axis=1), lab, num_thresholds=15, slide_steps=1)
    return paddle.mean(p), p, auc, stats


def _build(train, lr=0.5):
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        loss, p, auc, stats = _net()
        if train:
            paddle.optimizer.SGD(lr).minimize(loss)
    return main, start, loss, p, auc, stats


def _params(program):
    return sorted(v.name for v in program.global_block().all_parameters())


def test_enable_static_turns_per_program_names_on(monkeypatch):
    monkeypatch.setattr(unique_name, "_per_program", False)
    monkeypatch.setattr(device, "_static", False)
    paddle.enable_static()
    assert unique_name.per_program_names()


def test_two_programs_get_the_same_names(per_program):
    m1, s1, loss1, p1, auc1, st1 = _build(True)
    m2, s2, loss2, p2, auc2, st2 = _build(False)
    assert _params(m1) == _params(m2) == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    assert [v.name for v in st1] == [v.name for v in st2] == [f"_generated_var_{i}" for i in range(4)]
    assert (p1.name, p2.name, auc1.name, auc2.name, loss1.name) == (
        "sigmoid_0.tmp_0", "sigmoid_0.tmp_0", "auc_0.tmp_0", "auc_0.tmp_0", "mean_0.tmp_0")
    assert sorted(s2.global_block().vars) == [
        "_generated_var_0", "_generated_var_1", "_generated_var_2", "_generated_var_3",
        "fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]


def test_rebuilt_test_program_shares_the_trained_parameters(per_program):
    """The "build the net again for test" idiom: Paddle 3.0.0's values."""
    m1, s1, loss1, _, _, _ = _build(True)
    m2, _, _, p2, _, _ = _build(False)
    scope = paddle.static.Scope()
    exe = paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        exe.run(s1)
        for name in _params(m1):
            t = scope.find_var(name).get_tensor()
            shape = np.array(t).shape
            t.set(np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype("float32"), paddle.CPUPlace())
        x = np.array([[0.1, -0.2, 0.3, 0.4], [1.0, 0.5, -0.5, 0.0]], "float32")
        lab = np.array([[1], [0]], "int64")
        for _ in range(2):
            loss, = exe.run(m1, feed={"x": x, "lab": lab}, fetch_list=[loss1])
        pred, = exe.run(m2, feed={"x": x, "lab": lab}, fetch_list=[p2])
        w = np.array(scope.find_var("fc_1.w_0").get_tensor()).ravel()
    np.testing.assert_allclose(np.ravel(loss), [0.1951826810836792], rtol=1e-6)
    np.testing.assert_allclose(pred.ravel(), [0.1557994931936264, 0.1766161471605301], rtol=1e-6)
    np.testing.assert_allclose(w, [-1.0, -0.6995153427124023, -0.46683812141418457, -0.09310849010944366,
                                   0.3073331117630005, 0.6844453811645508, 0.9671136140823364], rtol=1e-6)


def test_optimizer_names_stay_process_wide(per_program):
    with unique_name.guard():
        m1 = _build(True)[0]
        m2 = _build(True)[0]
    lr1 = [n for n in m1.global_block().vars if n.startswith("learning_rate_")]
    lr2 = [n for n in m2.global_block().vars if n.startswith("learning_rate_")]
    assert (lr1, lr2) == (["learning_rate_0"], ["learning_rate_1"])  # Paddle 3.0.0's (Adam's moments too)
    assert _params(m2) == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]


def test_guard_does_not_reset_a_programs_names(per_program):
    """Paddle 3.0.0: two nets under two unique_name.guard()s in one program count on
    (fc_0..fc_3, _generated_var_0..7), where Fluid 1.8's guard started again at fc_0."""
    main, start = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, start):
        with unique_name.guard():
            _net()
        with unique_name.guard():
            _net()
    names = set(main.global_block().vars)
    assert {"fc_3.w_0", "auc_1.tmp_0", "sigmoid_1.tmp_0", "_generated_var_7"} <= names


def test_clone_copies_the_counter(per_program):
    """Paddle 3.0.0: a layer added to a clone, or to its original afterwards, is fc_2 in each."""
    main, start = _build(False)[:2]
    test = main.clone(for_test=True)
    for program in (test, main):
        with paddle.static.program_guard(program, start):
            out = paddle.static.nn.fc(program.global_block().var("x"), 3)
        assert out.name == "fc_2.tmp_1"


def test_fluid1_names_stay_process_wide(fluid1):
    """Fluid 1.x (Paddle 1.8): the second program's layers count on from the first's."""
    import psjob.fluid as fluid
    names = []
    with fluid.unique_name.guard():
        for _ in range(2):
            main, start = fluid.Program(), fluid.Program()
            with fluid.program_guard(main, start):
                x = fluid.data("x", [-1, 4], "float32")
                out = fluid.layers.fc(x, 2)
            names.append((out.name, sorted(v.name for v in main.global_block().all_parameters())))
    assert names == [("fc_0.tmp_1", ["fc_0.b_0", "fc_0.w_0"]), ("fc_1.tmp_1", ["fc_1.b_0", "fc_1.w_0"])]


def test_a_fluid1_script_never_turns_it_on():
    """A fresh interpreter running Fluid 1.x code keeps the process-wide counter."""
    code = ("import psjob.fluid as fluid\n"
            "from psjob.fluid import unique_name\n"
            "for _ in range(2):\n"
            "    main, start = fluid.Program(), fluid.Program()\n"
            "    with fluid.program_guard(main, start):\n"
            "        out = fluid.layers.fc(fluid.data('x', [-1, 4], 'float32'), 2)\n"
            "print(unique_name.per_program_names(), out.name)\n")
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "fc_1.tmp_1"]


def test_control_flow_counts_in_its_program(per_program):
    """cond and while_loop's unnamed variables (`_generated_var_<n>`) start again in each
    Program, as in Paddle 3.0.0 (whose exact count differs: psjob's ops are not Paddle's)."""
    seen = []
    for _ in range(2):
        main, start = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, start):
            x = paddle.static.data("x", [1], "float32")
            paddle.static.nn.cond(paddle.mean(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
            i, n = paddle.full([1], 0, "int64"), paddle.full([1], 3, "int64")
            paddle.static.nn.while_loop(lambda i: i < n, lambda i: [i + 1], [i])
        seen.append(sorted(v for v in main.global_block().vars if v.startswith("_generated_var_")))
    assert seen[0] == seen[1] and "_generated_var_0" in seen[0]
