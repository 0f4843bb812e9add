"""GrpcPSClient runs its calls on long-lived threads: no thread start per call (gRPC's
`.future()` started a channel spin thread whenever the calls in flight went from 0 to 1)."""
import threading
from concurrent import futures

import grpc
import pytest

from psjob.cluster.rpc import client as rpc_client


@pytest.fixture
def bare_server():
    release = threading.Event()

    def answer(request, context):
        if request == b"hold":
            release.wait(10)
        if request == b"fail":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "bad request")
        return b"ok:" + request

    handler = grpc.method_handlers_generic_handler(
        rpc_client.PSERVER_SPEC.name, {"Prefetch": grpc.unary_unary_rpc_method_handler(answer)})
    server = grpc.server(futures.ThreadPoolExecutor(8))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", release
    release.set()
    server.stop(0)


def _rpc_threads():
    return {t for t in threading.enumerate() if t.name.startswith("psjob-rpc-")}


def test_sequential_calls_reuse_one_thread_and_concurrent_ones_grow_the_pool(bare_server):
    endpoint, release = bare_server
    client = rpc_client.GrpcPSClient([endpoint], tls=None)
    before = _rpc_threads()
    for i in range(50):
        assert client._start(endpoint, "Prefetch", b"%d" % i, 5).result() == b"ok:%d" % i
    assert len(_rpc_threads() - before) == 1
    held = [client._start(endpoint, "Prefetch", b"hold", 10) for _ in range(3)]
    assert client._start(endpoint, "Prefetch", b"x", 5).result() == b"ok:x"   # not queued behind them
    release.set()
    assert [h.result() for h in held] == [b"ok:hold"] * 3
    assert len(_rpc_threads() - before) == 4
    with pytest.raises(grpc.RpcError) as err:
        client._start(endpoint, "Prefetch", b"fail", 5).result()
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    mine = _rpc_threads() - before
    client.close()
    for thread in mine:
        thread.join(5)
        assert not thread.is_alive()
