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
from psjob.dataset import ctr
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.ps.communicator import Communicator, CommunicatorConfig
from psjob.ps.inmemory import InMemoryCluster

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


def test_a_sync_configs_max_stale_steps_reaches_the_trainers_communicator(feeds):
    """The strategy's key, through the service a Fleet worker builds (psjob.fleet.worker)."""
    from psjob.fleet.strategy import resolve
    from psjob.ps.client_service import trainer_service
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
