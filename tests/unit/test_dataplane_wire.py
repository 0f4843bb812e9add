"""The data plane's wire on real sockets (127.0.0.1): a message's header and the start of its
body in one read, header and body in one sendmsg, gathered reply frames, and a request sent
before the previous one's reply refused by name."""
import socket
import struct

import grpc
import numpy as np
import pytest

from psjob.cluster.rpc import dataplane, frames
from psjob.cluster.rpc import psjob_pb2 as pb


class _Spec:
    methods = {"Echo": (None, None), "Rows": (None, None)}


def _guard(name, fn, raw, peer):
    if name == "Rows":
        with frames.gathered():
            return grpc.StatusCode.OK, fn(raw)
    return grpc.StatusCode.OK, fn(raw)


def _rows_frame(raw):
    n = int(np.frombuffer(raw, np.int64)[0])
    meta, parts = frames.tensor_header("t", np.arange(n * 3, dtype=np.float32).reshape(n, 3))
    return frames.pack(pb.PrefetchReply(rows=meta), parts)


@pytest.fixture
def server():
    srv = dataplane.DataPlaneServer("127.0.0.1", {"Echo": lambda raw: bytes(raw), "Rows": _rows_frame},
                                    _guard, lambda token: "ok", max_message_bytes=8 << 20)
    conns = dataplane.DataPlaneConnections(_Spec(), lambda endpoint: srv.port)
    yield srv, conns
    conns.close()
    srv.stop()


def test_bodies_of_every_size_around_the_first_read_round_trip_intact(server):
    _, conns = server
    first = dataplane._FIRST_READ
    rng = np.random.default_rng(0)
    for n in (0, 1, 15, 16, 17, first - 1, first, first + 1, first + 17, 3 << 20):
        body = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert bytes(conns.call("127.0.0.1:1", "Echo", body, 30)) == body, n


def test_a_gathered_reply_frame_arrives_as_the_joined_frame(server):
    _, conns = server
    for n in (0, 5, 100_000):
        got = conns.call("127.0.0.1:1", "Rows", np.array([n], np.int64).tobytes(), 30)
        assert bytes(got) == _rows_frame(np.array([n], np.int64).tobytes())
        frame = frames.Frame(got, pb.PrefetchReply, "reply")
        np.testing.assert_array_equal(frame.tensor(frame.header.rows),
                                      np.arange(n * 3, dtype=np.float32).reshape(n, 3))
    with frames.gathered():
        gathered = _rows_frame(np.array([7], np.int64).tobytes())
    assert isinstance(gathered, frames.Gathered) and len(gathered) == len(bytes(gathered))
    assert bytes(gathered) == _rows_frame(np.array([7], np.int64).tobytes())  # outside: bytes again
    # A gathered request goes out unjoined too, and arrives as its joined frame.
    assert bytes(conns.call("127.0.0.1:1", "Echo", gathered, 30)) == bytes(gathered)


def test_a_request_sent_before_the_previous_reply_is_refused_by_name(server):
    srv, _ = server
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    sock.sendall(struct.pack("<4sBBH", b"PSJH", dataplane.VERSION, 0, 0))
    assert struct.unpack("<4sBBH", sock.recv(8))[1] == 0
    request = struct.pack("<4sB3xQ", b"PSJQ", 0, 4) + b"abcd"
    sock.sendall(request + request)  # one 40-byte segment on loopback: both in the first read
    data = b""
    while chunk := sock.recv(1 << 16):
        data += chunk
    sock.close()
    _, status, n = struct.unpack_from("<4sB3xQ", data)
    assert status == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert b"one request in flight" in data[16:16 + n]
