"""Async pushes and the pserver's condition: who an applied push wakes.

An async push notifies the state's condition only when a caller of
wait_for_updates (a checkpoint freeze) waits for the updates in flight to end;
the process's main thread, which waits on that condition for the job's end,
is not woken once per push. Real: PserverState running a transpiled async
pserver program (one pserver, one trainer), real threads.
"""
import threading
import time

import numpy as np

import psjob.fluid as fluid
from psjob.cluster.pserver.pserver_state import DONE, PserverState
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig

EP = "127.0.0.1:6190"


def async_state():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 3
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        y = fluid.layers.data(name="y", shape=[1])
        loss = fluid.layers.mean(fluid.layers.square_error_cost(fluid.layers.fc(x, 1), y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    config = DistributeTranspilerConfig()
    config.wait_port = False
    t = DistributeTranspiler(config)
    t.transpile(trainer_id=0, program=main, pservers=EP, trainers=1, sync_mode=False, startup_program=startup)
    prog, pstartup = t.get_pserver_programs(EP)
    state = PserverState(prog)
    state.run_startup(pstartup)
    return state


def test_async_pushes_do_not_wake_a_waiter_of_the_state_condition_and_the_end_does():
    state = async_state()
    grad = {"fc_0.b_0@GRAD": np.ones(1, "float32")}
    checks, waiting, done = [], threading.Event(), threading.Event()

    def main_thread_wait():  # as PserverState.wait_done waits, counting its wake-ups
        def ended():
            checks.append(state.state)
            waiting.set()
            return state.state == DONE
        with state._cond:
            state._cond.wait_for(ended, timeout=60)
        done.set()

    waiter = threading.Thread(target=main_thread_wait, daemon=True)
    waiter.start()
    assert waiting.wait(10)
    with state._cond:  # the waiter is in wait(): it released the condition's lock
        assert len(state._cond._waiters) == 1
    for _ in range(20):
        state.on_send(0, grad)
        # A notify takes the waiter off the condition's queue at once, in the notifying thread
        # (CPython's threading.Condition): still queued, so no push woke it.
        assert len(state._cond._waiters) == 1
    assert state.version == 20
    assert len(checks) == 1 and not done.is_set()
    state.on_complete(0)
    assert done.wait(10)
    assert checks[-1] == DONE and len(checks) == 2


def test_a_freeze_waits_for_the_update_running_at_its_cut_and_is_woken_when_it_ends():
    state = async_state()
    grad = {"fc_0.b_0@GRAD": np.ones(1, "float32")}
    entered, release = threading.Event(), threading.Event()
    run_block = state.run_block

    def held_run_block(idx):  # the real block, once the test lets the update go on
        entered.set()
        assert release.wait(30)
        run_block(idx)

    state.run_block = held_run_block
    pusher = threading.Thread(target=state.on_send, args=(0, grad), daemon=True)
    pusher.start()
    assert entered.wait(10)
    cut = []
    freezer = threading.Thread(target=lambda: cut.append(state.freeze("save-1", 30.0)), daemon=True)
    freezer.start()
    deadline = time.monotonic() + 10
    while state.updates._draining == 0:  # the freeze waits for the running update
        assert time.monotonic() < deadline, "the freeze never waited for the running update"
        threading.Event().wait(0.005)
    assert not cut
    release.set()
    freezer.join(10)
    pusher.join(10)
    assert cut == [1]  # the cut is after the update that was running
    assert state.updates._draining == 0 and state.frozen
