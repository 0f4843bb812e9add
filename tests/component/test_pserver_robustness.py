"""A real pserver process facing bad requests, a missing token, dead and late trainers."""
import os
import signal
import socket
import struct
import subprocess
import sys
import time

import grpc
import numpy as np
import pytest

from psjob.cluster.rpc import psjob_pb2 as pb
from psjob.cluster.rpc.client import GrpcPSClient, RetryPolicy, RpcError
from psjob.foundation import roles
from psjob.foundation.settings import Settings
from psjob.launcher.launch import loopback_endpoints, write_token

QUICK = RetryPolicy(deadline_s=10, max_attempts=2, initial_backoff_s=0.05)


def _start(script, role, index, topo, tmp_path, extra_env=None, args=()):
    env = dict(os.environ)
    env.update(roles.role_environment(topo, role, index))
    env.update(extra_env or {})
    log = open(tmp_path / f"{role}.{index}.log", "w")
    return subprocess.Popen([sys.executable, script, *args], env=env, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture
def job(tmp_path, script):
    """One pserver of the fleet_train linear model (sync, 1 trainer) with a per-run token."""
    endpoints = loopback_endpoints(1)
    token_file = write_token(str(tmp_path))
    topo = roles.JobTopology(job_name="robust", namespace="local", pserver_endpoints=tuple(endpoints),
                             trainers=1, mode="sync", metrics_port=0, auth_token_file=token_file)
    procs = []

    def start(role, index=0, extra_env=None, args=()):
        p = _start(script("fleet_train.py"), role, index, topo, tmp_path, extra_env,
                   ["--mode", "sync", "--out", str(tmp_path), "--steps", "5", *args])
        procs.append(p)
        return p

    token = open(token_file).read().strip()
    yield start, endpoints[0], token
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def _serving_client(endpoint, token, trainer_id=0):
    client = GrpcPSClient([endpoint], trainer_id, auth_token=token, retry=QUICK)
    client.wait_server_ready(timeout_s=60)
    return client


def _scrape(port):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def test_bad_requests_get_named_errors_and_the_pserver_keeps_serving(job, tmp_path):
    from psjob.launcher.launch import free_ports
    start, ep, token = job
    metrics_port = free_ports(1)[0]
    server = start(roles.PSERVER, extra_env={"PSJOB_RPC_MAX_MESSAGE_BYTES": str(1 << 20),
                                             "PSJOB_METRICS_PORT": str(metrics_port)})
    client = _serving_client(ep, token)
    names = client.status(ep)
    assert names.state == "SERVING"
    grad = "fc_0.w_0@GRAD"

    def fails(handle, code, pattern):
        with pytest.raises(RpcError) as info:
            handle.wait()
        assert info.value.code == code, info.value
        assert pattern in info.value.details, info.value.details

    fails(client.push(ep, {"no_such_var@GRAD": np.zeros((13, 1), np.float32)}),
          grpc.StatusCode.NOT_FOUND, "no_such_var@GRAD")
    fails(client.push(ep, {grad: np.zeros((3, 3), np.float32)}),
          grpc.StatusCode.INVALID_ARGUMENT, "shape [3, 3], expected [13, 1]")
    fails(client.push(ep, {grad: np.zeros((13, 1), np.float64)}),
          grpc.StatusCode.INVALID_ARGUMENT, "dtype float64, expected float32")
    fails(client.pull(ep, ["nope"]), grpc.StatusCode.NOT_FOUND, "nope")
    fails(client.push(ep, {grad: np.zeros((400, 1000), np.float32)}),
          grpc.StatusCode.RESOURCE_EXHAUSTED, "")
    stranger = GrpcPSClient([ep], 7, auth_token=token, retry=QUICK)
    fails(stranger.push(ep, {grad: np.zeros((13, 1), np.float32)}),
          grpc.StatusCode.INVALID_ARGUMENT, "trainer id 7 is out of range")
    # Malformed frames (psjob.cluster.rpc.frames) are named too: a payload shorter than its header
    # says, bytes the header does not describe, something that is no frame, a broken header.
    from psjob.cluster.rpc import frames
    meta = pb.Tensor(name=grad, dtype="float32", shape=[13, 1])
    short = frames.pack(pb.SendRequest(trainer_id=0, vars=[meta]), (np.zeros(10, np.uint8),))
    fails(client._call(ep, "SendVariables", short), grpc.StatusCode.INVALID_ARGUMENT,
          f"tensor '{grad}' needs 52 payload bytes, the frame has 16 left")
    extra = frames.pack(pb.SendRequest(trainer_id=0, vars=[meta]), (np.zeros(16, np.float32),))
    fails(client._call(ep, "SendVariables", extra), grpc.StatusCode.INVALID_ARGUMENT,
          "8 payload bytes beyond what the header describes")
    fails(client._call(ep, "Prefetch", b"GET / HTTP/1.1"), grpc.StatusCode.INVALID_ARGUMENT,
          "not a psjob frame")
    fails(client._call(ep, "GetVariables", b"PSJF\x05\x00\x00\x00\xff\xff\xff\xff\xff"),
          grpc.StatusCode.INVALID_ARGUMENT, "malformed frame header")
    # The kubelet's gRPC probe (grpc.health.v1.Health/Check, no token) sees SERVING.
    channel = grpc.insecure_channel(ep)
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    assert check(b"", timeout=10) == b"\x08\x01"  # HealthCheckResponse{status: SERVING}
    name = b"psjob.rpc.v1.ParameterServer"
    assert check(b"\x0a" + bytes([len(name)]) + name, timeout=10) == b"\x08\x01"
    with pytest.raises(grpc.RpcError) as info:
        check(b"\x0a\x03foo", timeout=10)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    channel.close()
    # Without the job's token nothing else is served.
    intruder = GrpcPSClient([ep], 0, auth_token="wrong", retry=QUICK)
    with pytest.raises(RpcError) as info:
        intruder.status(ep)
    assert info.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert token not in str(info.value)
    # Every outcome is counted on the pserver's /metrics, rejections by reason.
    text = _scrape(metrics_port)
    assert 'psjob_pserver_rpc_requests_total{method="SendVariables",status="NOT_FOUND"} 1.0' in text
    assert 'psjob_pserver_rpc_requests_total{method="SendVariables",status="INVALID_ARGUMENT"}' in text
    assert 'psjob_pserver_auth_failures_total{reason="invalid"} 1.0' in text
    assert token not in text
    # The pserver is unharmed: a real trainer trains against it, and it exits 0 afterwards.
    trainer = start(roles.TRAINER)
    assert trainer.wait(timeout=120) == 0, (tmp_path / "TRAINER.0.log").read_text()
    assert server.wait(timeout=60) == 0, (tmp_path / "PSERVER.0.log").read_text()
    assert token not in (tmp_path / "PSERVER.0.log").read_text()


def test_malformed_control_messages_are_refused_counted_and_logged_once_without_a_traceback(job, tmp_path):
    """A control method's protobuf request is decoded after the token check: without the
    token it is UNAUTHENTICATED on its headers (an auth failure, counted), with it
    INVALID_ARGUMENT; each malformed one is one WARNING line in the pserver's log, no traceback."""
    from psjob.launcher.launch import free_ports
    start, ep, token = job
    metrics_port = free_ports(1)[0]
    start(roles.PSERVER, extra_env={"PSJOB_METRICS_PORT": str(metrics_port)})
    _serving_client(ep, token).close()
    garbage = b"\xff\xff\xff\xff"  # no valid field tag: protobuf cannot parse it
    channel = grpc.insecure_channel(ep)
    codes = []
    for method in ("Complete", "Status", "Join", "CheckpointNotify"):
        call = channel.unary_unary(f"/psjob.rpc.v1.ParameterServer/{method}")
        for metadata in ((), (("x-psjob-token", token),)):
            with pytest.raises(grpc.RpcError) as info:
                call(garbage, timeout=10, metadata=metadata)
            codes.append(info.value.code())
            if metadata:
                assert f"{method}: malformed request" in info.value.details(), info.value.details()
    channel.close()
    assert codes == [grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.INVALID_ARGUMENT] * 4, codes
    text = _scrape(metrics_port)
    assert 'psjob_pserver_auth_failures_total{reason="missing"} 4.0' in text, text
    assert 'psjob_pserver_rpc_requests_total{method="Complete",status="INVALID_ARGUMENT"} 1.0' in text
    # The pserver still serves and never took the garbage for a completion.
    client = _serving_client(ep, token)
    assert client.status(ep).state == "SERVING" and list(client.status(ep).completed_trainers) == []
    client.close()
    log = (tmp_path / "PSERVER.0.log").read_text()
    assert "Traceback" not in log and "Exception deserializing" not in log, log
    # Refusals without the token share one throttled line (at most one per 10 s).
    assert log.count("malformed") == 4 and log.count("missing auth token") == 1, log


def _data_hello(port, token: bytes, magic=b"PSJH"):
    """A raw connection to a pserver's data plane (psjob.cluster.rpc.dataplane) → (socket, hello status)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(struct.pack("<4sBBH", magic, 1, 0, len(token)) + token)
    reply = _read_exact(sock, 8)
    return sock, struct.unpack("<4sBBH", reply)[1]


def _data_call(sock, method, frame: bytes):
    from psjob.cluster.rpc import dataplane
    from psjob.cluster.rpc.client import PSERVER_SPEC
    method_id = dataplane.framed_methods(PSERVER_SPEC).index(method) if isinstance(method, str) else method
    sock.sendall(struct.pack("<4sB3xQ", b"PSJQ", method_id, len(frame)) + frame)
    _, status, n = struct.unpack("<4sB3xQ", _read_exact(sock, 16))
    return grpc.StatusCode.OK if status == 0 else next(c for c in grpc.StatusCode if c.value[0] == status), \
        _read_exact(sock, n)


def _read_exact(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, f"connection closed after {len(out)} of {n} bytes"
        out += chunk
    return out


def test_the_data_plane_carries_the_framed_calls_and_refuses_strangers_and_garbage(job, tmp_path):
    """Push, pull and prefetch travel over the pserver's data plane (a second, plain TCP port
    it announces in Status), guarded as gRPC calls are: the job's token, named errors, the
    message size cap, every outcome counted. A client that cannot reach the data port falls
    back to gRPC."""
    from psjob.cluster.rpc import frames
    from psjob.launcher.launch import free_ports
    start, ep, token = job
    metrics_port = free_ports(1)[0]
    server = start(roles.PSERVER, extra_env={"PSJOB_RPC_MAX_MESSAGE_BYTES": str(1 << 20),
                                             "PSJOB_METRICS_PORT": str(metrics_port)})
    client = _serving_client(ep, token)
    port = client.status(ep).data_port
    assert port > 0 and port != int(ep.rsplit(":", 1)[1])
    w = "fc_0.w_0"
    got = client.pull(ep, [w]).wait()[w]
    assert len(client._data._idle[ep]) == 1  # the pull's connection, back in the pool
    grpc_only = GrpcPSClient([ep], 0, auth_token=token, retry=QUICK, settings=Settings({"PSJOB_DATA_PLANE": "grpc"}))
    assert grpc_only._data is None
    np.testing.assert_array_equal(grpc_only.pull(ep, [w]).wait()[w], got)
    with pytest.raises(ValueError, match="PSJOB_DATA_PLANE='udp': expected 'tcp'"):
        GrpcPSClient([ep], 0, settings=Settings({"PSJOB_DATA_PLANE": "udp"}))

    # Strangers: a wrong or missing token, or no psjob hello at all, get a status and a hang-up.
    for bad, status in ((b"wrong", grpc.StatusCode.UNAUTHENTICATED), (b"", grpc.StatusCode.UNAUTHENTICATED)):
        sock, code = _data_hello(port, bad)
        assert code == status.value[0]
        assert sock.recv(1) == b""
        sock.close()
    sock, code = _data_hello(port, token.encode(), magic=b"GET ")
    assert code == grpc.StatusCode.UNIMPLEMENTED.value[0]
    sock.close()
    # Garbage inside a good connection: a frame that is no frame is named and the connection
    # keeps serving; an oversized request is refused by size and read past; an unknown method
    # id ends the connection (it cannot be framed).
    sock, code = _data_hello(port, token.encode())
    assert code == 0
    status, body = _data_call(sock, "Prefetch", b"GET / HTTP/1.1")
    assert status == grpc.StatusCode.INVALID_ARGUMENT and b"Prefetch: Prefetch request: not a psjob frame" in body
    status, body = _data_call(sock, "GetVariables", b"\0" * (2 << 20))
    assert status == grpc.StatusCode.RESOURCE_EXHAUSTED and b"exceeds the limit of 1048576" in body
    status, body = _data_call(sock, "GetVariables", frames.pack(pb.GetRequest(trainer_id=0, names=[w]), ()))
    assert status == grpc.StatusCode.OK
    np.testing.assert_array_equal(frames.Frame(body, pb.GetReply, "reply").tensors(
        frames.Frame(body, pb.GetReply, "reply").header.vars)[w], got)
    status, body = _data_call(sock, 9, b"")
    assert status == grpc.StatusCode.INVALID_ARGUMENT and b"not a psjob data-plane request" in body
    assert sock.recv(1) == b""
    sock.close()

    # A client that cannot reach the data port (a network policy admitting only the server
    # port) uses gRPC for that pserver.
    fallback = _serving_client(ep, token)
    nothing_there = free_ports(1)[0]
    fallback._data._data_port = lambda endpoint: nothing_there
    np.testing.assert_array_equal(fallback.pull(ep, [w]).wait()[w], got)
    assert fallback._data._ports[ep] == 0 and not fallback._data._idle.get(ep)

    text = _scrape(metrics_port)
    assert 'psjob_pserver_auth_failures_total{reason="invalid"} 1.0' in text
    assert 'psjob_pserver_auth_failures_total{reason="missing"} 1.0' in text
    assert 'psjob_pserver_rpc_requests_total{method="Prefetch",status="INVALID_ARGUMENT"} 1.0' in text
    assert 'psjob_pserver_rpc_requests_total{method="GetVariables",status="OK"}' in text
    for c in (client, grpc_only, fallback):
        c.close()
    # The pserver is unharmed: a real trainer trains against it, and it exits 0 afterwards.
    trainer = start(roles.TRAINER)
    assert trainer.wait(timeout=120) == 0, (tmp_path / "TRAINER.0.log").read_text()
    assert server.wait(timeout=60) == 0, (tmp_path / "PSERVER.0.log").read_text()


def test_a_pserver_asked_to_stay_up_outlives_its_trainers_healthy_until_sigterm(job, tmp_path):
    # What the operator's pods ask (restartPolicy Always would restart a pserver that exits):
    # the job completes, the pserver stays up and healthy, and SIGTERM ends it with 0.
    start, ep, token = job
    server = start(roles.PSERVER, extra_env={roles.STAY_UNTIL_STOPPED_ENV: "1"})
    client = _serving_client(ep, token)
    trainer = start(roles.TRAINER)
    assert trainer.wait(timeout=120) == 0, (tmp_path / "TRAINER.0.log").read_text()
    log = tmp_path / "PSERVER.0.log"
    deadline = time.monotonic() + 60
    while "staying up until stopped" not in log.read_text():   # it saw every trainer complete
        assert server.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    assert client.status(ep).state == "STOPPING"
    channel = grpc.insecure_channel(ep)
    assert channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=10) == b"\x08\x01"
    channel.close()
    client.close()
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=60) == 0, log.read_text()


def _refuse_knocks(endpoint, knocks, alive, bound_s=60):
    """Stand where a pserver will serve: accept and hang up on `knocks` connections (a
    client probing its absent pserver), then free the port."""
    host, port = endpoint.rsplit(":", 1)
    with socket.create_server((host, int(port))) as listener:
        listener.settimeout(0.5)  # to notice a dead client; each knock is seen when it happens
        deadline = time.monotonic() + bound_s
        while knocks:
            assert alive() and time.monotonic() < deadline, f"{knocks} more knock(s) expected on {endpoint}"
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.close()
            knocks -= 1


def test_a_trainer_started_before_its_pserver_waits_for_it(job, tmp_path):
    start, ep, token = job
    trainer = start(roles.TRAINER)
    # It tried its pserver and found nothing serving; it lives on, and (below) connects
    # once the pserver starts.
    _refuse_knocks(ep, 1, lambda: trainer.poll() is None)
    assert trainer.poll() is None, (tmp_path / "TRAINER.0.log").read_text()
    server = start(roles.PSERVER)
    assert trainer.wait(timeout=120) == 0, (tmp_path / "TRAINER.0.log").read_text()
    assert server.wait(timeout=60) == 0


def test_a_trainer_whose_pserver_never_comes_gives_up_with_a_clear_error(job, tmp_path):
    start, ep, token = job
    trainer = start(roles.TRAINER, extra_env={"PSJOB_WAIT_SERVER_TIMEOUT": "3"})
    assert trainer.wait(timeout=60) != 0
    assert "not ready after 3s" in (tmp_path / "TRAINER.0.log").read_text()


def _applied(client, endpoints, pushes) -> bool:
    """Every pserver serves and has applied at least `pushes` updates."""
    try:
        return all(client.status(ep).version >= pushes for ep in endpoints)
    except RpcError:
        return False  # not serving yet


def test_killing_one_async_trainer_leaves_the_pservers_serving_the_other(tmp_path, script):
    endpoints = loopback_endpoints(2)
    topo = roles.JobTopology(job_name="kill", namespace="local", pserver_endpoints=tuple(endpoints),
                             trainers=2, mode="async", metrics_port=0)
    args = ["--mode", "async", "--out", str(tmp_path), "--steps", "400"]
    procs = [_start(script("fleet_train.py"), roles.PSERVER, i, topo, tmp_path, args=args) for i in range(2)]
    # The victim is slow (20 ms a step) so it is surely mid-run when killed.
    victim = _start(script("fleet_train.py"), roles.TRAINER, 1, topo, tmp_path, args=args + ["--sleep_ms", "20"])
    survivor = _start(script("fleet_train.py"), roles.TRAINER, 0, topo, tmp_path, args=args)
    procs += [victim, survivor]
    try:
        # Kill the victim once training is under way (the pservers applied pushes) and it
        # is still running: then it surely dies mid-run.
        probe = GrpcPSClient(endpoints, 0, retry=QUICK)
        deadline = time.monotonic() + 120
        while not _applied(probe, endpoints, 50):
            assert victim.poll() is None and time.monotonic() < deadline, (tmp_path / "TRAINER.1.log").read_text()
            time.sleep(0.05)
        probe.close()
        assert victim.poll() is None, "the victim finished before it could be killed mid-run"
        victim.send_signal(signal.SIGKILL)
        assert survivor.wait(timeout=120) == 0, (tmp_path / "TRAINER.0.log").read_text()
        assert (tmp_path / "trainer0.npz").exists()
        # The pservers still serve (they wait for the killed trainer, which a supervisor would restart).
        client = GrpcPSClient(endpoints, 0, retry=QUICK)
        assert [client.status(ep).state for ep in endpoints] == ["SERVING", "SERVING"]
        assert all(p.poll() is None for p in procs[:2])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
