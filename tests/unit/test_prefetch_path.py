"""The prefetch path: the pserver's direct table read, the trainer's id bookkeeping and
client check, the RPC telemetry's kept series."""
from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.observability import PserverTelemetry
from psjob.cluster.pserver.pserver_state import PserverOptions
from psjob.cluster.pserver.reads import _DirectLookup, _PrefetchBlock
from psjob.fluid.core import SelectedRows
from psjob.fluid.executor import ExecutionError
from psjob.fluid.ops import dist_ops
from psjob.fluid.transpiler import DistributeTranspiler

EP = "127.0.0.1:6190"
VOCAB, DIM = 1024, 8


def _pserver(padding_idx=None, sync=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=True, is_distributed=True,
                                     padding_idx=padding_idx, param_attr=fluid.ParamAttr(
                                         name="emb", initializer=fluid.initializer.Uniform(-0.5, 0.5)))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(emb, 1), y))
        fluid.optimizer.SGD(0.5).minimize(loss)
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=EP, trainers=1, sync_mode=sync)
    return InMemoryCluster({EP: tr.get_pserver_programs(EP)}, options=PserverOptions(5.0)).handler(EP)


@pytest.mark.parametrize("sync", [False, True])
def test_the_direct_read_returns_what_the_prefetch_block_returns(sync):
    state = _pserver(sync=sync)
    assert isinstance(state.reads._plan("emb"), _DirectLookup)
    ids = np.array([5, 9, 700, 9, 3], np.int64)
    direct = state.on_prefetch(0, "emb", ids)
    block = state.reads._plan("emb").block
    assert isinstance(block, _PrefetchBlock)
    np.testing.assert_array_equal(block.run(ids), direct)
    assert direct.shape == (5, DIM) and np.array_equal(direct[1], direct[3])


def test_the_direct_read_zeroes_the_padding_rows_and_sees_applied_updates():
    state = _pserver(padding_idx=4)
    before = state.on_prefetch(0, "emb", np.array([4, 7], np.int64)).copy()
    assert not before[0].any() and before[1].any()
    grad = next(n for n in state.recv_names if n.startswith("emb@GRAD"))
    state.on_send(0, {grad: SelectedRows(np.array([7]), np.ones((1, DIM), "float32"), 0)})
    after = state.on_prefetch(0, "emb", np.array([7], np.int64))
    np.testing.assert_allclose(after[0], before[1] - 0.5, rtol=1e-6)


def test_a_prefetch_of_an_unknown_table_or_a_table_not_set_up_fails_as_before():
    state = _pserver()
    with pytest.raises(KeyError, match=f"pserver {EP} serves no table 'nope'"):
        state.on_prefetch(0, "nope", np.array([1]))
    state.scope.vars["emb"] = np.zeros((VOCAB, DIM), "float32")  # not a SparseTable: the executor's error
    with pytest.raises(ExecutionError, match="'lookup_sparse_table' failed: TypeError: .*not a SparseTable"):
        state.on_prefetch(0, "emb", np.array([1]))
    with pytest.raises(ValueError, match="trainer id 5 is out of range"):
        state.on_prefetch(5, "emb", np.array([1]))


@pytest.mark.parametrize("hashed", [True, False])  # 64-bit hashes, or ids in [0, 2^32) (radix sorted)
@pytest.mark.parametrize("size", [0, 1, 7, dist_ops._SEARCH_BELOW - 1, dist_ops._SEARCH_BELOW, 5000])
def test_the_distinct_ids_and_their_inverse_equal_numpys(size, hashed):
    rng = np.random.default_rng(size)
    ids = rng.integers(0, max(size // 3, 2), size).astype(np.int64)
    if hashed:
        ids[: size // 4] = rng.integers(-(2 ** 62), 2 ** 62, size // 4)
    distinct, inverse = np.unique(ids, return_inverse=True)
    got, got_inverse = dist_ops._unique_inverse(ids)
    np.testing.assert_array_equal(got, distinct)
    np.testing.assert_array_equal(got_inverse, inverse.reshape(-1))
    assert got_inverse.dtype == np.int64
    np.testing.assert_array_equal(dist_ops._unique_sorted(ids), distinct)


class _Client:
    def __init__(self, trainer_id):
        self.trainer_id = trainer_id


def test_the_client_check_is_kept_per_op_and_client_and_still_refuses_another_trainers_client():
    main = fluid.Program()
    op = main.global_block().append_op(type="checkpoint_notify", attrs={"trainer_id": 1})
    exe = fluid.Executor(fluid.CPUPlace())
    ctx = type("Ctx", (), {})()
    ctx.executor, ctx.op, ctx.attr = exe, op, lambda name, default=None: op.attrs.get(name, default)
    mine = exe.services["rpc"] = _Client(1)
    assert dist_ops._client(ctx) is mine and dist_ops._client(ctx) is mine
    exe.services["rpc"] = _Client(0)  # another client: checked again
    with pytest.raises(RuntimeError, match="transpiled for trainer 1 but runs with the client of trainer 0"):
        dist_ops._client(ctx)


def test_the_rpc_series_count_every_request_with_their_labels():
    tel = PserverTelemetry(CollectorRegistry())
    for _ in range(3):
        tel.observe_rpc("Prefetch", "OK", 0.001, 100, 200)
    tel.observe_rpc("Prefetch", "NOT_FOUND", 0.001, 100, 0)
    tel.observe_rpc("Barrier", "OK", 0.25, 10, 10)
    get = tel.registry.get_sample_value
    assert get("psjob_pserver_rpc_requests_total", {"method": "Prefetch", "status": "OK"}) == 3
    assert get("psjob_pserver_rpc_requests_total", {"method": "Prefetch", "status": "NOT_FOUND"}) == 1
    assert get("psjob_pserver_received_bytes_total", {"method": "Prefetch"}) == 400
    assert get("psjob_pserver_sent_bytes_total", {"method": "Prefetch"}) == 600
    assert get("psjob_pserver_rpc_duration_seconds_count", {"method": "Prefetch"}) == 4
    assert get("psjob_pserver_barrier_wait_seconds_count", {"barrier": "round"}) == 1


def test_the_id_comparison_equals_numpys_on_every_kind_of_array():
    """split_ids and prefetch match a batch to what prefetch_ahead issued with _equal_ids:
    one memcmp for contiguous int64 ids, np.array_equal's answer for anything else."""
    rng = np.random.default_rng(3)
    a = rng.integers(-(2 ** 62), 2 ** 62, 900).astype(np.int64)
    b = a.copy()
    other = b.copy()
    other[-1] += 1
    cases = [(a, b), (a, other), (a, a[:-1]), (a[:0], b[:0]), (a[::2], b[::2]), (a[::2], other[::2]),
             (a, b.astype(np.int32)), (a.reshape(-1, 1), b), (a.reshape(30, 30), b.reshape(30, 30)),
             (a[:8], np.array(a[:8].tolist(), dtype=np.float64))]
    for x, y in cases:
        assert dist_ops._equal_ids(x, y) is np.array_equal(x, y)
