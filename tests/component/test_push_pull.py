"""A push that carries its pull (SendRequest.pull → SendReply.vars): the async communicator's
one request per pserver per step, through real gRPC to a served PserverState."""
import collections
import threading

import grpc
import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.pserver.pserver_state import PserverState
from psjob.cluster.rpc import frames
from psjob.cluster.rpc import psjob_pb2 as pb
from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy, RpcError
from psjob.cluster.rpc.server import start_server
from psjob.cluster.trainer.communicator import Communicator, CommunicatorConfig
from psjob.fluid.transpiler import DistributeTranspiler
from psjob.foundation.settings import Settings
from psjob.launcher.launch import loopback_endpoints

W, B, LR = "fc_0.w_0", "fc_0.b_0", 0.1
QUICK = RetryPolicy(deadline_s=10, max_attempts=1)


class _Calls(collections.Counter):
    """Requests answered by (method, status); `wait_for` blocks until one is counted."""

    def __init__(self):
        super().__init__()
        self.cond = threading.Condition()

    def seen(self, key):
        with self.cond:
            self.update([key])
            self.cond.notify_all()

    def wait_for(self, key, n, timeout=10):
        with self.cond:
            return self.cond.wait_for(lambda: self[key] >= n, timeout)


@pytest.fixture
def served():
    """serve(sync) → (client, endpoint, calls): a linear net's pserver behind psjob's gRPC
    server; calls counts the requests it answered by (method, status)."""
    running = []

    def serve(sync=False, bias=False):
        [ep] = loopback_endpoints(1)
        calls = _Calls()
        server, _ = _linear_pserver(ep, sync, bias, observer=lambda method, status, *_: calls.seen((method, status)))
        client = GrpcPSClient([ep], 0, retry=QUICK, tls=None)
        running.append((server, client))
        client.wait_server_ready(timeout_s=30)
        return client, ep, calls

    yield serve
    for server, client in running:
        client.close()
        server.stop(0)


def _linear_pserver(ep, sync=False, bias=False, observer=None):
    """A linear net's pserver at `ep` behind psjob's server → (server, state); the same
    initial parameters every time (seeded)."""
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 5
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        x = fluid.layers.data(name="x", shape=[4])
        loss = fluid.layers.mean(fluid.layers.fc(x, 1, bias_attr=None if bias else False))
        fluid.optimizer.SGD(LR).minimize(loss)
    t = DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=ep, trainers=1, sync_mode=sync)
    program, pstartup = t.get_pserver_programs(ep)
    state = PserverState(program, scope=fluid.Scope(), executor=fluid.Executor())
    state.run_startup(pstartup)
    return start_server(state, ep, observer=observer), state


def _refused(handle, code, pattern):
    with pytest.raises(RpcError) as info:
        handle.wait()
    assert info.value.code == code, info.value
    assert pattern in info.value.details, info.value.details


def test_the_reply_holds_the_parameters_right_after_the_push_was_applied(served):
    client, ep, _ = served()
    before = client.pull(ep, [W]).wait()[W]
    grad = np.full(before.shape, 0.5, before.dtype)
    staleness, fresh = client.push_pull(ep, {f"{W}@GRAD": grad}, [W]).wait()
    assert staleness == 0 and list(fresh) == [W]
    np.testing.assert_allclose(fresh[W], before - LR * grad, rtol=1e-6)  # SGD applied, then read
    np.testing.assert_array_equal(fresh[W], client.pull(ep, [W]).wait()[W])


@pytest.mark.parametrize("transport", ["tcp", "grpc"])
@pytest.mark.parametrize("owned", [True, False])
def test_a_push_retried_on_a_restarted_pserver_sends_what_was_pushed(owned, transport):
    """owned=True (the communicator's merged gradients): the request is the gradients' parts,
    not a joined copy; its first attempt dies with the pserver, and the retry sends the same
    arrays (over the data plane as parts; over gRPC joined, per attempt). owned=False: the
    request is a snapshot taken at the call, so the caller changing its array next changes
    nothing."""
    [ep] = loopback_endpoints(1)
    server, _ = _linear_pserver(ep)
    patient = RetryPolicy(deadline_s=20, max_attempts=1000, initial_backoff_s=0.02, max_backoff_s=0.1,
                          recovery_s=20)
    client = GrpcPSClient([ep], 0, retry=patient, tls=None, settings=Settings({"PSJOB_DATA_PLANE": transport}))
    assert (client._data is None) == (transport == "grpc")
    try:
        client.wait_server_ready(timeout_s=30)
        before = client.pull(ep, [W]).wait()[W]  # the data plane's connection is open now
        grad = np.arange(before.size, dtype=before.dtype).reshape(before.shape) / 8
        sent = grad.copy()
        server.stop(0)
        handle = client.push_pull(ep, {f"{W}@GRAD": grad}, [W], owned=owned)
        if owned:  # the gradient's own memory, unjoined
            assert isinstance(handle._request, frames.Gathered)
            assert any(np.shares_memory(p, grad) for p in handle._request.parts if isinstance(p, np.ndarray))
        else:
            assert isinstance(handle._request, bytes)
            grad[:] = 99.0  # the caller's next step: the pushed snapshot keeps the values sent
        answer = []
        waiter = threading.Thread(target=lambda: answer.append(handle.wait()), daemon=True)
        waiter.start()
        server, state = _linear_pserver(ep)  # restarted: same initial parameters, a new data port
        waiter.join(30)
        assert answer, "the push was not retried onto the restarted pserver"
        staleness, fresh = answer[0]
        if transport == "tcp":  # its first attempt died with the pserver (gRPC waits for it: ready)
            assert client.retries["SendVariables"] >= 1
        np.testing.assert_allclose(fresh[W], before - LR * sent, rtol=1e-6)
        np.testing.assert_array_equal(state.scope.vars[W], fresh[W])
    finally:
        client.close()
        server.stop(0)


def test_data_plane_calls_leave_at_once_and_are_read_by_the_waiting_thread(served):
    """No call thread between a step and its pserver: the request is sent when the handle
    is made (the pserver answers before anyone waits), the reply read by wait()'s thread;
    a handle dropped unread closes its connection, and later calls are answered."""
    client, ep, calls = served()
    assert client._data is not None, "the data plane is on by default"
    before = {t for t in threading.enumerate() if t.name.startswith("psjob-rpc-")}
    value = client.pull(ep, [W]).wait()[W]
    handle = client.pull(ep, [W])
    assert calls.wait_for(("GetVariables", "OK"), 2), calls  # answered, not yet waited for
    grad = np.full(value.shape, 0.5, value.dtype)
    pushed = client.push(ep, {f"{W}@GRAD": grad})
    assert calls.wait_for(("SendVariables", "OK"), 1), calls
    np.testing.assert_array_equal(handle.wait()[W], value)  # read after the push: the earlier answer
    assert pushed.wait() == 0
    dropped = client.pull(ep, [W])
    assert calls.wait_for(("GetVariables", "OK"), 3), calls
    del dropped  # its reply is never read: the connection must not serve the next call
    np.testing.assert_allclose(client.pull(ep, [W]).wait()[W], value - LR * grad, rtol=1e-6)
    assert {t for t in threading.enumerate() if t.name.startswith("psjob-rpc-")} == before


def test_a_bad_push_that_pulls_is_refused_and_applies_nothing(served):
    client, ep, _ = served()
    before = client.pull(ep, [W]).wait()[W]
    grad = {f"{W}@GRAD": np.ones_like(before)}
    _refused(client.push_pull(ep, grad, [W, "no_such_param"]), grpc.StatusCode.NOT_FOUND, "no_such_param")
    # A geo delta push cannot pull (hand-framed: the client never sends one).
    meta, parts = frames.tensor_header(f"{W}@GRAD", np.ones_like(before))
    delta = frames.pack(pb.SendRequest(trainer_id=0, vars=[meta], is_delta=True, pull=[W]), parts)
    _refused(client._call(ep, "SendVariables", delta), grpc.StatusCode.INVALID_ARGUMENT,
             "a geo delta push cannot carry a pull")
    np.testing.assert_array_equal(client.pull(ep, [W]).wait()[W], before)


def test_a_sync_pserver_refuses_a_push_that_pulls(served):
    """Sync rounds stay exact: their pulls wait for the round's barrier."""
    client, ep, _ = served(sync=True)
    before = client.pull(ep, [W]).wait()[W]
    _refused(client.push_pull(ep, {f"{W}@GRAD": np.ones_like(before)}, [W]), grpc.StatusCode.INVALID_ARGUMENT,
             "a push that pulls is for async mode")


def test_async_steps_make_one_request_per_pserver_and_read_their_own_push(served):
    """The communicator's cache refresh rides on the step's push: after the first pull, no
    GetVariables; with exact reads (max_stale_steps 0) each step reads every earlier step's
    gradient applied, from the push's reply."""
    client, ep, calls = served()
    comm = Communicator(client, CommunicatorConfig(max_stale_steps=0))
    steps = 6
    try:
        start = expected = comm.pull(ep, [W]).wait()[W]
        for step in range(steps):
            w = comm.pull(ep, [W]).wait()[W]
            np.testing.assert_allclose(w, expected, rtol=1e-6)
            grad = np.full(w.shape, step + 1.0, w.dtype)
            comm.push(ep, {f"{W}@GRAD": grad})
            expected = expected - LR * grad
        comm.flush()
        np.testing.assert_array_equal(comm.pull(ep, [W]).wait()[W], client.pull(ep, [W]).wait()[W])
        np.testing.assert_allclose(client.pull(ep, [W]).wait()[W], start - LR * 21.0, rtol=1e-6)
    finally:
        comm.stop()
    assert calls[("GetVariables", "OK")] == 3, calls  # the communicator's first pull, the test's two
    assert calls[("SendVariables", "OK")] == steps, calls
    assert comm.recvs == steps


def test_the_sender_does_not_wait_for_a_variable_a_step_did_not_push(served):
    """A step's gradients leave once the trainer begins the next step (a queue holds two), not
    after send_wait_s, when a variable is not pushed every step: here the bias only in step 1."""
    client, ep, calls = served(bias=True)
    comm = Communicator(client, CommunicatorConfig(send_wait_s=120.0, max_stale_steps=None))
    try:
        w = comm.pull(ep, [W]).wait()[W]
        comm.push(ep, {f"{W}@GRAD": np.ones_like(w), f"{B}@GRAD": np.ones((1,), w.dtype)})
        with comm._cond:  # step 1 filled every queue: it left at once
            assert comm._cond.wait_for(lambda: comm._applied >= 2, timeout=60), comm.waits
        for _ in range(2):  # steps 2 and 3 push the weight's gradient only
            comm.push(ep, {f"{W}@GRAD": np.ones_like(w)})
        with comm._cond:  # step 2's gradient left with step 3's push, within 120 s
            assert comm._cond.wait_for(lambda: comm._applied >= 3, timeout=60), comm.waits
        assert comm.waits["send_wait_timeouts"] == 0, comm.waits
        # step 1 applied, then steps 2 and 3 in one round as their mean
        np.testing.assert_allclose(client.pull(ep, [W]).wait()[W], w - LR * 2, rtol=1e-6)
    finally:
        comm.stop()


def test_a_partial_step_leaves_after_send_wait_s_and_a_flush_sends_it_at_once(served):
    """The sender sleeps on its own wake-up (not the trainer's condition): a step that never
    completes (the bias not pushed) still leaves send_wait_s after its first gradient, not
    sooner; with a long send_wait_s, flush() wakes the sender and the partial step leaves."""
    client, ep, _ = served(bias=True)
    comm = Communicator(client, CommunicatorConfig(send_wait_s=0.3, max_stale_steps=None))
    try:
        w = comm.pull(ep, [W]).wait()[W]
        comm.push(ep, {f"{W}@GRAD": np.ones_like(w), f"{B}@GRAD": np.ones((1,), w.dtype)})
        with comm._cond:  # a whole step: it leaves without waiting
            assert comm._cond.wait_for(lambda: comm._applied >= 2, timeout=60), comm.waits
        assert comm.waits["send_wait_timeouts"] == 0, comm.waits
        comm.push(ep, {f"{W}@GRAD": np.ones_like(w)})  # a partial step, and no next step
        with comm._cond:
            assert comm._cond.wait_for(lambda: comm._applied >= 3, timeout=60), comm.waits
        assert comm.waits["send_wait_timeouts"] == 1, comm.waits
        assert comm.waits["send_wait"] >= 0.3, comm.waits  # it waited send_wait_s out
    finally:
        comm.stop()
    comm = Communicator(client, CommunicatorConfig(send_wait_s=120.0, max_stale_steps=None))
    try:
        comm.push(ep, {f"{W}@GRAD": np.ones_like(w), f"{B}@GRAD": np.ones((1,), w.dtype)})
        with comm._cond:
            assert comm._cond.wait_for(lambda: comm._applied >= 2, timeout=60), comm.waits
        comm.push(ep, {f"{W}@GRAD": np.ones_like(w)})  # a partial step
        comm.flush()  # wakes the sender, which would otherwise wait 120 s for the bias
        assert comm._applied == 3 and comm.waits["send_wait_timeouts"] == 0, comm.waits
        np.testing.assert_allclose(client.pull(ep, [W]).wait()[W], w - LR * 4, rtol=1e-6)
    finally:
        comm.stop()
