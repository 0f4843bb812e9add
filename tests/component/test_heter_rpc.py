"""The heter trainer's gRPC service: a CPU trainer's stages over real gRPC on 127.0.0.1.

Real: the heter split, HeterState behind psjob.cluster.heter.heter's gRPC server
(auth token, error mapping, TLS with certificates from a throwaway CA, its
Prometheus metrics), the HeterClient, Executors and kernels. The
pserver the section pushes to is the in-memory PserverState (its own gRPC
path is covered by the other component tests), so the only wire under test
is the CPU trainer ↔ heter trainer one.
"""
import importlib.util
import os
import threading
import time

import numpy as np
import pytest

import psjob.fluid as fluid
from psjob.cluster.heter.heter import HeterProcess, HeterServeOptions
from psjob.cluster.heter.heter_inmemory import InMemoryHeterClient
from psjob.cluster.heter.heter_state import HeterSection, HeterState
from psjob.cluster.inmemory import InMemoryCluster
from psjob.cluster.pserver.observability import HeterTelemetry
from psjob.cluster.rpc.heter_client import HeterClient, HeterRpcError
from psjob.cluster.rpc.tls import TlsConfigError, TlsFiles
from psjob.fluid.executor import Executor
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from psjob.fluid.transpiler.heter_split import split_heter_program
from psjob.launcher.launch import free_ports

PSERVER = "127.0.0.1:6170"
TOKEN = "heter-test-token"


def build():
    main, startup = fluid.Program(), fluid.Program()
    main.random_seed = startup.random_seed = 9
    with fluid.program_guard(main, startup), fluid.unique_name.guard():
        ids = fluid.layers.data(name="ids", shape=[1], dtype="int64", lod_level=1)
        y = fluid.layers.data(name="y", shape=[1])
        emb = fluid.layers.embedding(ids, size=[50, 8], is_sparse=True)
        with fluid.device_guard("gpu"):
            h = fluid.layers.sequence_pool(emb, pool_type="sum")  # LoD crosses the wire
            pred = fluid.layers.fc(fluid.layers.fc(h, 16, act="tanh"), 1)
        loss = fluid.layers.mean(fluid.layers.square_error_cost(pred, y))
        fluid.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def split(heter_ep):
    main, startup, loss = build()
    config = DistributeTranspilerConfig()
    config.wait_port = False
    t = DistributeTranspiler(config)
    t.transpile(0, program=main, startup_program=startup, pservers=PSERVER, trainers=1)
    prog = t.get_trainer_program(wait_port=False)
    return t, prog, startup, loss, split_heter_program(prog, startup, t.plan, [heter_ep])


def data(steps=4):
    rng = np.random.default_rng(1)
    out = []
    for _ in range(steps):
        ids = rng.integers(0, 50, size=(10, 1)).astype("int64")
        out.append({"ids": (ids, [[0, 3, 4, 8, 10]]), "y": rng.normal(size=(4, 1)).astype("float32")})
    return out


def train(heter_service_for):
    """Losses of 4 steps of trainer 0, its heter stages served by heter_service_for(endpoint, cluster)."""
    ep = f"127.0.0.1:{free_ports(1)[0]}"
    t, prog, startup, loss, _ = split(ep)
    cluster = InMemoryCluster.from_transpiler(t)
    ht, hprog, hstartup, _, hsplit = split(ep)
    exe = Executor()
    exe.services["rpc"] = cluster.client(0)
    state = HeterState(ep, {0: HeterSection(hsplit, exe)})
    service, finish = heter_service_for(ep, state)
    cpu = Executor()
    cpu.services["rpc"], cpu.services["heter"] = cluster.client(0), service
    scope = fluid.Scope()
    cpu.run(startup, scope=scope)
    try:
        losses = [float(cpu.run(prog, feed=f, fetch_list=[loss], scope=scope)[0][0]) for f in data()]
        service.complete()
    finally:
        finish()
    return losses, state, ep


def over_grpc(ep, state, *, server_tls=None, client_tls=None, telemetry=None):
    proc = HeterProcess(state, HeterServeOptions(token=TOKEN, tls=server_tls), telemetry)
    waiter = threading.Thread(target=proc.wait, daemon=True)
    waiter.start()
    client = HeterClient([ep], 0, auth_token=TOKEN, tls=client_tls)
    client.wait_server_ready(timeout_s=10)

    def finish():
        proc.stop()
        waiter.join(10)
        client.close()
    return client, finish


def in_process(ep, state):
    state.start()
    return InMemoryHeterClient({ep: state}, 0), lambda: None


def test_stages_over_grpc_train_exactly_like_the_in_process_heter_trainer():
    want, _, _ = train(in_process)
    got, state, _ = train(over_grpc)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    status = state.on_status()
    assert status["state"] == "STOPPING" and status["completed"] == [0] and status["stages_run"] == 8


@pytest.fixture
def served():
    ep = f"127.0.0.1:{free_ports(1)[0]}"
    _, _, _, _, sp = split(ep)
    state = HeterState(ep, {0: HeterSection(sp, Executor())}, device="CPUPlace")
    client, finish = over_grpc(ep, state)
    yield ep, sp, client
    finish()


def test_a_heter_trainer_reports_its_status(served):
    ep, _, client = served
    reply = client.status(ep)
    assert (reply.state, list(reply.trainers), reply.device, reply.endpoint) == ("SERVING", [0], "CPUPlace", ep)
    # ... and to the kubelet's gRPC probe (grpc.health.v1.Health/Check, no token).
    import grpc
    channel = grpc.insecure_channel(ep)
    name = b"psjob.rpc.heter.v1.HeterTrainer"
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    assert check(b"\x0a" + bytes([len(name)]) + name, timeout=10) == b"\x08\x01"  # SERVING
    channel.close()


def test_a_heter_trainer_asked_to_stay_up_outlives_its_trainers_healthy_until_stopped(capsys):
    # The operator's heter pods ask this (a StatefulSet restarts a container that exits).
    import grpc
    ep = f"127.0.0.1:{free_ports(1)[0]}"
    _, _, _, _, sp = split(ep)
    state = HeterState(ep, {0: HeterSection(sp, Executor())}, device="CPUPlace")
    proc = HeterProcess(state, HeterServeOptions(token=TOKEN, stay_until_stopped=True))
    returned = []
    waiter = threading.Thread(target=lambda: returned.append(proc.wait()), daemon=True)
    waiter.start()
    client = HeterClient([ep], 0, auth_token=TOKEN)
    try:
        client.wait_server_ready(timeout_s=10)
        client.complete()
        out, deadline = "", time.monotonic() + 30
        while "every trainer completed; staying up until stopped" not in out:
            assert waiter.is_alive() and time.monotonic() < deadline, (returned, out)
            out += capsys.readouterr().out
            time.sleep(0.02)
        assert client.status(ep).state == "STOPPING"
        channel = grpc.insecure_channel(ep)
        assert channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10) == b"\x08\x01"
        channel.close()
    finally:
        proc.stop()
        waiter.join(10)
        client.close()
    assert returned == [True]      # stopped after its trainers completed: a normal end


def test_calls_without_the_job_token_are_refused(served):
    ep, sp, _ = served
    intruder = HeterClient([ep], 0, auth_token="wrong")
    try:
        with pytest.raises(HeterRpcError, match="RunStage to heter trainer .* UNAUTHENTICATED"):
            intruder.run_stage(ep, 0, 0, sp.stages[0].signature, {})
    finally:
        intruder.close()


def test_a_bad_stage_request_is_invalid_argument_with_the_heter_trainers_reason(served):
    ep, sp, client = served
    with pytest.raises(HeterRpcError, match="INVALID_ARGUMENT: RunStage: trainer 0 has heter stages 0..1, not 5"):
        client.run_stage(ep, 0, 5, "", {})
    with pytest.raises(HeterRpcError, match="INVALID_ARGUMENT: .*does not serve trainer 3"):
        client.run_stage(ep, 3, 0, "", {})
    with pytest.raises(HeterRpcError, match="built different programs"):
        client.run_stage(ep, 0, 0, "0000", {"x": np.zeros(1, "float32")})


def make_certs(directory):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "make_certs.py")
    spec = importlib.util.spec_from_file_location("make_certs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_certs(str(directory))


def test_stages_over_tls_train_like_plaintext_and_a_plaintext_client_gets_no_answer(tmp_path):
    ca, cert, key = make_certs(tmp_path / "certs")
    want, _, _ = train(over_grpc)
    telemetry = HeterTelemetry()
    clients = []

    def over_tls(ep, state):
        client, finish = over_grpc(ep, state, server_tls=TlsFiles(cert_file=cert, key_file=key),
                                   client_tls=TlsFiles(ca_file=ca), telemetry=telemetry)
        plain = HeterClient([ep], 0, auth_token=TOKEN, tls=None, deadline_s=2)
        clients.append(plain)
        # The handshake fails, whatever the token: a plaintext caller never reaches a stage.
        with pytest.raises(HeterRpcError, match="UNAVAILABLE|DEADLINE_EXCEEDED"):
            plain.status(ep, deadline=2)
        return client, finish

    try:
        got, _, _ = train(over_tls)
    finally:
        for c in clients:
            c.close()
    np.testing.assert_allclose(got, want, rtol=1e-6)

    # The heter trainer's metrics saw the 4 steps: 2 stages each, their RPCs and bytes.
    value = telemetry.registry.get_sample_value
    assert value("psjob_heter_rpc_requests_total", {"method": "RunStage", "status": "OK"}) == 8
    assert value("psjob_heter_batches_total") == 4
    assert value("psjob_heter_stage_seconds_count", {"stage": "0"}) == 4
    assert value("psjob_heter_stage_seconds_count", {"stage": "1"}) == 4
    assert value("psjob_heter_received_bytes_total", {"method": "RunStage"}) > 0
    assert value("psjob_heter_sent_bytes_total", {"method": "RunStage"}) > 0
    # Sync training: the section's gradient pushes were applied with staleness 0.
    pushes = value("psjob_heter_staleness_steps_count")
    assert pushes >= 4 and value("psjob_heter_staleness_steps_bucket", {"le": "0.0"}) == pushes


def test_a_heter_trainer_with_only_a_ca_cannot_serve_tls_and_says_what_it_needs(tmp_path):
    ca, _, _ = make_certs(tmp_path / "certs")
    ep = f"127.0.0.1:{free_ports(1)[0]}"
    _, _, _, _, sp = split(ep)
    state = HeterState(ep, {0: HeterSection(sp, Executor())})
    with pytest.raises(TlsConfigError, match="heter trainer .* needs PSJOB_TLS_CERT_FILE and PSJOB_TLS_KEY_FILE"):
        HeterProcess(state, HeterServeOptions(token=TOKEN, tls=TlsFiles(ca_file=ca)))
