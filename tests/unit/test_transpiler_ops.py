"""Kernels of the transpiled programs' ops (ops/dist_ops.py), run by a real Executor.

Real: programs, Executor, kernels, the in-memory pserver cluster. Nothing faked.
"""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.core import SelectedRows
from psjob.fluid.executor import ExecutionError
from psjob.fluid.framework import EMPTY_VAR_NAME, VarType
from psjob.fluid.transpiler.inmemory import InMemoryCluster


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
    ids = np.array([[7], [2], [7], [4]], dtype=np.int64)
    declare = {"ids": ((-1, 1), "int64", VarType.LOD_TENSOR)}
    scope = run_op("split_ids", {"Ids": ["ids"]}, {"Out": ["p0", "p1"]}, values={"ids": ids}, declare=declare)
    assert scope.vars["p0"].ravel().tolist() == [2, 4] and scope.vars["p1"].ravel().tolist() == [7]
    rows = {"p0": scope.vars["p0"], "p1": scope.vars["p1"],
            "x0": np.array([[2.0, 2.0], [4.0, 4.0]], "float32"), "x1": np.array([[7.0, 7.0]], "float32")}
    out = run_op("merge_ids", {"Ids": ["ids"], "Rows": ["p0", "p1"], "X": ["x0", "x1"]}, {"Out": ["emb"]},
                 values=dict(rows, ids=ids), declare=declare).vars["emb"]
    np.testing.assert_array_equal(out[:, 0], [7, 2, 7, 4])
    with pytest.raises(ExecutionError, match="id 9 of 'ids' was not prefetched"):
        run_op("merge_ids", {"Ids": ["ids"], "Rows": ["p0", "p1"], "X": ["x0", "x1"]}, {"Out": ["emb"]},
               values=dict(rows, ids=np.array([[9]], np.int64)), declare=declare)


def test_split_ids_on_a_sparse_gradient_keeps_global_ids_and_values():
    g = SelectedRows(np.array([3, 4, 6]), np.ones((3, 2), "float32"), 10)
    declare = {"g": ((10, 2), "float32", VarType.SELECTED_ROWS)}
    scope = run_op("split_ids", {"Ids": ["g"]}, {"Out": ["a", "b"]}, values={"g": g}, declare=declare)
    assert scope.vars["a"].rows.tolist() == [4, 6] and scope.vars["b"].rows.tolist() == [3]


def test_lookup_sparse_table_reads_the_shard_rows_of_global_ids_and_zeroes_padding():
    shard = np.arange(8, dtype="float32").reshape(4, 2)  # shard 1 of 3: ids 1, 4, 7, 10
    declare = {"ids": ((-1, 1), "int64", VarType.LOD_TENSOR), "w": ((4, 2), "float32", VarType.LOD_TENSOR)}
    attrs = {"shard_index": 1, "shard_num": 3, "padding_idx": 7}
    out = run_op("lookup_sparse_table", {"Ids": ["ids"], "W": ["w"]}, {"Out": ["o"]}, attrs,
                 {"ids": np.array([[10], [1], [7]]), "w": shard}, declare).vars["o"]
    np.testing.assert_array_equal(out, [[6, 7], [0, 1], [0, 0]])
    with pytest.raises(ExecutionError, match="belongs to shard 2"):
        run_op("lookup_sparse_table", {"Ids": ["ids"], "W": ["w"]}, {"Out": ["o"]}, attrs,
               {"ids": np.array([[5]]), "w": shard}, declare)


def test_runtime_services_resolve_to_their_default_factories_and_unknown_ones_are_named():
    # Without a registered client, RPC ops get the gRPC client (psjob.ps.client_service);
    # tests/component covers it against real pservers. Here: the lookup itself.
    from psjob.fluid.executor import DEFAULT_SERVICES
    assert DEFAULT_SERVICES["rpc"] == "psjob.ps.client_service:make_client"
    assert DEFAULT_SERVICES["pserver"] == "psjob.ps.pserver:make_service"
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
