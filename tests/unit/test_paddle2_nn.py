"""paddle.nn in static mode: each Layer built with the 2.x API gives the forward outputs of
its Fluid-1.x-built twin holding the same weights; the Layer bookkeeping (parameters,
sublayers, train/eval) behaves as Paddle's; losses match their formulas."""
import numpy as np

import psjob as paddle
import psjob.fluid as fluid
import psjob.nn.functional as F

paddle.enable_static()
RNG = np.random.default_rng(3)


def build(fn, seed=0):
    """fn() under fresh programs (seeded when seed) and names; returns (main, startup, fn's result)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        out = fn()
    return main, startup, out


def run(main, startup, feed, fetch, weights=None):
    """Run startup, overwrite `weights` {name: array}, run main once; fetched arrays."""
    scope, exe = fluid.Scope(), fluid.Executor(fluid.CPUPlace())
    exe.run(startup, scope=scope)
    for name, value in (weights or {}).items():
        scope.var(name).get_tensor().set(value)
    return exe.run(main, feed=feed, fetch_list=fetch, scope=scope), scope


def params_of(main):
    return [p.name for p in main.global_block().all_parameters()]


def test_linear_equals_fc_with_the_same_weight_and_bias_layout_in_out():
    x = RNG.normal(size=(5, 4)).astype("float32")
    w, b = RNG.normal(size=(4, 3)).astype("float32"), RNG.normal(size=3).astype("float32")

    def two_x():
        inp = paddle.static.data("x", [None, 4])
        layer = paddle.nn.Linear(4, 3)
        assert list(layer.weight.shape) == [4, 3] and list(layer.bias.shape) == [3]
        return layer(inp), layer

    def one_x():
        return fluid.layers.fc(fluid.layers.data("x", [4]), 3)

    m2, s2, (out2, layer) = build(two_x)
    m1, s1, out1 = build(one_x)
    got2, _ = run(m2, s2, {"x": x}, [out2], {layer.weight.name: w, layer.bias.name: b})
    got1, _ = run(m1, s1, {"x": x}, [out1], dict(zip(params_of(m1), (w, b))))
    np.testing.assert_allclose(got2[0], got1[0], rtol=1e-6)
    np.testing.assert_allclose(got2[0], x @ w + b, rtol=1e-5)
    assert [p.name for p in layer.parameters()] == ["linear_0.w_0", "linear_0.b_0"]


def test_linear_on_a_3d_input_multiplies_the_last_axis():
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    m, s, (out, layer) = build(lambda: (lambda lin: (lin(paddle.static.data("x", [None, 3, 4])), lin))(
        paddle.nn.Linear(4, 2, bias_attr=False)))
    assert layer.bias is None and list(out.shape) == [-1, 3, 2]
    w = RNG.normal(size=(4, 2)).astype("float32")
    got, _ = run(m, s, {"x": x}, [out], {layer.weight.name: w})
    np.testing.assert_allclose(got[0], x @ w, rtol=1e-5)


def test_sparse_embedding_layer_equals_fluid_embedding_and_keeps_paddle2_shape():
    ids = np.array([[3], [0], [7], [3]], dtype="int64")
    table = RNG.normal(size=(10, 4)).astype("float32")

    def two_x():
        inp = paddle.static.data("ids", [None, 1], "int64", lod_level=1)
        emb = paddle.nn.Embedding(10, 4, sparse=True)
        return emb(inp), emb

    m2, s2, (out2, emb) = build(two_x)
    m1, s1, out1 = build(lambda: fluid.layers.embedding(
        fluid.layers.data("ids", [1], "int64", lod_level=1), [10, 4], is_sparse=True))
    assert list(out2.shape) == [-1, 1, 4] and list(out1.shape) == [-1, 4]
    ops2 = [op for op in m2.global_block().ops if op.type == "lookup_table"]
    ops1 = [op for op in m1.global_block().ops if op.type == "lookup_table"]
    assert ops2[0].attrs == ops1[0].attrs  # is_sparse, remote_prefetch, padding: the same table op
    got2, _ = run(m2, s2, {"ids": ids}, [out2], {emb.weight.name: table})
    got1, _ = run(m1, s1, {"ids": ids}, [out1], {params_of(m1)[0]: table})
    np.testing.assert_array_equal(got2[0].reshape(4, 4), got1[0])
    np.testing.assert_array_equal(got1[0], table[ids[:, 0]])


def test_embedding_of_ids_without_a_trailing_one_and_padding_idx():
    ids = np.array([[1, 2, 9], [9, 0, 1]], dtype="int64")
    table = RNG.normal(size=(10, 3)).astype("float32")
    m, s, (out, emb) = build(lambda: (lambda e: (e(paddle.static.data("ids", [None, 3], "int64")), e))(
        paddle.nn.Embedding(10, 3, padding_idx=-1)))
    got, _ = run(m, s, {"ids": ids}, [out], {emb.weight.name: table})
    want = table[ids]
    want[ids == 9] = 0.0
    np.testing.assert_array_equal(got[0], want)


def test_static_nn_fc_embedding_and_sparse_embedding_build_the_fluid_ops():
    def net():
        x = paddle.static.data("x", [None, 4])
        ids = paddle.static.data("ids", [None, 1], "int64")
        h = paddle.static.nn.fc(x, 3, activation="relu", weight_attr=paddle.ParamAttr(name="w"))
        e = paddle.static.nn.embedding(ids, [10, 2])
        d = paddle.static.nn.sparse_embedding(ids, [100, 2], param_attr=paddle.ParamAttr(name="table"))
        return h, e, d

    m, s, (h, e, d) = build(net)
    assert list(e.shape) == [-1, 1, 2] and list(d.shape) == [-1, 2]
    table_op = [op for op in m.global_block().ops if op.type == "lookup_table" and op.input("W") == ["table"]][0]
    assert table_op.attr("is_distributed") and table_op.attr("is_sparse")
    from psjob.fluid.optimizer import _find_distributed_lookup_tables
    assert _find_distributed_lookup_tables(m) == ["table"]
    x = RNG.normal(size=(2, 4)).astype("float32")
    w = RNG.normal(size=(4, 3)).astype("float32")
    got, _ = run(m, s, {"x": x, "ids": np.array([[1], [2]])}, [h], {"w": w})
    np.testing.assert_allclose(got[0], np.maximum(x @ w, 0), rtol=1e-5)


def test_activations_sequential_and_layerlist():
    x = RNG.normal(size=(3, 4)).astype("float32")

    def net():
        inp = paddle.static.data("x", [None, 4])
        seq = paddle.nn.Sequential(paddle.nn.Linear(4, 4, bias_attr=False), paddle.nn.ReLU(),
                                   paddle.nn.Sigmoid(), paddle.nn.Tanh(), paddle.nn.Softmax())
        return seq(inp), seq

    m, s, (out, seq) = build(net)
    assert len(seq) == 5 and isinstance(seq[1], paddle.nn.ReLU)
    w = RNG.normal(size=(4, 4)).astype("float32")
    got, _ = run(m, s, {"x": x}, [out], {seq[0].weight.name: w})
    h = np.tanh(1 / (1 + np.exp(-np.maximum(x @ w, 0))))
    want = np.exp(h) / np.exp(h).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got[0], want, rtol=1e-5)

    def listed():
        layers = paddle.nn.LayerList([paddle.nn.Linear(2, 2) for _ in range(3)])
        return layers

    _, _, layers = build(listed)
    assert len(layers) == 3 and len(layers.parameters()) == 6 and len(list(iter(layers))) == 3


def test_layer_registers_attributes_and_add_sublayer_parameters_once():
    class Net(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.shared = paddle.nn.Linear(2, 2)
            self.again = self.shared  # the same layer twice: its parameters count once
            self.scale = self.create_parameter([1], default_initializer=paddle.nn.initializer.Constant(2.0))
            self.add_sublayer("extra", paddle.nn.Linear(2, 1))
            self.drop = paddle.nn.Dropout(0.5)

    _, _, net = build(Net)
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "shared.weight", "shared.bias", "extra.weight", "extra.bias"]
    assert [n for n, _ in net.named_sublayers()] == ["shared", "extra", "drop"]
    assert set(net.state_dict()) == set(names)
    net.eval()
    assert not net.drop.training and not net.shared.training
    net.train()
    assert net.drop.training


def test_dropout_and_batchnorm1d_follow_train_and_eval():
    x = RNG.normal(size=(6, 3)).astype("float32") * 2 + 1

    def net(training):
        inp = paddle.static.data("x", [None, 3])
        bn, drop = paddle.nn.BatchNorm1D(3), paddle.nn.Dropout(0.5)
        if not training:
            bn.eval(), drop.eval()
        return drop(bn(inp))

    m, s, out = build(lambda: net(True))
    got, scope = run(m, s, {"x": x}, [out])
    normed = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    kept = got[0] != 0
    np.testing.assert_allclose(got[0][kept], (normed * 2.0)[kept], rtol=1e-4)  # upscale_in_train
    assert 0 < kept.mean() < 1
    moving_mean = [v for v in scope.vars if v.startswith("batch_norm1d_0.w_1")]  # Paddle's name
    np.testing.assert_allclose(scope.vars[moving_mean[0]], 0.1 * x.mean(0), rtol=1e-5)

    m, s, out = build(lambda: net(False))
    got, _ = run(m, s, {"x": x}, [out])
    np.testing.assert_allclose(got[0], x / np.sqrt(1 + 1e-5), rtol=1e-5)  # moving stats 0/1, no dropout


def test_initializers_are_fluid_initializers_with_paddle2_arguments():
    init = paddle.nn.initializer
    value = np.arange(6, dtype="float32").reshape(2, 3)

    def net():
        mk = lambda i: paddle.static.create_parameter([2, 3], "float32", attr=paddle.ParamAttr(initializer=i))
        return [mk(init.Constant(0.5)), mk(init.Uniform(-0.1, 0.1)), mk(init.Normal(0.0, 0.01)),
                mk(init.TruncatedNormal(0.0, 0.01)), mk(init.XavierUniform()), mk(init.XavierNormal()),
                mk(init.KaimingNormal()), mk(init.Assign(value))]

    m, s, params = build(net)
    assert all(isinstance(i, fluid.initializer.Initializer)
               for i in (init.Constant(), init.Uniform(), init.KaimingUniform(), init.Assign([1.0])))
    got, _ = run(m, s, {}, params)
    np.testing.assert_array_equal(got[0], np.full((2, 3), 0.5, "float32"))
    assert np.abs(got[1]).max() <= 0.1 and np.abs(got[3]).max() <= 0.02
    assert np.abs(got[4]).max() <= np.sqrt(6 / 5)
    np.testing.assert_array_equal(got[7], value)


def test_losses_match_their_formulas():
    p = RNG.uniform(0.05, 0.95, size=(6, 1)).astype("float32")
    y = (RNG.random((6, 1)) > 0.5).astype("float32")
    logits = RNG.normal(size=(6, 3)).astype("float32")
    cls = np.array([[0], [2], [1], [1], [-100], [0]], dtype="int64")

    def net():
        pv, yv = paddle.static.data("p", [None, 1]), paddle.static.data("y", [None, 1])
        lv, cv = paddle.static.data("l", [None, 3]), paddle.static.data("c", [None, 1], "int64")
        return [F.log_loss(pv, yv), F.binary_cross_entropy(pv, yv), F.binary_cross_entropy(pv, yv, reduction="sum"),
                F.binary_cross_entropy_with_logits(pv, yv, reduction="none"), F.cross_entropy(lv, cv),
                F.cross_entropy(F.softmax(lv), cv, use_softmax=False, reduction="none"),
                F.mse_loss(pv, yv), F.one_hot(paddle.static.data("k", [None], "int64"), 4)]

    m, s, outs = build(net)
    got, _ = run(m, s, {"p": p, "y": y, "l": logits, "c": cls, "k": np.array([3, 0])}, outs)
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    np.testing.assert_allclose(got[0], -(y * np.log(p + 1e-4) + (1 - y) * np.log(1 - p + 1e-4)), rtol=1e-5)
    np.testing.assert_allclose(got[1], [bce.mean()], rtol=1e-5)
    np.testing.assert_allclose(got[2], [bce.sum()], rtol=1e-5)
    np.testing.assert_allclose(got[3], np.log1p(np.exp(p)) - y * p, rtol=1e-5)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    counted = cls[:, 0] != -100
    per_row = -logp[np.arange(6), np.where(counted, cls[:, 0], 0)] * counted
    np.testing.assert_allclose(got[4], [per_row.sum() / counted.sum()], rtol=1e-5)  # mean over counted labels
    np.testing.assert_allclose(got[5][:, 0], per_row, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[6], [((p - y) ** 2).mean()], rtol=1e-5)
    np.testing.assert_array_equal(got[7], np.eye(4, dtype="float32")[[3, 0]])


def test_sparse_embedding_and_sparse_embedding_layer_train_transpiled_as_single_process():
    """sparse_embedding becomes the pservers' distributed table (split_ids/prefetch/merge_ids
    on the trainer), nn.Embedding(sparse=True) a prefetched sparse parameter; in sync mode
    with one trainer both train exactly as the untranspiled program (in-process pservers:
    InMemoryCluster's real PserverState, only the wire is direct calls)."""
    from psjob.cluster.inmemory import InMemoryCluster
    from psjob.fluid.transpiler import DistributeTranspiler

    def net():
        ids, y = paddle.static.data("ids", [None, 1], "int64"), paddle.static.data("y", [None, 1])
        # A table's rows are drawn per id on the pservers, not as one dense draw: start them equal.
        table = paddle.static.nn.sparse_embedding(ids, [100, 4], param_attr=paddle.ParamAttr(
            name="table", initializer=paddle.nn.initializer.Constant(0.1)))
        local = paddle.reshape(paddle.nn.Embedding(50, 4, sparse=True)(paddle.scale(ids, 0.5)), [-1, 4])
        loss = paddle.mean(paddle.square(paddle.nn.Linear(8, 1)(paddle.concat([table, local], 1)) - y))
        paddle.optimizer.Adagrad(0.1).minimize(loss)
        return loss

    rng = np.random.default_rng(1)
    feeds = [{"ids": rng.integers(0, 100, (16, 1)), "y": rng.normal(size=(16, 1)).astype("float32")}
             for _ in range(4)]
    main, startup, loss = build(net, seed=2)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    single = [exe.run(main, feed=f, fetch_list=[loss], scope=scope)[0][0] for f in feeds]

    main, startup, loss = build(net, seed=2)
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6170,127.0.0.1:6171",
                 trainers=1, sync_mode=True)
    program = tr.get_trainer_program(wait_port=False)
    assert {"split_ids", "prefetch", "merge_ids"} <= {op.type for op in program.global_block().ops}
    cluster = InMemoryCluster.from_transpiler(tr)
    exe, scope = cluster.executor(0), fluid.Scope()
    exe.run(tr.get_trainer_startup_program(), scope=scope)
    distributed = [exe.run(program, feed=f, fetch_list=[loss], scope=scope)[0][0] for f in feeds]
    exe.close()
    np.testing.assert_allclose(distributed, single, rtol=1e-5)
