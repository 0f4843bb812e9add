"""The CPU trainer's client of its heter trainer(s): one reused channel per heter trainer.

`run_stage` is synchronous — a stage is on the trainer's critical path —
and is not retried on failure: a backward stage pushes gradients to the
pservers, and an ambiguous retry could push them twice. Calls wait for the
channel to become ready (`wait_for_ready`), so a heter trainer that is still
starting is not an error; `wait_server_ready` bounds that wait explicitly at start-up.
Values passed in are encoded (copied) before the call; arrays returned are
read-only views of the reply, owned by the caller.

Transport security: as PSClient, unless given `tls=` the client reads the
process's PSJOB_TLS_* settings (its settings.rpc.tls), so a CPU trainer
speaks TLS to its heter trainer exactly when it does to its pservers.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from psjob.cluster.rpc import heter_pb2 as pb
from psjob.cluster.rpc import tls as tls_mod
from psjob.cluster.rpc.base_client import PeerRpcError, RpcClient
from psjob.cluster.rpc.heter_service import HETER_SPEC, decode_values, encode_values
from psjob.foundation.settings import Settings

# A stage runs a slice of the model's forward or backward pass; generous.
STAGE_DEADLINE_S = 600.0


class HeterRpcError(PeerRpcError):
    peer = "heter trainer"


class HeterClient(RpcClient):
    spec = HETER_SPEC
    error = HeterRpcError
    peers = "heter trainers"

    def __init__(self, endpoints: Iterable[str], trainer_id: int, *, auth_token: str = "",
                 deadline_s: float = STAGE_DEADLINE_S, tls: str | tls_mod.TlsFiles | None = "env",
                 settings: Settings | None = None) -> None:
        """tls "env" = the settings' TLS files (settings.rpc.tls), None = plaintext, or a tls.TlsFiles;
        settings: a RoleEnv's settings (None = this process's environment's)."""
        if not list(endpoints):
            raise ValueError("HeterClient needs at least one heter trainer endpoint")
        super().__init__(endpoints, trainer_id, auth_token=auth_token, tls=tls, settings=settings)
        self.deadline_s = deadline_s
        self.stages_run = 0

    @property
    def own_endpoint(self) -> str:
        """The heter trainer serving this trainer (trainer t → heter trainer t mod K)."""
        return self.endpoints[self.trainer_id % len(self.endpoints)]

    def run_stage(self, endpoint: str, trainer_id: int, stage: int, signature: str, values: dict,
                  lods: dict | None = None) -> dict:
        """Run one stage; → {name: (value, lod or None)}."""
        req = pb.RunStageRequest(trainer_id=int(trainer_id), stage=int(stage), signature=signature,
                                 vars=encode_values(values, lods))
        reply = self._call(endpoint, "RunStage", req, self.deadline_s)
        self.stages_run += 1
        out = {}
        for name, value in decode_values(reply.vars).items():
            out[name] = value if isinstance(value, tuple) else (value, None)
        return out

    def complete(self, endpoints: Iterable[str] | None = None) -> None:
        """Tell the heter trainer(s) this trainer is done; returns once its pushes are flushed."""
        for ep in endpoints or [self.own_endpoint]:
            self._call(ep, "Complete", pb.HeterCompleteRequest(trainer_id=self.trainer_id), self.deadline_s)

    def status(self, endpoint: str, deadline: float = 5.0) -> Any:
        return self._call(endpoint, "Status", pb.HeterStatusRequest(), deadline)

    def wait_server_ready(self, endpoints: Iterable[str] | None = None, timeout_s: float | None = None) -> None:
        """As RpcClient.wait_server_ready; the default endpoint is this trainer's heter trainer."""
        super().wait_server_ready(endpoints or [self.own_endpoint], timeout_s)

    def _serving_state(self, endpoint: str) -> str:
        return self._methods(endpoint)["Status"](pb.HeterStatusRequest(), timeout=2.0,
                                                 metadata=self._metadata).state
