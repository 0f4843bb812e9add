"""Async reads miss at most `max_stale_steps` steps of the trainer's own gradients.

A trainer whose steps never block (a Paddle 2.x `Embedding(sparse=True)` is a plain parameter:
no prefetch RPC) holds the GIL while it computes; the communicator's sender and receiver
threads then run in bursts, and without the bound the trainer read parameters up to
`send_queue_size` (20) of its own steps old. The example's model (examples/paddle2/net.py) at
Adam 5e-3 then diverged in async mode where sync learned.

Real: the example's DNNLayer on psjob's synthetic CTR data, the transpiled programs, the
pservers' PserverState (InMemoryCluster: only the wire is direct calls), the Communicator.
"""
import glob
import os
import sys

import numpy as np
import pytest

import psjob as paddle
import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
from psjob.dataset import ctr
from psjob.fluid.transpiler import DistributeTranspiler

paddle.enable_static()

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "paddle2")
SLOTS, BATCH, ROWS, LR = 26, 64, 12800, 5e-3


@pytest.fixture(scope="module")
def feeds(tmp_path_factory):
    """The example's reader's view of the data: each slot's first id, 13 dense features."""
    out = tmp_path_factory.mktemp("ctr")
    ctr.generate(str(out), ROWS, num_files=1)
    feeds = []
    for b in ctr.batches(sorted(glob.glob(str(out / "part-*"))), BATCH, drop_last=True):
        feed = {f"C{s + 1}": b.ids[s][b.lod[s][:-1]].reshape(-1, 1).astype("int64") for s in range(SLOTS)}
        feed.update(dense_input=b.dense.astype("float32"), label=b.label.astype("int64"))
        feeds.append(feed)
    return feeds


def build():
    sys.path.insert(0, EXAMPLE)
    try:
        from net import DNNLayer
    finally:
        sys.path.remove(EXAMPLE)
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = 5
    with paddle.static.program_guard(main, startup), fluid.unique_name.guard():
        sparse = [paddle.static.data(f"C{s + 1}", [None, 1], "int64") for s in range(SLOTS)]
        dense = paddle.static.data("dense_input", [None, 13], "float32")
        label = paddle.static.data("label", [None, 1], "int64")
        logits = DNNLayer(ctr.SPARSE_FEATURE_DIM, 8, 13, SLOTS, [64, 32])(sparse, dense)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, label))
        paddle.optimizer.Adam(LR, lazy_mode=True).minimize(loss)
    return main, startup, loss


def train(feeds, config=None, service=None):
    """One trainer, one pserver; config=None: sync mode, else async through a Communicator
    (or through `service(client)`, when given)."""
    main, startup, loss = build()
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers="127.0.0.1:6170", trainers=1,
                sync_mode=config is None and service is None)
    cluster = InMemoryCluster.from_transpiler(t)
    exe, scope = cluster.executor(0), fluid.Scope()
    if service is not None:
        exe.services["rpc"] = service(exe.services["rpc"])
    elif config is not None:
        exe.services["rpc"] = Communicator(exe.services["rpc"], config)
    exe.run(t.get_trainer_startup_program(), scope=scope)
    program = t.get_trainer_program(wait_port=False)
    losses = [float(exe.run(program, feed=f, fetch_list=[loss], scope=scope)[0].reshape(-1)[0]) for f in feeds]
    exe.close()
    return np.array(losses)


def test_async_with_no_stale_step_allowed_equals_sync_training(feeds):
    """max_stale_steps=0: every step reads the parameters its own earlier gradients made."""
    few = feeds[:20]
    np.testing.assert_allclose(train(few, CommunicatorConfig(max_stale_steps=0)), train(few), rtol=1e-5)


def test_one_async_trainer_at_a_high_adam_rate_learns_as_sync_does(feeds):
    """The default bound (1 step) keeps a lone async trainer close to sync; merging off, as
    in the example's runs that diverged (queues of 20 ungated steps)."""
    sync = train(feeds)
    async_ = train(feeds, CommunicatorConfig(max_merge_var_num=1))
    tail = len(feeds) // 4
    assert sync[-tail:].mean() < sync[:tail].mean() - 0.03  # sync learns on this data
    assert abs(async_[-tail:].mean() - sync[-tail:].mean()) < 0.005, (async_[-tail:].mean(), sync[-tail:].mean())


def _transpiled(optimizer, pservers="127.0.0.1:6171", width=4):
    """A one-layer net (input `width`) trained by `optimizer`, transpiled for async pservers."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[width])
        y = fluid.layers.data(name="y", shape=[1])
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        optimizer.minimize(loss)
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=pservers, trainers=1, sync_mode=False)
    return t


def _dense_pserver(lr=0.1):
    """A one-layer net's async pserver (SGD `lr`); returns (client, endpoint, weight name)."""
    t = _transpiled(fluid.optimizer.SGD(lr))
    return InMemoryCluster.from_transpiler(t).client(0), "127.0.0.1:6171", "fc_0.w_0"


def _pushed_and_pulled(comm, ep, name, grad, pulls):
    """Push `grad` as the weight's gradient and wait until the receiver pulled `pulls` times."""
    comm.push(ep, {f"{name}@GRAD": grad})
    with comm._cond:
        assert comm._cond.wait_for(lambda: comm.recvs >= pulls, timeout=30), "no background pull"


@pytest.mark.parametrize("predict", [2.0, 0.0])
def test_async_reads_are_extrapolated_predict_pulls_intervals_ahead(predict):
    """A background pull's values p are cached as p + predict_pulls * (p - p0), p0 the pull
    before; a first pull and refresh() give the pservers' exact values."""
    client, ep, w = _dense_pserver()
    comm = Communicator(client, CommunicatorConfig(predict_pulls=predict))
    try:
        exact = lambda: client.pull(ep, [w]).wait()[w]
        first = comm.pull(ep, [w]).wait()[w]
        np.testing.assert_array_equal(first, exact())
        grad = np.full(first.shape, 0.5, first.dtype)
        _pushed_and_pulled(comm, ep, w, grad, 1)
        now = exact()
        np.testing.assert_allclose(now, first - 0.1 * grad, rtol=1e-6)  # the pserver applied it
        cached = comm.pull(ep, [w]).wait()[w]
        np.testing.assert_allclose(cached, now + predict * (now - first), rtol=1e-6)
        assert not predict or not cached.flags.writeable  # a shared cache entry
        comm.refresh()
        np.testing.assert_array_equal(comm.pull(ep, [w]).wait()[w], exact())
    finally:
        comm.stop()


def test_no_prediction_when_reads_must_be_exact():
    """max_stale_steps=0 reads what the trainer's own gradients made: never extrapolated."""
    client, ep, w = _dense_pserver()
    comm = Communicator(client, CommunicatorConfig(predict_pulls=2.0, max_stale_steps=0))
    try:
        first = comm.pull(ep, [w]).wait()[w]
        _pushed_and_pulled(comm, ep, w, np.ones_like(first), 1)
        np.testing.assert_array_equal(comm.pull(ep, [w]).wait()[w], client.pull(ep, [w]).wait()[w])
    finally:
        comm.stop()


def test_a_per_name_predict_pulls_extrapolates_only_the_names_it_lists():
    """Fleet's default hands the communicator {pulled name: intervals}: listed names are
    extrapolated, the others (here the bias) cached as pulled."""
    client, ep, w = _dense_pserver()
    b = "fc_0.b_0"
    comm = Communicator(client, CommunicatorConfig(predict_pulls={w: 2.0}))
    try:
        first = comm.pull(ep, [w, b]).wait()
        comm.push(ep, {f"{b}@GRAD": np.ones_like(first[b])})  # a step: one gradient per queue
        _pushed_and_pulled(comm, ep, w, np.full(first[w].shape, 0.5, first[w].dtype), 1)
        now = client.pull(ep, [w, b]).wait()
        assert not np.array_equal(now[b], first[b])  # both moved on the pserver
        cached = comm.pull(ep, [w, b]).wait()
        np.testing.assert_allclose(cached[w], now[w] + 2.0 * (now[w] - first[w]), rtol=1e-6)
        np.testing.assert_array_equal(cached[b], now[b])
    finally:
        comm.stop()


def test_default_predict_pulls_follows_each_parameters_pserver_optimizer():
    """Unset, predict_pulls is 2 for the pulled names (parameters, or their pserver blocks)
    of Adam-family and momentum parameters and 0 for plain SGD's (which overshoots with it);
    a number the user sets holds for every parameter."""
    from psjob.fleet.strategy import predict_pulls_by_name
    adam = _transpiled(fluid.optimizer.Adam(1e-3)).plan
    assert predict_pulls_by_name(None, adam) == {"fc_0.w_0": 2.0, "fc_0.b_0": 2.0}
    momentum = _transpiled(fluid.optimizer.Momentum(0.1, momentum=0.9)).plan
    assert predict_pulls_by_name(None, momentum) == {"fc_0.w_0": 2.0, "fc_0.b_0": 2.0}
    assert predict_pulls_by_name(None, _transpiled(fluid.optimizer.SGD(0.3)).plan) == {}
    assert predict_pulls_by_name(None, _transpiled(fluid.optimizer.Adagrad(0.1)).plan) == {}
    assert predict_pulls_by_name(0.0, adam) == 0.0  # the user's value is authoritative
    assert predict_pulls_by_name(1.5, adam) == 1.5
    # A parameter sliced across pservers is pulled by its block names.
    sliced = _transpiled(fluid.optimizer.Adam(1e-3), pservers="127.0.0.1:6171,127.0.0.1:6172",
                         width=20000).plan
    blocks = [b.name for b in sliced.params["fc_0.w_0"].blocks]
    assert len(blocks) == 2, blocks
    assert set(predict_pulls_by_name(None, sliced)) == {*blocks, "fc_0.b_0"}


def test_fleet_strategy_carries_predict_pulls_and_refuses_a_bad_one():
    from psjob.fleet import DistributedStrategy
    from psjob.fleet.strategy import resolve
    s = DistributedStrategy()
    s.a_sync = True
    assert resolve(s).predict_pulls is None  # by each parameter's optimizer unless set
    s.a_sync_configs = {"predict_pulls": 2}
    assert resolve(s).predict_pulls == 2.0
    for bad in (-1, "2", True, 9):
        with pytest.raises(ValueError, match="predict_pulls"):
            s.a_sync_configs = {"predict_pulls": bad}
        assert resolve(s).predict_pulls == 2.0  # a refused update changes nothing


def test_a_sync_configs_max_stale_steps_reaches_the_trainers_communicator(feeds):
    """The strategy's key, through the service a Fleet worker builds (psjob.fleet.worker)."""
    from psjob.cluster.trainer.client_service import trainer_service
    from psjob.fleet.strategy import resolve
    strategy = paddle.distributed.fleet.DistributedStrategy()
    strategy.a_sync_configs = {"max_stale_steps": 0}
    s = resolve(strategy)
    services = []

    def service(client):
        services.append(trainer_service(client, s.mode, max_merge_var_num=s.max_merge_var_num,
                                        send_queue_size=s.send_queue_size, max_stale_steps=s.max_stale_steps))
        return services[0]
    few = feeds[:20]
    np.testing.assert_allclose(train(few, service=service), train(few), rtol=1e-5)
    assert (services[0].config.mode, services[0].config.max_stale_steps) == ("async", 0)
