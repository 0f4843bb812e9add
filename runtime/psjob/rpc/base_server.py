"""The server half of psjob's gRPC base, shared by the pserver (server.py) and the
heter trainer (heter_service.py); base_client.py is the other half.

`RpcServer` serves one servicer for one `ServiceSpec`: every method of the
spec is the servicer's method of the same name, `method(request) -> reply`
(bytes for a framed side, a message otherwise), wrapped in one guard that

- checks the job's auth token, when one is configured: every call must carry
  it in the `x-psjob-token` metadata; others get UNAUTHENTICATED, are logged
  (without the secret) and counted. hmac.compare_digest: no timing side channel.
- maps the handler's exceptions to status codes with the handler's message, so
  one client's bad request never disturbs the others:

      PayloadError, ValueError, TypeError → INVALID_ARGUMENT
      KeyError (unknown variable/table)   → NOT_FOUND
      PermissionError                     → PERMISSION_DENIED
      TimeoutError                        → DEADLINE_EXCEEDED
      anything else                       → INTERNAL (logged with traceback)

- reports each call to the `observer(method, status, seconds, bytes_in,
  bytes_out, reason)` when one is given (the role's metrics, ps/observability).

The same port serves `grpc.health.v1.Health/Check`, which the kubelet's gRPC
probes call (without the token: it reveals only whether the server is
SERVING). TLS (optional, `tls=` a psjob.rpc.tls.TlsFiles): the port is bound
with server credentials from the certificate files; the token applies on top.
Requests run on a thread pool of `max_workers` threads: handlers block (a sync
barrier parks its thread until the last trainer arrives), so the caller sizes
the pool above the number of clients. `stop(grace_s)` lets replies in flight
drain for up to grace_s seconds.

`data_plane=True` also serves the spec's framed methods over TCP on a second
port (dataplane.py; TLS with the same certificate when `tls` is set), guarded
alike; the servicer's `data_port` attribute is set to that port (0: none)
before the first call.

Why a thread pool and not grpc.aio: bench/ps_rpc.py serves a bare method on
both; its server CPU per 4 MiB reply on the event loop was 0.89x, 0.90x and
1.26x the thread pool's in three runs (a loaded 2-core machine), 1.06x and
1.38x with the hop to a thread that psjob's blocking handlers (sync barriers,
table locks) would need there: no gain worth the change.
"""
from __future__ import annotations

import hmac
import logging
import time
from concurrent import futures

import grpc
from google.protobuf.message import DecodeError

from . import codec, dataplane
from . import tls as tls_mod
from .allocator import tune_for_large_messages
from .base_client import AUTH_METADATA_KEY, CHANNEL_OPTIONS, MAX_MESSAGE_BYTES, ServiceSpec
from ..roles import split_endpoint

log = logging.getLogger("psjob.rpc.server")

STATUS_BY_ERROR = (
    (codec.PayloadError, grpc.StatusCode.INVALID_ARGUMENT),
    (KeyError, grpc.StatusCode.NOT_FOUND),
    (PermissionError, grpc.StatusCode.PERMISSION_DENIED),
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
    requests are refused by gRPC itself, RESOURCE_EXHAUSTED, before decoding)."""

    def __init__(self, spec: ServiceSpec, servicer, endpoint: str, *, what: str, is_serving,
                 token: str = "", observer=None, max_workers: int = 16, max_message_bytes: int = 0,
                 tls: tls_mod.TlsFiles | None = None, thread_name: str = "rpc", data_plane: bool = False):
        self.what = what
        self._token = token.encode() if token else b""
        self._observe = observer
        options = list(CHANNEL_OPTIONS)
        if max_message_bytes:
            options = [o for o in options if o[0] != "grpc.max_receive_message_length"]
            options.append(("grpc.max_receive_message_length", int(max_message_bytes)))
        tune_for_large_messages()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers,
                                                              thread_name_prefix=thread_name),
                                   options=options)
        handlers = {}
        for method, (request_cls, reply_cls) in spec.methods.items():
            handlers[method] = grpc.unary_unary_rpc_method_handler(
                # A protobuf request is decoded by the guard, after the token check.
                self._guarded(method, getattr(servicer, method), request_cls),
                request_deserializer=None,
                response_serializer=None if reply_cls is None else reply_cls.SerializeToString)
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(spec.name, handlers),))
        # Registered methods skip gRPC's per-call handler lookup (as generated servicers do).
        self._server.add_registered_method_handlers(spec.name, handlers)
        self._server.add_generic_rpc_handlers((health_handlers(is_serving, ("", spec.name)),))
        host, port = split_endpoint(endpoint, what=f"{what} endpoint", host_optional=True)
        self.port = tls_mod.add_port(self._server, f"{host or '0.0.0.0'}:{port}", tls)
        if self.port == 0:
            raise OSError(f"cannot listen on {endpoint} (port in use?)")
        self._data = None
        if data_plane and dataplane.framed_methods(spec):
            self._data = dataplane.DataPlaneServer(
                host, {m: getattr(servicer, m) for m in dataplane.framed_methods(spec)},
                self._data_call, self._data_hello,
                max_message_bytes=max_message_bytes or MAX_MESSAGE_BYTES, thread_name=f"{thread_name}-data",
                ssl_context=tls_mod.server_context(tls) if tls is not None else None)
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

    def wait_for_termination(self, timeout_s: float | None = None) -> bool:
        return self._server.wait_for_termination(timeout_s)

    def _guarded(self, method: str, fn, request_cls=None):
        """`fn(request) -> reply` as a gRPC behaviour: token check, decoding of a protobuf
        request (`request_cls`; gRPC's own deserializer would log a traceback for every
        malformed message, before the token check), error mapping, observation."""
        def call(request, context):
            t0 = time.perf_counter()
            code, reason, reply = "OK", "", None
            try:
                if self._token:
                    auth = self._authorized(context)
                    if auth != "ok":
                        code, reason = "UNAUTHENTICATED", auth
                        log.warning("rejected %s from %s: %s auth token", method, context.peer(), auth)
                        context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong psjob auth token")
                if request_cls is not None:
                    try:
                        request = request_cls.FromString(request)
                    except DecodeError as exc:
                        code, reason = "INVALID_ARGUMENT", "malformed"
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
                                  _wire_size(reply) if reply is not None else 0, reason)
        return call

    @staticmethod
    def _outcome(method: str, fn, request):
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

    def _data_call(self, method: str, fn, raw, peer: str):
        """One data-plane call (dataplane.DataPlaneServer), guarded as a gRPC call is (the
        connection's token was checked by its hello) → (status, reply or message)."""
        t0 = time.perf_counter()
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

    def _authorized(self, context) -> str:
        """"ok", "missing" or "invalid" (says nothing about the token itself)."""
        for key, value in context.invocation_metadata():
            if key == AUTH_METADATA_KEY:
                return "ok" if hmac.compare_digest(value.encode(), self._token) else "invalid"
        return "missing"


def _wire_size(message) -> int:
    return len(message) if isinstance(message, bytes) else message.ByteSize()


HEALTH_SERVICE = "grpc.health.v1.Health"
# The server states (on_status()["state"]) the health check answers SERVING for: serving
# trainers, or past them all ("STOPPING") in a process that stays up until it is stopped
# (psjob.ps.lifecycle), which the kubelet's liveness probe must not restart.
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


def health_handlers(is_serving, services) -> grpc.GenericRpcHandler:
    """grpc.health.v1.Health/Check answering from `is_serving()` for the named services."""
    def check(raw, context):
        try:
            service = _health_service_name(raw)
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if service not in services:
            context.abort(grpc.StatusCode.NOT_FOUND, f"unknown service {service!r}")
        return _HEALTH_SERVING if is_serving() else _HEALTH_NOT_SERVING
    return grpc.method_handlers_generic_handler(HEALTH_SERVICE, {"Check": grpc.unary_unary_rpc_method_handler(check)})
