"""The executor's fused lookup + sum-pool of a local table (fluid/embedding_fusion.py).

Every comparison is against the same program run op by op: fetching an
intermediate of the fused ops (a lookup's output) makes the executor run the
program as written, so both sides are the real executor on the real program.
"""
import os
import sys

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.fluid.core import SelectedRows
from psjob.fluid.executor import ExecutionError
from psjob.foundation.kernels.optimizers import merge_duplicate_rows

VOCAB, DIM, SLOTS = 40, 4, 3


def ctr_like_net(concat=True, optimizer="adam", padding_idx=None, is_sparse=True, decay_and_clip=False):
    """SLOTS LoD id slots sharing one local table, each sum-pooled; `concat`: the pooled
    slots and two dense features concatenated into one fc (the CTR model's layout;
    "dense-first": the dense features before the slots), else one fc over the list of
    pooled slots. `decay_and_clip`: L2 decay on the table,
    every gradient clipped by global norm (both read the table's SelectedRows gradient)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        y = fluid.layers.data(name="y", shape=[1])
        dense = fluid.layers.data(name="dense", shape=[2])
        slots = [fluid.layers.data(name=f"s{i}", shape=[1], dtype="int64", lod_level=1) for i in range(SLOTS)]
        attr = fluid.ParamAttr(name="emb", initializer=fluid.initializer.Uniform(-0.5, 0.5),
                               regularizer=fluid.regularizer.L2Decay(0.05) if decay_and_clip else None)
        embs = [fluid.layers.embedding(s, size=[VOCAB, DIM], is_sparse=is_sparse, padding_idx=padding_idx,
                                       param_attr=attr) for s in slots]
        pooled = [fluid.layers.sequence_pool(e, "sum") for e in embs]
        if concat == "dense-first":
            hidden = fluid.layers.concat([dense] + pooled, axis=1)
        else:
            hidden = fluid.layers.concat(pooled + [dense], axis=1) if concat else pooled
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(hidden, 1), y))
        opt = {"adam": lambda: fluid.optimizer.Adam(0.05, lazy_mode=True),
               "sgd": lambda: fluid.optimizer.SGD(0.2),
               "adagrad": lambda: fluid.optimizer.Adagrad(0.1)}[optimizer]()
        if decay_and_clip:
            fluid.clip.set_gradient_clip(fluid.clip.GradientClipByGlobalNorm(0.05))
        opt.minimize(loss)
    return main, startup, loss, embs[0]


def feeds(steps, n, one_id_each, high=VOCAB):
    """Slot 0 one id per example; the others 0..3 ids (empty sequences included) unless
    `one_id_each`; ids repeat inside and across slots."""
    rng = np.random.default_rng(11)
    out = []
    for _ in range(steps):
        feed = {"y": rng.normal(size=(n, 1)).astype("float32"), "dense": rng.normal(size=(n, 2)).astype("float32")}
        for i in range(SLOTS):
            lengths = np.ones(n, np.int64) if i == 0 or one_id_each else rng.integers(0, 4, n)
            ids = rng.integers(0, high, size=(int(lengths.sum()), 1)).astype("int64")
            feed[f"s{i}"] = (ids, [np.concatenate([[0], np.cumsum(lengths)]).tolist()])
        out.append(feed)
    return out


def train(net, batches, op_by_op, table_grad="emb@GRAD"):
    """(parameters after training, op types the executor ran, table gradient of the last step)."""
    main, startup, loss, first_emb = net
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.collect_timing = True
    fetch = [loss] + ([first_emb] if op_by_op else [])
    for feed in batches:
        exe.run(main, feed=feed, fetch_list=fetch, scope=scope)
    params = {p.name: np.array(scope.vars[p.name]) for p in main.global_block().all_parameters()}
    return params, set(exe.kernel_seconds), scope.vars[table_grad]


@pytest.mark.parametrize("concat", [True, "dense-first", False], ids=["concat", "dense-first", "slot-list"])
@pytest.mark.parametrize("one_id_each", [True, False], ids=["one-id", "sequences"])
@pytest.mark.parametrize("optimizer", ["adam", "sgd", "adagrad"])
def test_fused_lookups_and_pools_train_as_the_program_runs_op_by_op(concat, one_id_each, optimizer):
    batches = feeds(5, 16, one_id_each)
    fused, fused_ops, fused_grad = train(ctr_like_net(concat, optimizer), batches, op_by_op=False)
    plain, plain_ops, plain_grad = train(ctr_like_net(concat, optimizer), batches, op_by_op=True)
    assert {"embedding_pool", "embedding_pool_grad"} <= fused_ops
    assert not fused_ops & {"lookup_table", "lookup_table_grad", "sequence_pool", "sequence_pool_grad"}
    assert "concat" not in fused_ops and ("concat" in plain_ops) == bool(concat)  # the concat is fused too
    assert "lookup_table" in plain_ops and "embedding_pool" not in plain_ops
    for name, value in plain.items():
        np.testing.assert_allclose(fused[name], value, rtol=2e-5, atol=1e-6, err_msg=name)
    # The fused gradient: one row per distinct id, ascending, marked unique; the sums of
    # the op-by-op gradient's repeated rows.
    assert isinstance(fused_grad, SelectedRows) and fused_grad.unique and not plain_grad.unique
    rows, values = merge_duplicate_rows(np, plain_grad.rows, plain_grad.values)
    np.testing.assert_array_equal(fused_grad.rows, rows)
    np.testing.assert_allclose(fused_grad.values, values, rtol=1e-5, atol=1e-7)
    assert fused_grad.height == plain_grad.height == VOCAB


@pytest.mark.parametrize("concat", [True, "dense-first"], ids=["slots-first", "dense-first"])
@pytest.mark.parametrize("optimizer", ["adam", "adagrad"])
def test_the_c_slot_grid_gather_and_its_gradient_train_bitwise_as_numpy(monkeypatch, optimizer, concat):
    # One id per example and slot, concatenated (the CTR layout): the grid the C kernels
    # take (foundation/kernels/_native.c pool_gather_grid / pool_grad_grid). Their sums run in double
    # in numpy's bincount order, so training matches the numpy path bit for bit.
    from psjob.foundation.kernels import native
    assert native.built()
    batches = feeds(6, 32, one_id_each=True)
    runs = []
    for enabled in (True, False):
        monkeypatch.setattr(native, "enabled", enabled)
        runs.append(train(ctr_like_net(concat, optimizer), batches, op_by_op=False))
    (c_params, c_ops, c_grad), (np_params, _, np_grad) = runs
    assert "embedding_pool_grad" in c_ops
    for name, value in np_params.items():
        assert c_params[name].tobytes() == value.tobytes(), name
    np.testing.assert_array_equal(c_grad.rows, np_grad.rows)
    assert c_grad.values.tobytes() == np_grad.values.tobytes()


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_decay_and_clipping_see_the_fused_gradient_as_the_merged_one(optimizer):
    """L2 decay and the global-norm clip both merge a SelectedRows gradient's repeated rows
    first; the fused gradient arrives merged (marked unique), and training stays the same."""
    batches = feeds(5, 16, one_id_each=False)
    fused, fused_ops, _ = train(ctr_like_net(optimizer=optimizer, decay_and_clip=True), batches, op_by_op=False)
    plain, plain_ops, _ = train(ctr_like_net(optimizer=optimizer, decay_and_clip=True), batches, op_by_op=True)
    assert "embedding_pool_grad" in fused_ops and "embedding_pool_grad" not in plain_ops
    assert {"clip_global_norm_apply", "squared_l2_norm"} <= fused_ops
    for name, value in plain.items():
        np.testing.assert_allclose(fused[name], value, rtol=2e-5, atol=1e-6, err_msg=name)


def test_the_program_itself_is_left_as_built():
    main, startup, loss, _ = net = ctr_like_net()
    before = [(op.type, dict(op.inputs), dict(op.outputs)) for op in main.global_block().ops]
    _, ran, _ = train(net, feeds(2, 8, True), op_by_op=False)
    assert "embedding_pool" in ran
    assert [(op.type, dict(op.inputs), dict(op.outputs)) for op in main.global_block().ops] == before
    assert "embedding_pool" not in {op.type for op in main.global_block().ops}


@pytest.mark.parametrize("variant", [dict(padding_idx=0), dict(is_sparse=False)], ids=["padding-id", "dense-grad"])
def test_lookups_outside_the_shape_run_as_written(variant):
    params, ran, _ = train(ctr_like_net(**variant), feeds(2, 8, True), op_by_op=False)
    assert "lookup_table" in ran and "embedding_pool" not in ran
    assert all(np.isfinite(v).all() for v in params.values())


def test_an_id_outside_the_table_names_the_lookup_and_changes_nothing():
    main, startup, loss, _ = ctr_like_net()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    before = {p.name: np.array(scope.vars[p.name]) for p in main.global_block().all_parameters()}
    bad = feeds(1, 8, True)[0]
    bad["s1"][0][3, 0] = VOCAB + 2
    with pytest.raises(ExecutionError, match=rf"embedding_pool.*lookup_table \+ sum sequence_pool \+ concat of table "
                                             rf"'emb'.*id {VOCAB + 2} is out of range for a table of {VOCAB} rows"):
        exe.run(main, feed=bad, fetch_list=[loss], scope=scope)
    for name, value in before.items():
        np.testing.assert_array_equal(scope.vars[name], value, err_msg=name)


# -- Paddle 2.x: PaddleRec's rank models (examples/paddle2), embedding then reshape ---------

def paddlerec_model(name):
    """examples/paddle2's StaticModel ("dnn" or "wide_deep"), 4 slots of one table."""
    examples = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "paddle2"))
    if examples not in sys.path:
        sys.path.insert(0, examples)
    from static_model import StaticModel

    import psjob as paddle
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 3
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        model = StaticModel({"sparse_feature_number": VOCAB, "sparse_feature_dim": DIM, "dense_input_dim": 2,
                             "sparse_inputs_slots": 5, "fc_sizes": [8], "learning_rate": 0.05, "model": name})
        model.net(model.create_feeds())
        model.create_optimizer()
    emb = next(op.output("Out")[0] for op in main.global_block().ops if op.type == "lookup_table")
    return main, startup, model._cost, main.global_block().var(emb)


def paddlerec_feeds(steps, n, lod):
    """One id per example in each slot C1..C4 (`lod`: fed with LoD offsets, as PaddleRec's
    reader does for lod_level=1 inputs)."""
    rng = np.random.default_rng(5)
    out = []
    for _ in range(steps):
        feed = {"label": rng.integers(0, 2, (n, 1)).astype("int64"),
                "dense_input": rng.normal(size=(n, 2)).astype("float32")}
        for s in range(1, 5):
            ids = rng.integers(0, VOCAB, (n, 1)).astype("int64")
            feed[f"C{s}"] = (ids, [list(range(n + 1))]) if lod else ids
        out.append(feed)
    return out


@pytest.mark.parametrize("name", ["dnn", "wide_deep"])
@pytest.mark.parametrize("lod", [True, False], ids=["lod", "plain"])
def test_paddlerec_models_fuse_their_reshaped_embeddings_and_train_as_op_by_op(name, lod):
    batches = paddlerec_feeds(5, 16, lod)
    fused, fused_ops, fused_grad = train(paddlerec_model(name), batches, op_by_op=False,
                                         table_grad="SparseFeatFactors@GRAD")
    plain, plain_ops, _ = train(paddlerec_model(name), batches, op_by_op=True, table_grad="SparseFeatFactors@GRAD")
    assert {"embedding_pool", "embedding_pool_grad"} <= fused_ops
    assert not fused_ops & {"lookup_table", "lookup_table_grad", "reshape2", "unsqueeze2"}
    assert {"lookup_table", "reshape2", "concat"} <= plain_ops
    if name == "dnn":   # wide&deep concatenates its prediction with its complement too
        assert "concat" not in fused_ops
    assert fused_grad.unique
    for key, value in plain.items():
        np.testing.assert_allclose(fused[key], value, rtol=2e-5, atol=1e-6, err_msg=key)


def test_a_regrouped_lookup_read_twice_is_not_fused():
    """The [-1, 2 * dim] rows (two ids each) are read by the concat and by a scale: only a
    concat may read them for the fused op to write them, so the ops run as written."""
    import psjob as paddle
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        ids = paddle.static.data(name="ids", shape=[None, 1], dtype="int64")
        emb = paddle.nn.Embedding(VOCAB, DIM, sparse=True)(ids)
        pairs = paddle.reshape(emb, shape=[-1, 2 * DIM])
        loss = paddle.mean(paddle.static.nn.fc(paddle.concat([pairs, pairs * 0.5], axis=1), 1))
        paddle.optimizer.SGD(0.1).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    exe.collect_timing = True
    exe.run(main, feed={"ids": np.arange(8, dtype="int64").reshape(8, 1)}, fetch_list=[loss], scope=scope)
    assert "lookup_table" in exe.kernel_seconds and "embedding_pool" not in exe.kernel_seconds


def ncf_like_net():
    """PaddleRec's NCF shape: Embedding of [-1, 1] ids, then paddle.flatten(emb, 1, 2) to [-1, dim]
    (Paddle's flatten_contiguous_range, a shape-only op like reshape2)."""
    import psjob as paddle
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 3
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        table = paddle.nn.Embedding(VOCAB, DIM, sparse=True)
        slots = [paddle.static.data(name=f"s{i}", shape=[-1, 1], dtype="int64") for i in range(2)]
        flat = [paddle.flatten(table(s), start_axis=1, stop_axis=2) for s in slots]
        assert all(tuple(f.shape) == (-1, DIM) for f in flat)
        loss = paddle.mean(paddle.static.nn.fc(paddle.concat(flat, axis=1), 1))
        paddle.optimizer.SGD(0.1).minimize(loss)
    emb = next(op.output("Out")[0] for op in main.global_block().ops if op.type == "lookup_table")
    return main, startup, loss, main.global_block().var(emb)


def test_an_embedding_flattened_to_one_row_per_id_is_fused_as_a_reshape_is():
    rng = np.random.default_rng(9)
    batches = [{f"s{i}": rng.integers(0, VOCAB, (8, 1)).astype("int64") for i in range(2)} for _ in range(4)]
    net = ncf_like_net()
    table_grad = next(op.input("W")[0] for op in net[0].global_block().ops if op.type == "lookup_table") + "@GRAD"
    fused, fused_ops, _ = train(net, batches, op_by_op=False, table_grad=table_grad)
    plain, plain_ops, _ = train(ncf_like_net(), batches, op_by_op=True, table_grad=table_grad)
    assert {"embedding_pool", "embedding_pool_grad"} <= fused_ops
    assert not fused_ops & {"lookup_table", "flatten_contiguous_range"}
    assert {"lookup_table", "flatten_contiguous_range"} <= plain_ops
    for key, value in plain.items():
        np.testing.assert_allclose(fused[key], value, rtol=2e-5, atol=1e-6, err_msg=key)


# -- one lookup of every slot at once: rows of k ids each ---------------------------------

def one_lookup_net(layout, optimizer="adam"):
    """One `Embedding` whose rows hold several ids each: "slots" looks up the [-1, SLOTS]
    concat of the slots and reshapes to [-1, SLOTS * dim] (the Paddle anchor's local model),
    "pairs" looks up [-1, 1] ids and reshapes to [-1, 2 * dim] (two examples' ids per row);
    the rows then concatenated after the dense features into one fc."""
    import psjob as paddle
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 5
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        y = paddle.static.data(name="y", shape=[None, 1], dtype="float32")
        dense = paddle.static.data(name="dense", shape=[None, 2], dtype="float32")
        table = paddle.nn.Embedding(VOCAB, DIM, sparse=True, weight_attr=paddle.ParamAttr(
            name="emb", initializer=paddle.nn.initializer.Uniform(-0.5, 0.5)))
        if layout == "slots":
            slots = [paddle.static.data(name=f"s{i}", shape=[None, 1], dtype="int64") for i in range(SLOTS)]
            emb = table(paddle.concat(slots, axis=1))
            rows = paddle.reshape(emb, [-1, SLOTS * DIM])
        else:
            emb = table(paddle.static.data(name="s0", shape=[None, 1], dtype="int64"))
            rows = paddle.reshape(emb, [-1, 2 * DIM])
        hidden = paddle.concat([dense, rows], axis=1)
        loss = paddle.mean(paddle.nn.functional.square_error_cost(paddle.static.nn.fc(hidden, 1), y))
        {"adam": lambda: paddle.optimizer.Adam(0.05, lazy_mode=True),
         "sgd": lambda: paddle.optimizer.SGD(0.2)}[optimizer]().minimize(loss)
    return main, startup, loss, emb


def one_lookup_feeds(layout, steps, n):
    rng = np.random.default_rng(4)
    out = []
    for _ in range(steps):
        rows = n // 2 if layout == "pairs" else n
        feed = {"y": rng.normal(size=(rows, 1)).astype("float32"),
                "dense": rng.normal(size=(rows, 2)).astype("float32")}
        for i in range(SLOTS if layout == "slots" else 1):
            feed[f"s{i}"] = rng.integers(0, VOCAB, (n, 1)).astype("int64")   # ids repeat within and across slots
        out.append(feed)
    return out


@pytest.mark.parametrize("layout", ["slots", "pairs"])
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_one_lookup_of_rows_of_several_ids_is_fused_and_trains_as_op_by_op(layout, optimizer):
    batches = one_lookup_feeds(layout, 5, 16)
    fused, fused_ops, fused_grad = train(one_lookup_net(layout, optimizer), batches, op_by_op=False)
    plain, plain_ops, plain_grad = train(one_lookup_net(layout, optimizer), batches, op_by_op=True)
    assert {"embedding_pool", "embedding_pool_grad"} <= fused_ops
    assert not fused_ops & {"lookup_table", "lookup_table_grad", "reshape2_grad"}
    assert {"lookup_table", "lookup_table_grad", "concat"} <= plain_ops
    for name, value in plain.items():
        np.testing.assert_allclose(fused[name], value, rtol=2e-5, atol=1e-6, err_msg=name)
    assert fused_grad.unique and not plain_grad.unique
    rows, values = merge_duplicate_rows(np, plain_grad.rows, plain_grad.values)
    np.testing.assert_array_equal(fused_grad.rows, rows)
    np.testing.assert_allclose(fused_grad.values, values, rtol=1e-5, atol=1e-7)


def test_rows_of_several_ids_train_bitwise_with_and_without_the_c_kernels(monkeypatch):
    from psjob.foundation.kernels import native
    assert native.built()
    batches = one_lookup_feeds("slots", 6, 32)
    runs = []
    for enabled in (True, False):
        monkeypatch.setattr(native, "enabled", enabled)
        runs.append(train(one_lookup_net("slots"), batches, op_by_op=False))
    (c_params, c_ops, c_grad), (np_params, _, np_grad) = runs
    assert "embedding_pool_grad" in c_ops
    for name, value in np_params.items():
        assert c_params[name].tobytes() == value.tobytes(), name
    assert c_grad.values.tobytes() == np_grad.values.tobytes()


def test_ids_that_do_not_fill_whole_rows_are_refused_as_the_reshape_refuses_them():
    main, startup, loss, _ = one_lookup_net("pairs")
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    feed = one_lookup_feeds("pairs", 1, 8)[0]
    feed["s0"] = feed["s0"][:7]
    with pytest.raises(ExecutionError, match=r"embedding_pool.*holds 7 ids, not rows of 2 ids"):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)


def test_the_one_id_each_grid_check_looks_at_a_shared_lod_once_and_still_sees_every_slot():
    from psjob.fluid.ops.embedding_pool_ops import _one_id_each
    from psjob.fluid.ops.sequence_ops import segments
    one_each = segments([np.arange(5, dtype=np.int64)], "a")
    other_one_each = segments([np.arange(5, dtype=np.int64)], "b")
    fewer = segments([np.arange(4, dtype=np.int64)], "c")
    two_ids = segments([np.array([0, 2, 3, 4, 5], np.int64)], "d")
    assert _one_id_each([one_each] * 26) and _one_id_each([one_each, other_one_each, one_each])
    assert not _one_id_each([one_each] * 25 + [fewer])
    assert not _one_id_each([one_each, two_ids, one_each]) and not _one_id_each([two_ids] * 3)
    assert _one_id_each([])


@pytest.mark.parametrize("one_id_each", [True, False], ids=["one-id", "sequences"])
def test_slots_fed_shared_lod_objects_train_as_op_by_op(one_id_each):
    """The fused ops look up a LoD object shared by consecutive slots once (as QueueDataset
    feeds one per width): slots sharing one, then a slot with its own, then sharing again."""
    batches = feeds(4, 16, one_id_each)
    for feed in batches:
        shared = {}
        for i in range(SLOTS):
            ids, lod = feed[f"s{i}"]
            lod = shared.setdefault(tuple(lod[0]), lod)  # slots of equal offsets: one list object
            feed[f"s{i}"] = (ids, lod)
        assert one_id_each is (len({id(feed[f's{i}'][1]) for i in range(SLOTS)}) == 1)
    fused, fused_ops, fused_grad = train(ctr_like_net(True, "sgd"), batches, op_by_op=False)
    plain, _, plain_grad = train(ctr_like_net(True, "sgd"), batches, op_by_op=True)
    assert "embedding_pool" in fused_ops
    for name, value in plain.items():
        np.testing.assert_allclose(fused[name], value, rtol=2e-5, atol=1e-6, err_msg=name)
    rows, values = merge_duplicate_rows(np, plain_grad.rows, plain_grad.values)
    np.testing.assert_array_equal(fused_grad.rows, rows)
    np.testing.assert_allclose(fused_grad.values, values, rtol=1e-5, atol=1e-7)


def test_a_slot_whose_ids_do_not_fill_the_shared_lod_is_refused_by_the_fused_op():
    """Slots sharing one LoD object are still checked one by one against their ids."""
    from psjob.fluid.executor import Executor
    from psjob.fluid.ops.embedding_pool_ops import _slot_segments
    from psjob.fluid.ops.registry import KernelContext
    main, startup, _, _ = ctr_like_net(True, "sgd")
    op = next(op for op in main.global_block().ops if op.type == "lookup_table")
    scope = fluid.Scope()
    lod = [np.arange(5, dtype=np.int64)]
    for name in ("a", "b", "c"):
        scope.vars[name] = np.zeros((4, 1), np.int64)
        scope.lods[name] = lod
    scope.vars["b"] = np.zeros((3, 1), np.int64)
    op.inputs = dict(op.inputs, Ids=["a", "b", "c"])
    ctx = KernelContext(op, np, fluid.CPUPlace(), scope, Executor())
    with pytest.raises(ValueError, match="the LoD of 'b' ends at 4 but it holds 3 ids"):
        _slot_segments(ctx, "merge_ids_pool")
    scope.vars["b"] = np.zeros((4, 1), np.int64)
    segs = _slot_segments(ctx, "merge_ids_pool")
    assert len(segs) == 3 and segs[0] is segs[1] is segs[2] and segs[0].rows == 4
