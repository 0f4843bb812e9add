"""The CPU trainer's client of its heter trainer(s): one reused channel per heter trainer.

`run_stage` is synchronous — a stage is on the trainer's critical path —
and is not retried on failure: a backward stage pushes gradients to the
pservers, and an ambiguous retry could push them twice. Calls wait for the
channel to become ready (`wait_for_ready`), so a heter trainer that is still
starting is not an error; `wait_ready` bounds that wait explicitly at start-up.
Values passed in are encoded (copied) before the call; arrays returned are
read-only views of the reply, owned by the caller.

Transport security: as PSClient, unless given `tls=` the client reads the
process's PSJOB_TLS_* settings (psjob.rpc.tls.tls_from_env), so a CPU trainer
speaks TLS to its heter trainer exactly when it does to its pservers.
"""
from __future__ import annotations

import threading

import grpc

from . import heter_pb2 as pb
from . import heter_pb2_grpc as pb_grpc
from . import tls as tls_mod
from .client import AUTH_METADATA_KEY, CHANNEL_OPTIONS, wait_until_serving
from .heter_service import decode_values, encode_values

# A stage runs a slice of the model's forward or backward pass; generous.
STAGE_DEADLINE_S = 600.0


class HeterRpcError(RuntimeError):
    def __init__(self, endpoint: str, method: str, code, details: str):
        super().__init__(f"{method} to heter trainer {endpoint} failed: "
                         f"{code.name if code is not None else code}: {details}")
        self.endpoint, self.method, self.code, self.details = endpoint, method, code, details


class HeterClient:
    def __init__(self, endpoints, trainer_id: int, *, auth_token: str = "",
                 deadline_s: float = STAGE_DEADLINE_S, tls="env"):
        """tls "env" = psjob.rpc.tls.tls_from_env(), None = plaintext, or a tls.TlsFiles."""
        self.endpoints = list(endpoints)
        if not self.endpoints:
            raise ValueError("HeterClient needs at least one heter trainer endpoint")
        if isinstance(tls, str):
            if tls != "env":
                raise ValueError(f"HeterClient tls={tls!r}: expected 'env', None or a psjob.rpc.tls.TlsFiles")
            tls = tls_mod.tls_from_env()
        self.tls = tls
        self.trainer_id = int(trainer_id)
        self.deadline_s = deadline_s
        self._metadata = ((AUTH_METADATA_KEY, auth_token),) if auth_token else ()
        self._stubs: dict[str, pb_grpc.HeterTrainerStub] = {}
        self._channels: dict[str, grpc.Channel] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.stages_run = 0

    @property
    def own_endpoint(self) -> str:
        """The heter trainer serving this trainer (trainer t → heter trainer t mod K)."""
        return self.endpoints[self.trainer_id % len(self.endpoints)]

    def _stub(self, endpoint: str):
        if self._closed:
            raise RuntimeError("HeterClient is closed")
        with self._lock:
            stub = self._stubs.get(endpoint)
            if stub is None:
                channel = tls_mod.open_channel(endpoint, CHANNEL_OPTIONS, self.tls)
                self._channels[endpoint] = channel
                stub = self._stubs[endpoint] = pb_grpc.HeterTrainerStub(channel)
        return stub

    def _call(self, endpoint, method, request, timeout):
        try:
            return getattr(self._stub(endpoint), method)(request, timeout=timeout, metadata=self._metadata,
                                                          wait_for_ready=True)
        except grpc.RpcError as exc:
            raise HeterRpcError(endpoint, method, exc.code() if hasattr(exc, "code") else None,
                                exc.details() if hasattr(exc, "details") else str(exc)) from None

    def run_stage(self, endpoint, trainer_id, stage, signature, values, lods=None) -> dict:
        """Run one stage; → {name: (value, lod or None)}."""
        req = pb.RunStageRequest(trainer_id=int(trainer_id), stage=int(stage), signature=signature,
                                 vars=encode_values(values, lods))
        reply = self._call(endpoint, "RunStage", req, self.deadline_s)
        self.stages_run += 1
        out = {}
        for name, value in decode_values(reply.vars).items():
            out[name] = value if isinstance(value, tuple) else (value, None)
        return out

    def complete(self, endpoints=None) -> None:
        """Tell the heter trainer(s) this trainer is done; returns once its pushes are flushed."""
        for ep in endpoints or [self.own_endpoint]:
            self._call(ep, "Complete", pb.HeterCompleteRequest(trainer_id=self.trainer_id), self.deadline_s)

    def status(self, endpoint: str, deadline: float = 5.0):
        return self._call(endpoint, "Status", pb.HeterStatusRequest(), deadline)

    def wait_ready(self, endpoints=None, timeout_s: float | None = None) -> None:
        """Block until the heter trainer(s) serve, or raise TimeoutError naming the missing ones.

        Default: this trainer's heter trainer, bounded by PSJOB_WAIT_SERVER_TIMEOUT (300 s)."""
        wait_until_serving(
            endpoints or [self.own_endpoint], "heter trainers",
            lambda ep: self._stub(ep).Status(pb.HeterStatusRequest(), timeout=2.0, metadata=self._metadata).state,
            lambda ep, exc: HeterRpcError(ep, "Status", exc.code(), exc.details()), timeout_s)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            for ch in self._channels.values():
                ch.close()
            self._channels.clear()
            self._stubs.clear()
