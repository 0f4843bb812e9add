"""An in-process parameter-server cluster: real pserver programs, no sockets.

`InMemoryCluster` starts one `PserverState` per pserver program (each runs
its startup program with its own Executor and Scope) and hands out
`InMemoryClient`s that implement the trainer side of the seam
(`psjob.cluster.protocol.PSClient`)
by calling the states directly. Values are copied both ways, as the wire
would, so a trainer and a pserver never share an array.

Trainers run in threads (`run_trainers`): sync-mode barriers block exactly as
they would across processes. What the gRPC runtime reuses unchanged is
`PserverState`; only the client and the threads are test scaffolding.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from psjob.cluster.protocol import PSClient
from psjob.cluster.pserver.pserver_state import PserverOptions, PserverState
from psjob.fluid.core import CPUPlace, Scope, SelectedRows, to_numpy
from psjob.fluid.executor import Executor


class _Result:
    """A handle whose call already ran; wait() returns its value or raises its error."""

    __slots__ = ("_value", "_error")

    def __init__(self, value: Any = None, error: BaseException | None = None):
        self._value, self._error = value, error

    def wait(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value


def _wire_copy(value: Any) -> Any:
    if isinstance(value, tuple):
        return (_wire_copy(value[0]),) + tuple(value[1:])
    if isinstance(value, SelectedRows):
        return SelectedRows(to_numpy(value.rows).copy(), to_numpy(value.values).copy(), value.height)
    return np.array(to_numpy(value), copy=True)


def _call(fn: Callable[..., Any], *args: Any) -> _Result:
    try:
        return _Result(fn(*args))
    except Exception as exc:  # surfaced at wait(), like an RPC error
        return _Result(error=exc)


class InMemoryClient(PSClient):
    """psjob.cluster.protocol.PSClient over direct calls to the cluster's PserverStates."""

    def __init__(self, cluster: InMemoryCluster, trainer_id: int):
        self.cluster, self.trainer_id = cluster, int(trainer_id)
        self.endpoints: list[str] = list(cluster.states)

    def push(self, endpoint: str, values: Mapping[str, Any], *, is_delta: bool = False,
             lods: Mapping[str, Any] | None = None, owned: bool = False) -> _Result:
        payload = {n: _wire_copy(v) for n, v in values.items()}
        return _call(self.cluster.handler(endpoint).on_send, self.trainer_id, payload, is_delta)

    def push_pull(self, endpoint: str, values: Mapping[str, Any], names: Iterable[str], *,
                  lods: Mapping[str, Any] | None = None, owned: bool = False) -> _Result:
        payload = {n: _wire_copy(v) for n, v in values.items()}

        def send_and_get() -> tuple[int, dict[str, Any]]:
            staleness, fresh, _ = self.cluster.handler(endpoint).on_send_and_get(self.trainer_id, payload,
                                                                                list(names))
            return staleness, {n: _wire_copy(v) for n, v in fresh.items()}
        return _call(send_and_get)

    def pull(self, endpoint: str, names: Iterable[str]) -> _Result:
        def get() -> dict[str, Any]:
            values, _ = self.cluster.handler(endpoint).on_get(self.trainer_id, list(names))
            return {n: _wire_copy(v) for n, v in values.items()}
        return _call(get)

    def prefetch(self, endpoint: str, table: str, ids: Any) -> _Result:
        ids = np.ascontiguousarray(to_numpy(ids), dtype=np.int64).reshape(-1)
        return _call(lambda: _wire_copy(self.cluster.handler(endpoint).on_prefetch(self.trainer_id, table, ids)))

    def barrier(self, kind: str, endpoints: Sequence[str] | None = None) -> list[int]:
        return [self.cluster.handler(ep).on_barrier(self.trainer_id, kind) for ep in endpoints or self.endpoints]

    def checkpoint_notify(self, dirname: str, step: int = 0, tag: str = "",
                          endpoints: Sequence[str] | None = None) -> dict[str, list[str]]:
        return {ep: self.cluster.handler(ep).on_checkpoint(dirname, step, tag) for ep in endpoints or self.endpoints}

    def complete(self, endpoints: Sequence[str] | None = None) -> None:
        for ep in endpoints or self.endpoints:
            self.cluster.handler(ep).on_complete(self.trainer_id)

    def gather(self, name: str, round_: int, value: Any) -> list[Any]:
        values = self.cluster.handler(self.endpoints[0]).on_gather(self.trainer_id, name, round_, _wire_copy(value))
        return [_wire_copy(v) for v in values]


class InMemoryCluster:
    """Pservers started from their (main, startup) programs, keyed by endpoint."""

    def __init__(self, pserver_programs: Mapping[str, tuple[Any, Any]], *, place: Any = None,
                 options: PserverOptions = PserverOptions()):
        self.place = place or CPUPlace()
        self.states: dict[str, PserverState] = {}
        for ep, (main, startup) in pserver_programs.items():
            state = PserverState(main, scope=Scope(), executor=Executor(self.place), options=options)
            state.run_startup(startup)
            self.states[ep] = state

    @classmethod
    def from_transpiler(cls, transpiler: Any, **kwargs: Any) -> InMemoryCluster:
        return cls({ep: transpiler.get_pserver_programs(ep) for ep in transpiler.plan.endpoints}, **kwargs)

    def handler(self, endpoint: str) -> PserverState:
        try:
            return self.states[endpoint]
        except KeyError:
            raise KeyError(f"no pserver at {endpoint!r} (this cluster has {', '.join(self.states)})") from None

    def client(self, trainer_id: int) -> InMemoryClient:
        return InMemoryClient(self, trainer_id)

    def executor(self, trainer_id: int, place: Any = None) -> Executor:
        """A trainer's Executor wired to this cluster; close() completes the trainer."""
        exe = Executor(place or self.place)
        client = self.client(trainer_id)
        exe.services["rpc"] = client
        exe.add_close_hook(client.complete)
        return exe

    def run_trainers(self, body: Callable[[int, Executor], Any], trainers: int, timeout_s: float = 120.0) -> list:
        """Run body(trainer_id, executor) for each trainer in its own thread; return the
        results in trainer order. Each executor is closed afterwards (even on error), so
        a failing trainer leaves the sync rounds instead of blocking the others."""
        results: list[Any] = [None] * trainers
        errors: list[BaseException | None] = [None] * trainers

        def run(t: int) -> None:
            exe = self.executor(t)
            try:
                results[t] = body(t, exe)
            except BaseException as exc:  # reported after join
                errors[t] = exc
            finally:
                exe.close()

        threads = [threading.Thread(target=run, args=(t,), name=f"trainer-{t}", daemon=True)
                   for t in range(trainers)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout_s)
        stuck = [th.name for th in threads if th.is_alive()]
        if stuck:
            raise TimeoutError(f"trainers still running after {timeout_s:.0f}s: {', '.join(stuck)}")
        for t, exc in enumerate(errors):
            if exc is not None:
                raise RuntimeError(f"trainer {t} failed: {type(exc).__name__}: {exc}") from exc
        return results

    def gather(self, overview: Any, origin_name: str) -> np.ndarray:
        """A parameter reassembled from the pservers' blocks (concat along dim 0 by block id)."""
        pieces = sorted((dv for dv in overview.get_distributed_vars_by_origin(origin_name) if dv.vtype == "Param"),
                        key=lambda dv: dv.block_id)
        if not pieces:
            raise KeyError(f"{origin_name!r} is not a distributed parameter")
        parts = [to_numpy(self.handler(dv.endpoint).scope.vars[dv.slice.name]) for dv in pieces]
        return np.concatenate(parts, axis=0)
