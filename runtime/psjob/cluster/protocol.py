"""The two seams between transpiled programs and whatever moves their bytes.

Trainer side — `PSClient`: what the RPC op kernels (ops/dist_ops.py) call on
`executor.services["rpc"]`. ps-lite's verbs: `push`, `pull` and `prefetch`
return a `Handle` at once and `Handle.wait()` returns the result, so a kernel
issues one call per pserver and then waits for all. Pushed arrays are copied
(encoded) before `push` returns: the caller may reuse its buffers. Arrays
returned by `wait()` belong to the caller and may be read-only.
`psjob.cluster.rpc.client.PSClient` (gRPC) and `inmemory.InMemoryClient` implement it.

Pserver side — `ServerHandler`: one method per request kind, implemented by
`pserver_state.PserverState`; `psjob.cluster.rpc.server` wraps it in gRPC and
`inmemory.InMemoryClient` calls it directly. Errors a handler raises mean:
ValueError/TypeError bad input, KeyError unknown variable or table,
TimeoutError a barrier that did not complete in time.
"""
from __future__ import annotations

from typing import Protocol


class Handle(Protocol):
    def wait(self): ...


class PSClient(Protocol):
    trainer_id: int

    def push(self, endpoint: str, values: dict, *, is_delta: bool = False, lods=None) -> Handle:
        """Send {name: array | SelectedRows} (gradients; with is_delta, geo deltas)."""

    def pull(self, endpoint: str, names) -> Handle:
        """wait() → {name: array} (parameter blocks, or accumulators for saving)."""

    def push_pull(self, endpoint: str, values: dict, names, *, lods=None) -> Handle:
        """An async push of gradients whose reply carries `names` read right after it is
        applied: one request for the communicator's push and its next pull.
        wait() → (staleness, {name: array})."""

    def prefetch(self, endpoint: str, table: str, ids) -> Handle:
        """wait() → rows of `table` for int64 `ids`, shape [len(ids), dim]."""

    def barrier(self, kind: str, endpoints=None) -> list[int]:
        """kind "send" (this trainer sent its round) or "fetch" (it fetched the result)."""

    def checkpoint_notify(self, dirname: str, step: int = 0, tag: str = "", endpoints=None) -> dict:
        """Each pserver saves its shards under dirname; → {endpoint: [files]}."""

    def complete(self, endpoints=None) -> None:
        """This trainer is done (Fluid's exe.close())."""

    def gather(self, name: str, round_: int, value) -> list:
        """Every trainer's small array for (name, round_), in trainer order (fleet.util)."""


class ServerHandler(Protocol):
    """What a transport serves. on_get and on_prefetch may return the pserver's live
    arrays (async mode): a transport copies or encodes them before replying, and never
    hands them to a trainer as they are."""

    def on_send(self, trainer_id: int, values: dict, is_delta: bool) -> None: ...
    def on_send_and_get(self, trainer_id: int, values: dict, names: list) -> tuple: ...  # async
    def on_get(self, trainer_id: int, names: list) -> tuple: ...
    def on_prefetch(self, trainer_id: int, table: str, ids): ...
    def on_barrier(self, trainer_id: int, kind: str) -> int: ...
    def on_checkpoint(self, dirname: str, step: int, tag: str) -> list: ...
    def on_complete(self, trainer_id: int) -> int: ...
    def on_register(self, worker_name: str) -> tuple: ...
    def on_status(self) -> dict: ...
    def on_join(self, trainer_id: int) -> tuple: ...  # elastic jobs: (version, members)
    def on_gather(self, trainer_id: int, name: str, round_: int, value) -> list: ...
