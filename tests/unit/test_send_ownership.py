"""`send` hands gradients over unsnapshotted only where no op can write them afterwards.

dist_ops.sends_owned: a program made only of op types whose kernels write into no existing
array (WRITES_NOTHING_IN_PLACE) pushes `owned` — the communicator queues the arrays as they
are instead of copying each. Real: the transpiled programs, the pservers' PserverState
(InMemoryCluster: only the wire is direct calls), the Communicator, the kernels.
"""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
from psjob.fluid.embedding_fusion import execution_ops
from psjob.fluid.ops.dist_ops import WRITES_NOTHING_IN_PLACE, sends_owned
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.training.models import ctr as ctr_model

EP = "127.0.0.1:6170"
SLOTS, VOCAB, DIM, BATCH, STEPS = 6, 500, 8, 32, 6


def ctr_net():
    """The CTR-DNN's shape: one distributed table shared by the slots, concat with dense
    features, fc relu layers, sigmoid cross-entropy, auc, Adam."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 13
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        slots = [fluid.layers.data(name=f"s{i}", shape=[1], dtype="int64") for i in range(SLOTS)]
        dense = fluid.layers.data(name="dense", shape=[13])
        label = fluid.layers.data(name="label", shape=[1], dtype="int64")
        embs = [fluid.layers.embedding(s, size=[VOCAB, DIM], is_sparse=True, is_distributed=True,
                                       param_attr=fluid.ParamAttr(name="emb")) for s in slots]
        h = fluid.layers.concat([dense] + [fluid.layers.reshape(e, [-1, DIM]) for e in embs], axis=1)
        h = fluid.layers.fc(fluid.layers.fc(h, 32, act="relu"), 16, act="relu")
        logit = fluid.layers.fc(h, 1)
        loss = fluid.layers.mean(fluid.layers.sigmoid_cross_entropy_with_logits(
            logit, fluid.layers.cast(label, "float32")))
        fluid.layers.auc(fluid.layers.concat([1 - fluid.layers.sigmoid(logit), fluid.layers.sigmoid(logit)],
                                             axis=1), label)
        fluid.optimizer.Adam(0.01).minimize(loss)
    return main, startup, loss


def pooled_ctr_net():
    """PaddleRec rank/dnn's shape: sequence_pool over each slot (one LoD shared by the slots)."""
    cfg = ctr_model.CTRConfig(sparse_feature_dim=VOCAB, embedding_dim=DIM, hidden=(32, 16), is_distributed=True)
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = cfg.seed
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        model = ctr_model.build_network(cfg)
        fluid.optimizer.Adam(0.01, lazy_mode=True).minimize(model.loss)
    pooled_ctr_net.model = model
    return main, startup, model.loss


def pooled_feeds():
    rng, model, lod = np.random.default_rng(4), pooled_ctr_net.model, [np.arange(BATCH + 1, dtype=np.int64)]
    out = []
    for _ in range(STEPS):
        feed = {model.dense.name: rng.random((BATCH, 13)).astype(np.float32),
                model.label.name: rng.integers(0, 2, (BATCH, 1)).astype(np.int64)}
        feed.update({v.name: (rng.integers(0, VOCAB, (BATCH, 1)).astype(np.int64), lod) for v in model.slots})
        out.append(feed)
    return out


def feeds():
    rng = np.random.default_rng(3)
    out = []
    for _ in range(STEPS):
        feed = {f"s{i}": rng.integers(0, VOCAB, (BATCH, 1)).astype("int64") for i in range(SLOTS)}
        feed.update(dense=rng.normal(size=(BATCH, 13)).astype("float32"),
                    label=rng.integers(0, 2, (BATCH, 1)).astype("int64"))
        out.append(feed)
    return out


class Recording:
    """The communicator, with every push's arrays and a copy of them kept."""

    def __init__(self, inner):
        self.inner, self.pushes = inner, []

    def push(self, endpoint, values, **kwargs):
        self.pushes.append((kwargs.get("owned", False),
                            {n: (v, np.array(getattr(v, "values", v), copy=True)) for n, v in values.items()}))
        return self.inner.push(endpoint, values, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def transpiled(build):
    main, startup, loss = build()
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=EP, trainers=1, sync_mode=False)
    return t, t.get_trainer_program(wait_port=False), loss


def train(t, program, loss, batches, scope=None, pull=()):
    """One trainer, async through a Communicator; → (the recorded pushes, the pserver's
    values of `pull` once every push was applied)."""
    cluster = InMemoryCluster.from_transpiler(t)
    exe = cluster.executor(0)
    comm = Communicator(exe.services["rpc"], CommunicatorConfig())
    exe.services["rpc"] = recording = Recording(comm)
    scope = scope or fluid.Scope()
    exe.run(t.get_trainer_startup_program(), scope=scope)
    for feed in batches:
        exe.run(program, feed=feed, fetch_list=[loss], scope=scope)
    comm.flush()
    params = comm.client.pull(EP, list(pull)).wait() if pull else {}
    exe.close()
    return recording.pushes, params


@pytest.mark.parametrize("build,batches,has", [(ctr_net, feeds, "auc"), (pooled_ctr_net, pooled_feeds, "sequence_pool")])
def test_a_ctr_trainer_program_pushes_owned_and_no_kernel_writes_a_pushed_array_later(build, batches, has):
    t, program, loss = transpiled(build)
    types = {op.type for block in program.blocks for op in block.ops}
    assert {"send", "prefetch", "mul_grad", has} <= types
    assert types <= WRITES_NOTHING_IN_PLACE, types - WRITES_NOTHING_IN_PLACE
    # The ops the executor runs in place of the program's (fused lookups) are covered too.
    ran = {op.type for op in execution_ops(program.global_block(), keep=[loss.name])}
    assert ran <= WRITES_NOTHING_IN_PLACE, ran - WRITES_NOTHING_IN_PLACE
    assert sends_owned(fluid.Executor(fluid.CPUPlace()), program)
    pushes, _ = train(t, program, loss, batches())
    assert pushes and all(owned for owned, _ in pushes)
    # Every array pushed unsnapshotted still holds what it held at its send, after the
    # later steps' kernels ran: a kernel of this program that wrote one in place fails here.
    for _, values in pushes:
        for name, (value, at_send) in values.items():
            np.testing.assert_array_equal(getattr(value, "values", value), at_send, err_msg=name)


def dense_net():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[8])
        y = fluid.layers.data(name="y", shape=[1])
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def with_in_place_writer(program):
    """The program with an `sgd` op after its sends that updates a sent gradient in place."""
    block = program.global_block()
    sent = next(op.input("X")[0] for op in block.ops if op.type == "send")
    lr = block.create_var(name="inplace_lr", shape=[1], dtype="float32", persistable=True)
    block.append_op(type="sgd", inputs={"Param": [sent], "Grad": [sent], "LearningRate": [lr]},
                    outputs={"ParamOut": [sent]})
    return sent


def test_an_op_writing_a_sent_gradient_in_place_keeps_the_snapshot():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 8)).astype("float32")
    batch = [{"x": x, "y": x[:, :1] * 0.5}]
    t, program, loss = transpiled(dense_net)
    sent = with_in_place_writer(program)
    assert "sgd" not in WRITES_NOTHING_IN_PLACE
    assert not sends_owned(fluid.Executor(fluid.CPUPlace()), program)
    scope = fluid.Scope()
    scope.vars["inplace_lr"] = np.array([0.5], "float32")
    params = [p.name for p in program.all_parameters()]
    pushes, got = train(t, program, loss, batch, scope, pull=params)
    assert pushes and not any(owned for owned, _ in pushes)
    value, at_send = pushes[0][1][sent]
    # The sgd op halved the trainer's gradient after the send ...
    np.testing.assert_allclose(value, at_send * 0.5, rtol=1e-6)
    # ... and the pserver applied it as it was at the send: as the program without that op.
    t2, plain, loss2 = transpiled(dense_net)
    _, want = train(t2, plain, loss2, batch, pull=params)
    assert set(got) == set(params)
    for name in params:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_a_fetched_selected_rows_is_a_snapshot():
    """A sent SelectedRows gradient may sit unsnapshotted in the communicator's queue: what a
    fetch returns must not share its arrays."""
    main, startup = fluid.Program(), fluid.Program()
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64")
        emb = fluid.layers.embedding(ids, size=[50, 4], is_sparse=True, param_attr=fluid.ParamAttr(name="emb"))
        loss = fluid.layers.mean(emb)
        fluid.optimizer.SGD(0.1).minimize(loss)
    exe, scope = fluid.Executor(fluid.CPUPlace()), fluid.Scope()
    exe.run(startup, scope=scope)
    (grad,) = exe.run(main, feed={"ids": np.array([[1], [3], [3]], "int64")}, fetch_list=["emb@GRAD"], scope=scope)
    held = scope.vars["emb@GRAD"]
    assert type(grad) is type(held) and grad.height == held.height
    np.testing.assert_array_equal(grad.rows, held.rows)
    np.testing.assert_array_equal(grad.values, held.values)
    grad.values[:] = 7.0
    assert not np.shares_memory(grad.values, held.values) and not (held.values == 7.0).any()
