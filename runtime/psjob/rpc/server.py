"""The pserver's gRPC front end: decode, authenticate, dispatch, encode.

SendVariables, GetVariables and Prefetch carry frames (frames.py: protobuf
header, tensor bytes outside it) in both directions; the other methods plain
protobuf messages. The method table is built here rather than by the
generated servicer so each method gets the right (de)serializer.

The servicer holds no training logic. Each request kind maps to one method
of a `ServerHandler` (the transport-agnostic pserver state); errors the
handler raises for bad input become gRPC status codes with the handler's
message, so one trainer's bad request never disturbs the others:

    PayloadError, ValueError, TypeError → INVALID_ARGUMENT
    KeyError (unknown variable/table)   → NOT_FOUND
    PermissionError                     → PERMISSION_DENIED
    TimeoutError                        → DEADLINE_EXCEEDED
    anything else                       → INTERNAL (logged with traceback)

Authentication: when a token is configured every call must carry it in the
`x-psjob-token` metadata; others get UNAUTHENTICATED, are counted, and are
logged without the secret (hmac.compare_digest: no timing side channel).

TLS (optional, `tls=` a psjob.rpc.tls.TlsFiles): the port is bound with server
credentials from the certificate files; the token check applies on top.

Health: the same port serves `grpc.health.v1.Health/Check`, which the
kubelet's gRPC probes call (without the token: it reveals only whether the
server is SERVING).
"""
from __future__ import annotations

import enum
import hmac
import logging
import time
from concurrent import futures
from typing import Protocol

import grpc

from ..roles import split_endpoint
from . import codec, frames
from . import tls as tls_mod
from . import psjob_pb2 as pb
from .allocator import tune_for_large_messages
from .client import AUTH_METADATA_KEY, CHANNEL_OPTIONS, FRAMED_METHODS, SERVICE

log = logging.getLogger("psjob.rpc.server")


class RequestKind(enum.Enum):
    SEND = "SendVariables"
    GET = "GetVariables"
    PREFETCH = "Prefetch"
    BARRIER = "Barrier"
    CHECKPOINT = "CheckpointNotify"
    COMPLETE = "Complete"
    REGISTER = "Register"
    STATUS = "Status"
    JOIN = "Join"
    GATHER = "Gather"


class ServerHandler(Protocol):
    # → the push's async staleness (None = 0); see SendReply.staleness
    def on_send(self, trainer_id: int, values: dict, is_delta: bool) -> int | None: ...
    def on_get(self, trainer_id: int, names: list[str]) -> tuple[dict, int]: ...
    def on_prefetch(self, trainer_id: int, table: str, ids) -> object: ...
    def on_barrier(self, trainer_id: int, kind: str) -> int: ...
    def on_checkpoint(self, dirname: str, step: int, tag: str) -> list[str]: ...
    def on_complete(self, trainer_id: int) -> int: ...
    def on_register(self, worker_name: str) -> tuple[int, int]: ...
    def on_status(self) -> dict: ...
    def on_join(self, trainer_id: int) -> tuple[int, list[int]]: ...  # → (version, members)


_STATUS_BY_ERROR = (
    (codec.PayloadError, grpc.StatusCode.INVALID_ARGUMENT),
    (KeyError, grpc.StatusCode.NOT_FOUND),
    (PermissionError, grpc.StatusCode.PERMISSION_DENIED),
    (TimeoutError, grpc.StatusCode.DEADLINE_EXCEEDED),
    (ValueError, grpc.StatusCode.INVALID_ARGUMENT),
    (TypeError, grpc.StatusCode.INVALID_ARGUMENT),
)


class GuardedServicer:
    """Authentication, error mapping and observation around every handler call.

    Shared by the pserver service and the heter-trainer service (heter_service.py):
    `_run(kind, request, context, body)` checks the token, runs `body()`, maps
    its exceptions to status codes and reports the call to the observer."""

    def __init__(self, handler, token: str, observer):
        self.h = handler
        self.token = token.encode() if token else b""
        self.observe = observer  # (method, code name, seconds, bytes_in, bytes_out, reason) -> None

    def _run(self, kind, request, context, body):
        t0 = time.perf_counter()
        code, reason = "OK", ""
        reply = None
        try:
            auth = self._authorized(context) if self.token else "ok"
            if auth != "ok":
                code, reason = "UNAUTHENTICATED", auth
                log.warning("rejected %s from %s: %s auth token", kind.value, context.peer(), auth)
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong psjob auth token")
            try:
                reply = body()
                return reply
            except Exception as exc:  # map to a status, keep serving
                status = next((s for t, s in _STATUS_BY_ERROR if isinstance(exc, t)), None)
                if status is None:
                    status = grpc.StatusCode.INTERNAL
                    log.exception("%s failed", kind.value)
                code = status.name
                msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
                context.abort(status, f"{kind.value}: {msg}")
        finally:
            if self.observe is not None:
                self.observe(kind.value, code, time.perf_counter() - t0, _wire_size(request),
                             _wire_size(reply) if reply is not None else 0, reason)

    def _authorized(self, context) -> str:
        """"ok", "missing" or "invalid" (says nothing about the token itself)."""
        for key, value in context.invocation_metadata():
            if key == AUTH_METADATA_KEY:
                return "ok" if hmac.compare_digest(value.encode(), self.token) else "invalid"
        return "missing"


def _wire_size(message) -> int:
    return len(message) if isinstance(message, bytes) else message.ByteSize()


class _Servicer(GuardedServicer):
    # -- data plane: frames in, frames out --------------------------------------------------
    def SendVariables(self, raw, context):
        def body():
            frame = frames.Frame(raw, pb.SendRequest, "SendVariables request")
            request = frame.header
            values = frame.tensors(request.vars)
            frame.finish()
            lods = {t.name: codec.decode_lod(t) for t in request.vars if len(t.lod)}
            if lods:
                values = {n: (v, lods[n]) if n in lods else v for n, v in values.items()}
            staleness = self.h.on_send(request.trainer_id, values, request.is_delta)
            return frames.pack(pb.SendReply(staleness=int(staleness or 0)), ())
        return self._run(RequestKind.SEND, raw, context, body)

    def GetVariables(self, raw, context):
        def body():
            frame = frames.Frame(raw, pb.GetRequest, "GetVariables request")
            frame.finish()
            request = frame.header
            values, version = self.h.on_get(request.trainer_id, list(request.names))
            return frames.pack_tensors(pb.GetReply(version=version), "vars", values)
        return self._run(RequestKind.GET, raw, context, body)

    def Prefetch(self, raw, context):
        def body():
            frame = frames.Frame(raw, pb.PrefetchRequest, "Prefetch request")
            request = frame.header
            ids = frame.rest_as_ids(f"prefetch of {request.table!r}")
            rows = self.h.on_prefetch(request.trainer_id, request.table, ids)
            meta, parts = frames.tensor_header(request.table, rows)
            return frames.pack(pb.PrefetchReply(rows=meta), parts)
        return self._run(RequestKind.PREFETCH, raw, context, body)

    # -- control: plain protobuf ------------------------------------------------------------
    def Barrier(self, request, context):
        def body():
            kind = "send" if request.kind == pb.BarrierRequest.SEND else "fetch"
            return pb.BarrierReply(version=self.h.on_barrier(request.trainer_id, kind))
        return self._run(RequestKind.BARRIER, request, context, body)

    def CheckpointNotify(self, request, context):
        def body():
            return pb.CheckpointReply(files=self.h.on_checkpoint(request.dirname, request.step, request.tag))
        return self._run(RequestKind.CHECKPOINT, request, context, body)

    def Complete(self, request, context):
        def body():
            return pb.CompleteReply(trainers_remaining=self.h.on_complete(request.trainer_id))
        return self._run(RequestKind.COMPLETE, request, context, body)

    def Register(self, request, context):
        def body():
            tid, n = self.h.on_register(request.worker_name)
            return pb.RegisterReply(trainer_id=tid, trainers=n)
        return self._run(RequestKind.REGISTER, request, context, body)

    def Status(self, request, context):
        def body():
            s = self.h.on_status()
            return pb.StatusReply(state=s["state"], version=s.get("version", 0), trainers=s.get("trainers", 0),
                                  completed_trainers=s.get("completed", []), endpoint=s.get("endpoint", ""),
                                  members=s.get("members", []))
        return self._run(RequestKind.STATUS, request, context, body)

    def Join(self, request, context):
        def body():
            version, members = self.h.on_join(request.trainer_id)
            return pb.JoinReply(version=version, members=members)
        return self._run(RequestKind.JOIN, request, context, body)
    def Gather(self, request, context):
        def body():
            values = self.h.on_gather(request.trainer_id, request.name, request.round,
                                      codec.decode_array(request.value))
            return pb.GatherReply(values=[codec.encode(request.name, v) for v in values])
        return self._run(RequestKind.GATHER, request, context, body)


HEALTH_SERVICE = "grpc.health.v1.Health"
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


def health_handlers(is_serving, services=("", SERVICE)) -> grpc.GenericRpcHandler:
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


def _method_handlers(servicer: _Servicer) -> dict:
    handlers = {}
    for kind in RequestKind:
        method = getattr(servicer, kind.value)
        if kind.value in FRAMED_METHODS:  # bytes in, bytes out: the frame codec runs inside the guard
            handlers[kind.value] = grpc.unary_unary_rpc_method_handler(method)
        else:
            request_cls, reply_cls = _CONTROL_MESSAGES[kind.value]
            handlers[kind.value] = grpc.unary_unary_rpc_method_handler(
                method, request_deserializer=request_cls.FromString,
                response_serializer=reply_cls.SerializeToString)
    return handlers


_CONTROL_MESSAGES = {
    "Barrier": (pb.BarrierRequest, pb.BarrierReply),
    "CheckpointNotify": (pb.CheckpointRequest, pb.CheckpointReply),
    "Complete": (pb.CompleteRequest, pb.CompleteReply),
    "Register": (pb.RegisterRequest, pb.RegisterReply),
    "Status": (pb.StatusRequest, pb.StatusReply),
    "Join": (pb.JoinRequest, pb.JoinReply),
    "Gather": (pb.GatherRequest, pb.GatherReply),
}


def start_server(handler: ServerHandler, endpoint: str, *, token: str = "", max_workers: int = 16,
                 observer=None, max_message_bytes: int = 0,
                 tls: tls_mod.TlsFiles | None = None) -> tuple[grpc.Server, int]:
    """Serve `handler` on endpoint ("host:port"; port 0 picks one). Returns (server, port).

    max_message_bytes (0 = the 1 GiB default) caps one request's size.
    tls (None = plaintext) serves TLS with the given certificate files.
    max_workers bounds concurrent requests; sync barriers park one thread per
    trainer, so it must exceed the number of trainers (the caller sizes it).
    """
    options = list(CHANNEL_OPTIONS)
    if max_message_bytes:
        # Larger requests are refused by gRPC itself (RESOURCE_EXHAUSTED) before decoding.
        options = [o for o in options if o[0] != "grpc.max_receive_message_length"]
        options.append(("grpc.max_receive_message_length", int(max_message_bytes)))
    tune_for_large_messages()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ps-rpc"),
                         options=options)
    handlers = _method_handlers(_Servicer(handler, token, observer))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    # Registered methods skip gRPC's per-call handler lookup (as generated servicers do).
    server.add_registered_method_handlers(SERVICE, handlers)
    server.add_generic_rpc_handlers((health_handlers(lambda: handler.on_status().get("state") == "SERVING"),))
    host, port = split_endpoint(endpoint, what="pserver endpoint", host_optional=True)
    bound = tls_mod.add_port(server, f"{host or '0.0.0.0'}:{port}", tls)
    if bound == 0:
        raise OSError(f"cannot listen on {endpoint} (port in use?)")
    server.start()
    return server, bound
