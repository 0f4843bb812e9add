"""Adam's epsilon in the Paddle version a program is written for.

Paddle 1.8's adam op adds epsilon as it is: param -= lr_t * m1 / (sqrt(m2) + epsilon);
Paddle 2.x/3.x's scales it: param -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 - beta2^t)),
with lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t) in both. fluid.optimizer.Adam writes the
op's `scale_epsilon` attribute False, paddle.optimizer.Adam leaves Paddle 2.x's rule, and the
attribute travels with the op: onto the pservers the DistributeTranspiler moves it to, and
into a distributed table's per-row rule.

The pinned values are real Paddle's: Paddle 1.8.5 (fluid.optimizer.Adam) and Paddle 3.0.0
with FLAGS_enable_pir_api=0 (paddle.optimizer.Adam, paddle.static), each running the program
of `_fluid_program` / `_static_program` for 3 steps. The gradients (2e-4 .. 6e-3) are small
against epsilon=1e-2, so the two rules give very different weights.
"""
import os
import sys

import numpy as np
import pytest

import psjob
import psjob.fluid as fluid
from psjob.fluid.transpiler import DistributeTranspiler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_transpiler_training import EPS, batches, distributed, single_machine, table_rows  # noqa: E402

W0 = (np.arange(12, dtype="float32").reshape(4, 3) - 5.0) / 10.0
E0 = (np.arange(18, dtype="float32").reshape(6, 3) - 8.0) / 20.0
X = (np.arange(8, dtype="float32").reshape(2, 4) - 3.0) / 10.0
IDS = np.array([[1], [3], [1]], dtype="int64")

# Paddle 1.8.5, fluid.optimizer.Adam(learning_rate=0.1, epsilon=1e-2) (lazy_mode False and True alike)
PADDLE185_W = np.array([[-0.49973807, -0.39973807, -0.29973808],
                        [-0.2, -0.1, 0.0],
                        [0.09973809, 0.19973809, 0.29973808],
                        [0.39947665, 0.49947664, 0.5994767]], dtype="float32")
PADDLE185_EMB_ROWS_1_3 = np.array([[-0.25221372, -0.20221373, -0.15221374],
                                   [0.04888802, 0.09888802, 0.14888802]], dtype="float32")
# Paddle 3.0.0, paddle.optimizer.Adam(learning_rate=0.1, epsilon=1e-2) (lazy_mode False and True alike)
PADDLE300_W = np.array([[-0.49411765, -0.39411765, -0.29411766],
                        [-0.2, -0.1, 0.0],
                        [0.09411765, 0.19411765, 0.29411766],
                        [0.38846156, 0.48846155, 0.5884615]], dtype="float32")
PADDLE300_EMB_ROWS_1_3 = np.array([[-0.2847083, -0.23470828, -0.1847083],
                                   [0.03135081, 0.0813508, 0.13135082]], dtype="float32")


def _train(main, startup, steps=3):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    for _ in range(steps):
        exe.run(main, feed={"x": X, "ids": IDS}, scope=scope)
    return np.array(scope.vars["w"]), np.array(scope.vars["emb"])


def _fluid_program(make_opt):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4], dtype="float32")
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        h = fluid.layers.fc(x, 3, bias_attr=False, param_attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.NumpyArrayInitializer(W0)))
        e = fluid.layers.embedding(ids, size=[6, 3], is_sparse=True, param_attr=fluid.ParamAttr(
            name="emb", initializer=fluid.initializer.NumpyArrayInitializer(E0)))
        loss = fluid.layers.reduce_sum(h) * 1e-3 + fluid.layers.reduce_sum(e) * 1e-3
        make_opt().minimize(loss)
    return main, startup


def _static_program(make_opt):
    paddle = psjob
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        x = paddle.static.data(name="x", shape=[-1, 4], dtype="float32")
        ids = paddle.static.data(name="ids", shape=[-1, 1], dtype="int64")
        h = paddle.static.nn.fc(x, 3, bias_attr=False, weight_attr=paddle.ParamAttr(
            name="w", initializer=paddle.nn.initializer.Assign(W0)))
        e = paddle.static.nn.embedding(ids, size=[6, 3], is_sparse=True, param_attr=paddle.ParamAttr(
            name="emb", initializer=paddle.nn.initializer.Assign(E0)))
        loss = paddle.sum(h) * 1e-3 + paddle.sum(e) * 1e-3
        make_opt().minimize(loss)
    return main, startup


@pytest.mark.parametrize("lazy_mode", [False, True])
def test_fluid_adam_adds_plain_epsilon_as_paddle_1_8_5(lazy_mode):
    main, startup = _fluid_program(lambda: fluid.optimizer.Adam(learning_rate=0.1, epsilon=1e-2,
                                                                 lazy_mode=lazy_mode))
    assert {op.attr("scale_epsilon") for op in main.global_block().ops if op.type == "adam"} == {False}
    w, emb = _train(main, startup)
    np.testing.assert_allclose(w, PADDLE185_W, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(emb[[1, 3]], PADDLE185_EMB_ROWS_1_3, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(emb[[0, 2, 4, 5]], E0[[0, 2, 4, 5]])


@pytest.mark.parametrize("lazy_mode", [False, True])
def test_paddle_optimizer_adam_scales_epsilon_as_paddle_3_0_0(lazy_mode):
    main, startup = _static_program(lambda: psjob.optimizer.Adam(learning_rate=0.1, epsilon=1e-2,
                                                                  lazy_mode=lazy_mode))
    assert {op.attr("scale_epsilon") for op in main.global_block().ops if op.type == "adam"} == {True}
    w, emb = _train(main, startup)
    np.testing.assert_allclose(w, PADDLE300_W, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(emb[[1, 3]], PADDLE300_EMB_ROWS_1_3, rtol=1e-6, atol=1e-7)


def test_adamw_keeps_paddle_2_rule():
    main, _ = _static_program(lambda: psjob.optimizer.AdamW(learning_rate=0.1, epsilon=1e-2))
    assert {op.attr("scale_epsilon") for op in main.global_block().ops if op.type == "adam"} == {True}


def test_a_program_without_the_attribute_runs_paddle_2_rule():
    """An adam op without scale_epsilon (a program read from Paddle's own files) gets Paddle
    2.x/3.x's rule, the op's default."""
    main, startup = _fluid_program(lambda: fluid.optimizer.Adam(learning_rate=0.1, epsilon=1e-2))
    for op in main.global_block().ops:
        if op.type == "adam":
            del op.attrs["scale_epsilon"]
    w, emb = _train(main, startup)
    np.testing.assert_allclose(w, PADDLE300_W, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(emb[[1, 3]], PADDLE300_EMB_ROWS_1_3, rtol=1e-6, atol=1e-7)


# -- on parameter servers ----------------------------------------------------------------------

VOCAB, DIM = 1024, 16  # test_transpiler_training's ids and table


def pserver_net(make_opt, sparse=True, distributed_table=False, hidden=None):
    """A builder of ids -> embedding (sparse, or a distributed table) [-> fc(hidden, tanh)] ->
    fc(1), square error, trained by make_opt(): test_transpiler_training's data and table."""
    def build():
        main, startup = fluid.Program(), fluid.Program()
        main.random_seed = startup.random_seed = 11
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
            y = fluid.layers.data(name="y", shape=[1])
            h = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=sparse or distributed_table,
                                       is_distributed=distributed_table, param_attr=fluid.ParamAttr(
                                           name="emb", initializer=fluid.initializer.Uniform(-0.5, 0.5)))
            if hidden:
                h = fluid.layers.fc(h, hidden, act="tanh")
            loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
            make_opt().minimize(loss)
        return main, startup, loss
    return build


ADAM = {"fluid": lambda: fluid.optimizer.Adam(0.02, epsilon=1e-2),
        "fluid_lazy": lambda: fluid.optimizer.Adam(0.02, epsilon=1e-2, lazy_mode=True),
        "paddle2": lambda: psjob.optimizer.Adam(0.02, epsilon=1e-2)}


def _adam_net(opt_kind, distributed_table=False):
    """A sparse (or distributed) embedding and a dense layer trained by Adam with epsilon 1e-2."""
    return pserver_net(ADAM[opt_kind], distributed_table=distributed_table)


def _flipped(build):
    """The same program with the other epsilon rule on every adam op."""
    def flipped():
        main, startup, loss = build()
        for op in main.global_block().ops:
            if op.type == "adam":
                op.attrs["scale_epsilon"] = not op.attr("scale_epsilon", True)
        return main, startup, loss
    return flipped


@pytest.mark.parametrize("opt_kind", ["fluid", "fluid_lazy", "paddle2"])
def test_sync_pserver_adam_keeps_the_programs_epsilon_rule(opt_kind):
    feeds = batches("ids", 4, 12)
    build = _adam_net(opt_kind)
    ref, _ = single_machine(build, feeds)
    other, _ = single_machine(_flipped(build), feeds)
    assert np.abs(other["fc_0.w_0"] - ref["fc_0.w_0"]).max() > 1e-3  # the rule matters here
    main, startup, _ = build()
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=",".join(EPS[:2]), trainers=2)
    moved = [op for ep in EPS[:2] for block in t.get_pserver_program(ep).blocks for op in block.ops
             if op.type == "adam"]
    assert len(moved) >= 3 and {op.attr("scale_epsilon") for op in moved} == {opt_kind == "paddle2"}
    cluster, results, _ = distributed(build, feeds, 2, 2)
    for name, value in ref.items():
        for scope, *_ in results:
            np.testing.assert_allclose(scope.vars[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("opt_kind", ["fluid", "paddle2"])
def test_distributed_table_adam_keeps_the_programs_epsilon_rule(opt_kind):
    """The pservers' SparseTable runs the table's per-row Adam with the op's scale_epsilon."""
    feeds = batches("ids", 5, 12)
    build = _adam_net(opt_kind, distributed_table=True)
    cluster, results, _ = distributed(build, feeds, 2, 2)
    tables = [cluster.handler(ep).scope.vars["emb"] for ep in EPS[:2]]
    assert {t.config.optimizer.hyper["scale_epsilon"] for t in tables} == {opt_kind == "paddle2"}
    init = table_rows(cluster, EPS[:2], fresh=True)
    ref, _ = single_machine(build, feeds, init={"emb": init})
    other, _ = single_machine(_flipped(build), feeds, init={"emb": init})
    assert np.abs(other["emb"] - ref["emb"]).max() > 1e-3
    np.testing.assert_allclose(table_rows(cluster, EPS[:2]), ref["emb"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[-1][0].vars["fc_0.w_0"], ref["fc_0.w_0"], rtol=1e-5, atol=1e-6)
