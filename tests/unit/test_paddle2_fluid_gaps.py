"""Fluid 1.x gaps found while adding the Paddle 2.x API (issue #16):
(a) fluid.initializer.NumpyArrayInitializer and fluid.layers.matmul;
(b) arrays entering a scope are copied (LoDTensor.set, feeds, NumpyArrayInitializer), so
    the optimizer never rewrites the caller's numpy array;
(d) a distributed save whose table was trained with Adam loads into the untranspiled
    single-process program: the table's rows and its per-row Adam moments.
The distributed save of (d) is trainer 0's save of a transpiled job whose pservers run
in-process (InMemoryCluster: the real PserverState and table, only the wire is direct
calls) — the save Fleet's save_persistables makes."""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.fluid.transpiler import DistributeTranspiler

RNG = np.random.default_rng(13)


def _run_startup(main, startup):
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    return exe, scope


# -- (a) -------------------------------------------------------------------------------------

def test_numpy_array_initializer_sets_a_copy_of_the_array_and_checks_its_shape():
    value = RNG.normal(size=(3, 2)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        fluid.layers.create_parameter([3, 2], "float32", attr=fluid.ParamAttr(
            name="w", initializer=fluid.initializer.NumpyArrayInitializer(value)))
        bad = fluid.initializer.NumpyArrayInitializer(np.zeros((2, 2), "float32"))
        with pytest.raises(ValueError, match=r"shape \[2, 2\] but 'v' is declared \[3, 2\]"):
            fluid.layers.create_parameter([3, 2], "float32", attr=fluid.ParamAttr(name="v", initializer=bad))
    expected = value.copy()
    value[:] = 0  # changing the array after building changes nothing
    _, scope = _run_startup(main, startup)
    np.testing.assert_array_equal(scope.vars["w"], expected)
    with pytest.raises(TypeError, match="numpy array"):
        fluid.initializer.NumpyArrayInitializer([1.0, 2.0])


def test_layers_matmul_with_transposes_alpha_and_batch_broadcast():
    a = RNG.normal(size=(2, 4, 3)).astype("float32")
    b = RNG.normal(size=(5, 4)).astype("float32")
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup):
        x = fluid.layers.data("a", [-1, 4, 3], append_batch_size=False)
        y = fluid.layers.data("b", [5, 4], append_batch_size=False)
        out = fluid.layers.matmul(x, y, transpose_x=True, transpose_y=True, alpha=0.5)
        assert list(out.shape) == [-1, 3, 5]
        with pytest.raises(ValueError, match="has 3 columns but Y b.* has 5 rows"):
            fluid.layers.matmul(x, y)
    exe, scope = _run_startup(main, startup)
    got = exe.run(main, feed={"a": a, "b": b}, fetch_list=[out], scope=scope)[0]
    np.testing.assert_allclose(got, 0.5 * np.swapaxes(a, 1, 2) @ b.T, rtol=1e-5)


# -- (b) -------------------------------------------------------------------------------------

def _sgd_net():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data("x", [2])
        pred = fluid.layers.fc(x, 1, param_attr=fluid.ParamAttr(name="w"), bias_attr=False)
        loss = fluid.layers.mean(pred)
        fluid.optimizer.SGD(0.5).minimize(loss)
    return main, startup


def test_lod_tensor_set_copies_so_training_leaves_the_callers_array_alone():
    main, startup = _sgd_net()
    exe, scope = _run_startup(main, startup)
    mine = np.ones((2, 1), "float32")
    scope.var("w").get_tensor().set(mine, fluid.CPUPlace())
    exe.run(main, feed={"x": np.ones((4, 2), "float32")}, scope=scope)
    np.testing.assert_array_equal(mine, np.ones((2, 1)))  # Paddle copies; the update went to the scope
    np.testing.assert_allclose(np.array(scope.find_var("w").get_tensor()), 0.5 * np.ones((2, 1)))
    mine[:] = 7  # and writing the array later does not reach the scope either
    assert np.array(scope.find_var("w").get_tensor())[0, 0] == 0.5


def test_a_fed_array_is_copied_even_when_it_feeds_a_variable_that_ops_write():
    main, startup = _sgd_net()
    exe, scope = _run_startup(main, startup)
    fed_weight = np.ones((2, 1), "float32")
    exe.run(main, feed={"x": np.ones((4, 2), "float32"), "w": fed_weight}, scope=scope)
    np.testing.assert_array_equal(fed_weight, np.ones((2, 1)))
    np.testing.assert_allclose(scope.vars["w"], 0.5 * np.ones((2, 1)))
    t = fluid.create_lod_tensor(np.arange(3, dtype="int64").reshape(3, 1), [[2, 1]])
    source = np.arange(3, dtype="int64").reshape(3, 1)
    t2 = fluid.create_lod_tensor(source, [[3]])
    source[:] = 9
    assert np.array(t2).ravel().tolist() == [0, 1, 2] and np.array(t).ravel().tolist() == [0, 1, 2]


# -- (d) -------------------------------------------------------------------------------------

VOCAB, DIM = 40, 4
ENDPOINTS = "127.0.0.1:6170,127.0.0.1:6171"


def _adam_table_net():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data("ids", [1], "int64")
        y = fluid.layers.data("y", [1])
        emb = fluid.layers.embedding(ids, [VOCAB, DIM], is_sparse=True, is_distributed=True,
                                     param_attr=fluid.ParamAttr(name="emb"))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(emb, 1), y))
        fluid.optimizer.Adam(0.05).minimize(loss)
    return main, startup, loss


def _dense(shards, part):
    """The pservers' rows (or one per-row state) as a dense [VOCAB, ...] array, zeros elsewhere."""
    pick = (lambda rows: rows.values) if part == "values" else (lambda rows: rows.state[part])
    out = np.zeros((VOCAB,) + pick(shards[0]).shape[1:], "float32")
    for rows in shards:
        out[rows.ids] = pick(rows)
    return out


def test_a_distributed_adam_save_loads_rows_and_moments_into_the_single_process_program(tmp_path):
    main, startup, loss = _adam_table_net()
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=ENDPOINTS, trainers=1)
    cluster = InMemoryCluster.from_transpiler(tr)
    exe, scope = cluster.executor(0), fluid.Scope()
    exe.run(tr.get_trainer_startup_program(), scope=scope)
    program = tr.get_trainer_program(wait_port=False)
    for _ in range(3):
        exe.run(program, feed={"ids": RNG.integers(0, 25, (8, 1)), "y": RNG.normal(size=(8, 1)).astype("float32")},
                fetch_list=[loss], scope=scope)
    fluid.io.save_persistables(exe, str(tmp_path), program)
    tables = [cluster.handler(ep).scope.vars["emb"].export() for ep in ENDPOINTS.split(",")]
    exe.close()

    single, single_startup, _ = _adam_table_net()
    exe1, scope1 = _run_startup(single, single_startup)
    fresh = {name: np.array(scope1.vars[name]) for name in scope1.vars}
    with fluid.scope_guard(scope1):
        fluid.io.load_persistables(exe1, str(tmp_path), single)
    touched = np.zeros(VOCAB, bool)
    for rows in tables:
        touched[rows.ids] = True
    assert 0 < touched.sum() < VOCAB
    np.testing.assert_array_equal(scope1.vars["emb"][touched], _dense(tables, "values")[touched])
    # The table's optimizer state, per row; rows the table never held keep their fresh state.
    for state in ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"):
        got = scope1.vars[f"emb_{state}_0"]
        np.testing.assert_array_equal(got[touched], _dense(tables, state)[touched], err_msg=state)
        np.testing.assert_array_equal(got[~touched], fresh[f"emb_{state}_0"][~touched], err_msg=state)
        assert not np.array_equal(got, fresh[f"emb_{state}_0"]), state
