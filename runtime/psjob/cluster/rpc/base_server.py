"""The server half of psjob's gRPC base, shared by the pserver (server.py) and the
heter trainer (heter_service.py); base_client.py is the other half.

`RpcServer` serves one servicer for one `ServiceSpec`: every method of the
spec is the servicer's method of the same name, `method(request) -> reply`
(bytes for a framed side, a message otherwise), wrapped in one guard that

- checks the job's auth token, when one is configured, on the call's headers
  before its body is read or a worker taken (`_TokenGate`, a server
  interceptor; gRPC runs it on its polling thread as the headers arrive): every
  call must carry it in the `x-psjob-token` metadata; others get
  UNAUTHENTICATED at once, are logged (without the secret; at most one line per
  LOG_EVERY_S) and counted. hmac.compare_digest: no timing side channel.
- bounds the time a request may take to arrive: the methods are served as
  request-streaming handlers (the wire is the same as unary's), so the worker
  reads the one message itself, and a call whose message has not arrived
  `read_timeout_s` after a worker took it up is cancelled (`_ArrivalWatch`); a
  stalled sender holds a worker for that long at most.
- maps the handler's exceptions to status codes with the handler's message, so
  one client's bad request never disturbs the others:

      PayloadError, ValueError, TypeError → INVALID_ARGUMENT
      KeyError (unknown variable/table)   → NOT_FOUND
      PermissionError                     → PERMISSION_DENIED
      LimitExceeded (a per-request cap)   → RESOURCE_EXHAUSTED
      TimeoutError                        → DEADLINE_EXCEEDED
      anything else                       → INTERNAL (logged with traceback)

- reports each call to the `observer(method, status, seconds, bytes_in,
  bytes_out, reason)` when one is given (the role's metrics, ps/observability).

The same port serves `grpc.health.v1.Health/Check`, which the kubelet's gRPC
probes call (without the token: it reveals only whether the server is
SERVING). TLS (optional, `tls=` a psjob.cluster.rpc.tls.TlsFiles): the port is bound
with server credentials from the certificate files; the token applies on top.
Requests run on a thread pool of `max_workers` threads: handlers block (a sync
barrier parks its thread until the last trainer arrives), so the caller sizes
the pool above the number of clients. Callers without the token never get one
of those workers: their refusals and the health checks run on a pool of
PUBLIC_WORKERS threads of their own, a health check's body bounded by
PUBLIC_READ_TIMEOUT_S. Connections are bounded too (`max_connections`, gRPC's
own cap: further ones are closed at once; HANDSHAKE_TIMEOUT_S to set one up;
MAX_STREAMS calls at once on each).
`stop(grace_s)` lets replies in flight drain for up to grace_s seconds.

`data_plane=True` also serves the spec's framed methods over TCP on a second
port (dataplane.py; TLS with the same certificate when `tls` is set), guarded
alike; the servicer's `data_port` attribute is set to that port (0: none)
before the first call.

Why a thread pool and not grpc.aio: measured with a bare method on both
(bench/ps_rpc.py; docs/performance.md), the event loop saved no server CPU per
large reply, and psjob's blocking handlers (sync barriers, table locks) would
need a hop to a thread there, which cost more.
"""
from __future__ import annotations

import hmac
import itertools
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from psjob.cluster.rpc import codec, dataplane, frames
from psjob.cluster.rpc import tls as tls_mod
from psjob.cluster.rpc.allocator import tune_for_large_messages
from psjob.cluster.rpc.base_client import AUTH_METADATA_KEY, CHANNEL_OPTIONS, MAX_MESSAGE_BYTES, ServiceSpec
from psjob.foundation.roles import split_endpoint

log = logging.getLogger("psjob.cluster.rpc.server")
# observer(method, status code name, seconds, request bytes, reply bytes, auth outcome): each call.
Observer = Callable[[str, str, float, int, int, str], None]

# A request's body must arrive within this of a worker taking the call up (gRPC) or of its
# header (data plane); PSJOB_RPC_READ_TIMEOUT_S. The clients' own deadline per attempt is as long.
READ_TIMEOUT_S = 60.0
PUBLIC_WORKERS = 2           # threads for what callers without the token may ask
PUBLIC_READ_TIMEOUT_S = 2.0  # a health check's body (a few bytes) must arrive within this
HANDSHAKE_TIMEOUT_S = 20.0   # a connection must have set up TLS and HTTP/2 by then
MAX_STREAMS = 100            # calls at once on one connection (HTTP/2's advice; a client queues more)
LOG_EVERY_S = 10.0           # at most one log line per kind of refusal this often
# Data-plane methods whose reply frame is sent as its parts (frames.gathered: no join copy).
# A prefetch's rows are a fresh gather; a pull's may be live parameters (async reads take no
# copy), which the join snapshots before the send.
_GATHERED_REPLIES = frozenset({"Prefetch"})
WATCH_TICK_S = 0.25          # how often the arrival watch looks at the calls it waits for


class LimitExceeded(Exception):
    """A request over one of the server's per-request caps (RESOURCE_EXHAUSTED)."""


STATUS_BY_ERROR = (
    (codec.PayloadError, grpc.StatusCode.INVALID_ARGUMENT),
    (KeyError, grpc.StatusCode.NOT_FOUND),
    (PermissionError, grpc.StatusCode.PERMISSION_DENIED),
    (LimitExceeded, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (TimeoutError, grpc.StatusCode.DEADLINE_EXCEEDED),
    (ConnectionAbortedError, grpc.StatusCode.UNAVAILABLE),  # the server is stopping (PserverStopping)
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),
    (TypeError, grpc.StatusCode.INVALID_ARGUMENT),
)


class RpcServer:
    """A started gRPC server for `servicer` (see the module docstring); `.port` is the bound port.

    what: the server's kind in messages ("pserver", "heter trainer");
    is_serving: () -> bool, what the health check answers;
    max_message_bytes: cap on one request's size (0 = the 1 GiB default; larger
    requests are refused by gRPC itself, RESOURCE_EXHAUSTED, before decoding);
    read_timeout_s: how long a request's body may take to arrive (module docstring);
    max_in_flight_bytes: request bytes the data plane reads or handles at once (0: twice
    the message cap; dataplane.py); max_connections: gRPC connections at once (0: sized
    from max_workers)."""

    def __init__(self, spec: ServiceSpec, servicer: Any, endpoint: str, *, what: str, is_serving: Callable[[], bool],
                 token: str = "", observer: Observer | None = None, max_workers: int = 16, max_message_bytes: int = 0,
                 tls: tls_mod.TlsFiles | None = None, thread_name: str = "rpc", data_plane: bool = False,
                 read_timeout_s: float = READ_TIMEOUT_S, max_in_flight_bytes: int = 0,
                 max_connections: int = 0) -> None:
        self.what = what
        self._token = token.encode() if token else b""
        self._observe = observer
        self._read_timeout_s = float(read_timeout_s)
        self._log = _Throttled(log)
        max_message_bytes = int(max_message_bytes or MAX_MESSAGE_BYTES)
        options = [o for o in CHANNEL_OPTIONS if o[0] != "grpc.max_receive_message_length"]
        options += [("grpc.max_receive_message_length", max_message_bytes),
                    ("grpc.max_allowed_incoming_connections", int(max_connections or 4 * max_workers + 64)),
                    ("grpc.server_handshake_timeout_ms", int(HANDSHAKE_TIMEOUT_S * 1000)),
                    ("grpc.max_concurrent_streams", MAX_STREAMS)]
        tune_for_large_messages()
        self._pool = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=thread_name)
        # What callers without the token may ask (a refusal, a health check) runs here, never
        # on the trainers' workers.
        self._public_pool = futures.ThreadPoolExecutor(max_workers=PUBLIC_WORKERS,
                                                       thread_name_prefix=f"{thread_name}-public")
        self._watch = _ArrivalWatch(f"{thread_name}-arrivals")
        gate = (_TokenGate(self._token, spec, (f"/{HEALTH_SERVICE}/",), self._refusal),) if self._token else ()
        self._server = grpc.server(self._pool, options=options, interceptors=gate)
        handlers = {}
        for method, (request_cls, reply_cls) in spec.methods.items():
            handlers[method] = grpc.stream_unary_rpc_method_handler(
                # A protobuf request is decoded by the guard: gRPC's own deserializer would log a
                # traceback for every malformed message.
                self._guarded(method, getattr(servicer, method), request_cls),
                request_deserializer=None,
                response_serializer=None if reply_cls is None else reply_cls.SerializeToString)
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(spec.name, handlers),))
        # Registered methods skip gRPC's per-call handler lookup (as generated servicers do).
        self._server.add_registered_method_handlers(spec.name, handlers)
        self._server.add_generic_rpc_handlers((health_handlers(is_serving, ("", spec.name), self._public_pool,
                                                               self._watch),))
        host, port = split_endpoint(endpoint, what=f"{what} endpoint", host_optional=True)
        self.port = tls_mod.add_port(self._server, f"{host or '0.0.0.0'}:{port}", tls)
        if self.port == 0:
            raise OSError(f"cannot listen on {endpoint} (port in use?)")
        self._data = None
        if data_plane and dataplane.framed_methods(spec):
            self._data = dataplane.DataPlaneServer(
                host, {m: getattr(servicer, m) for m in dataplane.framed_methods(spec)},
                self._data_call, self._data_hello,
                max_message_bytes=max_message_bytes, thread_name=f"{thread_name}-data",
                ssl_context=tls_mod.server_context(tls) if tls is not None else None,
                read_timeout_s=self._read_timeout_s,
                max_in_flight_bytes=int(max_in_flight_bytes or 2 * max_message_bytes))
        # Announced by the servicer's Status reply, set before the first call can ask.
        self.data_port = servicer.data_port = self._data.port if self._data is not None else 0
        self._server.start()

    def stop(self, grace_s: float | None = 0) -> None:
        """Stop serving: refuse new calls, let those in flight finish for up to grace_s
        seconds (0: cancel them), and return once the server has stopped."""
        t_end = time.monotonic() + (grace_s or 0)
        if self._data is not None:
            self._data.stop(grace_s)
        self._server.stop(None if grace_s is None else max(0.0, t_end - time.monotonic())).wait()
        self._watch.stop()
        self._public_pool.shutdown(wait=False)

    def wait_for_termination(self, timeout_s: float | None = None) -> bool:
        return self._server.wait_for_termination(timeout_s)

    def _guarded(self, method: str, fn: Callable[[Any], Any],
                 request_cls: Any | None = None) -> Callable[[Iterator[Any], grpc.ServicerContext], Any]:
        """`fn(request) -> reply` as a gRPC behaviour (request-streaming, one message): the
        message read under the arrival bound, decoded (`request_cls`, a protobuf; None: framed
        bytes), error mapping, observation. The token was checked on the headers (_TokenGate)."""
        watch, limit_s = self._watch, self._read_timeout_s

        def call(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
            t0 = time.perf_counter()
            key = watch.expect(context, limit_s)
            try:
                request = next(requests, None)
            except grpc.RpcError:  # cancelled: it took too long, or its client left
                request = None
            finally:
                watch.arrived(key)
            if request is None:
                if not context.is_active():
                    if self._observe is not None:
                        self._observe(method, "CANCELLED", time.perf_counter() - t0, 0, 0, "")
                    return None
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{method}: the call carried no request")
            code, reply = "OK", None
            try:
                if request_cls is not None:
                    try:
                        request = request_cls.FromString(request)
                    except DecodeError as exc:
                        code = "INVALID_ARGUMENT"
                        log.warning("rejected %s from %s: malformed %s (%s)", method, context.peer(),
                                    request_cls.__name__, exc)
                        context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                                      f"{method}: malformed request: not a {request_cls.__name__}")
                status, out = self._outcome(method, fn, request)
                if status == grpc.StatusCode.OK:
                    reply = out
                    return reply
                code = status.name
                context.abort(status, out)
            finally:
                if self._observe is not None:
                    self._observe(method, code, time.perf_counter() - t0, _wire_size(request),
                                  _wire_size(reply) if reply is not None else 0, "")
        return call

    def _refusal(self, method: str, auth: str) -> grpc.RpcMethodHandler:
        """The behaviour answering a call to `method` whose headers lack the token (`auth`:
        "missing" or "invalid"): UNAUTHENTICATED at once, its body never read, on the public pool."""
        def refuse(requests: Iterator[Any], context: grpc.ServicerContext) -> None:
            self._log.warning(auth, "rejected %d call(s) with a %s auth token, the last (%s) from %s",
                              auth, method, context.peer())
            if self._observe is not None:
                self._observe(method, "UNAUTHENTICATED", 0.0, 0, 0, auth)
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong psjob auth token")
        refuse.experimental_thread_pool = self._public_pool  # type: ignore[attr-defined]  # read by gRPC
        return grpc.stream_unary_rpc_method_handler(refuse)

    @staticmethod
    def _outcome(method: str, fn: Callable[[Any], Any], request: Any) -> tuple[grpc.StatusCode, Any]:
        """fn(request) → (OK, reply), or (the status its exception maps to, the message): one
        client's bad request never disturbs the others."""
        try:
            return grpc.StatusCode.OK, fn(request)
        except Exception as exc:
            status = next((s for t, s in STATUS_BY_ERROR if isinstance(exc, t)), None)
            if status is None:
                status = grpc.StatusCode.INTERNAL
                log.exception("%s failed", method)
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            return status, f"{method}: {msg}"

    def _data_call(self, method: str, fn: Callable[[Any], Any], raw: Any, peer: str) -> tuple[grpc.StatusCode, Any]:
        """One data-plane call (dataplane.DataPlaneServer), guarded as a gRPC call is (the
        connection's token was checked by its hello) → (status, reply or message)."""
        t0 = time.perf_counter()
        if method in _GATHERED_REPLIES:
            with frames.gathered():  # the reply's parts go to sendmsg unjoined
                status, out = self._outcome(method, fn, raw)
        else:
            status, out = self._outcome(method, fn, raw)
        if self._observe is not None:
            ok = status == grpc.StatusCode.OK
            self._observe(method, status.name, time.perf_counter() - t0, len(raw), len(out) if ok else 0, "")
        return status, out

    def _data_hello(self, token: bytes) -> str:
        """"ok", "missing" or "invalid" for a data-plane connection's token (counted as a
        rejected call, as gRPC's are)."""
        if not self._token:
            return "ok"
        auth = "missing" if not token else "ok" if hmac.compare_digest(token, self._token) else "invalid"
        if auth != "ok" and self._observe is not None:
            self._observe("DataPlane", "UNAUTHENTICATED", 0.0, 0, 0, auth)
        return auth


class _TokenGate(grpc.ServerInterceptor):
    """The token check on a call's headers. gRPC runs interceptors on its polling thread when
    a call's headers arrive, before it hands the call to a worker or reads its body, so a
    caller without the token holds no worker and has no byte of its body buffered: its call
    gets the refusal handler (`refusal(auth)`, on the public pool) instead of the method's."""

    def __init__(self, token: bytes, spec: ServiceSpec, public_prefixes: tuple,
                 refusal: Callable[[str, str], grpc.RpcMethodHandler]) -> None:
        self._token = token
        self._public = public_prefixes
        # One refusal per method of the spec and reason; any other path is "unknown" (a
        # label per path a stranger makes up would grow the metrics without bound).
        self._refusals = {(path, auth): refusal(name, auth) for auth in ("missing", "invalid")
                          for path, name in [(spec.path(m), m) for m in spec.methods] + [("", "unknown")]}

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
                          details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method = details.method or ""
        if method.startswith(self._public):
            return continuation(details)
        auth = "missing"
        for key, value in details.invocation_metadata or ():
            if key == AUTH_METADATA_KEY:
                auth = "ok" if hmac.compare_digest(value.encode(), self._token) else "invalid"
                break
        if auth == "ok":
            return continuation(details)
        return self._refusals.get((method, auth)) or self._refusals[("", auth)]


class _ArrivalWatch:
    """Cancels the calls whose request has not arrived within their limit of their start.
    One thread for the server; a call costs a dict insert and a delete."""

    def __init__(self, name: str) -> None:
        self._waiting: dict[int, tuple] = {}  # key → (deadline, context)
        self._keys = itertools.count()
        self._stopped = threading.Event()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def expect(self, context: grpc.ServicerContext, limit_s: float) -> int:
        key = next(self._keys)
        self._waiting[key] = (time.monotonic() + limit_s, context)
        return key

    def arrived(self, key: int) -> None:
        self._waiting.pop(key, None)

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.wait(WATCH_TICK_S):
            now = time.monotonic()
            for key, (deadline, context) in list(self._waiting.items()):
                if deadline <= now and self._waiting.pop(key, None) is not None:
                    log.warning("cancelled a call from %s: its request had not arrived in time", context.peer())
                    context.cancel()


class _Throttled:
    """A logger that writes one line per kind at most every LOG_EVERY_S, with the count of
    lines left out since (a flood of refusals must not fill the disk)."""

    def __init__(self, logger: logging.Logger) -> None:
        self._log = logger
        self._last: dict[str, float] = {}
        self._count: dict[str, int] = {}
        self._lock = threading.Lock()

    def warning(self, kind: str, fmt: str, *args: object) -> None:
        """Log `fmt % (count, *args)`, count being the lines of this kind since the last one."""
        now = time.monotonic()
        with self._lock:
            self._count[kind] = self._count.get(kind, 0) + 1
            if now - self._last.get(kind, -LOG_EVERY_S) < LOG_EVERY_S:
                return
            self._last[kind], n = now, self._count.pop(kind)
        self._log.warning(fmt, n, *args)


def _wire_size(message: Any) -> int:
    return len(message) if isinstance(message, bytes) else message.ByteSize()


HEALTH_SERVICE = "grpc.health.v1.Health"
# The server states (on_status()["state"]) the health check answers SERVING for: serving
# trainers, or past them all ("STOPPING") in a process that stays up until it is stopped
# (psjob.cluster.pserver.lifecycle), which the kubelet's liveness probe must not restart.
HEALTHY_STATES = ("SERVING", "STOPPING")
# The grpc.health.v1 messages, hand-encoded — two one-field messages do not justify a
# dependency: HealthCheckRequest{string service = 1}, HealthCheckResponse{ServingStatus
# status = 1} with SERVING = 1, NOT_SERVING = 2.
_HEALTH_SERVING, _HEALTH_NOT_SERVING = b"\x08\x01", b"\x08\x02"


def _health_service_name(raw: bytes) -> str:
    """The `service` field of a HealthCheckRequest (the only field it has)."""
    if not raw:
        return ""
    length, i = 0, 1
    if raw[0] == 0x0A:  # field 1, length-delimited
        shift = 0
        while i < len(raw):
            byte = raw[i]
            length |= (byte & 0x7F) << shift
            i += 1
            if not byte & 0x80:
                break
            shift += 7
        if i + length == len(raw):
            return raw[i:].decode("utf-8", errors="replace")
    raise ValueError("malformed grpc.health.v1.HealthCheckRequest")


def health_handlers(is_serving: Callable[[], bool], services: Collection[str],
                    pool: futures.ThreadPoolExecutor | None = None,
                    watch: _ArrivalWatch | None = None) -> grpc.GenericRpcHandler:
    """grpc.health.v1.Health/Check answering from `is_serving()` for the named services; on
    `pool` (a thread pool of its own) when given, its request bounded by `watch` to
    PUBLIC_READ_TIMEOUT_S: anyone may call it, so it must not hold a trainer's worker."""
    def check(requests: Iterator[Any], context: grpc.ServicerContext) -> bytes | None:
        key: Any = watch.expect(context, PUBLIC_READ_TIMEOUT_S) if watch is not None else None
        try:
            raw = next(requests, b"")
        finally:
            if watch is not None:
                watch.arrived(key)
        if not context.is_active():
            return None
        try:
            service = _health_service_name(raw)
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if service not in services:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {service!r}")
        return _HEALTH_SERVING if is_serving() else _HEALTH_NOT_SERVING
    if pool is not None:
        check.experimental_thread_pool = pool  # type: ignore[attr-defined]  # read by gRPC
    return grpc.method_handlers_generic_handler(HEALTH_SERVICE, {"Check": grpc.stream_unary_rpc_method_handler(check)})
