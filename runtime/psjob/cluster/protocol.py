"""The seam between trainers and pservers: what each side calls on the other.

Trainer side — `PSClient`: what the RPC op kernels (fluid/ops/dist_ops.py) call on
`executor.services["rpc"]` and what the communicators (trainer/communicator.py,
trainer/geo.py) wrap. ps-lite's verbs: `push`, `pull`, `push_pull` and `prefetch`
return a `Handle` at once and `Handle.wait()` returns the result, so a kernel issues
one call per pserver and then waits for all. Pushed arrays are copied (encoded) before
`push` returns: the caller may reuse its buffers. Arrays returned by `wait()` belong to
the caller and may be read-only. `psjob.cluster.rpc.client.GrpcPSClient` (gRPC and the
data plane) and `psjob.cluster.inmemory.InMemoryClient` (direct calls) implement it.

Pserver side — `ServerHandler`: one method per request kind, implemented by
`psjob.cluster.pserver.pserver_state.PserverState`; `psjob.cluster.rpc.server` serves it
over gRPC and the data plane, `InMemoryClient` calls it directly. Errors a handler raises
mean: ValueError/TypeError bad input, KeyError unknown variable or table, TimeoutError a
barrier that did not complete in time.

Values: a variable's value is an array (numpy, or the pserver's device array module) or a
`SelectedRows`; pushed values may also be (array, lod) pairs from the wire. They are
`Any` here: this module imports no array library, so every layer may name it.

Both implementations of each Protocol subclass it explicitly, so mypy checks their
signatures against these (tests/unit/test_protocol.py checks them at run time too).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

T_co = TypeVar("T_co", covariant=True)


class Handle(Protocol[T_co]):
    """A call in flight: `wait()` returns its result or raises its error."""

    def wait(self) -> T_co: ...


@runtime_checkable
class PSClient(Protocol):
    """A trainer's client of its pservers (see the module docstring)."""

    trainer_id: int
    endpoints: list[str]  # every pserver, in pserver order

    def push(self, endpoint: str, values: Mapping[str, Any], *, is_delta: bool = False,
             lods: Mapping[str, Any] | None = None, owned: bool = False) -> Handle[int]:
        """Send {name: array | SelectedRows} (gradients; with is_delta, geo deltas);
        wait() → the push's async staleness (0 in sync mode). `owned`: the caller leaves
        `values` unchanged until wait() returned, so the client need not snapshot them."""
        ...

    def pull(self, endpoint: str, names: Iterable[str]) -> Handle[dict[str, Any]]:
        """wait() → {name: array} (parameter blocks, or accumulators for saving)."""
        ...

    def push_pull(self, endpoint: str, values: Mapping[str, Any], names: Iterable[str], *,
                  lods: Mapping[str, Any] | None = None, owned: bool = False) -> Handle[tuple[int, dict[str, Any]]]:
        """An async push of gradients whose reply carries `names` read right after it is
        applied: one request for the communicator's push and its next pull.
        wait() → (staleness, {name: array}). `owned` as for push."""
        ...

    def prefetch(self, endpoint: str, table: str, ids: Any) -> Handle[Any]:
        """wait() → rows of `table` for int64 `ids`, shape [len(ids), dim]."""
        ...

    def barrier(self, kind: str, endpoints: Sequence[str] | None = None) -> list[int]:
        """kind "send" (this trainer sent its round) or "fetch" (it fetched the result);
        → each pserver's version."""
        ...

    def checkpoint_notify(self, dirname: str, step: int = 0, tag: str = "",
                          endpoints: Sequence[str] | None = None) -> dict[str, list[str]]:
        """Each pserver saves its shards under dirname (or obeys a checkpoint command
        tag, psjob.cluster.checkpoint_protocol); → {endpoint: [files]}."""
        ...

    def complete(self, endpoints: Sequence[str] | None = None) -> None:
        """This trainer is done (Fluid's exe.close())."""
        ...

    def gather(self, name: str, round_: int, value: Any) -> list[Any]:
        """Every trainer's small array for (name, round_), in trainer order (fleet.util)."""
        ...


@runtime_checkable
class ServerHandler(Protocol):
    """What a transport serves. on_get, on_send_and_get and on_prefetch may return the
    pserver's live arrays (async mode): a transport copies or encodes them before replying,
    and never hands them to a trainer as they are."""

    def on_send(self, trainer_id: int, values: dict[str, Any], is_delta: bool = False) -> int:
        """Apply (async) or store (sync) one push; → its async staleness (0 in sync mode)."""
        ...

    def on_send_and_get(self, trainer_id: int, values: dict[str, Any],
                        names: Iterable[str]) -> tuple[int, dict[str, Any], int]:
        """An async push, then a read of `names`; → (staleness, {name: value}, version)."""
        ...

    def on_get(self, trainer_id: int, names: Iterable[str]) -> tuple[dict[str, Any], int]:
        """→ ({name: value}, version)."""
        ...

    def on_prefetch(self, trainer_id: int, table: str, ids: Any) -> Any:
        """→ the rows of `table` for `ids`."""
        ...

    def on_barrier(self, trainer_id: int, kind: str) -> int:
        """A "send" or "fetch" barrier; → the version."""
        ...

    def on_checkpoint(self, dirname: str, step: int = 0, tag: str = "") -> list[str]:
        """Trainer 0's checkpoint commands; → the files written."""
        ...

    def on_complete(self, trainer_id: int) -> int:
        """The trainer is done; → the trainers still running."""
        ...

    def on_register(self, worker_name: str) -> tuple[int, int]:
        """A trainer id for a pod without a stable index; → (trainer id, trainers)."""
        ...

    def on_status(self) -> dict[str, Any]:
        """{"state", "version", "trainers", "completed", "endpoint", "members"}."""
        ...

    def on_join(self, trainer_id: int) -> tuple[int, list[int]]:
        """Elastic jobs: join the member set; → (version, members)."""
        ...

    def on_gather(self, trainer_id: int, name: str, round_: int, value: Any) -> list[Any]:
        """Every trainer's `value` for (name, round_), in trainer order."""
        ...
