"""The heter trainer's gRPC front end: decode, dispatch, encode.

Like the pserver's (server.py), it holds no training logic: each request
kind maps to one method of a `HeterHandler` (psjob.cluster.heter.heter_state.HeterState).
Authentication (the job's token in `x-psjob-token`), the mapping of the
handler's errors to status codes (ValueError → INVALID_ARGUMENT, KeyError →
NOT_FOUND, others → INTERNAL), the health check, TLS, the thread pool and the
`observer(method, status, seconds, bytes_in, bytes_out, reason)` that sees
every call (the heter trainer's metrics, psjob.cluster.pserver.observability) are the
base's (base_server.RpcServer), shared with the pserver.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from psjob.cluster.rpc import codec
from psjob.cluster.rpc import heter_pb2 as pb
from psjob.cluster.rpc import tls as tls_mod
from psjob.cluster.rpc.base_client import ServiceSpec
from psjob.cluster.rpc.base_server import HEALTHY_STATES, Observer, RpcServer

HETER_SPEC = ServiceSpec("psjob.rpc.heter.v1.HeterTrainer", {
    "RunStage": (pb.RunStageRequest, pb.RunStageReply),
    "Complete": (pb.HeterCompleteRequest, pb.HeterCompleteReply),
    "Status": (pb.HeterStatusRequest, pb.HeterStatusReply),
})


class HeterHandler(Protocol):
    def on_run_stage(self, trainer_id: int, stage: int, signature: str, values: dict) -> dict: ...
    def on_complete(self, trainer_id: int) -> int: ...
    def on_status(self) -> dict: ...


def decode_values(tensors: Iterable[pb.Tensor]) -> dict:
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


class _Servicer:
    """The heter-trainer methods, request → reply (the base guards each call)."""

    def __init__(self, handler: HeterHandler) -> None:
        self.h = handler

    def RunStage(self, request: Any) -> Any:
        got = self.h.on_run_stage(request.trainer_id, request.stage, request.signature,
                                  decode_values(request.vars))
        return pb.RunStageReply(vars=encode_values(got))

    def Complete(self, request: Any) -> Any:
        return pb.HeterCompleteReply(trainers_remaining=self.h.on_complete(request.trainer_id))

    def Status(self, request: Any) -> Any:
        s = self.h.on_status()
        return pb.HeterStatusReply(state=s["state"], endpoint=s.get("endpoint", ""),
                                   trainers=s.get("trainers", []), completed_trainers=s.get("completed", []),
                                   stages_run=s.get("stages_run", 0), device=s.get("device", ""))


def start_heter_server(handler: HeterHandler, endpoint: str, *, token: str = "", max_workers: int = 16,
                       observer: Observer | None = None, tls: tls_mod.TlsFiles | None = None) -> RpcServer:
    """Serve `handler` on endpoint ("host:port"); the started server (its `.port`, `.stop(grace_s)`).

    Each served trainer holds at most one call at a time; max_workers must
    exceed the number of trainers served (the caller sizes it). tls (None =
    plaintext) serves TLS with the given certificate and key."""
    if tls is not None and not (tls.cert_file and tls.key_file):
        # Checked before binding: a CA-only configuration (a client's) cannot serve TLS.
        raise tls_mod.TlsConfigError(
            f"TLS is configured but a heter trainer serves its trainers over TLS and needs "
            f"{tls_mod.ENV_CERT} and {tls_mod.ENV_KEY} (its certificate must name {endpoint.rpartition(':')[0]})")
    # The kubelet's gRPC probes (heter worker pods) call grpc.health.v1.Health/Check.
    return RpcServer(HETER_SPEC, _Servicer(handler), endpoint, what="heter trainer",
                     is_serving=lambda: handler.on_status().get("state") in HEALTHY_STATES,
                     token=token, observer=observer, max_workers=max_workers, tls=tls,
                     thread_name="heter-rpc")
