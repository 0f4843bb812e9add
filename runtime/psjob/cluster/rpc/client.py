"""The trainer's RPC client: one per process, one reused channel per pserver.

`GrpcPSClient` implements the trainer side of the seam (psjob.cluster.protocol.PSClient)
over gRPC and the data plane, plus what only a networked client has: registration,
joins, Status probes, waiting for the pservers, retries.

The API is ps-lite's three verbs — `push`, `pull` (and `prefetch`, a pull of
table rows by id) return a Handle at once; `Handle.wait()` returns the result.
Calls to different pservers therefore run concurrently: issue all, then wait
all. Payload arrays passed to `push` are encoded (copied) before `push`
returns, so the caller may reuse its buffers immediately; arrays returned by
`wait()` are read-only views of the reply message, owned by the caller.

Failures: every call has a deadline; UNAVAILABLE and DEADLINE_EXCEEDED are
retried with exponential backoff (a pserver that is restarting, or not up
yet) until `RetryPolicy.max_attempts` are used *and* the pservers' recovery
window `recovery_s` has passed since the first failure: a trainer never gives
up on a pserver that is still within its time to restart and restore a
checkpoint (its entrypoint then exits 75, which is not counted as a failure). Pushes are retried too: an async-mode
gradient applied twice after an ambiguous timeout is harmless compared with
a lost trainer, and sync rounds are deduplicated by the server per trainer.
Other errors (INVALID_ARGUMENT, NOT_FOUND, UNAUTHENTICATED, ...) are raised
at once as RpcError with the server's message. The deadlines and attempt
count can be set per process (psjob.foundation.settings: RpcSettings.retry): PSJOB_RPC_DEADLINE_S,
PSJOB_RPC_BARRIER_DEADLINE_S, PSJOB_RPC_MAX_ATTEMPTS, PSJOB_PSERVER_RECOVERY_S.

Wire format: push, pull and prefetch travel as frames (frames.py) — a
protobuf header with the tensor bytes outside it — over the pserver's data
plane (dataplane.py: a plain TCP connection, one pool per pserver) when it
offers one — the request leaves from the calling thread and the reply is read by
the thread that waits, no call thread in between — else over gRPC; the control
calls are plain protobuf over gRPC. `push(...).wait()` returns the pserver's async staleness for
that push (SendReply.staleness); `push_pull` (async gradients) also returns
the named parameters as the pserver holds them right after applying the
push, saving the communicator a GetVariables call per step. `retries` counts retried attempts per gRPC
method.

Transport security: unless given `tls=`, a client takes its TLS settings from
the environment (psjob.cluster.rpc.tls: PSJOB_TLS_*), so every client a process opens
— trainer, Fleet, checkpoint tools — speaks TLS exactly when its pservers do.
"""
from __future__ import annotations

import collections
import concurrent.futures
import queue
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import grpc
import numpy as np

from psjob.cluster.protocol import PSClient
from psjob.cluster.rpc import codec, dataplane, frames
from psjob.cluster.rpc import psjob_pb2 as pb
from psjob.cluster.rpc.base_client import PeerRpcError, RpcClient, ServiceSpec

# RetryPolicy and RECOVERY_S (how long a trainer's calls retry a restarting pserver) are
# parsed settings: psjob.foundation.settings.
from psjob.foundation.settings import RECOVERY_S, RetryPolicy, Settings  # noqa: F401

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})

# The pserver's service. SendVariables, GetVariables and Prefetch carry frames (bytes) both
# ways; the rest are protobuf messages.
PSERVER_SPEC = ServiceSpec("psjob.rpc.v1.ParameterServer", {
    "SendVariables": (None, None), "GetVariables": (None, None), "Prefetch": (None, None),
    "Barrier": (pb.BarrierRequest, pb.BarrierReply),
    "CheckpointNotify": (pb.CheckpointRequest, pb.CheckpointReply),
    "Complete": (pb.CompleteRequest, pb.CompleteReply),
    "Register": (pb.RegisterRequest, pb.RegisterReply),
    "Status": (pb.StatusRequest, pb.StatusReply),
    "Join": (pb.JoinRequest, pb.JoinReply),
    "Gather": (pb.GatherRequest, pb.GatherReply),
})


class RpcError(PeerRpcError):
    peer = "pserver"


class Handle:
    """A call in flight; `wait()` returns its decoded result or raises RpcError."""

    def __init__(self, client: GrpcPSClient, endpoint: str, method: str, request: Any,
                 decode: Callable[[Any], Any], deadline: float) -> None:
        self._client, self._endpoint, self._method = client, endpoint, method
        self._request, self._decode, self._deadline = request, decode, deadline
        self._future = client._start(endpoint, method, request, deadline)

    def wait(self) -> Any:
        policy = self._client.retry
        backoff = policy.initial_backoff_s
        attempt = 1
        first_failure = None
        while True:
            try:
                reply = self._future.result()
                self._client._answered(self._endpoint)
                return self._decode(reply)
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                first_failure = first_failure or time.monotonic()
                exhausted = attempt >= policy.max_attempts and \
                    time.monotonic() - first_failure >= policy.recovery_s
                if code not in RETRYABLE or exhausted or self._client._closed:
                    raise RpcError.from_grpc(self._endpoint, self._method, exc) from None
                self._client._unreachable(self._endpoint, code)
                self._client.retries[self._method] += 1
                time.sleep(backoff * (0.5 + random.random()))
                backoff = min(backoff * 2, policy.max_backoff_s)
                attempt += 1
                self._future = self._client._start(self._endpoint, self._method, self._request, self._deadline)


class _CallThreads:
    """Long-lived daemon threads that run blocking gRPC calls; `submit` → a Future.

    Why not ``multi_callable.future()``: gRPC then starts a channel "spin" thread
    each time the channel's calls in flight go from zero to one, and ends it at
    zero — about one thread start per call for a trainer that issues and waits
    step by step. These threads start only when every one is busy and live as
    long as the client, so the thread count is the most calls ever in flight.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0        # threads that finished a job and will take the next one
        self._count = 0

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                self._count += 1
                threading.Thread(target=self._work, name=f"psjob-rpc-{self._count}", daemon=True).start()
        self._jobs.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, fn, args, kwargs = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:     # handed to whoever waits on the future
                    future.set_exception(exc)
            del job, future
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        with self._lock:
            count, self._count, self._idle = self._count, 0, 0
        for _ in range(count):
            self._jobs.put(None)


class GrpcPSClient(RpcClient, PSClient):
    """psjob.cluster.protocol.PSClient over gRPC and the data plane (the module docstring)."""

    spec = PSERVER_SPEC
    error = RpcError
    peers = "pservers"

    def __init__(self, endpoints: Iterable[str], trainer_id: int = 0, *, auth_token: str = "",
                 retry: RetryPolicy | None = None, tls: Any = "env", settings: Settings | None = None) -> None:
        """retry None = the settings' (settings.rpc.retry); tls "env" = the settings' TLS files,
        None = plaintext, or a tls.TlsFiles; settings: the process's (a RoleEnv's `settings`;
        None = this process's environment, for a client built outside a role: a probe, a tool)."""
        super().__init__(endpoints, trainer_id, auth_token=auth_token, tls=tls, settings=settings)
        settings = self._settings
        self.retry = settings.rpc.retry if retry is None else retry
        self.retries: collections.Counter = collections.Counter()  # gRPC method → retried attempts
        self._threads = _CallThreads()
        self._outages: dict[str, float] = {}  # endpoint → when a call to it first failed
        # Push, pull and prefetch over the pservers' data plane where they offer one.
        self._data = dataplane.DataPlaneConnections(PSERVER_SPEC, self._announced_data_port, auth_token,
                                                    tls=self.tls) if settings.rpc.data_plane else None

    # An outage is logged once when it starts and once when the pserver answers again:
    # the trainer's own account of a pserver restart (how long it waited, not gave up).
    def _unreachable(self, endpoint: str, code: grpc.StatusCode) -> None:
        with self._lock:
            if endpoint in self._outages:
                return
            self._outages[endpoint] = time.monotonic()
        print(f"[psjob] pserver {endpoint} unreachable ({code.name}); retrying for at least "
              f"{self.retry.recovery_s:.0f} s (PSJOB_PSERVER_RECOVERY_S)", file=sys.stderr,
              flush=True)

    def _answered(self, endpoint: str) -> None:
        if not self._outages:  # the common case: no outage, no lock
            return
        with self._lock:
            since = self._outages.pop(endpoint, None)
        if since is not None:
            print(f"[psjob] pserver {endpoint} answers again after "
                  f"{time.monotonic() - since:.2f} s", file=sys.stderr, flush=True)

    def _invoke(self, endpoint: str, method: str, request: Any, timeout: float) -> Any:
        if self._data is not None and self._data.handles(method):
            reply = self._data.call(endpoint, method, request, timeout)
            if reply is not None:
                return reply
        if isinstance(request, frames.Gathered):  # an owned push over gRPC: joined here, per attempt
            request = bytes(request)
        return super()._invoke(endpoint, method, request, timeout)

    def _announced_data_port(self, endpoint: str) -> int:
        try:
            return super()._invoke(endpoint, "Status", pb.StatusRequest(), self.retry.deadline_s).data_port
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:  # a server without Status: gRPC only
                return 0
            raise

    def _start(self, endpoint: str, method: str, request: Any, deadline: float) -> Any:
        if self._closed:
            raise RuntimeError("GrpcPSClient is closed")
        if self._data is not None and self._data.handles(method):
            # Over the data plane the request leaves from this thread and its reply is read
            # by the thread that waits (dataplane.DataPlaneConnections.start): no call thread.
            try:
                pending = self._data.start(endpoint, method, request, deadline)
            except Exception as exc:  # raised by the handle's wait(), which retries as usual
                failed: concurrent.futures.Future = concurrent.futures.Future()
                failed.set_exception(exc)
                return failed
            if pending is not None:
                return pending
        return self._threads.submit(self._invoke, endpoint, method, request, deadline)

    # Not the base's blocking _call: the verbs' call, a Handle that retries (hence the ignore).
    def _call(self, endpoint: str, method: str, request: Any,  # type: ignore[override]
              decode: Callable[[Any], Any] = lambda r: r, deadline: float | None = None) -> Handle:
        return Handle(self, endpoint, method, request, decode, deadline or self.retry.deadline_s)

    # -- the verbs ----------------------------------------------------------------------
    def push(self, endpoint: str, values: Mapping[str, Any], *, is_delta: bool = False,
             lods: Mapping[str, Any] | None = None, owned: bool = False) -> Handle:
        """Send {name: array | SelectedRows} to one pserver (gradients, or geo deltas);
        wait() → the push's async staleness (int, 0 in sync mode). `owned`: see push_pull."""
        req = _send_frame(pb.SendRequest(trainer_id=self.trainer_id, is_delta=is_delta), values, lods, owned)
        return self._call(endpoint, "SendVariables", req, _decode_send_reply)

    def push_pull(self, endpoint: str, values: Mapping[str, Any], names: Iterable[str], *,
                  lods: Mapping[str, Any] | None = None, owned: bool = False) -> Handle:
        """An async push of gradients whose reply carries `names` read right after it was
        applied (one request instead of a push and a pull); wait() → (staleness, {name: ndarray}).

        `owned`: the caller leaves `values` unchanged until the handle's wait() returned (the
        communicator's merged gradients, which nothing else holds). The request is then not
        joined into one buffer (a copy of the step's ~1 MB of gradients): the data plane sends
        its parts as they are, and a retry or a gRPC call sends the same arrays again. Without
        it the request is a snapshot taken here, as the caller may change its arrays next."""
        names = list(names)
        req = _send_frame(pb.SendRequest(trainer_id=self.trainer_id, pull=names), values, lods, owned)
        return self._call(endpoint, "SendVariables", req, lambda raw: _decode_send_pull_reply(raw, names))

    def pull(self, endpoint: str, names: Iterable[str]) -> Handle:
        """Fetch variables by name; wait() → {name: ndarray}."""
        req = frames.pack(pb.GetRequest(trainer_id=self.trainer_id, names=list(names)), ())
        return self._call(endpoint, "GetVariables", req, _decode_get_reply)

    def prefetch(self, endpoint: str, table: str, ids: Any) -> Handle:
        """Rows of `table` for int64 `ids`; wait() → float array [len(ids), dim]."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        req = frames.pack(pb.PrefetchRequest(trainer_id=self.trainer_id, table=table), (ids,))
        return self._call(endpoint, "Prefetch", req, _decode_prefetch_reply)

    # -- control ------------------------------------------------------------------------
    def barrier(self, kind: str, endpoints: Sequence[str] | None = None) -> list[int]:
        k = {"send": pb.BarrierRequest.SEND, "fetch": pb.BarrierRequest.FETCH}[kind]
        handles = [self._call(ep, "Barrier", pb.BarrierRequest(trainer_id=self.trainer_id, kind=k),
                              lambda r: r.version, self.retry.barrier_deadline_s)
                   for ep in (endpoints or self.endpoints)]
        return [h.wait() for h in handles]

    def checkpoint_notify(self, dirname: str, step: int = 0, tag: str = "",
                          endpoints: Sequence[str] | None = None) -> dict[str, list[str]]:
        req = pb.CheckpointRequest(dirname=dirname, step=step, tag=tag)
        handles = {ep: self._call(ep, "CheckpointNotify", req, lambda r: list(r.files),
                                  self.retry.barrier_deadline_s)
                   for ep in (endpoints or self.endpoints)}
        return {ep: h.wait() for ep, h in handles.items()}

    def complete(self, endpoints: Sequence[str] | None = None) -> None:
        """Tell every pserver this trainer is done (Fluid's exe.close())."""
        handles = [self._call(ep, "Complete", pb.CompleteRequest(trainer_id=self.trainer_id),
                              lambda r: r.trainers_remaining)
                   for ep in (endpoints or self.endpoints)]
        for h in handles:
            h.wait()

    def join(self, endpoints: Sequence[str] | None = None) -> list[int]:
        """Join the member set of every pserver (elastic jobs, before the first step); the
        members pserver 0 reports after the join."""
        handles = [self._call(ep, "Join", pb.JoinRequest(trainer_id=self.trainer_id),
                              lambda r: list(r.members))
                   for ep in (endpoints or self.endpoints)]
        return [h.wait() for h in handles][0]

    def register(self, worker_name: str, endpoint: str | None = None) -> tuple[int, int]:
        reply = self._call(endpoint or self.endpoints[0], "Register",
                           pb.RegisterRequest(worker_name=worker_name)).wait()
        return reply.trainer_id, reply.trainers

    def gather(self, name: str, round_: int, value: Any) -> list[Any]:
        """Every trainer's `value` for (name, round_), in trainer order, met on pserver 0
        (cluster/pserver/trainer_gather.py); waits, like a barrier, for the slowest trainer."""
        req = pb.GatherRequest(trainer_id=self.trainer_id, name=name, round=round_,
                               value=codec.encode(name, value))
        return self._call(self.endpoints[0], "Gather", req,
                          lambda r: [codec.decode_array(v) for v in r.values], self.retry.barrier_deadline_s).wait()

    def status(self, endpoint: str, deadline: float = 5.0) -> Any:
        return self._call(endpoint, "Status", pb.StatusRequest(), deadline=deadline).wait()

    def probe_status(self, endpoint: str, deadline: float) -> Any:
        """One Status call that does not wait for the channel: a pserver that refuses the
        connection (not started yet, restarting) fails at once instead of after `deadline`,
        which only bounds a live pserver's answer. Not retried."""
        try:
            return self._status_no_wait(endpoint, deadline)
        except grpc.RpcError as exc:
            raise RpcError.from_grpc(endpoint, "Status", exc) from None

    def _serving_state(self, endpoint: str) -> str:
        return self._status_no_wait(endpoint, 2.0).state

    def _status_no_wait(self, endpoint: str, timeout: float) -> Any:
        return self._methods(endpoint)["Status"](pb.StatusRequest(), timeout=timeout, metadata=self._metadata)

    def close(self) -> None:
        super().close()
        self._threads.close()
        if self._data is not None:
            self._data.close()


def _send_frame(header: Any, values: Mapping[str, Any], lods: Mapping[str, Any] | None, owned: bool) -> Any:
    """A SendVariables request: joined bytes, or (owned values) a frames.Gathered of their parts."""
    if not owned:
        return frames.pack_tensors(header, "vars", values, lods)
    with frames.gathered():
        return frames.pack_tensors(header, "vars", values, lods)


def _decode_send_reply(raw: bytes) -> int:
    frame = frames.Frame(raw, pb.SendReply, "SendVariables reply")
    frame.finish()
    return int(frame.header.staleness)


def _decode_send_pull_reply(raw: bytes, names: list) -> tuple[int, dict]:
    frame = frames.Frame(raw, pb.SendReply, "SendVariables reply")
    values = frame.tensors(frame.header.vars)
    frame.finish()
    if sorted(values) != sorted(names):
        raise codec.PayloadError(f"SendVariables reply: pulled {sorted(names)}, got {sorted(values)} "
                                 f"(is the pserver an older psjob?)")
    return int(frame.header.staleness), values


def _decode_get_reply(raw: bytes) -> dict:
    frame = frames.Frame(raw, pb.GetReply, "GetVariables reply")
    values = frame.tensors(frame.header.vars)
    frame.finish()
    return values


def _decode_prefetch_reply(raw: bytes) -> Any:
    frame = frames.Frame(raw, pb.PrefetchReply, "Prefetch reply")
    rows = frame.tensor(frame.header.rows)
    frame.finish()
    return rows
