"""Async staleness (psjob_trainer_staleness_steps): the pserver's bookkeeping and the trainer's export.

Real: StalenessTracker, PserverState running transpiled pserver programs,
Executors running transpiled trainer programs over the in-memory transport
(which returns what on_send returns, as the gRPC client's push handle does),
the Communicator, TrainerTelemetry and its Prometheus registry.
"""
import collections
import threading

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.pserver_staleness import StalenessTracker, param_of_grad
from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
from psjob.cluster.trainer.telemetry import TrainerTelemetry, retries_by_method
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig

EPS = ["127.0.0.1:6170", "127.0.0.1:6171"]


def test_staleness_counts_updates_from_other_pushes_since_the_trainers_last_read():
    tracker = StalenessTracker({"w@GRAD": "w"})
    tracker.on_read(0, ["w"])
    tracker.on_read(1, ["w"])
    assert tracker.on_update(1, "w@GRAD") == 0       # nothing happened since trainer 1 read w
    assert tracker.on_update(1, "w@GRAD") == 0       # its own earlier push does not count
    assert tracker.on_update(0, "w@GRAD") == 2       # trainer 1's two updates happened after 0 read w
    assert tracker.on_update(0, "w@GRAD") == 2       # still two: 0's own update is not staleness
    tracker.on_read(0, ["w"])
    assert tracker.on_update(0, "w@GRAD") == 0       # a fresh read resets it
    assert tracker.on_update(1, "w@GRAD") == 3       # trainer 1 has not read 0's three updates
    assert tracker.applied("w") == 6 and tracker.applied("w@GRAD") == 6
    # Keys are independent; a trainer that never read a key counts every update since start.
    assert tracker.on_update(2, "b@GRAD") == 0
    assert tracker.on_update(3, "b@GRAD") == 1


def dense_net():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[8])
        y = fluid.layers.data(name="y", shape=[1])
        h = fluid.layers.fc(x, 16, act="tanh")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        fluid.optimizer.SGD(0.05).minimize(loss)
    return main, startup, loss


def transpile(trainer_id, sync, trainers=2):
    main, startup, loss = dense_net()
    config = DistributeTranspilerConfig()
    config.wait_port = False
    t = DistributeTranspiler(config)
    t.transpile(trainer_id=trainer_id, program=main, pservers=",".join(EPS), trainers=trainers,
                sync_mode=sync, startup_program=startup)
    return t, startup, loss


def feeds(steps, seed):
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(steps, 16, 8)).astype("float32")
    return [{"x": x, "y": x[:, :2].sum(1, keepdims=True)} for x in xs]


def test_a_pserver_returns_the_staleness_of_each_push_keyed_by_the_parameter_its_block_updates():
    t, _, _ = transpile(0, sync=False)
    cluster = InMemoryCluster.from_transpiler(t)
    state = next(s for s in cluster.states.values() if "fc_0.b_0@GRAD" in s.grad_blocks)
    assert param_of_grad(state.program, "fc_0.b_0@GRAD", state.grad_blocks["fc_0.b_0@GRAD"]) == "fc_0.b_0"
    grad = np.ones(16, "float32")
    state.on_get(0, ["fc_0.b_0"])
    state.on_get(1, ["fc_0.b_0"])
    assert state.on_send(1, {"fc_0.b_0@GRAD": grad}) == 0
    assert state.on_send(1, {"fc_0.b_0@GRAD": grad}) == 0
    assert state.on_send(0, {"fc_0.b_0@GRAD": grad}) == 2   # applied on a parameter 2 updates newer
    state.on_get(0, ["fc_0.b_0"])
    assert state.on_send(0, {"fc_0.b_0@GRAD": grad}) == 0

    ts, _, _ = transpile(0, sync=True)
    sync_state = InMemoryCluster.from_transpiler(ts).states[EPS[0]]
    name = next(iter(sync_state.recv_names))
    shape = tuple(sync_state._gb.var(name).shape)
    assert sync_state.on_send(0, {name: np.zeros(shape, "float32")}) == 0


def train_in_memory(sync, steps=6):
    """Two trainers through transpiled programs; each one's telemetry records the staleness
    its executor's send ops (sync) or its Communicator's sender (async) confirm.

    Async: both pull the initial parameters, then trainer 0 trains to the end before
    trainer 1 starts — so trainer 1's first push lands on parameters trainer 0 updated
    after trainer 1's last pull (a deterministic interleaving, not a race)."""
    transpilers = [transpile(t, sync) for t in range(2)]
    cluster = InMemoryCluster.from_transpiler(transpilers[0][0])
    telemetry = [TrainerTelemetry() for _ in range(2)]
    started, first_done = threading.Barrier(2, timeout=60), threading.Event()

    def body(tid, exe):
        t, startup, loss = transpilers[tid]
        service = exe.services["rpc"]
        if not sync:
            service = exe.services["rpc"] = Communicator(service, CommunicatorConfig(mode="async"))
        telemetry[tid].attach(exe, service)
        exe.run(startup)
        program = t.get_trainer_program(wait_port=False)
        if not sync:
            started.wait()
            if tid == 1:
                assert first_done.wait(60)
        for feed in feeds(steps, tid):
            exe.run(program, feed=feed, fetch_list=[loss])
        if not sync:
            service.stop()
            first_done.set()

    cluster.run_trainers(body, 2)
    return [(tel.registry.get_sample_value("psjob_trainer_staleness_steps_count"),
             tel.registry.get_sample_value("psjob_trainer_staleness_steps_bucket", {"le": "0.0"}),
             tel.registry.get_sample_value("psjob_trainer_staleness_steps_sum")) for tel in telemetry]


def test_sync_training_observes_a_zero_staleness_for_every_push():
    for count, zeros, total in train_in_memory(sync=True):
        assert count >= 6 and zeros == count and total == 0


def test_async_trainers_observe_the_staleness_their_communicators_sends_were_applied_with():
    (count0, zeros0, _), (count1, zeros1, total1) = train_in_memory(sync=False)
    assert count0 >= 1 and count1 >= 1
    # Trainer 0 trained alone: nobody else's update came between its pulls and pushes.
    assert zeros0 == count0
    # Trainer 1's first send was computed on the initial parameters, which trainer 0 had
    # since updated (later sends may race the background pull, so only the first is certain).
    assert zeros1 <= count1 - 1 and total1 > 0


def test_retries_are_exported_per_method_from_a_counter_and_as_all_from_an_int():
    assert retries_by_method(collections.Counter(SendVariables=2, Prefetch=1)) == {"SendVariables": 2,
                                                                                  "Prefetch": 1}
    assert retries_by_method(3) == {"all": 3}
    assert retries_by_method(None) == {} and retries_by_method(True) == {}

    tel = TrainerTelemetry()
    counts = collections.Counter(SendVariables=2)
    tel.export_retries(counts)
    counts["SendVariables"] += 1
    counts["Barrier"] += 4
    tel.export_retries(counts)
    tel.export_retries(counts)  # nothing new: nothing added

    def value(method):
        return tel.registry.get_sample_value("psjob_trainer_rpc_retries_total", {"method": method})
    assert (value("SendVariables"), value("Barrier"), value("all")) == (3, 4, None)

    legacy = TrainerTelemetry()
    legacy.export_retries(2)
    legacy.export_retries(5)
    assert legacy.registry.get_sample_value("psjob_trainer_rpc_retries_total", {"method": "all"}) == 5


@pytest.mark.parametrize("result", [None, "reply", True, 2.5])
def test_push_results_that_are_not_ints_are_not_observations(result):
    from psjob.fluid.ops.dist_ops import record_staleness
    seen = []
    record_staleness(seen.append, result)
    record_staleness(None, 3)
    assert seen == []
    record_staleness(seen.append, np.int64(4))
    record_staleness(seen.append, 3)  # a plain int (the fast path) and a negative one, clamped
    record_staleness(seen.append, -1)
    assert seen == [4, 3, 0]


def test_the_communicators_step_test_counts_what_walking_its_queues_finds():
    """_step_queued (every queue holds a gradient, or one holds two) answers from counters kept
    on push and on the sender's take: they agree with the queues at every push, while the real
    sender thread drains them."""
    t, _, _ = transpile(0, sync=False)
    cluster = InMemoryCluster.from_transpiler(t)
    program = t.get_trainer_program()
    sends = [(op.input("X")[0], op.attr("epmap")[0]) for op in program.global_block().ops if op.type == "send"]
    assert len(sends) >= 4
    shapes = {v.name: tuple(abs(d) for d in v.shape) for v in program.global_block().vars.values()}
    comm = Communicator(cluster.client(0), CommunicatorConfig(mode="async", send_wait_s=0.001))
    rng = np.random.default_rng(0)
    seen = set()
    try:
        for _ in range(400):
            name, ep = sends[rng.integers(len(sends))]
            comm.push(ep, {name: np.zeros(shapes[name], "float32")})
            with comm._cond:
                queues = list(comm._queues.values())
                assert comm._empty_queues == sum(1 for q in queues if not q)
                assert comm._deep_queues == sum(1 for q in queues if len(q) > 1)
                assert comm._step_queued() == (all(queues) or any(len(q) > 1 for q in queues))
                seen.add((all(queues), any(len(q) > 1 for q in queues)))
    finally:
        comm.stop()
    assert {(False, False), (False, True)} <= seen  # a partial step, and a queue two deep
