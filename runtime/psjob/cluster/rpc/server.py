"""The pserver's gRPC front end: decode, dispatch, encode.

SendVariables, GetVariables and Prefetch carry frames (frames.py: protobuf
header, tensor bytes outside it) in both directions; the other methods plain
protobuf messages (client.PSERVER_SPEC says which).

The servicer holds no training logic. Each request kind maps to one method
of a `psjob.cluster.protocol.ServerHandler` (the pserver's state, transport-agnostic).
Authentication, the mapping of the handler's errors to status codes, the health check,
TLS, the thread pool and telemetry are the base's (base_server.RpcServer), shared
with the heter trainer's service.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from psjob.cluster.protocol import ServerHandler
from psjob.cluster.rpc import codec, frames
from psjob.cluster.rpc import psjob_pb2 as pb
from psjob.cluster.rpc import tls as tls_mod
from psjob.cluster.rpc.base_server import HEALTHY_STATES, READ_TIMEOUT_S, LimitExceeded, RpcServer
from psjob.cluster.rpc.client import PSERVER_SPEC
from psjob.foundation.settings import process_settings

# Ids one Prefetch may ask for (PSJOB_RPC_MAX_PREFETCH_IDS): a table creates the rows it
# has not seen on read, so one request could otherwise grow the pserver by gigabytes.
MAX_PREFETCH_IDS = 1 << 20


class _Servicer:
    """The pserver's methods, request → reply (the base guards each call)."""

    data_port = 0  # the data plane's port (dataplane.py), announced by Status; set by the base

    def __init__(self, handler: ServerHandler, max_prefetch_ids: int = MAX_PREFETCH_IDS) -> None:
        self.h = handler
        self.max_prefetch_ids = int(max_prefetch_ids)

    # -- data plane: frames in, frames out --------------------------------------------------
    def SendVariables(self, raw: bytes) -> bytes:
        frame = frames.Frame(raw, pb.SendRequest, "SendVariables request")
        request = frame.header
        values = frame.tensors(request.vars)
        frame.finish()
        lods = {t.name: codec.decode_lod(t) for t in request.vars if len(t.lod)}
        if lods:
            values = {n: (v, lods[n]) if n in lods else v for n, v in values.items()}
        if not request.pull:
            staleness = self.h.on_send(request.trainer_id, values, request.is_delta)
            return frames.pack(pb.SendReply(staleness=int(staleness or 0)), ())
        if request.is_delta:
            raise codec.PayloadError("SendVariables request: a geo delta push cannot carry a pull")
        staleness, fresh, version = self.h.on_send_and_get(request.trainer_id, values, list(request.pull))
        return frames.pack_tensors(pb.SendReply(staleness=int(staleness or 0), version=version), "vars", fresh)

    def GetVariables(self, raw: bytes) -> bytes:
        frame = frames.Frame(raw, pb.GetRequest, "GetVariables request")
        frame.finish()
        request = frame.header
        values, version = self.h.on_get(request.trainer_id, list(request.names))
        return frames.pack_tensors(pb.GetReply(version=version), "vars", values)

    def Prefetch(self, raw: bytes) -> bytes:
        frame = frames.Frame(raw, pb.PrefetchRequest, "Prefetch request")
        request = frame.header
        if frame.remaining // 8 > self.max_prefetch_ids:
            raise LimitExceeded(f"a prefetch of {frame.remaining // 8} ids from {request.table!r} exceeds the "
                                f"limit of {self.max_prefetch_ids} ids per request (PSJOB_RPC_MAX_PREFETCH_IDS)")
        ids = frame.rest_as_ids(f"prefetch of {request.table!r}")
        rows = self.h.on_prefetch(request.trainer_id, request.table, ids)
        meta, parts = frames.tensor_header(request.table, rows)
        return frames.pack(pb.PrefetchReply(rows=meta), parts)

    # -- control: plain protobuf ------------------------------------------------------------
    def Barrier(self, request: Any) -> Any:
        kind = "send" if request.kind == pb.BarrierRequest.SEND else "fetch"
        return pb.BarrierReply(version=self.h.on_barrier(request.trainer_id, kind))

    def CheckpointNotify(self, request: Any) -> Any:
        return pb.CheckpointReply(files=self.h.on_checkpoint(request.dirname, request.step, request.tag))

    def Complete(self, request: Any) -> Any:
        return pb.CompleteReply(trainers_remaining=self.h.on_complete(request.trainer_id))

    def Register(self, request: Any) -> Any:
        tid, n = self.h.on_register(request.worker_name)
        return pb.RegisterReply(trainer_id=tid, trainers=n)

    def Status(self, request: Any) -> Any:
        s = self.h.on_status()
        return pb.StatusReply(state=s["state"], version=s.get("version", 0), trainers=s.get("trainers", 0),
                              completed_trainers=s.get("completed", []), endpoint=s.get("endpoint", ""),
                              members=s.get("members", []), data_port=self.data_port)

    def Join(self, request: Any) -> Any:
        version, members = self.h.on_join(request.trainer_id)
        return pb.JoinReply(version=version, members=members)

    def Gather(self, request: Any) -> Any:
        values = self.h.on_gather(request.trainer_id, request.name, request.round,
                                  codec.decode_array(request.value))
        return pb.GatherReply(values=[codec.encode(request.name, v) for v in values])


def start_server(handler: ServerHandler, endpoint: str, *, token: str = "", max_workers: int = 16,
                 observer: Callable[..., None] | None = None, max_message_bytes: int = 0,
                 tls: tls_mod.TlsFiles | None = None, data_plane: bool | None = None,
                 read_timeout_s: float = READ_TIMEOUT_S, max_in_flight_bytes: int = 0,
                 max_prefetch_ids: int = MAX_PREFETCH_IDS) -> RpcServer:
    """Serve `handler` on endpoint ("host:port"); the started server (its `.port`, `.stop(grace_s)`).

    max_message_bytes (0 = the 1 GiB default) caps one request's size; read_timeout_s,
    max_in_flight_bytes: base_server.RpcServer; max_prefetch_ids caps the ids of one
    Prefetch (RESOURCE_EXHAUSTED beyond).
    tls (None = plaintext) serves TLS with the given certificate files.
    max_workers bounds concurrent requests; sync barriers park one thread per
    trainer, so it must exceed the number of trainers (the caller sizes it).
    data_plane (None = this process's settings.rpc.data_plane, PSJOB_DATA_PLANE) also serves push, pull and
    prefetch over their own TCP connections on a second port (dataplane.py; TLS when `tls` is).
    """
    if data_plane is None:
        data_plane = process_settings().rpc.data_plane
    return RpcServer(PSERVER_SPEC, _Servicer(handler, max_prefetch_ids), endpoint, what="pserver",
                     is_serving=lambda: handler.on_status().get("state") in HEALTHY_STATES,
                     token=token, observer=observer, max_workers=max_workers,
                     max_message_bytes=max_message_bytes, tls=tls, thread_name="ps-rpc",
                     data_plane=data_plane, read_timeout_s=read_timeout_s,
                     max_in_flight_bytes=max_in_flight_bytes)
