"""A ring all-reduce among N trainer processes over plain TCP.

Rendezvous: trainer r listens on its own endpoint (endpoints[r]), connects to
trainer (r+1) % N and accepts one connection from trainer (r-1) % N. Each
connection opens with a hello that carries the sender's rank, the ring size
and the job's auth token (PSJOB_AUTH_TOKEN_FILE, as the pserver data plane's
hello does); the receiver checks all three and answers one status byte, so a
peer with a wrong token or from another ring is refused by name.

All-reduce (sum) is the bandwidth-optimal ring of Patarasuk & Yuan, "Bandwidth
optimal all-reduce algorithms for clusters of workstations" (2009): the
flattened array is cut into N chunks; N-1 reduce-scatter steps each send one
chunk to the next trainer and add the one received from the previous, then
N-1 all-gather steps pass the reduced chunks round. Each trainer sends and
receives 2(N-1)/N of the array. Sending runs on a helper thread while the
caller receives, so neither side waits on a full socket buffer.

Every chunk travels with a 16-byte header (its size, or an abort). Failure:
every socket has a timeout; a peer that closes, resets or stays silent past it
fails the all-reduce with CollectiveError naming the peer, and this trainer
sends an abort naming the lost trainer to the next one before closing both
sockets — so the failure travels round the ring and every trainer's step fails
promptly, naming the lost trainer, instead of hanging.
TLS: when the job has TLS configured (PSJOB_TLS_* files, psjob.cluster.rpc.tls, as the
pserver data plane uses them), every ring connection is TLS 1.2+: the
accepting trainer serves the certificate and key, the dialling one checks it
against the job's CA and the next trainer's host name (or
PSJOB_TLS_SERVER_NAME); the token hello then travels inside TLS.
"""
from __future__ import annotations

import hmac
import socket
import ssl
import struct
import threading
import time

import numpy as np

VERSION = 1
_HELLO = struct.Struct("<4sBBIIH")   # magic, version, 0, rank, world size, token length
_ANSWER = struct.Struct("<4sB3x")   # magic, status
_CHUNK = struct.Struct("<4sBBHQ")   # magic, kind, 0, lost trainer (an abort's), payload bytes
_DATA, _ABORT = 0, 1
_OK, _BAD_TOKEN, _BAD_PEER = 0, 1, 2
_DTYPES = (np.float32, np.float64)
_BUFFER_BYTES = 4 << 20
HELLO_TIMEOUT_S = 5.0


class CollectiveError(RuntimeError):
    """The ring could not be formed, or a peer was lost during a collective (names the peer)."""


class PeerLostError(CollectiveError):
    """A peer was lost during a collective: the ring is broken and this trainer must start
    again (with every other one) to form it anew."""


def split_endpoint(endpoint: str) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CollectiveError(f"trainer endpoint {endpoint!r} is not host:port")
    return host, int(port)


def _tune(sock: socket.socket, timeout_s: float) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        sock.setsockopt(socket.SOL_SOCKET, opt, _BUFFER_BYTES)
    sock.settimeout(timeout_s)


def _recv_into(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("connection closed by the peer")
        got += n


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    _recv_into(sock, memoryview(buf))
    return bytes(buf)


class Ring:
    """This trainer's place in the ring. `connect()` forms it (every trainer must call it);
    `allreduce(array)` sums the array over all trainers and returns the sum."""

    def __init__(self, rank: int, endpoints, token: str = "", *, timeout_s: float = 60.0,
                 connect_timeout_s: float = 120.0, tls=None):
        endpoints = list(endpoints)
        if not endpoints:
            raise CollectiveError("the ring needs the trainers' endpoints (PADDLE_TRAINER_ENDPOINTS)")
        if not 0 <= rank < len(endpoints):
            raise CollectiveError(f"trainer id {rank} out of range for {len(endpoints)} trainer endpoints")
        for ep in endpoints:
            split_endpoint(ep)
        self.rank, self.endpoints, self.size = rank, endpoints, len(endpoints)
        self._token = token.encode()
        self.timeout_s, self.connect_timeout_s = float(timeout_s), float(connect_timeout_s)
        self._next = self._prev = None
        self._broken: str = ""
        self._lock = threading.Lock()
        self._tls = tls  # psjob.cluster.rpc.tls.TlsFiles, or None: plaintext
        self._server_ssl = self._client_ssl = None

    @property
    def next_rank(self) -> int:
        return (self.rank + 1) % self.size

    @property
    def prev_rank(self) -> int:
        return (self.rank - 1) % self.size

    # -- rendezvous ------------------------------------------------------------------------
    def connect(self) -> Ring:
        if self.size == 1 or self._next is not None:
            return self
        if self._tls is not None and self._server_ssl is None:
            from psjob.cluster.rpc import tls as tls_mod  # named errors for a missing or unreadable file
            try:
                self._server_ssl = tls_mod.server_context(self._tls)
                self._client_ssl = tls_mod.client_context(self._tls)
            except tls_mod.TlsConfigError as exc:
                raise CollectiveError(f"trainer {self.rank}: the ring's TLS: {exc}") from None
        host, port = split_endpoint(self.endpoints[self.rank])
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("" if host not in ("127.0.0.1", "localhost") else host, port))
        except OSError as exc:
            listener.close()
            raise CollectiveError(f"trainer {self.rank}: cannot listen on {self.endpoints[self.rank]}: "
                                  f"{exc.strerror}") from None
        listener.listen(4)
        accepted: dict = {}
        acceptor = threading.Thread(target=self._accept, args=(listener, accepted), daemon=True,
                                    name="psjob-ring-accept")
        acceptor.start()
        try:
            self._next = self._dial()
        finally:
            acceptor.join(self.connect_timeout_s)
            listener.close()
        if "sock" not in accepted:
            self.close()
            raise CollectiveError(accepted.get("error") or f"trainer {self.rank}: trainer {self.prev_rank} "
                                  f"({self.endpoints[self.prev_rank]}) did not join the ring in "
                                  f"{self.connect_timeout_s:g}s")
        self._prev = accepted["sock"]
        return self

    def _dial(self) -> socket.socket:
        """Connect to the next trainer, retrying while it is not listening yet."""
        ep = self.endpoints[self.next_rank]
        deadline = time.monotonic() + self.connect_timeout_s
        while True:
            try:
                sock = socket.create_connection(split_endpoint(ep), timeout=2.0)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise CollectiveError(f"trainer {self.rank}: cannot reach trainer {self.next_rank} at {ep} "
                                          f"within {self.connect_timeout_s:g}s") from None
                time.sleep(0.05)
        _tune(sock, self.timeout_s)
        try:
            if self._client_ssl is not None:
                sock = self._client_ssl.wrap_socket(
                    sock, server_hostname=self._tls.server_name or split_endpoint(ep)[0])
            sock.sendall(_HELLO.pack(b"PSJC", VERSION, 0, self.rank, self.size, len(self._token)) + self._token)
            magic, status = _ANSWER.unpack(_recv_exact(sock, _ANSWER.size))
        except OSError as exc:
            sock.close()
            raise CollectiveError(f"trainer {self.rank}: hello to trainer {self.next_rank} at {ep} "
                                  f"failed: {exc}") from None
        if magic != b"PSJC" or status != _OK:
            sock.close()
            why = {_BAD_TOKEN: "missing or wrong psjob auth token",
                   _BAD_PEER: "it expects another trainer or ring size"}.get(status, "not a psjob trainer ring")
            raise CollectiveError(f"trainer {self.rank}: trainer {self.next_rank} at {ep} refused "
                                  f"the ring hello: {why}")
        return sock

    def _accept(self, listener, out: dict) -> None:
        """Accept until the previous trainer's authenticated hello arrives; refuse others."""
        deadline = time.monotonic() + self.connect_timeout_s
        while time.monotonic() < deadline:
            listener.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                sock, peer = listener.accept()
            except OSError:
                return
            _tune(sock, HELLO_TIMEOUT_S)  # a connection that says nothing does not hold up the ring
            try:
                if self._server_ssl is not None:
                    sock = self._server_ssl.wrap_socket(sock, server_side=True)
                magic, version, _, rank, size, n = _HELLO.unpack(_recv_exact(sock, _HELLO.size))
                token = _recv_exact(sock, n) if n else b""
            except ssl.SSLError as exc:
                sock.close()
                out["error"] = (f"trainer {self.rank}: refused a ring connection from {peer[0]}: "
                                f"TLS handshake failed ({exc.reason or exc})")
                continue
            except (OSError, struct.error):
                sock.close()
                continue
            if magic != b"PSJC" or version != VERSION:
                sock.close()
                continue
            status = (_BAD_TOKEN if not hmac.compare_digest(token, self._token) else
                      _BAD_PEER if (rank, size) != (self.prev_rank, self.size) else _OK)
            try:
                sock.sendall(_ANSWER.pack(b"PSJC", status))
            except OSError:
                status = -1
            if status == _OK:
                sock.settimeout(self.timeout_s)
                out["sock"] = sock
                return
            sock.close()
            if status == _BAD_TOKEN:
                out["error"] = (f"trainer {self.rank}: refused a ring hello from {peer[0]} "
                                "(missing or wrong psjob auth token)")

    # -- all-reduce ------------------------------------------------------------------------
    def allreduce(self, array) -> np.ndarray:
        """The element-wise sum of `array` over all trainers (float32 or float64), same shape."""
        arr = np.asarray(array)
        if arr.dtype.type not in _DTYPES:
            raise TypeError(f"allreduce takes float32 or float64 arrays, got {arr.dtype}")
        if self.size == 1:
            return arr.copy()
        if self._broken:
            raise PeerLostError(f"trainer {self.rank}: the ring is broken ({self._broken}); "
                                  "the job must restart its trainers")
        if self._next is None:
            self.connect()
        flat = np.ascontiguousarray(arr).reshape(-1).copy()
        bounds = np.linspace(0, flat.size, self.size + 1).astype(np.int64)
        chunks = [flat[bounds[i]:bounds[i + 1]] for i in range(self.size)]
        scratch = np.empty(max(c.size for c in chunks), dtype=flat.dtype)
        with self._lock:
            try:
                n, r = self.size, self.rank
                for step in range(n - 1):  # reduce-scatter: chunk (r-step-1) gets the previous one's sum
                    send, recv = chunks[(r - step) % n], chunks[(r - step - 1) % n]
                    got = scratch[:recv.size]
                    self._exchange(send, got)
                    recv += got
                for step in range(n - 1):  # all-gather: pass the reduced chunks round
                    send, recv = chunks[(r - step + 1) % n], chunks[(r - step) % n]
                    self._exchange(send, recv)
            except CollectiveError as exc:
                self._broken = str(exc)
                self.close()
                raise
        return flat.reshape(arr.shape)

    def _exchange(self, send: np.ndarray, recv: np.ndarray) -> None:
        """Send `send` to the next trainer while receiving `recv` from the previous one."""
        failure: list = []

        def push():
            try:
                self._next.sendall(_CHUNK.pack(b"PSJA", _DATA, 0, 0, send.nbytes))
                self._next.sendall(memoryview(send).cast("B"))
            except OSError as exc:
                failure.append(exc)

        sender = threading.Thread(target=push, daemon=True, name="psjob-ring-send")
        sender.start()
        try:
            magic, kind, _, origin, nbytes = _CHUNK.unpack(_recv_exact(self._prev, _CHUNK.size))
            if magic != b"PSJA":
                raise ConnectionError("not a ring chunk (the trainers disagree on the collectives they run)")
            if kind == _ABORT:
                self._abort(sender, origin)
                raise PeerLostError(f"trainer {self.rank}: trainer {origin} ({self.endpoints[origin]}) was "
                                      f"lost during an all-reduce (reported by trainer {self.prev_rank})")
            if nbytes != recv.nbytes:
                raise ConnectionError(f"trainer {self.prev_rank} sent {nbytes} bytes where {recv.nbytes} were "
                                      "expected (the trainers all-reduce different arrays)")
            _recv_into(self._prev, memoryview(recv).cast("B"))
        except (OSError, ValueError) as exc:
            self._abort(sender, self.prev_rank)
            raise PeerLostError(self._lost(self.prev_rank, exc)) from None
        sender.join(self.timeout_s + 1)
        if failure or sender.is_alive():
            self._abort(sender, self.next_rank)
            raise PeerLostError(self._lost(self.next_rank, failure[0] if failure else "send timed out"))

    def _abort(self, sender: threading.Thread, lost: int) -> None:
        """Tell the next trainer that `lost` is gone (it tells the next, round the ring), then close.
        Nothing is sent while this trainer's own chunk may still be half written."""
        if self._prev is not None:
            try:
                self._prev.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        sender.join(0.5)
        if lost != self.next_rank and self._next is not None and not sender.is_alive():
            try:
                self._next.sendall(_CHUNK.pack(b"PSJA", _ABORT, 0, lost, 0))
            except OSError:
                pass
        self.close()

    def _lost(self, peer: int, exc) -> str:
        what = "timed out" if isinstance(exc, socket.timeout) else str(exc) or type(exc).__name__
        return (f"trainer {self.rank}: lost trainer {peer} ({self.endpoints[peer]}) during an all-reduce: "
                f"{what}")

    def barrier(self) -> None:
        self.allreduce(np.zeros(self.size, dtype=np.float32))

    def close(self) -> None:
        for sock in (self._next, self._prev):
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
        self._next = self._prev = None
