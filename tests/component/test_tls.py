"""The trainer-pserver RPC over TLS, on real jobs (`psjob launch`, processes on 127.0.0.x).

Certificates come from a throwaway CA (scripts/make_certs.py); docs/user/security.md
describes the PSJOB_TLS_* variables these runs set.
"""
import importlib.util
import os
import socket
import struct
import time

import numpy as np
import pytest

from psjob.cluster.pserver.checkpoint_service import adopt_peer_completions
from psjob.cluster.rpc import tls as tls_mod
from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy, RpcError
from psjob.cluster.rpc.tls import TlsConfigError, TlsFiles
from psjob.foundation.settings import Settings, tls_files

_spec = importlib.util.spec_from_file_location(
    "faultkit", os.path.join(os.path.dirname(os.path.abspath(__file__)), "faultkit.py"))
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)

Job, FLEET_SCRIPT = kit.Job, kit.FLEET_SCRIPT
_wait_until, _endpoints_of, _token_of = kit.wait_until, kit.endpoints_of, kit.token_of
make_certs = kit.load(os.path.join(kit.SCRIPTS, "make_certs.py")).make_certs


def test_rpc_deadlines_come_from_the_environment_and_bad_values_are_named():
    policy = Settings({"PSJOB_RPC_DEADLINE_S": "1.5", "PSJOB_RPC_MAX_ATTEMPTS": "2"}).rpc.retry
    assert (policy.deadline_s, policy.max_attempts, policy.barrier_deadline_s) == (1.5, 2, 600.0)
    with pytest.raises(ValueError, match="PSJOB_RPC_MAX_ATTEMPTS='x': expected a int"):
        Settings({"PSJOB_RPC_MAX_ATTEMPTS": "x"}).rpc.retry
    with pytest.raises(ValueError, match="PSJOB_RPC_DEADLINE_S='0': must be positive"):
        Settings({"PSJOB_RPC_DEADLINE_S": "0"}).rpc.retry


def test_half_configured_tls_is_refused_naming_the_missing_variable(tmp_path):
    with pytest.raises(TlsConfigError, match="PSJOB_TLS_KEY_FILE"):
        tls_files({"PSJOB_TLS_CERT_FILE": "/x/tls.crt"})
    (tmp_path / "ca.crt").write_text("not a certificate")
    client = GrpcPSClient(["127.0.0.1:1"], tls=TlsFiles(ca_file=str(tmp_path / "ca.crt")))
    with pytest.raises(TlsConfigError, match="PSJOB_TLS_CA_FILE .*not a PEM file"):
        client.status("127.0.0.1:1")
    assert tls_files({}) is None


def test_a_job_over_tls_trains_while_plaintext_and_untrusted_clients_are_refused(tmp_path):
    ca, cert, key = make_certs(str(tmp_path / "certs"))
    _, _, _ = make_certs(str(tmp_path / "other"), ca_name="someone else's CA")
    tls_env = {"PSJOB_TLS_CERT_FILE": cert, "PSJOB_TLS_KEY_FILE": key, "PSJOB_TLS_CA_FILE": ca}
    # The trainers are slow enough (40 steps, 50 ms each) for the probes below to find the pservers serving.
    job = Job(tmp_path, ["--server_num", "2", "--worker_num", "2"],
              [FLEET_SCRIPT, "--mode", "sync", "--out", str(tmp_path), "--steps", "40", "--sleep_ms", "50"],
              env=tls_env)
    try:
        _wait_until(lambda: job.pid("pserver.1") and job.pid("trainer.0"), 30, job, "the job's start")
        ep, token = _endpoints_of(job)[0], _token_of(job)
        assert token
        quick = RetryPolicy(deadline_s=3, max_attempts=1)
        trusted = TlsFiles(ca_file=ca)
        # Its process may still be starting on a loaded machine: wait until it serves (over TLS).
        GrpcPSClient([ep], auth_token=token, tls=trusted, retry=quick).wait_server_ready([ep], timeout_s=60)
        # The data plane (push, pull, prefetch) speaks TLS too: with the job's CA and token a
        # hello is accepted, a wrong token refused inside TLS, and plaintext never answered.
        port = GrpcPSClient([ep], auth_token=token, tls=trusted, retry=quick).status(ep).data_port
        host = ep.rsplit(":", 1)[0]
        assert port > 0
        for sent, status in ((token.encode(), 0), (b"wrong", 16)):
            with tls_mod.client_context(trusted).wrap_socket(socket.create_connection((host, port), timeout=10),
                                                             server_hostname=host) as conn:
                conn.sendall(struct.pack("<4sBBH", b"PSJH", 1, 0, len(sent)) + sent)
                assert struct.unpack("<4sBBH", conn.recv(8))[1] == status
        with socket.create_connection((host, port), timeout=10) as conn:
            conn.sendall(struct.pack("<4sBBH", b"PSJH", 1, 0, len(token)) + token.encode())
            try:
                assert conn.recv(8) == b""
            except ConnectionResetError:
                pass
        # The token still applies on top of TLS.
        with pytest.raises(RpcError, match="UNAUTHENTICATED"):
            GrpcPSClient([ep], tls=trusted, retry=quick).status(ep)
        # A plaintext client never gets an answer: the handshake fails (the right token does not help).
        with pytest.raises(RpcError, match="UNAVAILABLE|DEADLINE_EXCEEDED"):
            GrpcPSClient([ep], auth_token=token, tls=None, retry=quick).status(ep, deadline=3)
        # Nor does a client that trusts another CA (it refuses the pserver's certificate).
        with pytest.raises(RpcError, match="UNAVAILABLE|DEADLINE_EXCEEDED"):
            GrpcPSClient([ep], auth_token=token, tls=TlsFiles(ca_file=str(tmp_path / "other" / "ca.crt")),
                     retry=quick).status(ep, deadline=3)
        assert job.wait(90) == 0, job.text + job.logs()
    finally:
        job.kill()
    assert job.text.count("exited 0") == 4, job.text
    # Sync training is deterministic: the same job in plaintext (push, pull and prefetch over the
    # data plane, not gRPC) ends with exactly the same model.
    plain = tmp_path / "plain"
    reference = Job(plain, ["--server_num", "2", "--worker_num", "2"],
                    [FLEET_SCRIPT, "--mode", "sync", "--out", str(plain), "--steps", "40"])
    assert reference.wait(90) == 0, reference.text + reference.logs()
    got, want = np.load(tmp_path / "trainer0.npz"), np.load(plain / "trainer0.npz")
    assert sorted(got.files) == sorted(want.files)
    for name in want.files:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_a_restarted_pserver_asks_its_peers_over_tls_when_the_process_is_configured_for_it(tmp_path,
                                                                                            monkeypatch):
    """adopt_peer_completions opens its client the way every client does (PSJOB_TLS_*): a
    real pserver state served over TLS tells a restarted peer which trainers completed."""
    import psjob.fluid as fluid
    from psjob.cluster.pserver.pserver_state import PserverState
    from psjob.cluster.rpc.server import start_server
    from psjob.fluid.transpiler import DistributeTranspiler
    from psjob.launcher.launch import loopback_endpoints

    ca, cert, key = make_certs(str(tmp_path / "certs"))
    endpoints = loopback_endpoints(2)
    states = []
    for ep in endpoints:
        main, startup = fluid.Program(), fluid.Program()
        with fluid.program_guard(main, startup), fluid.unique_name.guard():
            x = fluid.layers.data(name="x", shape=[4])
            loss = fluid.layers.mean(fluid.layers.fc(x, 1))
            fluid.optimizer.SGD(0.1).minimize(loss)
        tr = DistributeTranspiler()
        tr.transpile(0, program=main, startup_program=startup, pservers=",".join(endpoints), trainers=3)
        program = tr.get_pserver_program(ep)
        state = PserverState(program, scope=fluid.Scope(), executor=fluid.Executor())
        state.run_startup(tr.get_startup_program(ep, program))
        states.append(state)
    peer, restarted = states
    peer.on_complete(1)
    peer.on_complete(2)
    # A peer that refuses the connection (restarting as well, as every pserver of a resize does)
    # is skipped at once, not after the deadline, which bounds only a live peer's answer.
    asked_at = time.monotonic()
    assert adopt_peer_completions(restarted, "tok", timeout_s=30.0) == []
    assert time.monotonic() - asked_at < 10
    server = start_server(peer, endpoints[0], token="tok", tls=TlsFiles(cert, key, ca))
    try:
        # A plaintext probe cannot complete the handshake: it learns nothing (and says so in
        # its log), which is what happened before the probe read PSJOB_TLS_*.
        monkeypatch.delenv("PSJOB_TLS_CA_FILE", raising=False)
        assert adopt_peer_completions(restarted, "tok", timeout_s=1.0) == []
        assert restarted.on_status()["completed"] == []
        monkeypatch.setenv("PSJOB_TLS_CA_FILE", ca)
        assert adopt_peer_completions(restarted, "tok", timeout_s=5.0) == [1, 2]
        assert restarted.on_status()["completed"] == [1, 2]
    finally:
        server.stop(0)
