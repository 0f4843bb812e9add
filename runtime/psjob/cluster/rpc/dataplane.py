"""The data plane: the framed methods (push, pull, prefetch) over plain TCP beside gRPC.

Why: a CTR trainer step is a prefetch and a push of about a megabyte each.
Through gRPC's Python server that cost the pserver 2.4-2.9 CPU-ms per step in
transport alone — its completion-queue and socket threads hand every call to a
handler thread and back under the GIL — against 0.7-1.1 ms for the same frames
over a socket that one thread reads, answers and writes (bench/transport.py;
the client's side 2.2-2.6 against 0.9-1.5 ms). The pserver's own work per step
is ~1.9 ms, so the transport decided how many trainers one pserver core feeds.

So the methods whose requests and replies are frames (frames.py) also travel
over a connection of their own: the pserver listens on a second, ephemeral port
of the same host (`DataPlaneServer`, started by base_server.RpcServer) and
announces it in its Status reply (`data_port`); the client asks once per
endpoint and keeps a small pool of connections (`DataPlaneConnections`). With
TLS (psjob.cluster.rpc.tls) the data plane speaks TLS too, with the same certificate,
CA and server name as gRPC, the token checked inside it. Every other method,
the health check, and every call when either side has the data plane off
(PSJOB_DATA_PLANE=grpc) or runs an older psjob, stays on gRPC. A client that
cannot connect to the data port within CONNECT_TIMEOUT_S uses gRPC for that
pserver and asks again after RECHECK_S: the job's NetworkPolicy admits any
port between the job's own pods, but peers outside the job (allowFrom) reach
the server port only.

Wire format (little-endian), one request in flight per connection:

    hello   client → b"PSJH" u8 version u8 0 u16 token length, token bytes
            server → b"PSJH" u8 status (0: OK, else a gRPC status code) u8 0 u16 0
    request        b"PSJQ" u8 method (its index among the spec's framed methods) 3×0
                   u64 length, the method's frame
    reply          b"PSJR" u8 status 3×0 u64 length, the reply frame (OK) or the
                   error's message (UTF-8)

Each message is written with one sendmsg (header and body buffers, no join)
and its first read takes the header and up to _FIRST_READ bytes of the body:
one syscall and GIL hand-off fewer each way. A request's bytes beyond its
announced length (a second request before the first one's reply) are refused,
INVALID_ARGUMENT, and the connection closed.

The server guards each call exactly as gRPC's side does (base_server: token,
error → status mapping, the observer). A reply's status other than OK raises
`DataPlaneError`, a grpc.RpcError with the same code() and details(), so the
client's retries treat both transports alike; a broken or timed-out
connection is UNAVAILABLE / DEADLINE_EXCEEDED and is closed.

What a peer can hold (docs/user/security.md). Before its hello is accepted a
connection is "pending": at most MAX_PENDING at once (a new one beyond that
displaces the oldest, which is closed at once: a client's hello, answered in
milliseconds, gets through a flood of silent ones), each for HELLO_TIMEOUT_S in
all (TLS handshake included; a reaper thread closes it then, however slowly it
trickles bytes), a token of at most MAX_TOKEN_BYTES, and the kernel's default
socket buffers (the large ones are set after the hello). The accept loop
outlives running out of file descriptors (EMFILE/ENFILE: it backs off and
tries again). After the hello: a request's body must arrive, and its reply be
taken, within `read_timeout_s` of its header (kernel timeouts wake the
connection's reads and writes every quarter of it to look: no poll per call on
the fast path); a request over the message cap is
answered RESOURCE_EXHAUSTED at once (its bytes are then read past, within the
same bound); and requests reserve their declared size from one budget of
`max_in_flight_bytes` before a byte is read (waiting, within that bound, for
others to finish; then UNAVAILABLE, which clients retry).
"""
from __future__ import annotations

import errno
import logging
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc
import numpy as np

from psjob.cluster.rpc import tls as tls_mod

if TYPE_CHECKING:
    from psjob.cluster.rpc.base_client import ServiceSpec

log = logging.getLogger("psjob.cluster.rpc.dataplane")

VERSION = 1
_HELLO = struct.Struct("<4sBBH")
_REQUEST = struct.Struct("<4sB3xQ")
_REPLY = struct.Struct("<4sB3xQ")
_OK = grpc.StatusCode.OK.value[0]
CONNECT_TIMEOUT_S = 5.0  # a data port that takes longer is treated as blocked
HELLO_TIMEOUT_S = 10.0   # a server drops a connection whose hello has not arrived by then
MAX_PENDING = 64         # connections awaiting their hello at once (the oldest goes first)
MAX_TOKEN_BYTES = 4096   # a longer token in a hello is refused unread
READ_TIMEOUT_S = 60.0    # a request's body (and its reply) within this of its header
ACCEPT_BACKOFF_S = (0.05, 1.0)  # out of descriptors: retry accept() after this, doubling
LOG_EVERY_S = 10.0       # one warning per kind (refused hellos, floods) this often at most
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
RECHECK_S = 60.0         # how long a client uses gRPC for a pserver whose data port it could not reach
_CODES = {code.value[0]: code for code in grpc.StatusCode}
# Socket buffers a megabyte-sized frame fits in: fewer wake-ups per message.
_BUFFER_BYTES = 4 << 20
# A message's first read takes its header and up to this much of its body (_recv_message).
_FIRST_READ = 64 << 10
_MAX_IOV = 64  # buffers per sendmsg (the kernel's IOV_MAX is 1024)


def framed_methods(spec: ServiceSpec) -> list[str]:
    """The spec's methods whose request and reply are frames, in spec order (their wire ids)."""
    return [m for m, (req, rep) in spec.methods.items() if req is None and rep is None]


class DataPlaneError(grpc.RpcError):
    """A data-plane call that failed: the status code and message gRPC would have given."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


def _tune(sock: socket.socket) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        sock.setsockopt(socket.SOL_SOCKET, opt, _BUFFER_BYTES)
    # A peer whose node vanished is noticed within ~50 s, as gRPC's keepalive notices it:
    # the server's connection thread ends, a client's wait fails UNAVAILABLE and is retried.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 20), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


# What a read or write of a server connection raises when its kernel timeout (SO_RCVTIMEO,
# SO_SNDTIMEO) passes without progress: the loops below then look at their deadline.
_WOULD_BLOCK = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None = None,
                limit_s: float | None = None, prefix: memoryview | None = None) -> memoryview:
    """n bytes from sock (after `prefix`, already read: len(prefix) + n in all) as a
    read-only buffer (one allocation, no zero fill, no join).

    A server connection's reads return at least every few seconds (`_bound_waits`), so they
    can keep a monotonic `deadline` for the whole read, or `limit_s` from its first byte
    (the connection may idle before it); the check costs no syscall."""
    got = 0 if prefix is None else len(prefix)
    n += got
    buf = np.empty(n, np.uint8)
    view = memoryview(buf).cast("B")  # type: ignore[arg-type]  # numpy's stubs: __buffer__ from 3.12
    if prefix is not None and got:
        view[:got] = prefix
    _read_into(sock, view, got, n, "bytes", deadline, limit_s)
    return view.toreadonly()


def _read_into(sock: socket.socket, view: memoryview, got: int, need: int, what: str,
               deadline: float | None = None, limit_s: float | None = None) -> int:
    """Read into view[got:] until at least `need` bytes are there (a read may bring more,
    up to the view's end); → the bytes now in view. Deadlines as in `_recv_exact`."""
    while got < need:
        try:
            k = sock.recv_into(view[got:])
        except _WOULD_BLOCK:
            k = -1
        if not k:
            raise ConnectionResetError(f"connection closed after {got} of {need} {what}")
        if k > 0:
            if not got and limit_s is not None:
                deadline = time.monotonic() + limit_s
            got += k
        if got < need and deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"{got} of {need} {what} arrived in time")
    return got


def _recv_message(sock: socket.socket, head: struct.Struct, limit_s: float | None = None) -> tuple[tuple, memoryview]:
    """A message's header (unpacked) and the bytes of its body that came with it.

    One recv for the header and, usually, a small body whole (or a large one's first
    _FIRST_READ bytes): a read fewer per message than header then body. Whatever follows
    the header belongs to this message: one request (one reply) in flight per connection,
    so the caller refuses more than the header announces (`_recv_rest`). The body bytes
    are a view of a buffer of their own (the decoded arrays may keep it)."""
    buf = np.empty(head.size + _FIRST_READ, np.uint8)
    view = memoryview(buf).cast("B")  # type: ignore[arg-type]  # numpy's stubs: __buffer__ from 3.12
    got = _read_into(sock, view, 0, head.size, "header bytes", limit_s=limit_s)
    return head.unpack_from(view), view[head.size:got].toreadonly()


def _recv_rest(sock: socket.socket, n: int, first: memoryview, deadline: float | None = None) -> memoryview:
    """The n-byte body of which `first` (from `_recv_message`) arrived with its header."""
    if len(first) > n:
        raise ConnectionError(f"{len(first) - n} bytes beyond the {n}-byte message (one message "
                              f"in flight per connection)")
    if len(first) == n:
        return first
    return _recv_exact(sock, n - len(first), deadline, prefix=first)


def _discard(sock: socket.socket, n: int, deadline: float | None = None) -> None:
    scratch = memoryview(bytearray(min(n, 1 << 20)))
    while n > 0:
        try:
            k = sock.recv_into(scratch, min(n, len(scratch)))
        except _WOULD_BLOCK:
            k = -1
        if not k:
            raise ConnectionResetError("connection closed inside a refused request")
        n -= max(k, 0)
        if n > 0 and deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError("a refused request did not arrive in time")


def _send_all(sock: socket.socket, data: bytes | memoryview, deadline: float) -> None:
    """sendall, with the whole write bounded by `deadline` (see _recv_exact)."""
    view = memoryview(data).cast("B")
    sent = 0
    while sent < len(view):
        try:
            sent += sock.send(view[sent:])
        except _WOULD_BLOCK:
            pass
        if sent < len(view) and time.monotonic() >= deadline:
            raise TimeoutError(f"the peer took {sent} of {len(view)} bytes of its reply in time")


def _send_parts(sock: socket.socket, parts: list[bytes | memoryview], deadline: float) -> None:
    """The parts in order, as one sendmsg (scatter-gather: no join copy, one syscall and GIL
    hand-off for a header and its body), bounded by `deadline` as `_send_all` is. TLS
    sockets have no sendmsg (and more parts than _MAX_IOV would be refused): one joined write."""
    if isinstance(sock, ssl.SSLSocket) or len(parts) > _MAX_IOV:
        _send_all(sock, parts[0] if len(parts) == 1 else b"".join(parts), deadline)  # type: ignore[arg-type]
        return
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    while views:
        try:
            sent = sock.sendmsg(views)
        except _WOULD_BLOCK:
            sent = 0
        while views and sent >= len(views[0]):
            sent -= len(views.pop(0))
        if views:
            views[0] = views[0][sent:]
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the peer took too little of a message in time "
                                   f"({sum(len(v) for v in views)} bytes left)")


def _bound_waits(sock: socket.socket, seconds: float) -> None:
    """Blocking reads and writes of sock return after `seconds` without progress (kernel
    timeouts: no poll before each call, as a Python socket timeout would add)."""
    sec = int(seconds)
    timeval = struct.pack("ll", sec, int((seconds - sec) * 1e6))
    sock.settimeout(None)
    for opt in (socket.SO_RCVTIMEO, socket.SO_SNDTIMEO):
        sock.setsockopt(socket.SOL_SOCKET, opt, timeval)


def _hang_up(sock: socket.socket) -> None:
    """Wake whatever blocks on sock (its thread then closes it). The plain socket's shutdown,
    also for a TLS one: SSLSocket.shutdown would drop its TLS state under the thread using it."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


class ByteBudget:
    """Request bytes being read or handled at once, shared by a server's connections."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = int(limit), 0
        self._cond = threading.Condition()
        self._waiting = 0

    def acquire(self, n: int, deadline: float) -> bool:
        """Reserve n bytes, waiting until `deadline` (monotonic) for others to release them."""
        with self._cond:
            if self.used + n > self.limit:
                self._waiting += 1
                try:
                    if not self._cond.wait_for(lambda: self.used + n <= self.limit,
                                               timeout=max(0.0, deadline - time.monotonic())):
                        return False
                finally:
                    self._waiting -= 1
            self.used += n
            return True

    def release(self, n: int) -> None:
        with self._cond:
            self.used -= n
            if self._waiting:
                self._cond.notify_all()


# -- server ---------------------------------------------------------------------------------

class DataPlaneServer:
    """Serves `methods` ({name: fn(frame) -> frame}, in wire-id order) on host:0.

    `guard(method, fn, raw, peer)` runs one call the way the gRPC side does and returns
    (status code, reply bytes or error message); `authorize(token bytes)` → "ok", "missing"
    or "invalid"; `max_message_bytes` caps one request; `read_timeout_s`,
    `max_in_flight_bytes`, `max_pending` and `hello_timeout_s` bound what a peer holds (the
    module docstring). One thread per connection: a call is read, answered and written by
    the same thread."""

    def __init__(self, host: str, methods: dict,
                 guard: Callable[[str, Callable[[Any], Any], memoryview, str], tuple[Any, Any]],
                 authorize: Callable[[bytes], str], *, max_message_bytes: int, thread_name: str = "data",
                 ssl_context: ssl.SSLContext | None = None, read_timeout_s: float = READ_TIMEOUT_S,
                 max_in_flight_bytes: int = 0, max_pending: int = MAX_PENDING,
                 hello_timeout_s: float = HELLO_TIMEOUT_S) -> None:
        self._names = list(methods)
        self._fns = [methods[n] for n in self._names]
        self._guard, self._authorize = guard, authorize
        self._max = max_message_bytes
        self._read_timeout_s = read_timeout_s
        self._budget = ByteBudget(max(max_in_flight_bytes or 2 * max_message_bytes, max_message_bytes))
        self._max_pending, self._hello_timeout_s = max_pending, hello_timeout_s
        self._thread_name = thread_name
        self._ssl = ssl_context
        self._listener = socket.create_server((host or "0.0.0.0", 0), backlog=128)
        self.port = self._listener.getsockname()[1]
        self._conns: set[socket.socket] = set()
        # Connections awaiting their hello (the TLS socket once wrapped) → the monotonic time
        # they are closed at. At most max_pending: scanning them is cheap.
        self._pending: dict[socket.socket, float] = {}
        mutex = threading.RLock()
        self._lock = threading.Condition(mutex)  # connections, pending, calls in flight (stop waits)
        # The reaper's own condition on the same lock: a call's end must not wake it.
        self._reaper_wake = threading.Condition(mutex)
        self._in_flight = 0
        self._stopping = False
        self._count = 0
        self._quiet_until: dict[str, float] = {}  # log kind → monotonic time it may log again
        threading.Thread(target=self._accept, name=f"{thread_name}-accept", daemon=True).start()
        threading.Thread(target=self._reap, name=f"{thread_name}-reaper", daemon=True).start()

    def _warn(self, kind: str, fmt: str, *args: object) -> None:
        """A warning at most once per LOG_EVERY_S per kind (floods must not fill the log)."""
        now = time.monotonic()
        if now >= self._quiet_until.get(kind, 0.0):
            self._quiet_until[kind] = now + LOG_EVERY_S
            log.warning(fmt, *args)

    def _accept(self) -> None:
        backoff = 0.0
        while True:
            try:
                sock, peer = self._listener.accept()
            except OSError as exc:
                if self._stopping:
                    return
                if exc.errno in _OUT_OF_DESCRIPTORS:
                    # Pending connections time out and free theirs; accept again later.
                    backoff = min(max(2 * backoff, ACCEPT_BACKOFF_S[0]), ACCEPT_BACKOFF_S[1])
                    self._warn("fds", "data plane: cannot accept a connection (%s); trying again",
                               exc.strerror)
                    time.sleep(backoff)
                    continue
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO, errno.EINTR, errno.EPERM):
                    continue  # that one connection failed, not the listener
                log.error("data plane: the listener failed (%s); no new data-plane connections", exc)
                return
            backoff = 0.0
            self._admit(sock, f"{peer[0]}:{peer[1]}")

    def _admit(self, sock: socket.socket, peer: str) -> None:
        with self._lock:
            if self._stopping:
                sock.close()
                return
            displaced = None
            if len(self._pending) >= self._max_pending:
                displaced = min(self._pending, key=self._pending.get)  # type: ignore[arg-type]  # keys present
                del self._pending[displaced]
            self._pending[sock] = time.monotonic() + self._hello_timeout_s
            if len(self._pending) == 1:
                self._reaper_wake.notify()  # the reaper waits for the first one
            self._conns.add(sock)
            self._count += 1
            n = self._count
        if displaced is not None:
            self._warn("pending", "data plane: %d connections await their hello; closing the oldest "
                       "(and others like it)", self._max_pending)
            _hang_up(displaced)
        try:
            threading.Thread(target=self._serve, args=(sock, peer), name=f"{self._thread_name}-{n}",
                             daemon=True).start()
        except RuntimeError as exc:  # no thread to be had: the connection cannot be served
            self._warn("threads", "data plane: refused a connection: %s", exc)
            with self._lock:
                self._pending.pop(sock, None)
                self._conns.discard(sock)
            sock.close()

    def _reap(self) -> None:
        """Close the pending connections whose hello deadline passed (however slowly they
        trickle bytes: the deadline is for the whole handshake and hello)."""
        with self._lock:
            while not self._stopping:
                now = time.monotonic()
                for sock in [s for s, deadline in self._pending.items() if deadline <= now]:
                    del self._pending[sock]
                    _hang_up(sock)
                first = min(self._pending.values(), default=None)
                self._reaper_wake.wait(None if first is None else first - now + 0.01)

    def _serve(self, raw_sock: socket.socket, peer: str) -> None:
        sock = raw_sock
        try:
            sock.settimeout(self._hello_timeout_s)  # the reaper bounds the total
            if self._ssl is not None:  # the handshake runs here, not on the accept thread
                sock = self._ssl.wrap_socket(raw_sock, server_side=True, do_handshake_on_connect=False)
                with self._lock:  # the TLS socket owns the descriptor now: watch it instead
                    deadline = self._pending.pop(raw_sock, None)
                    self._conns.discard(raw_sock)
                    if deadline is None:
                        return  # displaced or timed out already
                    self._pending[sock] = deadline
                    self._conns.add(sock)
                sock.do_handshake()
            if not self._hello(sock, peer):
                return
            with self._lock:
                if self._pending.pop(sock, None) is None:
                    return  # displaced or timed out while it said hello
            _tune(sock)  # large buffers for authenticated connections only
            # Reads and writes wake at least every quarter read timeout to look at their
            # deadline; between calls the connection may idle (keepalive watches the peer).
            _bound_waits(sock, min(max(self._read_timeout_s / 4, 0.05), 15.0))
            while True:
                (magic, method_id, length), first = _recv_message(sock, _REQUEST, limit_s=self._read_timeout_s)
                deadline = time.monotonic() + self._read_timeout_s
                if magic != b"PSJQ" or method_id >= len(self._fns):
                    self._reply(sock, grpc.StatusCode.INVALID_ARGUMENT,
                                f"not a psjob data-plane request (magic {bytes(magic)!r}, method {method_id})",
                                deadline)
                    return
                if len(first) > length:  # a second request before this one's reply
                    self._reply(sock, grpc.StatusCode.INVALID_ARGUMENT,
                                f"{len(first) - length} bytes beyond the {length}-byte request (one "
                                f"request in flight per data-plane connection)", deadline)
                    return
                self._call(sock, peer, self._names[method_id], self._fns[method_id], length, first, deadline)
        except (OSError, struct.error, ValueError):
            pass  # the client went away, was too slow (socket.timeout) or stop() shut the socket
        finally:
            with self._lock:
                for s in (raw_sock, sock):
                    self._pending.pop(s, None)
                    self._conns.discard(s)
            sock.close()
            raw_sock.close()

    def _call(self, sock: socket.socket, peer: str, name: str, fn: Callable[[Any], Any], length: int,
              first: memoryview, deadline: float) -> None:
        """Read one request of `length` bytes (`first` of them came with its header) by
        `deadline`, run it, and reply (taken within the read timeout of the handler's end: a
        sync round may keep the handler long)."""
        if self._max and length > self._max:
            # Answered at once; then read past (the connection stays usable), within the bound.
            self._reply(sock, grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"{name}: request of {length} bytes exceeds the limit of {self._max}", deadline)
            _discard(sock, length - len(first), deadline)
            return
        if not self._budget.acquire(length, deadline):
            self._reply(sock, grpc.StatusCode.UNAVAILABLE,
                        f"{name}: the pserver is reading {self._budget.used} bytes of requests (its limit "
                        f"is {self._budget.limit}); try again", time.monotonic() + self._read_timeout_s)
            _discard(sock, length - len(first), time.monotonic() + self._read_timeout_s)
            return
        try:
            raw = _recv_rest(sock, length, first, deadline)
            with self._lock:
                self._in_flight += 1
            try:
                code, reply = self._guard(name, fn, raw, peer)
                self._reply(sock, code, reply, time.monotonic() + self._read_timeout_s)
            finally:
                with self._lock:
                    self._in_flight -= 1
                    if self._stopping:
                        self._lock.notify_all()  # stop() waits for the calls in flight
        finally:
            self._budget.release(length)

    def _hello(self, sock: socket.socket, peer: str) -> bool:
        magic, version, _, n = _HELLO.unpack(_recv_exact(sock, _HELLO.size))
        if magic != b"PSJH" or version != VERSION:
            self._warn("not-psjob", "data plane: refused %s: not a psjob v%d hello (one line per %.0fs at most)",
                       peer, VERSION, LOG_EVERY_S)
            sock.sendall(_HELLO.pack(b"PSJH", grpc.StatusCode.UNIMPLEMENTED.value[0], 0, 0))
            return False
        if n > MAX_TOKEN_BYTES:
            auth = "invalid"  # no token is that long: refused unread
        else:
            auth = self._authorize(bytes(_recv_exact(sock, n)) if n else b"")
        if auth != "ok":
            self._warn(f"auth-{auth}", "data plane: rejected %s: %s auth token (one line per %.0fs at most)",
                       peer, auth, LOG_EVERY_S)
            sock.sendall(_HELLO.pack(b"PSJH", grpc.StatusCode.UNAUTHENTICATED.value[0], 0, 0))
            return False
        sock.sendall(_HELLO.pack(b"PSJH", _OK, 0, 0))
        return True

    @staticmethod
    def _reply(sock: socket.socket, code: grpc.StatusCode, body: Any, deadline: float) -> None:
        """body: bytes, a frames.Gathered frame (its `parts`, sent unjoined) or a message."""
        parts = getattr(body, "parts", None)
        if parts is None:
            if not isinstance(body, (bytes, bytearray, memoryview)):
                body = str(body).encode("utf-8", errors="replace")
            parts = [body]
        _send_parts(sock, [_REPLY.pack(b"PSJR", code.value[0], len(body)), *parts], deadline)

    def stop(self, grace_s: float | None = 0) -> None:
        """Refuse new connections; let calls in flight finish for up to grace_s, then close
        every connection."""
        with self._lock:
            self._stopping = True
            self._reaper_wake.notify()  # the reaper ends
            if grace_s:
                self._lock.wait_for(lambda: self._in_flight == 0, timeout=grace_s)
            conns = list(self._conns)
        _hang_up(self._listener)  # wakes the accept thread (close alone does not)
        self._listener.close()
        for sock in conns:
            _hang_up(sock)


# -- client ---------------------------------------------------------------------------------

class DataPlaneConnections:
    """A client's data-plane connections, pooled per endpoint.

    `data_port(endpoint)` → the port the pserver announced (0: none), asked once per
    endpoint (again after a connection to it breaks: a restarted pserver has a new one).
    `call(endpoint, method, frame, timeout)` → the reply frame, or None when this endpoint
    is to be called over gRPC."""

    def __init__(self, spec: ServiceSpec, data_port: Callable[[str], int | None], token: str = "",
                 tls: tls_mod.TlsFiles | None = None) -> None:
        self._ids = {name: i for i, name in enumerate(framed_methods(spec))}
        self._data_port = data_port
        self._token = token.encode()
        self._tls = tls            # psjob.cluster.rpc.tls.TlsFiles, or None: plaintext
        self._ssl_context: ssl.SSLContext | None = None   # made at the first connection (the CA file is read then)
        self._ports: dict[str, int] = {}       # endpoint → data port (0: gRPC)
        self._recheck: dict[str, float] = {}   # endpoint → when to ask again after a failed connect
        self._idle: dict[str, list] = {}
        self._lock = threading.Lock()
        self._closed = False

    def handles(self, method: str) -> bool:
        return method in self._ids

    def call(self, endpoint: str, method: str, frame: Any, timeout: float) -> memoryview | None:
        pending = self.start(endpoint, method, frame, timeout)
        return None if pending is None else pending.result()

    def start(self, endpoint: str, method: str, frame: Any, timeout: float) -> PendingCall | None:
        """Send the request on the calling thread; → a `PendingCall` whose result() reads the
        reply on the thread that asks for it, or None when this endpoint is called over gRPC.

        Why not a call thread: a trainer step waits on a prefetch, and the communicator on its
        push; handing each call to a thread and its reply back costs two thread wake-ups per
        round trip on the step's critical path (a loaded core schedules each one late)."""
        sock = self._checkout(endpoint, timeout)
        if sock is None:
            return None
        pending = PendingCall(self, endpoint, sock, timeout)
        try:
            sock.settimeout(timeout)
            parts = getattr(frame, "parts", None) or [frame]  # a frames.Gathered request: unjoined
            _send_parts(sock, [_REQUEST.pack(b"PSJQ", self._ids[method], len(frame)), *parts],
                        time.monotonic() + timeout)
        except (OSError, struct.error) as exc:
            pending._failed(exc)
        return pending

    def _checkout(self, endpoint: str, timeout: float) -> socket.socket | None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the client is closed")
            idle = self._idle.get(endpoint)
            if idle:
                return idle.pop()
        port = self._ports.get(endpoint)
        if port is None or (port == 0 and time.monotonic() >= self._recheck.get(endpoint, float("inf"))):
            port = self._ports[endpoint] = int(self._data_port(endpoint) or 0)
        if not port:
            return None
        host = endpoint.rsplit(":", 1)[0].strip("[]")
        try:
            sock = socket.create_connection((host, port), timeout=min(timeout, CONNECT_TIMEOUT_S))
        except OSError as exc:
            # The pserver answered Status over gRPC but its data port cannot be reached (a
            # network policy admits only the server port, or it just went away): gRPC for now.
            log.warning("data port %s:%d of %s unreachable (%s): using gRPC, asking again in %.0f s",
                        host, port, endpoint, exc, RECHECK_S)
            self._ports[endpoint], self._recheck[endpoint] = 0, time.monotonic() + RECHECK_S
            return None
        try:
            _tune(sock)
            if self._tls is not None:
                if self._ssl_context is None:
                    self._ssl_context = tls_mod.client_context(self._tls)
                sock = self._ssl_context.wrap_socket(sock, server_hostname=self._tls.server_name or host)
            sock.sendall(_HELLO.pack(b"PSJH", VERSION, 0, len(self._token)) + self._token)
            magic, status, _, _ = _HELLO.unpack(_recv_exact(sock, _HELLO.size))
        except (OSError, struct.error) as exc:
            sock.close()
            self._ports.pop(endpoint, None)
            raise DataPlaneError(grpc.StatusCode.UNAVAILABLE, f"data-plane hello failed: {exc}") from None
        if magic != b"PSJH" or status != _OK:
            sock.close()
            code = _CODES.get(status, grpc.StatusCode.UNKNOWN)
            if code == grpc.StatusCode.UNAUTHENTICATED:
                raise DataPlaneError(code, "missing or wrong psjob auth token")
            log.warning("data plane of %s refused the hello (%s): using gRPC", endpoint, code.name)
            self._ports[endpoint] = 0
            return None
        return sock

    def _checkin(self, endpoint: str, sock: socket.socket) -> None:
        with self._lock:
            if not self._closed:
                self._idle.setdefault(endpoint, []).append(sock)
                return
        sock.close()

    def _broken(self, endpoint: str, sock: socket.socket) -> None:
        sock.close()
        self._ports.pop(endpoint, None)
        with self._lock:  # its siblings share its fate: the pserver restarted or went away
            stale = self._idle.pop(endpoint, [])
        for s in stale:
            s.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks = [s for idle in self._idle.values() for s in idle]
            self._idle.clear()
        for s in socks:
            s.close()


class PendingCall:
    """A data-plane request already sent; `result()` reads its reply (once) on the calling
    thread: the reply frame, or DataPlaneError (UNAVAILABLE: the connection broke;
    DEADLINE_EXCEEDED: no reply in time; else the server's status). The interface of the
    concurrent.futures.Future the client's call threads return. A call dropped unread
    closes its connection (the reply would otherwise be read as the next call's)."""

    __slots__ = ("_conns", "_endpoint", "_sock", "_timeout", "_outcome")

    def __init__(self, conns: DataPlaneConnections, endpoint: str, sock: socket.socket, timeout: float) -> None:
        self._conns, self._endpoint, self._timeout = conns, endpoint, timeout
        self._sock: socket.socket | None = sock
        # (reply frame, None) or (None, DataPlaneError) once read
        self._outcome: tuple[memoryview | None, DataPlaneError | None] | None = None

    def _failed(self, exc: BaseException) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            self._conns._broken(self._endpoint, sock)
        if isinstance(exc, TimeoutError):
            err = DataPlaneError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                 f"no reply within {self._timeout:.0f}s (data plane)")
        else:
            err = DataPlaneError(grpc.StatusCode.UNAVAILABLE, f"data-plane connection lost: {exc}")
        self._outcome = (None, err)

    def result(self) -> memoryview | None:
        if self._outcome is None:
            sock = self._sock
            assert sock is not None  # read once: the outcome is kept
            try:
                (magic, status, length), first = _recv_message(sock, _REPLY)
                if magic != b"PSJR":
                    raise ConnectionError(f"not a psjob data-plane reply (magic {bytes(magic)!r})")
                body = _recv_rest(sock, length, first)
            except (OSError, struct.error) as exc:  # TimeoutError is an OSError
                self._failed(exc)
            else:
                self._sock = None
                self._conns._checkin(self._endpoint, sock)
                if status == _OK:
                    self._outcome = (body, None)
                else:
                    code = _CODES.get(status, grpc.StatusCode.UNKNOWN)
                    self._outcome = (None, DataPlaneError(code, bytes(body).decode("utf-8", errors="replace")))
        assert self._outcome is not None  # set by the read above, or by _failed
        reply, err = self._outcome
        if err is not None:
            raise err
        return reply

    def __del__(self) -> None:
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()
