"""Kernels of the transpiled programs' ops (ops/dist_ops.py), run by a real Executor.

Real: programs, Executor, kernels, the in-memory pserver cluster. Nothing faked.
"""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.fluid.core import SelectedRows
from psjob.fluid.executor import ExecutionError
from psjob.fluid.framework import EMPTY_VAR_NAME, VarType
from psjob.foundation.tables import SparseTable, TableConfig, shard_of


def run_op(op_type, inputs, outputs, attrs=None, values=None, declare=None, services=None):
    """One op in a fresh program; `values` pre-fill the scope; returns the scope."""
    prog = fluid.Program()
    block = prog.global_block()
    for name, (shape, dtype, vtype) in (declare or {}).items():
        block.create_var(name=name, shape=shape, dtype=dtype, type=vtype)
    for names in list(inputs.values()) + list(outputs.values()):
        for n in names:
            if n != EMPTY_VAR_NAME and not block.has_var(n):
                block.create_var(name=n, shape=(-1,), dtype="float32")
    block.append_op(op_type, inputs=inputs, outputs=outputs, attrs=attrs or {})
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.services.update(services or {})
    scope.vars.update(values or {})
    exe.run(prog, scope=scope)
    return scope


def test_split_byref_cuts_rows_and_skips_empty_outputs():
    x = np.arange(12, dtype="float32").reshape(6, 2)
    scope = run_op("split_byref", {"X": ["x"]}, {"Out": ["a", EMPTY_VAR_NAME, "c"]},
                   {"sections": [2, 3, 1]}, {"x": x})
    np.testing.assert_array_equal(scope.vars["a"], x[:2])
    np.testing.assert_array_equal(scope.vars["c"], x[5:])
    with pytest.raises(ExecutionError, match="add up to 5, but the input has 6 rows"):
        run_op("split_byref", {"X": ["x"]}, {"Out": ["a", "b"]}, {"sections": [2, 3]}, {"x": x})


def test_split_selected_rows_rebases_rows_to_each_section():
    g = SelectedRows(np.array([5, 0, 3, 5]), np.arange(8, dtype="float32").reshape(4, 2), 6)
    scope = run_op("split_selected_rows", {"X": ["g"]}, {"Out": ["a", "b"]}, {"height_sections": [3, 3]},
                   {"g": g})
    a, b = scope.vars["a"], scope.vars["b"]
    assert (a.rows.tolist(), a.height) == ([0], 3) and (b.rows.tolist(), b.height) == ([2, 0, 2], 3)
    np.testing.assert_array_equal(b.values, g.values[[0, 2, 3]])


def test_split_ids_sends_each_unique_id_to_its_pserver_and_merge_ids_restores_the_order():
    ids = np.array([[7], [-(2**63)], [7], [2**63 - 1], [-4]], dtype=np.int64)
    owner = {i: int(shard_of(np.array([i]), 2)[0]) for i in ids.ravel().tolist()}
    declare = {"ids": ((-1, 1), "int64", VarType.LOD_TENSOR)}
    scope = run_op("split_ids", {"Ids": ["ids"]}, {"Out": ["p0", "p1"]}, values={"ids": ids}, declare=declare)
    for k in range(2):  # unique, sorted, on the pserver psjob.foundation.tables.shard_of names
        assert scope.vars[f"p{k}"].ravel().tolist() == sorted(i for i, o in owner.items() if o == k)
    rows = {f"p{k}": scope.vars[f"p{k}"] for k in range(2)}
    rows.update({f"x{k}": np.repeat(scope.vars[f"p{k}"].astype("float32"), 2, axis=1) for k in range(2)})
    out = run_op("merge_ids", {"Ids": ["ids"], "Rows": ["p0", "p1"], "X": ["x0", "x1"]}, {"Out": ["emb"]},
                 values=dict(rows, ids=ids), declare=declare).vars["emb"]
    np.testing.assert_array_equal(out[:, 0], ids.ravel().astype("float32"))
    with pytest.raises(ExecutionError, match="id 9 of 'ids' was not prefetched"):
        run_op("merge_ids", {"Ids": ["ids"], "Rows": ["p0", "p1"], "X": ["x0", "x1"]}, {"Out": ["emb"]},
               values=dict(rows, ids=np.array([[9]], np.int64)), declare=declare)
    # Rows prefetched beyond the wanted ids are ignored.
    some = np.array([[-4], [7], [-4]], np.int64)
    out = run_op("merge_ids", {"Ids": ["ids"], "Rows": ["p0", "p1"], "X": ["x0", "x1"]}, {"Out": ["emb"]},
                 values=dict(rows, ids=some), declare=declare).vars["emb"]
    np.testing.assert_array_equal(out[:, 0], some.ravel().astype("float32"))


def test_split_ids_on_a_sparse_gradient_keeps_feature_ids_and_values_with_height_zero():
    rows = np.array([3, -4, 2**62, 3])
    g = SelectedRows(rows, np.arange(8, dtype="float32").reshape(4, 2), 10)
    declare = {"g": ((10, 2), "float32", VarType.SELECTED_ROWS)}
    scope = run_op("split_ids", {"Ids": ["g"]}, {"Out": ["a", "b"]}, values={"g": g}, declare=declare)
    owner = shard_of(rows, 2)
    for k, name in enumerate("ab"):
        piece = scope.vars[name]
        assert piece.height == 0  # unbounded feature ids: the codec range-checks nothing
        assert piece.rows.tolist() == rows[owner == k].tolist()
        np.testing.assert_array_equal(piece.values, g.values[owner == k])
    # One pserver: the whole gradient, as it came (rows and values in their order, repeats kept).
    whole = run_op("split_ids", {"Ids": ["g"]}, {"Out": ["a"]}, values={"g": g}, declare=declare).vars["a"]
    assert whole.height == 0 and whole.rows.tolist() == rows.tolist()
    np.testing.assert_array_equal(whole.values, g.values)


def test_split_ids_for_one_pserver_gives_every_distinct_id_and_its_index():
    ids = np.array([[7], [-4], [7], [2**62]], dtype=np.int64)
    declare = {"ids": ((-1, 1), "int64", VarType.LOD_TENSOR)}
    scope = run_op("split_ids", {"Ids": ["ids"]}, {"Out": ["p0"], "Index": ["index"]}, values={"ids": ids},
                   declare=declare)
    assert scope.vars["p0"].ravel().tolist() == [-4, 7, 2**62]
    assert scope.vars["index"].tolist() == [1, 0, 1, 2]   # each id's row in the reply
    alone = run_op("split_ids", {"Ids": ["ids"]}, {"Out": ["p0"]}, values={"ids": ids}, declare=declare)
    assert alone.vars["p0"].ravel().tolist() == [-4, 7, 2**62]


def test_split_ids_for_one_pserver_gives_it_everything_unhashed():
    ids = np.array([[7], [-(2**63)], [7], [2**63 - 1], [-4]], dtype=np.int64)
    declare = {"ids": ((-1, 1), "int64", VarType.LOD_TENSOR)}
    scope = run_op("split_ids", {"Ids": ["ids"]}, {"Out": ["p0"], "Index": ["index"]}, values={"ids": ids},
                   declare=declare)
    distinct = sorted(set(ids.ravel().tolist()))
    assert scope.vars["p0"].ravel().tolist() == distinct
    assert [distinct[i] for i in scope.vars["index"]] == ids.ravel().tolist()
    rows = np.array([3, -4, 2**62, 3])
    g = SelectedRows(rows, np.arange(8, dtype="float32").reshape(4, 2), 10)
    scope = run_op("split_ids", {"Ids": ["g"]}, {"Out": ["a"]}, values={"g": g},
                   declare={"g": ((10, 2), "float32", VarType.SELECTED_ROWS)})
    piece = scope.vars["a"]
    assert piece.height == 0 and piece.rows.tolist() == rows.tolist()
    np.testing.assert_array_equal(piece.values, g.values)


def test_lookup_sparse_table_reads_rows_made_by_the_per_id_initializer_and_zeroes_padding():
    table = SparseTable(TableConfig(name="w", dim=2, seed=5))
    declare = {"ids": ((-1, 1), "int64", VarType.LOD_TENSOR), "w": ((-1, 2), "float32", VarType.LOD_TENSOR)}
    ids = np.array([[10], [-(2**63)], [7], [10]])
    out = run_op("lookup_sparse_table", {"Ids": ["ids"], "W": ["w"]}, {"Out": ["o"]}, {"padding_idx": 7},
                 {"ids": ids, "w": table}, declare).vars["o"]
    fresh = SparseTable(TableConfig(name="w", dim=2, seed=5)).lookup(np.array([10, -(2**63)]))
    np.testing.assert_array_equal(out, [fresh[0], fresh[1], [0, 0], fresh[0]])
    assert len(table) == 3  # 10, -2**63 and the padding id got rows
    with pytest.raises(ExecutionError, match="not a SparseTable"):
        run_op("lookup_sparse_table", {"Ids": ["ids"], "W": ["w"]}, {"Out": ["o"]}, {},
               {"ids": ids, "w": np.zeros((4, 2), "float32")}, declare)


def test_sparse_table_push_applies_the_merged_gradient_with_the_current_learning_rate():
    table = SparseTable(TableConfig(name="w", dim=2, seed=5))
    before = table.lookup(np.array([3, -1]))
    g = SelectedRows(np.array([3, -1, 3]), np.ones((3, 2), "float32"), 0)
    declare = {"g": ((-1, 2), "float32", VarType.SELECTED_ROWS), "w": ((-1, 2), "float32", VarType.LOD_TENSOR),
               "lr": ((1,), "float32", VarType.LOD_TENSOR)}
    run_op("sparse_table_push", {"W": ["w"], "Grad": ["g"], "LearningRate": ["lr"]}, {}, {},
           {"w": table, "g": g, "lr": np.array([0.5], "float32")}, declare)
    np.testing.assert_allclose(table.lookup(np.array([3, -1])), before - 0.5 * np.array([[2, 2], [1, 1]]))


def test_runtime_services_come_from_the_hooks_the_runtime_registered_and_unknown_ones_are_named():
    # The framework never imports the runtime: psjob's package root registers the
    # runtime's factories (psjob.foundation.hooks); tests/component covers them against real
    # pservers. Here: the lookup itself, and a hook registered by a higher layer wins.
    from psjob.cluster.pserver import pserver
    from psjob.foundation import hooks
    assert fluid.Executor().service("pserver") is pserver.serve
    sentinel = object()
    previous = hooks.lookup(hooks.RPC_SERVICE)
    hooks.register(hooks.RPC_SERVICE, lambda executor, op=None: sentinel)
    try:
        assert fluid.Executor().service("rpc") is sentinel
    finally:
        hooks.register(hooks.RPC_SERVICE, previous)
    with pytest.raises(KeyError, match="no runtime service 'nope'"):
        fluid.Executor().service("nope")


def test_an_rpc_op_run_with_another_trainers_client_is_refused():
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        fluid.optimizer.SGD(0.1).minimize(fluid.layers.mean(fluid.layers.fc(x, 1)))
    t = fluid.DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6170", trainers=2)
    cluster = InMemoryCluster.from_transpiler(t)
    with pytest.raises(ExecutionError, match="transpiled for trainer 0 but runs with the client of trainer 1"):
        run_op("send_barrier", {"X": []}, {"Out": []}, {"endpoints": ["127.0.0.1:6170"], "trainer_id": 0},
               services={"rpc": cluster.client(1)})


def test_merge_ids_pool_concat_gathers_every_slot_and_names_an_index_past_the_rows():
    """One id per sequence in every slot: each pooled slot is its rows through Index,
    side by side, then the Tail; an Index reaching past the prefetched rows is refused."""
    prog = fluid.Program()
    block = prog.global_block()
    for name in ("a", "b"):
        block.create_var(name=name, shape=(-1, 1), dtype="int64", lod_level=1)
    block.create_var(name="index", shape=(-1,), dtype="int64")
    block.create_var(name="rows", shape=(-1, 2), dtype="float32")
    block.create_var(name="tail", shape=(-1, 1), dtype="float32")
    block.create_var(name="out", shape=(-1, 5), dtype="float32")
    block.append_op("merge_ids_pool", inputs={"Ids": ["a", "b"], "Index": ["index"], "X": ["rows"],
                                              "Tail": ["tail"]},
                    outputs={"Out": ["out"]}, attrs={"concat": True})
    rows = np.arange(8, dtype="float32").reshape(4, 2)
    lod = [np.arange(4, dtype=np.int64)]
    feed = {"a": (np.zeros((3, 1), np.int64), lod), "b": (np.zeros((3, 1), np.int64), lod),
            "rows": rows, "tail": np.full((3, 1), 9, np.float32)}
    exe = fluid.Executor(fluid.CPUPlace())
    index = np.array([3, 0, 1, 2, 2, 0])  # slot a's three rows, then slot b's
    out, = exe.run(prog, feed=dict(feed, index=index), fetch_list=["out"])
    np.testing.assert_array_equal(out, np.concatenate([rows[index[:3]], rows[index[3:]], feed["tail"]], axis=1))
    with pytest.raises(ExecutionError, match="Index reaches row 4 of 4 prefetched rows"):
        exe.run(prog, feed=dict(feed, index=np.array([0, 1, 2, 3, 4, 0])), fetch_list=["out"])
