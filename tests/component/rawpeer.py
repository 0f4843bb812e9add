"""A hostile peer for the robustness tests: raw HTTP/2 calls to a gRPC server (partial
bodies, stalls, huge declared messages), idle data-plane connections, and the
memory of a process as /proc reports it.

gRPC's own client cannot send half a message, so `H2Connection` speaks HTTP/2
(RFC 7540) itself: the preface, SETTINGS (acknowledged), PING answers, flow
control (it never sends past the server's windows), HPACK literals without
indexing for the request headers (RFC 7541 §6.2.2). It does not decode the
server's headers: a stream is "answered" once the server ends or resets it.

Tests have no packages: load this file by path (faultkit.load)."""
import socket
import struct
import threading
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
_FRAME = struct.Struct(">I")
MAX_FRAME = 16384  # the server's SETTINGS_MAX_FRAME_SIZE is at least this


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return _FRAME.pack(len(payload))[1:] + bytes([kind, flags]) + _FRAME.pack(stream) + payload


def _hpack_int(value: int, prefix_bits: int, first: int = 0) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _literal(name: str, value: str) -> bytes:
    """A header field: literal, not indexed, new name, no Huffman coding."""
    n, v = name.encode(), value.encode()
    return b"\x00" + _hpack_int(len(n), 7) + n + _hpack_int(len(v), 7) + v


class H2Connection:
    """One HTTP/2 connection to a gRPC server; `call(...)` opens a stream."""

    def __init__(self, host: str, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(None)
        self.authority = f"{host}:{port}"
        self._lock = threading.Lock()          # one writer at a time
        self._cond = threading.Condition()     # windows and stream endings
        self._conn_window = 65535
        self._initial_window = 65535
        self._stream_windows: dict[int, int] = {}
        self.ended: dict[int, str] = {}         # stream → "end" (server's END_STREAM) or "reset"
        self.goaway = False
        self.closed = False
        self._next_stream = 1
        # Our receive window: large, so replies never wait on us.
        self._send(PREFACE + _frame(SETTINGS, 0, 0, struct.pack(">HI", 4, (1 << 31) - 1))
                   + _frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", (1 << 31) - 1 - 65535)))
        threading.Thread(target=self._read, daemon=True).start()

    def _send(self, data: bytes) -> None:
        with self._lock:
            self.sock.sendall(data)

    def _recv_exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionResetError("closed")
            out += chunk
        return out

    def _read(self):
        try:
            while True:
                head = self._recv_exact(9)
                length = _FRAME.unpack(b"\0" + head[:3])[0]
                kind, flags, stream = head[3], head[4], _FRAME.unpack(head[5:])[0] & 0x7FFFFFFF
                payload = self._recv_exact(length) if length else b""
                self._on_frame(kind, flags, stream, payload)
        except OSError:
            pass
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def _on_frame(self, kind, flags, stream, payload):
        if kind == SETTINGS and not flags & ACK:
            with self._cond:
                for i in range(0, len(payload), 6):
                    key, value = struct.unpack(">HI", payload[i:i + 6])
                    if key == 4:  # INITIAL_WINDOW_SIZE: applies to open streams too
                        delta = value - self._initial_window
                        self._initial_window = value
                        for s in self._stream_windows:
                            self._stream_windows[s] += delta
                self._cond.notify_all()
            self._send(_frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            self._send(_frame(PING, ACK, 0, payload))
        elif kind == WINDOW_UPDATE:
            inc = _FRAME.unpack(payload)[0] & 0x7FFFFFFF
            with self._cond:
                if stream == 0:
                    self._conn_window += inc
                elif stream in self._stream_windows:
                    self._stream_windows[stream] += inc
                self._cond.notify_all()
        elif kind in (HEADERS, RST_STREAM, DATA) and stream:
            if kind == RST_STREAM or flags & END_STREAM:
                with self._cond:
                    self.ended[stream] = "reset" if kind == RST_STREAM else "end"
                    self._cond.notify_all()
        elif kind == GOAWAY:
            with self._cond:
                self.goaway = True
                self._cond.notify_all()

    def call(self, path: str, metadata=(), declared: int = 0, body: bytes = b"", end: bool = False) -> int:
        """Open a stream to `path` (e.g. "/psjob.rpc.v1.ParameterServer/SendVariables") whose
        gRPC message declares `declared` bytes, send `body` of it and, unless `end`, stall.
        → the stream id."""
        headers = b"".join(_literal(k, v) for k, v in (
            (":method", "POST"), (":scheme", "http"), (":path", path), (":authority", self.authority),
            ("content-type", "application/grpc"), ("te", "trailers"), *metadata))
        with self._cond:
            stream = self._next_stream
            self._next_stream += 2
            self._stream_windows[stream] = self._initial_window
        self._send(_frame(HEADERS, END_HEADERS, stream, headers))
        self.send_data(stream, struct.pack(">BI", 0, declared) + body, end=end)
        return stream

    def send_data(self, stream: int, data: bytes, end: bool = False, stall_s: float = 5.0) -> int:
        """Send `data` on `stream` as the windows allow; → the bytes sent. Stops early when the
        server ends or resets the stream, or grants no window for `stall_s` seconds."""
        sent = 0
        view = memoryview(data)
        while sent < len(data):
            with self._cond:
                if not self._cond.wait_for(lambda: stream in self.ended or self.closed or self.goaway or min(
                        self._conn_window, self._stream_windows[stream]) > 0, timeout=stall_s):
                    return sent
                if stream in self.ended or self.closed or self.goaway:
                    return sent
                n = min(MAX_FRAME, self._conn_window, self._stream_windows[stream], len(data) - sent)
                self._conn_window -= n
                self._stream_windows[stream] -= n
            last = end and sent + n == len(data)
            try:
                self._send(_frame(DATA, END_STREAM if last else 0, stream, bytes(view[sent:sent + n])))
            except OSError:
                return sent
            sent += n
        return sent

    def stream_bytes(self, stream: int, total: int, stall_s: float = 5.0, chunk: int = 1 << 20) -> int:
        """Send up to `total` filler bytes on `stream` (see send_data); → the bytes sent."""
        filler, sent = bytes(chunk), 0
        while sent < total:
            n = self.send_data(stream, filler[:min(chunk, total - sent)], stall_s=stall_s)
            sent += n
            if n < min(chunk, total - sent + n):
                break
        return sent

    def wait_ended(self, streams, timeout: float) -> bool:
        """True once the server ended or reset every stream (or closed the connection)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.closed or all(s in self.ended for s in streams),
                                       timeout=timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def memory_kib(pid: int) -> dict:
    """{"VmRSS": KiB, "VmHWM": KiB, "Threads": n} of a process, from /proc/PID/status."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                out[key] = int(value.split()[0])
    return out


def open_fds(pid: int) -> int:
    import os
    return len(os.listdir(f"/proc/{pid}/fd"))


def idle_connections(host: str, port: int, n: int, timeout: float = 5.0) -> list:
    """Open up to `n` TCP connections that send nothing; those the kernel refused are skipped."""
    socks = []
    for _ in range(n):
        try:
            socks.append(socket.create_connection((host, port), timeout=timeout))
        except OSError:
            break
    return socks


def wait_for(predicate, timeout: float, what: str, poll_s: float = 0.05):
    """Poll `predicate` (state of another process: nothing to wait on) until true or fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f}s")
        time.sleep(poll_s)
