"""Fluid 1.x's DistributeTranspiler names that programs (and Paddle's own test_dist_transpiler.py)
read: `distribute_transpiler.delete_ops`, `Program._distributed_lookup_table`, the transpiler's
`table_name` / `has_distributed_lookup_table`; and `square_error_cost`'s ops.

The expected values are what Paddle 1.8.5 (Python 3.7, CPU build) gives for the same programs:
`_distributed_lookup_table` is None on a fresh Program and the table's name on the transpiled
trainer program, `has_distributed_lookup_table` is False without an `is_distributed` table, and
`square_error_cost` appends ['elementwise_sub', 'square'] (backward: square_grad, then
elementwise_sub_grad).

Real: programs, the transpiler, the Executor. Nothing faked.
"""
import numpy as np

import psjob.fluid as fluid
from psjob.fluid.transpiler.distribute_transpiler import delete_ops

EPS = "127.0.0.1:6174,127.0.0.1:6175"


def _table_net(is_distributed):
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        emb = fluid.layers.embedding(input=ids, size=[1000, 8], param_attr="shared_w", is_sparse=True,
                                     is_distributed=is_distributed)
        pool = fluid.layers.sequence_pool(input=emb, pool_type="average")
        predict = fluid.layers.fc(input=pool, size=2)
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        loss = fluid.layers.mean(fluid.layers.cross_entropy(input=predict, label=label))
        fluid.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup


def test_delete_ops_removes_the_given_ops_and_skips_a_foreign_one():
    main, _ = _table_net(False)
    block = main.global_block()
    before = [op.type for op in block.ops]
    sgd_ops = [op for op in block.ops if op.type == "sgd"]
    other, _ = _table_net(False)
    delete_ops(block, sgd_ops + [other.global_block().ops[0]])  # the last is not this block's
    assert [op.type for op in block.ops] == [t for t in before if t != "sgd"]


def test_distributed_lookup_table_attributes_as_fluid_1x():
    assert fluid.Program()._distributed_lookup_table is None
    main, startup = _table_net(True)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, startup_program=startup)
    assert t.has_distributed_lookup_table and t.table_name == "shared_w"
    trainer = t.get_trainer_program(wait_port=False)
    assert trainer._distributed_lookup_table == "shared_w"
    assert trainer.clone()._distributed_lookup_table == "shared_w"
    assert t.get_pserver_program("127.0.0.1:6174")._distributed_lookup_table == "shared_w"

    main, startup = _table_net(False)
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, pservers=EPS, trainers=2, startup_program=startup)
    assert not t.has_distributed_lookup_table and t.table_name is None
    assert t.get_trainer_program(wait_port=False)._distributed_lookup_table is None


def test_distributed_lookup_table_setter():
    p = fluid.Program()
    p._distributed_lookup_table = "w"
    assert p._distributed_lookup_tables == ["w"] and p._distributed_lookup_table == "w"
    p._distributed_lookup_table = None
    assert p._distributed_lookup_tables == [] and p._distributed_lookup_table is None


def test_square_error_cost_is_sub_then_square():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.unique_name.guard(), fluid.program_guard(main, startup):
        x = fluid.layers.data(name="x", shape=[3], dtype="float32")
        x.stop_gradient = False
        y = fluid.layers.data(name="y", shape=[3], dtype="float32")
        cost = fluid.layers.square_error_cost(input=x, label=y)
        loss = fluid.layers.reduce_sum(cost)
        fluid.backward.append_backward(loss)
    types = [op.type for op in main.global_block().ops]
    assert types[:2] == ["elementwise_sub", "square"]
    assert cost.name == "square_error_cost_0.tmp_1"
    assert main.global_block().ops[0].output("Out") == ["square_error_cost_0.tmp_0"]
    assert types.index("square_grad") < types.index("elementwise_sub_grad")
    xv = np.array([[1.0, -2.0, 0.5]], dtype="float32")
    yv = np.array([[0.0, 1.0, 0.5]], dtype="float32")
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(startup)
    out, gx = exe.run(main, feed={"x": xv, "y": yv}, fetch_list=[cost, "x@GRAD"])
    np.testing.assert_array_equal(out, (xv - yv) ** 2)
    np.testing.assert_array_equal(gx, 2 * (xv - yv))
