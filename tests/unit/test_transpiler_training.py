"""Training through transpiled programs with an in-memory transport.

Real: the transpiler, the trainer and pserver programs (serialized to bytes
and loaded back before running, as separate processes would), Executors,
kernels, PserverState with its barriers, trainer threads. Faked: only the
wire — InMemoryClient calls the pservers' PserverState directly instead of
over gRPC (values are still copied both ways).
"""

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.pserver_state import PserverOptions
from psjob.fluid.core import SelectedRows
from psjob.fluid.ops.dist_ops import PREFETCH_AHEAD
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from psjob.fluid.transpiler import deserialize_dist_program as load
from psjob.fluid.transpiler import serialize_dist_program as dump
from psjob.foundation.tables import SparseTable, shard_of

EPS = ["127.0.0.1:6170", "127.0.0.1:6171", "127.0.0.1:6172"]
VOCAB, DIM = 1024, 16


def dense_net(opt):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[64])
        y = fluid.layers.data(name="y", shape=[1])
        h = fluid.layers.fc(x, 256, act="tanh")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        _optimizer(opt).minimize(loss)
    return main, startup, loss


def embedding_net(opt, distributed=False):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 11
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=True, is_distributed=distributed,
                                     param_attr=fluid.ParamAttr(
                                         name="emb", initializer=fluid.initializer.Uniform(-0.5, 0.5)))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(emb, 1), y))
        _optimizer(opt).minimize(loss)
    return main, startup, loss


def lr_net(opt):
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[64])
        y = fluid.layers.data(name="y", shape=[1])
        p = fluid.layers.fc(x, 256, param_attr=fluid.ParamAttr(
            regularizer=fluid.regularizer.L2Decay(0.01), gradient_clip=fluid.clip.GradientClipByValue(0.05)))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(p, 1), y))
        lr = fluid.layers.exponential_decay(0.05, 2, 0.5, staircase=True)
        fluid.optimizer.Momentum(lr, 0.9).minimize(loss)
    return main, startup, loss


def _optimizer(opt):
    return {"sgd": lambda: fluid.optimizer.SGD(0.2),
            "slow_sgd": lambda: fluid.optimizer.SGD(0.02),
            "adam": lambda: fluid.optimizer.Adam(0.02),
            "lazy_adam": lambda: fluid.optimizer.Adam(0.02, lazy_mode=True),
            "adagrad": lambda: fluid.optimizer.Adagrad(0.1, epsilon=1e-5),
            "momentum": lambda: fluid.optimizer.Momentum(0.05, 0.9),
            "rmsprop": lambda: fluid.optimizer.RMSProp(0.01, centered=True),
            # an LR schedule: the table push reads the decayed rate every round
            "adam_decay": lambda: fluid.optimizer.Adam(
                fluid.layers.exponential_decay(0.05, 1, 0.7), beta1=0.8, beta2=0.99, epsilon=1e-6)}[opt]()


def batches(kind, steps, n):
    rng = np.random.default_rng(0)
    y = rng.normal(size=(steps, n, 1)).astype("float32")
    if kind == "dense":  # a learnable target: a fixed linear function of x
        xs = rng.normal(size=(steps, n, 64)).astype("float32")
        return [{"x": xs[s], "y": 0.1 * xs[s, :, :8].sum(1, keepdims=True)} for s in range(steps)]
    ids = rng.integers(0, VOCAB, size=(steps, n, 1)).astype("int64")
    ids[:, :3] = 5  # repeated ids inside and across trainers' batches
    return [{"ids": ids[s], "y": y[s]} for s in range(steps)]


def single_machine(build, feeds, init=None):
    """Train in one process; `init` overrides startup values (a distributed table's initial rows)."""
    main, startup, loss = build()
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    scope.vars.update({k: np.array(v, copy=True) for k, v in (init or {}).items()})
    for feed in feeds:
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    return {p.name: np.array(scope.vars[p.name]) for p in main.all_parameters()}, scope


def distributed(build, feeds, trainers, pservers, sync=True, config=None, options=PserverOptions(30.0)):
    """Transpile once per trainer (as each process would), ship every program as
    bytes, run the pservers in memory and the trainers in threads."""
    eps = ",".join(EPS[:pservers])
    plans = []
    for t in range(trainers):
        main, startup, loss = build()
        tr = DistributeTranspiler(config)
        tr.transpile(t, program=main, startup_program=startup, pservers=eps, trainers=trainers, sync_mode=sync)
        plans.append((load(dump(tr.get_trainer_program(wait_port=False))), load(dump(startup)), loss.name, tr))
    cluster = InMemoryCluster({ep: tuple(load(dump(p)) for p in plans[0][3].get_pserver_programs(ep))
                               for ep in EPS[:pservers]}, options=options)

    def body(t, exe):
        main, startup, loss, _ = plans[t]
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        exe.collect_timing = True  # which kernels ran (a fused pair, or the program's own ops)
        losses = []
        for feed in feeds:
            per = len(next(iter(feed.values()))) // trainers
            part = {k: v[t * per:(t + 1) * per] for k, v in feed.items()}
            losses.append(float(exe.run(main, feed=part, fetch_list=[loss], scope=scope)[0][0]))
        return scope, losses, set(exe.kernel_seconds)
    return cluster, cluster.run_trainers(body, trainers), plans[0][0]._parameters_on_pservers


def table_rows(cluster, eps, name="emb", fresh=False):
    """The distributed table as a dense [VOCAB, DIM] array, id i read from the pserver
    `shard_of` names (fresh: the rows the table's per-id initializer gives, before training)."""
    out = np.empty((VOCAB, DIM), dtype="float32")
    ids = np.arange(VOCAB, dtype=np.int64)
    owner = shard_of(ids, len(eps))
    for k, ep in enumerate(eps):
        table = cluster.handler(ep).scope.vars[name]
        assert isinstance(table, SparseTable)
        source = SparseTable(table.config) if fresh else table
        out[owner == k] = source.lookup(ids[owner == k])
    return out


def distributed_table_run(build, feeds, trainers, pservers):
    """Distributed training of a net with a distributed table, and the single-machine run
    that starts from the same table rows (the pservers' per-id initializer)."""
    cluster, results, overview = distributed(build, feeds, trainers, pservers)
    init = table_rows(cluster, EPS[:pservers], fresh=True)
    ref, _ = single_machine(build, feeds, init={"emb": init})
    return ref, cluster, results


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("trainers,pservers", [(2, 2), (2, 3), (1, 2)])
def test_sync_dense_training_equals_single_machine_training_on_the_global_batches(opt, trainers, pservers):
    feeds = batches("dense", 4, 8)
    ref, _ = single_machine(lambda: dense_net(opt), feeds)
    cluster, results, overview = distributed(lambda: dense_net(opt), feeds, trainers, pservers)
    for name, want in ref.items():
        for scope, *_ in results:  # what every trainer received after the last round
            np.testing.assert_allclose(scope.vars[name], want, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(cluster.gather(overview, name), want, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("opt", ["sgd", "adam", "lazy_adam"])
def test_sync_sparse_embedding_training_equals_single_machine_training(opt):
    feeds = batches("ids", 4, 12)
    ref, _ = single_machine(lambda: embedding_net(opt), feeds)
    cluster, results, overview = distributed(lambda: embedding_net(opt), feeds, 2, 2)
    assert len(overview.get_distributed_vars_by_origin("emb")) == 2  # the table is sliced
    for name, want in ref.items():
        for scope, *_ in results:
            np.testing.assert_allclose(scope.vars[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("opt,trainers,pservers", [
    ("sgd", 2, 3), ("adam", 1, 2), ("adam", 2, 3), ("adagrad", 1, 2), ("adagrad", 2, 3),
    ("momentum", 2, 2), ("rmsprop", 2, 2), ("adam_decay", 2, 2)])
def test_sync_distributed_table_training_equals_single_machine_training(opt, trainers, pservers):
    """The pservers' SparseTable runs the program's own per-row rule (state per row, Adam's
    beta powers per row) with its hyperparameters and the (scheduled) learning rate of each
    round: exactly what the single-machine program does to the dense table."""
    feeds = batches("ids", 5, 12)
    build = lambda: embedding_net(opt, distributed=True)
    ref, cluster, results = distributed_table_run(build, feeds, trainers, pservers)
    tables = [cluster.handler(ep).scope.vars["emb"] for ep in EPS[:pservers]]
    rule = {"adam_decay": "adam"}.get(opt, opt)
    assert {t.config.optimizer.name for t in tables} == {rule}
    np.testing.assert_allclose(table_rows(cluster, EPS[:pservers]), ref["emb"], rtol=1e-5, atol=1e-6)
    for name in ("fc_0.w_0", "fc_0.b_0"):
        np.testing.assert_allclose(results[-1][0].vars[name], ref[name], rtol=1e-5, atol=1e-6)
    # the trainers never held the table's rows, nor its optimizer state
    assert results[0][0].vars["emb"].shape == (0, DIM)
    assert not [n for n in results[0][0].vars if n.startswith("emb_")]


def test_table_optimizer_sgd_updates_the_distributed_table_with_plain_sgd():
    """DistributeTranspilerConfig.table_optimizer="sgd" (Fluid 1.x): the pservers run sgd on the
    table with the program's learning rate, equal to a single machine built with the optimizer's
    table_optimizer="sgd"; dense parameters keep Adam."""
    def build(table_optimizer):
        def net():
            main, startup = fluid.Program(), fluid.Program()
            main.random_seed = startup.random_seed = 11
            with fluid.program_guard(main, startup), fluid.unique_name.guard():
                ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
                y = fluid.layers.data(name="y", shape=[1])
                emb = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=True, is_distributed=True,
                                             param_attr=fluid.ParamAttr(
                                                 name="emb", initializer=fluid.initializer.Uniform(-0.5, 0.5)))
                loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(emb, 1), y))
                opt = fluid.optimizer.Adam(0.02)
                opt.table_optimizer = table_optimizer
                opt.minimize(loss)
            return main, startup, loss
        return net

    feeds = batches("ids", 4, 12)
    cfg = DistributeTranspilerConfig()
    cfg.table_optimizer = "sgd"
    cluster, results, _ = distributed(build("same"), feeds, 2, 2, config=cfg)
    assert {cluster.handler(ep).scope.vars["emb"].config.optimizer.name for ep in EPS[:2]} == {"sgd"}
    init = table_rows(cluster, EPS[:2], fresh=True)
    ref, _ = single_machine(build("sgd"), feeds, init={"emb": init})
    np.testing.assert_allclose(table_rows(cluster, EPS[:2]), ref["emb"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][0].vars["fc_0.w_0"], ref["fc_0.w_0"], rtol=1e-5, atol=1e-6)


def test_lr_decay_clipping_and_weight_decay_on_pservers_equal_single_machine_training():
    feeds = batches("dense", 5, 8)
    ref, ref_scope = single_machine(lambda: lr_net(None), feeds)
    cluster, results, overview = distributed(lambda: lr_net(None), feeds, 2, 2)
    for name, want in ref.items():
        np.testing.assert_allclose(cluster.gather(overview, name), want, rtol=1e-5, atol=1e-6, err_msg=name)
    for state in cluster.states.values():  # one LR step per round, as one machine takes per batch
        assert int(state.scope.vars["@LR_DECAY_COUNTER@"][0]) == int(ref_scope.vars["@LR_DECAY_COUNTER@"][0])


def test_async_training_applies_every_pushed_gradient_and_learns():
    feeds = batches("dense", 12, 16)
    cluster, results, _ = distributed(lambda: dense_net("slow_sgd"), feeds, 2, 2, sync=False)
    # each of 2 trainers pushes, per step, the blocks each pserver optimizes
    pushed_blocks = {ep: len(s.grad_blocks) for ep, s in cluster.states.items()}
    for ep, state in cluster.states.items():
        assert state.version == 2 * 12 * pushed_blocks[ep]
    losses = results[0][1]
    assert np.mean(losses[-3:]) < np.mean(losses[:3])


def test_dc_asgd_training_runs_asynchronously_and_learns():
    cfg = DistributeTranspilerConfig()
    cfg.enable_dc_asgd = True
    feeds = batches("dense", 12, 16)
    cluster, results, _ = distributed(lambda: dense_net("slow_sgd"), feeds, 2, 2, sync=False, config=cfg)
    checked = 0
    for state in cluster.states.values():
        for name in state.scope.vars:
            if name.endswith(".trainer_0_bak") and ".block" not in name:
                param = name[:-len(".trainer_0_bak")]
                for t in range(2):  # each trainer's backup is the value it last pulled
                    np.testing.assert_array_equal(state.scope.vars[f"{param}.trainer_{t}_bak"],
                                                  results[t][0].vars[param])
                checked += 1
    assert checked >= 2
    assert np.mean(results[1][1][-3:]) < np.mean(results[1][1][:3])


def test_a_checkpoint_notify_saves_each_table_shard_keyed_by_feature_id(tmp_path):
    feeds = batches("ids", 2, 12)
    cluster, results, _ = distributed(lambda: embedding_net("sgd", distributed=True), feeds, 2, 2)
    files = cluster.client(0).checkpoint_notify(str(tmp_path))
    assert sorted(f for fs in files.values() for f in fs) == ["emb.shard_0_of_2.npz", "emb.shard_1_of_2.npz"]
    for k, ep in enumerate(EPS[:2]):
        with np.load(tmp_path / f"emb.shard_{k}_of_2.npz") as z:
            ids, values = z["ids"], z["values"]
        assert (shard_of(ids, 2) == k).all()
        live = cluster.handler(ep).scope.vars["emb"]
        assert len(ids) == len(live)  # every row the pserver holds, keyed by its feature id
        np.testing.assert_array_equal(values, live.lookup(ids))


def test_a_pserver_refuses_unknown_or_misshapen_gradients_and_keeps_serving():
    feeds = batches("dense", 1, 8)
    cluster, _, _ = distributed(lambda: dense_net("sgd"), feeds, 2, 1)
    state = cluster.handler(EPS[0])
    with pytest.raises(KeyError, match="does not receive 'nope@GRAD'"):
        state.on_send(0, {"nope@GRAD": np.zeros(3, "float32")})
    with pytest.raises(ValueError, match=r"shape \[3\], expected \[256\]"):
        state.on_send(0, {"fc_0.b_0@GRAD.trainer_0": np.zeros(3, "float32")})
    with pytest.raises(ValueError, match="trainer id 5 is out of range"):
        state.on_barrier(5, "send")
    with pytest.raises(ValueError, match="the slot of trainer 1"):
        state.on_send(0, {"fc_0.b_0@GRAD.trainer_1": np.zeros(256, "float32")})
    values, _ = state.on_get(0, ["fc_0.b_0"])
    assert values["fc_0.b_0"].shape == (256,)


def test_a_pushed_variables_declaration_once_remembered_still_refuses_every_mismatch():
    """The pserver remembers a variable's declared dtype and shape after its first push: later
    pushes of it are checked against them as strictly, and a push of a name it does not receive
    (or a delta of a variable it does not hold) is refused every time."""
    cluster, _, _ = distributed(lambda: dense_net("sgd"), batches("dense", 1, 8), 2, 1)
    state = cluster.handler(EPS[0])
    slot = "fc_0.b_0@GRAD.trainer_0"
    state.on_send(0, {slot: np.zeros(256, "float32")})  # remembered now
    for _ in range(2):
        with pytest.raises(ValueError, match=r"shape \[3\], expected \[256\]"):
            state.on_send(0, {slot: np.zeros(3, "float32")})
        with pytest.raises(ValueError, match="dtype float64, expected float32"):
            state.on_send(0, {slot: np.zeros(256, "float64")})
        with pytest.raises(KeyError, match="does not receive 'nope@GRAD'"):
            state.on_send(0, {"nope@GRAD": np.zeros(3, "float32")})
        with pytest.raises(KeyError, match=f"does not hold '{slot}'"):  # a gradient slot is not persistable
            state.on_send(0, {slot: np.zeros(256, "float32")}, is_delta=True)
    state.on_send(0, {slot: np.zeros(256, "float32")})


def test_a_pserver_refuses_nan_and_inf_pushes_whole_and_keeps_what_it_had():
    """Sync slots and geo deltas alike: a push holding NaN or an infinity stores nothing (its
    finite variables neither) and the error names the variable."""
    feeds = batches("dense", 1, 8)
    cluster, _, _ = distributed(lambda: dense_net("sgd"), feeds, 2, 1)
    state = cluster.handler(EPS[0])
    w_slot, b_slot, param = "fc_0.w_0@GRAD.trainer_0", "fc_0.b_0@GRAD.trainer_0", "fc_0.b_0"
    kept = {n: np.array(state.scope.vars[n]) for n in (w_slot, b_slot, param)}
    finite = np.full(kept[w_slot].shape, 3.0, "float32")
    bad = np.zeros(256, "float32")
    for value in (np.nan, np.inf, -np.inf):
        bad[7] = value
        with pytest.raises(ValueError, match=f"'{b_slot}' holds NaN or infinite values"):
            state.on_send(0, {w_slot: finite, b_slot: bad})
        with pytest.raises(ValueError, match=f"'{param}' holds NaN or infinite values"):
            state.on_send(0, {param: bad}, is_delta=True)
    for name, value in kept.items():
        np.testing.assert_array_equal(state.scope.vars[name], value)


def test_a_sync_round_missing_a_trainer_times_out_naming_it():
    main, startup, _ = dense_net("sgd")
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=EPS[0], trainers=2)
    cluster = InMemoryCluster({EPS[0]: tr.get_pserver_programs(EPS[0])}, options=PserverOptions(0.2))
    state = cluster.handler(EPS[0])
    state.on_barrier(0, "send")
    with pytest.raises(TimeoutError, match=r"waiting for trainers \[1\]"):
        state.on_get(0, ["fc_0.b_0"])
    state.on_complete(1)  # trainer 1 leaves: the round completes without it
    _, version = state.on_get(0, ["fc_0.b_0"])
    assert version == 1


def test_a_trainer_ahead_of_a_pending_round_waits_for_it_at_that_pserver():
    """A trainer pulls only from the pservers holding its dense parameters, so at a pserver
    holding only table rows its round can still be pending when the trainer moves on. Its fetch
    barrier, prefetch and next push there wait for the round (here: time out naming the trainer
    the round waits for) instead of reading rows from before it or overwriting the gradient the
    round has yet to apply; a pserver that let them through trained the table with rounds lost
    (caught as one id's rows off by one update, once in ~100 runs of the sync table test)."""
    main, startup, _ = embedding_net("sgd", distributed=True)
    tr = DistributeTranspiler()
    tr.transpile(0, program=main, startup_program=startup, pservers=EPS[0], trainers=2)
    cluster = InMemoryCluster({EPS[0]: tr.get_pserver_programs(EPS[0])}, options=PserverOptions(0.2))
    state = cluster.handler(EPS[0])
    grad = {"emb@GRAD.trainer_0.pserver_0": SelectedRows(np.array([7]), np.ones((1, DIM), "float32"), VOCAB)}
    assert "emb@GRAD.trainer_0.pserver_0" in state.recv_names
    before = state.on_prefetch(0, "emb", np.array([7]))
    state.on_send(0, grad)
    state.on_barrier(0, "send")
    waits = {"fetch barrier": lambda: state.on_barrier(0, "fetch"),
             "prefetch": lambda: state.on_prefetch(0, "emb", np.array([7])),
             "push": lambda: state.on_send(0, {"emb@GRAD.trainer_0.pserver_0": SelectedRows(
                 np.array([7]), np.full((1, DIM), 100, "float32"), VOCAB)})}
    for what, call in waits.items():
        with pytest.raises(TimeoutError, match=r"round 1 not complete .* waiting for trainers \[1\]"):
            call()
    state.on_barrier(1, "send")  # the round applies trainer 0's stored gradient, not the refused push
    assert state.on_barrier(0, "fetch") == 1
    np.testing.assert_allclose(state.on_prefetch(0, "emb", np.array([7])), before - 0.2 * 0.5, rtol=1e-6)


def test_a_trainer_that_finishes_early_does_not_block_the_others():
    feeds = batches("dense", 3, 8)
    main0, startup0, loss0 = dense_net("sgd")
    plans = []
    for t in range(2):
        m, s, l = dense_net("sgd")
        tr = DistributeTranspiler()
        tr.transpile(t, program=m, startup_program=s, pservers=EPS[0], trainers=2)
        plans.append((tr.get_trainer_program(wait_port=False), s, l, tr))
    cluster = InMemoryCluster.from_transpiler(plans[0][3], options=PserverOptions(30.0))

    def body(t, exe):
        main, startup, loss, _ = plans[t]
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        for feed in feeds[:1 if t == 1 else 3]:
            exe.run(main, feed={k: v[:4] for k, v in feed.items()}, fetch_list=[loss], scope=scope)
    cluster.run_trainers(body, 2)
    assert cluster.handler(EPS[0]).version == 3 and cluster.handler(EPS[0]).state == "STOPPING"


def two_lookup_net(late_ids):
    """One distributed table read twice: by two fed id inputs, or (late_ids) by an
    id variable computed after the first lookup."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        other = fluid.layers.data(name="other", shape=[1], dtype="int64")
        y = fluid.layers.data(name="y", shape=[1])
        attr = fluid.ParamAttr(name="emb", initializer=fluid.initializer.Uniform(-0.5, 0.5))
        a = fluid.layers.embedding(ids, size=[VOCAB, DIM], is_sparse=True, is_distributed=True, param_attr=attr)
        second = fluid.layers.assign(other) if late_ids else other
        b = fluid.layers.embedding(second, size=[VOCAB, DIM], is_sparse=True, is_distributed=True,
                                   param_attr=attr)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc([a, b], 1), y))
        fluid.optimizer.SGD(0.3).minimize(loss)
    return main, startup, loss


@pytest.mark.parametrize("late_ids", [False, True])
def test_several_lookups_of_one_distributed_table_train_like_a_single_machine(late_ids):
    rng = np.random.default_rng(1)
    feeds = [dict(f, other=rng.integers(0, VOCAB, size=(12, 1)).astype("int64")) for f in batches("ids", 3, 12)]
    ref, cluster, results = distributed_table_run(lambda: two_lookup_net(late_ids), feeds, 2, 2)
    np.testing.assert_allclose(table_rows(cluster, EPS[:2]), ref["emb"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][0].vars["fc_0.w_0"], ref["fc_0.w_0"], rtol=1e-5, atol=1e-6)


def per_param_lr_net(opt):
    """A parameter with its own learning-rate multiplier (an LRSched|Optimize scale op)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 9
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[64])
        y = fluid.layers.data(name="y", shape=[1])
        h = fluid.layers.fc(x, 8, param_attr=fluid.ParamAttr(learning_rate=3.0))
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        _optimizer(opt).minimize(loss)
    return main, startup, loss


@pytest.mark.parametrize("slice_var_up", [True, False])
def test_per_parameter_learning_rates_and_unsliced_variables_train_like_a_single_machine(slice_var_up):
    cfg = DistributeTranspilerConfig()
    cfg.slice_var_up = slice_var_up
    feeds = batches("dense", 3, 8)
    ref, _ = single_machine(lambda: per_param_lr_net("slow_sgd"), feeds)
    cluster, results, _ = distributed(lambda: per_param_lr_net("slow_sgd"), feeds, 2, 3, config=cfg)
    for name, want in ref.items():
        np.testing.assert_allclose(results[0][0].vars[name], want, rtol=1e-5, atol=1e-6, err_msg=name)
    # 4 small parameters on 3 pservers: every pserver holds something, none twice
    held = [n for s in cluster.states.values() for n in s.grad_blocks]
    assert len(held) == len(set(held)) == 4


def _table_export(cluster, eps, name="emb"):
    """Every row of the pservers' table (values and per-row optimizer state) keyed by id."""
    from psjob.foundation.tables import concat_shards
    return concat_shards([cluster.handler(ep).scope.vars[name].export() for ep in eps])


def _table_job(pservers, feeds, trainers=2, load_dir=None, save_dir=None):
    """Sync job with an Adam-updated distributed table (LR schedule included): optionally load a
    checkpoint into the pservers first (seed 004's load_persistables on the pserver startup),
    train `feeds`, and have trainer 0 save a checkpoint (the distributed save) at the end."""
    eps = EPS[:pservers]
    plans = []
    for t in range(trainers):
        main, startup, loss = embedding_net("adam_decay", distributed=True)
        tr = DistributeTranspiler()
        tr.transpile(t, program=main, startup_program=startup, pservers=",".join(eps), trainers=trainers)
        plans.append((tr, loss))
    programs = {ep: plans[0][0].get_pserver_programs(ep) for ep in eps}
    cluster = InMemoryCluster(programs)
    if load_dir:
        for ep, state in cluster.states.items():
            with fluid.scope_guard(state.scope):
                fluid.io.load_persistables(state.exe, load_dir, programs[ep][1])

    def body(t, exe):
        tr, loss = plans[t]
        scope = fluid.Scope()
        exe.run(tr.get_trainer_startup_program(), scope=scope)
        prog = tr.get_trainer_program(wait_port=False)
        for feed in feeds:
            per = len(next(iter(feed.values()))) // trainers
            exe.run(prog, feed={k: v[t * per:(t + 1) * per] for k, v in feed.items()}, fetch_list=[loss],
                    scope=scope)
        if t == 0 and save_dir:
            fluid.io._save_distributed_persistables(exe, save_dir, prog, scope=scope)
    cluster.run_trainers(body, trainers)
    return cluster, eps


def test_adam_table_state_survives_a_checkpoint_resharded_from_two_to_three_pservers(tmp_path):
    """The per-row Adam state (moments and per-row beta powers) is saved with the rows, keyed by
    id, under the table's optimizer name; three pservers load a two-pserver save with every row's
    state intact, and training continued there equals uninterrupted training."""
    from psjob.foundation.checkpoint.format import read_manifest
    feeds = batches("ids", 6, 12)
    half = str(tmp_path / "half")
    first, eps2 = _table_job(2, feeds[:3], save_dir=half)
    saved = _table_export(first, eps2)
    assert set(saved.state) == {"moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"}
    # per row: beta1 = 0.8 to the power 1 + (the steps that row was updated in)
    assert sorted(np.unique(saved.state["beta1_pow_acc"])) == pytest.approx([0.8 ** 4, 0.8 ** 2])

    doc = read_manifest(half)["tables"]["emb"]
    assert doc["num_shards"] == 2
    for shard in doc["shards"]:
        assert shard["optimizer"] == "adam"
        assert {f"state.{n}" for n in saved.state} <= set(shard["files"])

    resumed, eps3 = _table_job(3, [], load_dir=half)
    loaded = _table_export(resumed, eps3)
    np.testing.assert_array_equal(loaded.ids, saved.ids)
    np.testing.assert_array_equal(loaded.values, saved.values)
    for name in saved.state:
        np.testing.assert_array_equal(loaded.state[name], saved.state[name], err_msg=name)
    for ep in eps3:  # each of the three holds exactly the ids shard_of gives it
        ids = resumed.handler(ep).scope.vars["emb"].export().ids
        assert (shard_of(ids, 3) == eps3.index(ep)).all()

    continued, _ = _table_job(3, feeds[3:], load_dir=half)
    straight, _ = _table_job(2, feeds)
    a, b = _table_export(continued, eps3), _table_export(straight, eps2)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_allclose(a.values, b.values, rtol=1e-6, atol=1e-7)
    for name in b.state:
        np.testing.assert_allclose(a.state[name], b.state[name], rtol=1e-6, atol=1e-9, err_msg=name)


def pooled_slots_net(pooltype="sum", concat=False, lr=0.3):
    """Three LoD id slots sharing one distributed table, each sum-pooled (the CTR shape);
    `concat`: the pooled slots and two dense features concatenated into one fc (the CTR
    model's layout), else one fc over the list of slots. SGD at `lr`."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        y = fluid.layers.data(name="y", shape=[1])
        dense = fluid.layers.data(name="dense", shape=[2])
        slots = [fluid.layers.data(name=f"s{i}", shape=[1], dtype="int64", lod_level=1) for i in range(3)]
        attr = fluid.ParamAttr(name="emb", initializer=fluid.initializer.Uniform(-0.5, 0.5))
        pooled = [fluid.layers.sequence_pool(fluid.layers.embedding(
            s, size=[VOCAB, DIM], is_sparse=True, is_distributed=True, param_attr=attr), pooltype)
            for s in slots]
        hidden = fluid.layers.concat(pooled + [dense], axis=1) if concat else pooled
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(hidden, 1), y))
        fluid.optimizer.SGD(lr).minimize(loss)  # not Adam: it hides a gradient's scale
    return main, startup, loss


def pooled_feeds(steps, n, one_id_each=False):
    """Slot 0: one id per example; slots 1-2: 0..3 ids (empty sequences included), with
    ids repeated inside a slot and across slots (`one_id_each`: one id each, too)."""
    rng = np.random.default_rng(3)
    feeds = []
    for _ in range(steps):
        feed = {"y": rng.normal(size=(n, 1)).astype("float32"), "dense": rng.normal(size=(n, 2)).astype("float32")}
        for i in range(3):
            lengths = np.ones(n, np.int64) if i == 0 or one_id_each else rng.integers(0, 4, n)
            lengths[0] = 0 if i and not one_id_each else 1
            ids = rng.integers(0, 12, size=(int(lengths.sum()), 1)).astype("int64")
            feed[f"s{i}"] = (ids, [np.concatenate([[0], np.cumsum(lengths)]).tolist()])
        feeds.append(feed)
    return feeds


FUSED = {"merge_ids_pool", "merge_ids_pool_grad"}


def trainer_ops(build, pservers):
    """The op types of trainer 0's program, transpiled from `build()`."""
    t = DistributeTranspiler()
    main, startup, _ = build()
    t.transpile(0, program=main, startup_program=startup, pservers=",".join(EPS[:pservers]), trainers=1)
    return t.get_trainer_program(wait_port=False).global_block().ops


@pytest.mark.parametrize("pservers", [1, 2])
def test_fused_lookup_and_sum_pool_train_like_a_single_machine(pservers):
    """The trainer pass writes split_ids(Index) → prefetch → merge_ids and leaves the sum
    sequence_pools and gradients as built; the executor runs them as merge_ids_pool /
    merge_ids_pool_grad; sync training stays equal to single-machine training. One
    trainer: the helper splits feeds by rows, which LoD feeds do not support."""
    feeds = pooled_feeds(4, 10)
    ref, cluster, results = distributed_table_run(pooled_slots_net, feeds, 1, pservers)
    ops = trainer_ops(pooled_slots_net, pservers)
    types = [op.type for op in ops]
    assert types.count("sequence_pool") == 3 and "lookup_table_grad" in types and not FUSED & set(types)
    assert next(op for op in ops if op.type == "split_ids").output("Index") == ["emb@PREFETCH_INDEX"]
    ran = results[0][2]
    assert FUSED <= ran and not {"sequence_pool", "lookup_table_grad", "merge_ids"} & ran
    np.testing.assert_allclose(table_rows(cluster, EPS[:pservers]), ref["emb"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][0].vars["fc_0.w_0"], ref["fc_0.w_0"], rtol=1e-5, atol=1e-6)


def paddlerec_sparse_net(optimizer="adam", dense_first=False):
    """Three slots of one distributed table as PaddleRec writes a Paddle 2.x PS model:
    static.nn.sparse_embedding per slot, paddle.reshape(emb, [-1, dim]), concat with the
    dense features (after the slots, or before them: `dense_first`), fc."""
    import psjob as paddle
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        y = fluid.layers.data(name="y", shape=[1])
        dense = fluid.layers.data(name="dense", shape=[2])
        slots = [fluid.layers.data(name=f"s{i}", shape=[1], dtype="int64") for i in range(3)]
        attr = fluid.ParamAttr(name="emb", initializer=fluid.initializer.Uniform(-0.5, 0.5))
        embs = [paddle.reshape(paddle.static.nn.sparse_embedding(s, size=[VOCAB, DIM], param_attr=attr), [-1, DIM])
                for s in slots]
        inputs = [dense] + embs if dense_first else embs + [dense]
        loss = fluid.layers.mean(fluid.layers.square_error_cost(
            fluid.layers.fc(fluid.layers.concat(inputs, axis=1), 1), y))
        {"adam": lambda: fluid.optimizer.Adam(0.05, lazy_mode=True), "sgd": lambda: fluid.optimizer.SGD(0.1)}[
            optimizer]().minimize(loss)
    return main, startup, loss


@pytest.mark.parametrize("dense_first", [False, True], ids=["slots-first", "dense-first"])
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_a_paddlerec_sparse_embedding_model_is_fused_and_trains_like_a_single_machine(optimizer, dense_first):
    """sparse_embedding + reshape to [-1, dim] + concat (a Paddle 2.x PS model as PaddleRec
    writes it): the executor fuses it as the CTR shape, every id its own row."""
    rng = np.random.default_rng(4)
    feeds = [dict({"y": rng.normal(size=(10, 1)).astype("float32"), "dense": rng.normal(size=(10, 2)).astype("float32")},
                  **{f"s{i}": rng.integers(0, 12, (10, 1)).astype("int64") for i in range(3)}) for _ in range(4)]
    build = lambda: paddlerec_sparse_net(optimizer, dense_first)
    ref, cluster, results = distributed_table_run(build, feeds, 1, 2)
    assert "reshape2" in {op.type for op in trainer_ops(build, 2)}  # the program as built
    ran = results[0][2]
    assert FUSED <= ran
    assert not {"lookup_table", "merge_ids", "reshape2", "concat", "lookup_table_grad"} & ran
    np.testing.assert_allclose(table_rows(cluster, EPS[:2]), ref["emb"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][0].vars["fc_0.w_0"], ref["fc_0.w_0"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("one_id_each", [True, False])
def test_the_concat_of_the_pooled_slots_is_fused_and_trains_like_a_single_machine(one_id_each):
    """When the pooled slots feed one concat (with the dense features after them),
    merge_ids_pool writes the concat's output and its gradient reads the concat's
    gradient; sync training stays equal to single-machine training, with one id per
    sequence everywhere (one gather for all slots) and with variable-length slots."""
    feeds = pooled_feeds(4, 10, one_id_each)
    build = lambda: pooled_slots_net(concat=True)
    ref, cluster, results = distributed_table_run(build, feeds, 1, 2)
    ran = results[0][2]
    assert FUSED <= ran and not {"concat", "concat_grad"} & ran
    np.testing.assert_allclose(table_rows(cluster, EPS[:2]), ref["emb"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][0].vars["fc_0.w_0"], ref["fc_0.w_0"], rtol=1e-5, atol=1e-6)


def test_a_max_pool_over_a_distributed_table_is_left_unfused():
    ops = trainer_ops(lambda: pooled_slots_net("max"), 1)
    assert "merge_ids" in [op.type for op in ops]
    assert next(op for op in ops if op.type == "split_ids").output("Index") == []  # nothing to fuse


class _CountingPrefetches:
    """The in-memory client, counting prefetch requests."""

    def __init__(self, client):
        self.client, self.prefetches = client, 0

    def prefetch(self, *args):
        self.prefetches += 1
        return self.client.prefetch(*args)

    def __getattr__(self, name):
        return getattr(self.client, name)


def _pooled_on_two_pservers(sync, lr=0.3):
    """pooled_slots_net transpiled for one trainer and two in-memory pservers:
    (trainer program, startup, loss, cluster)."""
    main, startup, loss = pooled_slots_net(lr=lr)
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=",".join(EPS[:2]), trainers=1,
                sync_mode=sync)
    return t.get_trainer_program(wait_port=False), startup, loss, InMemoryCluster.from_transpiler(t)


def _counted_rpc(exe, sync):
    """Count the trainer's prefetch requests; async, behind a Communicator (stop it at the end).
    → (the counter, the service the executor now uses)."""
    from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
    counting = _CountingPrefetches(exe.services["rpc"])
    service = exe.services["rpc"] = counting if sync else Communicator(counting, CommunicatorConfig())
    return counting, service


@pytest.mark.parametrize("sync", [False, True])
def test_prefetch_ahead_serves_the_next_batch_from_requests_issued_before_it_runs(sync):
    """Async: every step's prefetch was issued by prefetch_ahead while the step before ran,
    so the trainer makes one prefetch per step, and it still learns (one batch, six times:
    on six different batches of ten the last loss beat the first only by luck). Sync:
    refused (the rounds stay exact), the prefetch ops fetch as usual. At a rate below the
    nets' 0.3: async, a step may compute on the parameters its predecessor did (its push
    still in flight), which at 0.3 on one repeated batch overshot in about 1 run in 15."""
    from psjob.fluid.pipeline import prefetch_ahead
    feeds = pooled_feeds(1, 10) * 6
    program, startup, loss, cluster = _pooled_on_two_pservers(sync, lr=0.05)

    def body(tid, exe):
        counting, service = _counted_rpc(exe, sync)
        exe.run(startup)
        issued, losses = [], []
        for i, feed in enumerate(feeds):
            if i + 1 < len(feeds):
                issued.append(prefetch_ahead(exe, program, feeds[i + 1]))
            losses.append(float(exe.run(program, feed=feed, fetch_list=[loss])[0][0]))
        if not sync:
            service.stop()
        return issued, counting.prefetches, losses

    [(issued, prefetches, losses)] = cluster.run_trainers(body, 1)
    assert issued == [not sync] * (len(feeds) - 1)
    assert prefetches == 2 * len(feeds)  # one per pserver per step, never twice
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


@pytest.mark.parametrize("sync", [False, True])
def test_train_from_dataset_pipelines_the_prefetch_where_reads_may_lag(tmp_path, sync):
    """train_from_dataset (one thread) runs its batches through fluid.pipeline: async, each
    batch's prefetches were issued while the batch before ran, and every one was taken (one
    per pserver per step, never twice); sync, nothing is issued ahead."""
    from psjob.distributed import QueueDataset
    rng = np.random.default_rng(5)
    steps, batch = 5, 10
    with open(tmp_path / "part-0", "w") as f:   # MultiSlot lines: y, dense, then the three id slots
        for _ in range(steps * batch):
            slots = [" ".join(map(str, rng.integers(0, 12, size=k))) for k in rng.integers(1, 4, size=3)]
            f.write(f"1 {rng.normal():.4f} 2 {rng.normal():.4f} {rng.normal():.4f} "
                    + " ".join(f"{len(ids.split())} {ids}" for ids in slots) + "\n")
    program, startup, _, cluster = _pooled_on_two_pservers(sync)
    block = program.global_block()
    dataset = QueueDataset()
    dataset.init(batch_size=batch, thread_num=1, pipe_command="cat",
                 use_var=[block.var(name) for name in ("y", "dense", "s0", "s1", "s2")])
    dataset.set_filelist([str(tmp_path / "part-0")])

    def body(tid, exe):
        counting, service = _counted_rpc(exe, sync)
        exe.run(startup)
        exe.train_from_dataset(program, dataset)
        if not sync:
            service.stop()
        queued = exe.services.get(PREFETCH_AHEAD)
        return counting.prefetches, None if queued is None else sum(map(len, queued.values()))

    [(prefetches, left_queued)] = cluster.run_trainers(body, 1)
    assert prefetches == 2 * steps
    assert left_queued == (None if sync else 0)   # async: issued ahead, and all taken


def test_an_async_trainer_allowed_no_stale_step_is_not_pipelined_and_trains_as_sync():
    """max_stale_steps=0 asks for exact reads: the embedding rows too, so the pipeline issues
    nothing ahead (the next batch's rows would be read before this batch's gradient is
    applied) and a lone async trainer's table and parameters equal sync training's."""
    from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
    from psjob.fluid.pipeline import pipelined
    feeds = pooled_feeds(6, 10)
    runs = {}
    for sync in (True, False):
        program, startup, loss, cluster = _pooled_on_two_pservers(sync, lr=0.1)

        def body(tid, exe):
            if not sync:
                exe.services["rpc"] = Communicator(exe.services["rpc"], CommunicatorConfig(max_stale_steps=0))
            exe.run(startup)
            losses = [float(exe.run(program, feed=feed, fetch_list=[loss])[0][0])
                      for feed in pipelined(exe, program, feeds)]
            if not sync:
                exe.services["rpc"].stop()
            return losses, exe.services.get(PREFETCH_AHEAD)

        [(losses, issued)] = cluster.run_trainers(body, 1)
        runs[sync] = losses, table_rows(cluster, EPS[:2]), issued
    assert runs[False][2] is None   # nothing was issued ahead
    np.testing.assert_allclose(runs[False][0], runs[True][0], rtol=1e-5)
    np.testing.assert_allclose(runs[False][1], runs[True][1], rtol=1e-5, atol=1e-7)


class _CallLog:
    """A trainer's client (the Communicator), logging its prefetch and push calls in order."""

    def __init__(self, service):
        self.service, self.calls = service, []

    def prefetch(self, *args):
        self.calls.append("prefetch")
        return self.service.prefetch(*args)

    def push(self, *args, **kwargs):
        self.calls.append("push")
        return self.service.push(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.service, name)


def _on_this_thread(cluster, body):
    """body(0, executor) on the calling (main) thread: only its runs defer (Hogwild threads'
    run whole); the executor is closed afterwards, as run_trainers closes its own."""
    exe = cluster.executor(0)
    try:
        return [body(0, exe)]
    finally:
        exe.close()


def _deferring_trainer(exe, startup, **config):
    """An async trainer's executor behind a Communicator whose calls are logged, its startup
    program run in a scope of its own → (the log, the scope)."""
    from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
    log = exe.services["rpc"] = _CallLog(Communicator(exe.services["rpc"], CommunicatorConfig(**config)))
    scope = fluid.Scope()
    exe.run(startup, scope=scope)
    return log, scope


def test_an_async_run_defers_its_backward_until_the_next_run_has_sent_its_prefetches():
    """exe.run(feed=...) of an async program ends once its fetches are computed: its
    backward and sends run at the start of the next run, after that run's embedding
    prefetches left (one per pserver per step, never twice), so the rows travel while
    the backward computes. Every step's pushes are made, the last ones when the scope is
    next read; the trainer still learns."""
    feeds = pooled_feeds(1, 10) * 6
    program, startup, loss, cluster = _pooled_on_two_pservers(False, lr=0.05)

    def body(tid, exe):
        log, scope = _deferring_trainer(exe, startup)
        losses, after_run = [], []
        for feed in feeds:
            losses.append(float(exe.run(program, feed=feed, fetch_list=[loss], scope=scope)[0][0]))
            after_run.append(list(log.calls))
        before_read = log.calls.count("push")
        scope.find_var("emb")  # reading the scope finishes the last run
        pushes_per_step = log.calls.count("push") - before_read
        log.service.stop()
        return losses, after_run, pushes_per_step

    [(losses, after_run, per_step)] = _on_this_thread(cluster, body)
    assert per_step > 0
    assert after_run[0] == ["prefetch"] * 2  # the first run pushed nothing yet
    for i in range(1, len(feeds)):  # run i: its prefetches, then run i-1's pushes
        assert after_run[i][len(after_run[i - 1]):] == ["prefetch"] * 2 + ["push"] * per_step
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


def test_what_a_deferred_run_leaves_in_the_scope_equals_what_op_by_op_execution_leaves():
    """Two identical trainers run one step: the first fetches the loss (its backward is
    deferred) and then reads a gradient and a pooled embedding's gradient through the
    scope; the second fetches them with the loss (nothing of theirs deferred). Equal, bit
    for bit; and so is the loss."""
    grads = ["fc_0.w_0@GRAD", "fc_0.b_0@GRAD"]
    feed = pooled_feeds(1, 10)[0]
    seen = {}
    for fetch_grads in (False, True):
        program, startup, loss, cluster = _pooled_on_two_pservers(False, lr=0.05)

        def body(tid, exe):
            log, scope = _deferring_trainer(exe, startup)
            out = exe.run(program, feed=feed, fetch_list=[loss] + (grads if fetch_grads else []), scope=scope)
            deferred = "push" not in log.calls
            values = out[1:] if fetch_grads else [np.array(scope.find_var(g).get_tensor()) for g in grads]
            log.service.stop()
            return out[0], values, deferred

        [seen[fetch_grads]] = _on_this_thread(cluster, body)
    assert seen[False][2] is True  # the backward waited for the read
    np.testing.assert_array_equal(seen[False][0], seen[True][0])
    for a, b in zip(seen[False][1], seen[True][1]):
        np.testing.assert_array_equal(a, b)


def test_a_run_of_another_program_close_and_fleets_calls_finish_a_deferred_run_first():
    """What the deferred ops do lands before anything else the trainer does: a run of
    another program (here the startup program, which rewrites the parameters: run after
    the pushes, its values stay), close(), and a read through global_scope()."""
    from psjob.fluid import core
    feed = pooled_feeds(1, 10)[0]
    program, startup, loss, cluster = _pooled_on_two_pservers(False, lr=0.05)

    def body(tid, exe):
        log, scope = _deferring_trainer(exe, startup)
        order = []
        exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
        order.append(log.calls.count("push"))
        exe.run(startup, scope=scope)   # another program: the pushes go first
        order.append(log.calls.count("push"))
        exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
        with fluid.scope_guard(scope):
            core.global_scope()
        order.append(log.calls.count("push"))
        exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
        exe.close()
        order.append(log.calls.count("push"))
        log.service.stop()
        return order

    [order] = _on_this_thread(cluster, body)
    per_step = order[1]
    assert order == [0, per_step, 2 * per_step, 3 * per_step] and per_step > 0


class _GatedPushes:
    """The in-memory client whose push replies wait for `gate` (a pserver slow to apply)."""

    def __init__(self, client, gate):
        self.client, self.gate = client, gate

    def _gated(self, handle):
        gate = self.gate

        class Handle:
            def wait(self):
                gate.wait(10)
                return handle.wait()
        return Handle()

    def push(self, *args, **kwargs):
        return self._gated(self.client.push(*args, **kwargs))

    def push_pull(self, *args, **kwargs):
        return self._gated(self.client.push_pull(*args, **kwargs))

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_rows_read_ahead_wait_until_the_step_before_last_is_applied():
    """max_stale_steps (1) bounds the rows read ahead too: run 3's prefetches, sent while run 2's
    backward is still to come, wait until the pservers applied run 1's gradients (here held
    back by a gate a timer opens), so the rows miss one step of the trainer's own
    gradients, not two."""
    import threading

    from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
    feeds = pooled_feeds(3, 10)
    program, startup, loss, cluster = _pooled_on_two_pservers(False, lr=0.05)
    gate = threading.Event()

    def body(tid, exe):
        exe.services["rpc"] = _GatedPushes(exe.services["rpc"], gate)
        log = exe.services["rpc"] = _CallLog(Communicator(exe.services["rpc"], CommunicatorConfig()))
        scope = fluid.Scope()
        exe.run(startup, scope=scope)
        exe.run(program, feed=feeds[0], fetch_list=[loss], scope=scope)
        exe.run(program, feed=feeds[1], fetch_list=[loss], scope=scope)  # run 1's pushes queued
        timer = threading.Timer(0.3, lambda: (log.calls.append("applied"), gate.set()))
        timer.start()
        exe.run(program, feed=feeds[2], fetch_list=[loss], scope=scope)
        timer.join()
        log.service.stop()
        return log.calls

    [calls] = _on_this_thread(cluster, body)
    third = [i for i, c in enumerate(calls) if c == "prefetch"][4]
    assert calls.index("applied") < third, calls


def test_an_error_in_a_deferred_op_names_the_op_and_says_it_came_from_the_previous_run():
    """The deferred ops fail in the call that runs them: its ExecutionError names the op
    and carries a note saying so (here a forward value the backward reads was taken from
    under it, which no Paddle call can do: the scope's dict, directly)."""
    from psjob.fluid.executor import ExecutionError
    feed = pooled_feeds(1, 10)[0]
    program, startup, loss, cluster = _pooled_on_two_pservers(False, lr=0.05)

    def body(tid, exe):
        log, scope = _deferring_trainer(exe, startup)
        exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
        scope.vars.pop("square_error_cost_0.tmp_1")  # the loss's input, which mean_grad reads
        try:
            with pytest.raises(ExecutionError) as err:
                exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
        finally:
            log.service.stop()
        return err.value

    [err] = _on_this_thread(cluster, body)
    assert "mean_grad" in str(err) and any("previous Executor.run" in note for note in err.__notes__)


def test_a_malformed_feed_after_a_deferred_run_is_named_sends_no_prefetch_and_loses_no_step():
    """Float ids fed after a deferred run: the run's FeedError names the input, no prefetch
    of made-up ids leaves (a prefetch creates the rows it asks for), and the previous run's
    pushes are made all the same; the next good run trains on."""
    from psjob.fluid.executor import FeedError
    feeds = pooled_feeds(2, 10)
    bad = dict(feeds[1], s0=(feeds[1]["s0"][0].astype("float32") + 0.5, feeds[1]["s0"][1]))
    program, startup, loss, cluster = _pooled_on_two_pservers(False, lr=0.05)

    def body(tid, exe):
        log, scope = _deferring_trainer(exe, startup)
        exe.run(program, feed=feeds[0], fetch_list=[loss], scope=scope)
        before = list(log.calls)
        with pytest.raises(FeedError, match="'s0'"):
            exe.run(program, feed=bad, fetch_list=[loss], scope=scope)
        after_bad = log.calls[len(before):]
        exe.run(program, feed=feeds[1], fetch_list=[loss], scope=scope)
        log.service.stop()
        return before, after_bad

    [(before, after_bad)] = _on_this_thread(cluster, body)
    assert before == ["prefetch"] * 2
    assert after_bad and set(after_bad) == {"push"}  # the first run's pushes; no prefetch


@pytest.mark.parametrize("case", ["max_stale_steps=0", "another thread"])
def test_runs_that_allow_no_stale_read_or_run_off_the_main_thread_are_not_deferred(case):
    """max_stale_steps=0 asks for exact reads: each run pushes before it returns (a sync
    program's rounds, with their barriers, never defer either: _NOT_DEFERRED). Runs on
    another thread than the main one (train_from_dataset's Hogwild threads) run whole: a
    thread may end with nothing left to finish its last run."""
    feed = pooled_feeds(1, 10)[0]
    program, startup, loss, cluster = _pooled_on_two_pservers(False, lr=0.05)
    config = {"max_stale_steps": 0} if case == "max_stale_steps=0" else {}

    def body(tid, exe):
        log, scope = _deferring_trainer(exe, startup, **config)
        exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
        pushed = log.calls.count("push")
        log.service.stop()
        return pushed

    [pushed] = _on_this_thread(cluster, body) if config else cluster.run_trainers(body, 1)
    assert pushed > 0


class _RecordingPulls:
    """The in-memory client, recording each pull's endpoint and names."""

    def __init__(self, client):
        self.client, self.pulls = client, []

    def pull(self, endpoint, names):
        self.pulls.append((endpoint, list(names)))
        return self.client.pull(endpoint, names)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_run_of_recv_ops_pulls_once_per_pserver_each_step_with_every_name_it_holds():
    """The recv ops' grouping by pserver is worked out once; every step still pulls each
    pserver's blocks in one request, and the trainer holds what the pservers hold."""
    main, startup, loss = dense_net("sgd")
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=",".join(EPS[:2]), trainers=1)
    trainer = t.get_trainer_program(wait_port=False)
    recvs = [op for op in trainer.global_block().ops if op.type == "recv"]
    want = {}
    for op in recvs:
        for name, ep in zip(op.output("Out"), op.attr("epmap")):
            want.setdefault(ep, []).append(name)
    assert len(want) == 2 and len(recvs) > 2
    cluster = InMemoryCluster.from_transpiler(t)
    exe, scope = cluster.executor(0), fluid.Scope()
    exe.run(startup, scope=scope)
    rec = exe.services["rpc"] = _RecordingPulls(exe.services["rpc"])
    rng = np.random.default_rng(0)
    feed = {"x": rng.random((8, 64)).astype("float32"), "y": rng.random((8, 1)).astype("float32")}
    for _ in range(3):
        rec.pulls.clear()
        exe.run(trainer, feed=feed, fetch_list=[loss], scope=scope)
        assert sorted(rec.pulls) == sorted(want.items())
        for ep, names in want.items():
            for name in names:
                np.testing.assert_array_equal(scope.vars[name], cluster.handler(ep).scope.vars[name])
    exe.close()
