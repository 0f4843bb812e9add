"""Elastic membership of a pserver (PserverState running a real transpiled sync program).

The program is transpiled for a capacity of 3 trainers with `elastic`; the member set starts
empty, trainers join and complete, and every round must average the gradients of exactly the
members it had (the trainer_mean scale ops follow the membership; a leaver's slot is zeroed).
"""
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.pserver_state import DONE
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from psjob.fluid.transpiler.slicing import trainer_name

EPS = ["127.0.0.1:6170", "127.0.0.1:6171"]
LR = 0.05


def dense_net():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 7
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[8])
        y = fluid.layers.data(name="y", shape=[1])
        h = fluid.layers.fc(x, 16, act="tanh")
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(h, 1), y))
        fluid.optimizer.SGD(LR).minimize(loss)
    return main, startup, loss


def elastic_state(capacity=3):
    main, startup, _ = dense_net()
    config = DistributeTranspilerConfig()
    config.wait_port, config.elastic = False, True
    t = DistributeTranspiler(config)
    t.transpile(trainer_id=0, program=main, pservers=",".join(EPS), trainers=capacity, sync_mode=True,
                startup_program=startup)
    cluster = InMemoryCluster.from_transpiler(t)
    return next(s for s in cluster.states.values() if "fc_0.b_0@GRAD" in s.grad_blocks)


def sync_round(state, grads):
    """Every trainer in `grads` pushes its gradient of fc_0.b_0 and passes both barriers."""
    for t, value in grads.items():
        state.on_send(t, {trainer_name("fc_0.b_0@GRAD", t): np.full(16, value, "float32")})
    for t in grads:
        state.on_barrier(t, "send")
    for t in grads:
        state.on_get(t, ["fc_0.b_0"])
        state.on_barrier(t, "fetch")
    return state.scope.vars["fc_0.b_0"].copy()


def test_rounds_average_over_the_members_they_had():
    state = elastic_state()
    assert state.on_status()["members"] == [] and state.fanin == 3
    assert state.on_join(0) == (0, [0])
    assert state.on_join(1) == (0, [0, 1])
    b = state.scope.vars["fc_0.b_0"].copy()

    after = sync_round(state, {0: 1.0, 1: 3.0})                      # mean 2 over 2 members
    np.testing.assert_allclose(after, b - LR * 2.0, rtol=1e-6)
    assert state.on_join(2) == (1, [0, 1, 2])                         # joins at the step boundary
    b, after = after, sync_round(state, {0: 1.0, 1: 3.0, 2: 5.0})      # mean 3 over 3
    np.testing.assert_allclose(after, b - LR * 3.0, rtol=1e-6)
    assert state.on_complete(1) == 2                                  # leaves between rounds
    b, after = after, sync_round(state, {0: 1.0, 2: 8.0})              # mean 4.5 over 2: 1's slot is zero
    np.testing.assert_allclose(after, b - LR * 4.5, rtol=1e-6)
    assert state.version == 3


def test_a_joiner_is_waited_for_by_the_round_in_progress():
    state = elastic_state()
    state.on_join(0)
    state.on_join(1)
    b = state.scope.vars["fc_0.b_0"].copy()
    push = lambda t, v: state.on_send(t, {trainer_name("fc_0.b_0@GRAD", t): np.full(16, v, "float32")})
    push(0, 1.0)
    state.on_barrier(0, "send")                                       # round 1 in progress ...
    state.on_join(2)                                                  # ... 2 joins: it pulls version 0
    assert state.version == 0 and state.on_get(2, ["fc_0.b_0"])[1] == 0
    push(1, 2.0)
    state.on_barrier(1, "send")
    assert state.version == 0                                         # the round waits for the joiner
    push(2, 6.0)
    state.on_barrier(2, "send")
    assert state.version == 1
    np.testing.assert_allclose(state.scope.vars["fc_0.b_0"], b - LR * 3.0, rtol=1e-6)  # mean of 1, 2, 6


def test_capacity_and_the_end_of_the_job_are_enforced_with_clear_errors():
    state = elastic_state(capacity=2)
    with pytest.raises(ValueError, match=r"trainer id 2 is out of range \[0, 2\).*PSJOB_MAX_TRAINERS"):
        state.on_join(2)
    state.on_join(0)
    state.on_join(1)
    state.on_complete(0)
    assert state.state != DONE
    state.on_complete(1)
    assert state.state == DONE
    with pytest.raises(RuntimeError, match="every trainer has left"):
        state.on_join(0)


def test_a_fixed_job_keeps_its_members_from_the_start():
    main, startup, _ = dense_net()
    config = DistributeTranspilerConfig()
    config.wait_port = False
    t = DistributeTranspiler(config)
    t.transpile(trainer_id=0, program=main, pservers=",".join(EPS), trainers=2, sync_mode=True,
                startup_program=startup)
    state = next(iter(InMemoryCluster.from_transpiler(t).states.values()))
    assert state.on_status()["members"] == [0, 1]
    assert state.on_join(0) == (0, [0, 1])  # a no-op outside elastic jobs


def test_a_stopping_pserver_fails_the_calls_that_wait_for_other_trainers_at_once():
    """close() (the process got SIGTERM): a pull waiting for its round and a collective waiting
    for the other member fail with UNAVAILABLE's error at once, so their gRPC threads end and the
    process can exit; before, they held it until barrier_timeout_s or SIGKILL."""
    import threading

    from psjob.cluster.pserver.pserver_state import PserverStopping
    state = elastic_state()
    state.on_join(0)
    state.on_join(1)
    state.on_send(0, {trainer_name("fc_0.b_0@GRAD", 0): np.ones(16, "float32")})
    state.on_barrier(0, "send")
    failures = {}

    def call(name, fn):
        try:
            fn()
        except Exception as exc:  # what the RPC handler would map to a status
            failures[name] = exc
    waiting = [threading.Thread(target=call, args=("pull", lambda: state.on_get(0, ["fc_0.b_0"])), daemon=True),
               threading.Thread(target=call, args=("gather", lambda: state.gathers.gather(
                   0, "auc", 0, np.zeros(2))), daemon=True)]
    for thread in waiting:
        thread.start()
    for thread in waiting:
        thread.join(0.3)
        assert thread.is_alive()  # trainer 1 has neither pushed nor gathered
    state.close()
    for thread in waiting:
        thread.join(10)
        assert not thread.is_alive()
    assert isinstance(failures["pull"], PserverStopping) and "is stopping" in str(failures["pull"])
    assert isinstance(failures["gather"], ConnectionAbortedError)
