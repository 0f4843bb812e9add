"""The heter trainer's gRPC front end: decode, authenticate, dispatch, encode.

Like the pserver's (server.py), it holds no training logic: each request
kind maps to one method of a `HeterHandler` (psjob.fluid.transpiler.
heter_state.HeterState), and the handler's errors become status codes with
its message (the same mapping as the pserver: ValueError → INVALID_ARGUMENT,
KeyError → NOT_FOUND, others → INTERNAL). Every call must carry the job's
auth token in `x-psjob-token` when one is configured.

TLS (optional, `tls=` a psjob.rpc.tls.TlsFiles, as for pservers): the port is
bound with the certificate files' server credentials; the token applies on
top. `observer(method, status, seconds, bytes_in, bytes_out, reason)` sees
every call (the heter trainer's metrics, psjob.ps.observability).
"""
from __future__ import annotations

import enum
from concurrent import futures
from typing import Protocol

import grpc

from ..roles import split_endpoint
from . import codec
from . import heter_pb2 as pb
from . import heter_pb2_grpc as pb_grpc
from . import tls as tls_mod
from .client import CHANNEL_OPTIONS
from .server import GuardedServicer, health_handlers



class HeterRequestKind(enum.Enum):
    RUN_STAGE = "RunStage"
    COMPLETE = "Complete"
    STATUS = "Status"


class HeterHandler(Protocol):
    def on_run_stage(self, trainer_id: int, stage: int, signature: str, values: dict) -> dict: ...
    def on_complete(self, trainer_id: int) -> int: ...
    def on_status(self) -> dict: ...


def decode_values(tensors) -> dict:
    """Tensor messages → {name: value or (value, lod)} (LoD kept for sequence inputs)."""
    out = {}
    for t in tensors:
        value, lod = codec.decode(t), codec.decode_lod(t)
        out[t.name] = (value, lod) if lod else value
    return out


def encode_values(values: dict, lods: dict | None = None) -> list:
    """{name: value or (value, lod)} (+ separate lods) → Tensor messages."""
    lods = lods or {}
    msgs = []
    for name, value in values.items():
        lod = lods.get(name)
        if isinstance(value, tuple):
            value, lod = value
        msgs.append(codec.encode(name, value, lod))
    return msgs


HETER_SERVICE = "psjob.rpc.heter.v1.HeterTrainer"


class _Servicer(GuardedServicer, pb_grpc.HeterTrainerServicer):
    """The heter-trainer RPCs; auth, error mapping and observation come from GuardedServicer."""

    def RunStage(self, request, context):
        def body():
            got = self.h.on_run_stage(request.trainer_id, request.stage, request.signature,
                                      decode_values(request.vars))
            return pb.RunStageReply(vars=encode_values(got))
        return self._run(HeterRequestKind.RUN_STAGE, request, context, body)

    def Complete(self, request, context):
        def body():
            return pb.HeterCompleteReply(trainers_remaining=self.h.on_complete(request.trainer_id))
        return self._run(HeterRequestKind.COMPLETE, request, context, body)

    def Status(self, request, context):
        def body():
            s = self.h.on_status()
            return pb.HeterStatusReply(state=s["state"], endpoint=s.get("endpoint", ""),
                                       trainers=s.get("trainers", []), completed_trainers=s.get("completed", []),
                                       stages_run=s.get("stages_run", 0), device=s.get("device", ""))
        return self._run(HeterRequestKind.STATUS, request, context, body)


def start_heter_server(handler: HeterHandler, endpoint: str, *, token: str = "", max_workers: int = 16,
                       observer=None, tls: tls_mod.TlsFiles | None = None) -> tuple[grpc.Server, int]:
    """Serve `handler` on endpoint ("host:port"; port 0 picks one). Returns (server, port).

    Each served trainer holds at most one call at a time; max_workers must
    exceed the number of trainers served (the caller sizes it). tls (None =
    plaintext) serves TLS with the given certificate and key."""
    if tls is not None and not (tls.cert_file and tls.key_file):
        # Checked before binding: a CA-only configuration (a client's) cannot serve TLS.
        raise tls_mod.TlsConfigError(
            f"TLS is configured but a heter trainer serves its trainers over TLS and needs "
            f"{tls_mod.ENV_CERT} and {tls_mod.ENV_KEY} (its certificate must name {endpoint.rpartition(':')[0]})")
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="heter-rpc"),
                         options=list(CHANNEL_OPTIONS))
    pb_grpc.add_HeterTrainerServicer_to_server(_Servicer(handler, token, observer), server)
    # The kubelet's gRPC probes (heter worker pods) call grpc.health.v1.Health/Check.
    server.add_generic_rpc_handlers((health_handlers(lambda: handler.on_status().get("state") == "SERVING",
                                                     ("", HETER_SERVICE)),))
    host, port = split_endpoint(endpoint, what="heter trainer endpoint", host_optional=True)
    bound = tls_mod.add_port(server, f"{host or '0.0.0.0'}:{port}", tls)
    if bound == 0:
        raise OSError(f"cannot listen on {endpoint} (port in use?)")
    server.start()
    return server, bound
