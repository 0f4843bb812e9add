"""The client half of psjob's gRPC base, shared by the pserver client (client.py)
and the heter client (heter_client.py); base_server.py is the other half.

What both services have in common lives here once:

- `ServiceSpec`: a service's name and, per method, its request and reply
  message classes — or None for a method whose request or reply travels as a
  frame (frames.py, bytes on the wire). The server builds its method table
  from the same spec (base_server.RpcServer), so the two sides cannot drift.
- `CHANNEL_OPTIONS`: message size limits, keepalive and reconnect backoff,
  on both ends of every psjob channel.
- `RpcClient`: TLS ("env" = the process's PSJOB_TLS_* settings, so a client
  speaks TLS exactly when its servers do), the auth token as `x-psjob-token`
  metadata, one reused channel per endpoint, calls with a deadline that wait
  for a channel to become ready, gRPC errors turned into the service's
  `PeerRpcError` (naming the peer, the method, the status code and the
  server's message), `wait_server_ready`, and `close`.

What differs stays with the service: the pserver client's verbs, its call
threads and its retries with backoff (client.py: a trainer outlives a
restarting pserver); the heter client does not retry (an ambiguous retry of a
backward stage could push gradients twice).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from psjob.cluster.rpc import tls as tls_mod
from psjob.cluster.rpc.allocator import tune_for_large_messages

# MAX_MESSAGE_BYTES (1 GiB: one request may carry a large slice of a dense parameter or a big
# prefetch) and WAIT_SERVER_TIMEOUT_S (how long a process waits for its servers at start-up)
# bound settings too: psjob.foundation.settings.
from psjob.foundation.settings import MAX_MESSAGE_BYTES, WAIT_SERVER_TIMEOUT_S, Settings, process_settings  # noqa: F401

CHANNEL_OPTIONS = (
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    # Detect a dead server on an idle connection within ~30 s.
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    # Reconnect quickly after a server restart (default backoff grows to 120 s).
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2_000),
)
AUTH_METADATA_KEY = "x-psjob-token"


@dataclass(frozen=True)
class ServiceSpec:
    """A gRPC service: its full name and {method: (request class, reply class)}, where a
    class of None means that side of the call is a frame (bytes, frames.py)."""

    name: str
    methods: Mapping[str, tuple]

    def path(self, method: str) -> str:
        return f"/{self.name}/{method}"


class PeerRpcError(RuntimeError):
    """A call a server answered with an error (or never answered); `peer` names the kind of
    server in the message ("pserver", "heter trainer")."""

    peer = "server"

    def __init__(self, endpoint: str, method: str, code: grpc.StatusCode | None, details: str) -> None:
        super().__init__(f"{method} to {self.peer} {endpoint} failed: "
                         f"{code.name if code is not None else code}: {details}")
        self.endpoint, self.method, self.code, self.details = endpoint, method, code, details

    @classmethod
    def from_grpc(cls, endpoint: str, method: str, exc: grpc.RpcError) -> PeerRpcError:
        return cls(endpoint, method, exc.code() if hasattr(exc, "code") else None,
                   exc.details() if hasattr(exc, "details") else str(exc))


class RpcClient:
    """One reused channel per endpoint of one service; see the module docstring.

    Subclasses set `spec` (their ServiceSpec), `error` (their PeerRpcError) and
    `peers` (what wait_server_ready's TimeoutError calls the servers), and
    implement `_serving_state(endpoint)`: the server's state ("SERVING", ...) from
    its Status method."""

    spec: ServiceSpec
    error: type[PeerRpcError] = PeerRpcError
    peers = "servers"

    def __init__(self, endpoints: Iterable[str], trainer_id: int = 0, *, auth_token: str = "",
                 tls: str | tls_mod.TlsFiles | None = "env", settings: Settings | None = None) -> None:
        """tls "env" = the settings' TLS files (settings.rpc.tls), None = plaintext, or a
        tls.TlsFiles. settings: the process's (a RoleEnv's `settings`; None = this process's
        environment, for a client built outside a role: a probe, a tool, a test)."""
        self.endpoints = list(endpoints)
        self.trainer_id = int(trainer_id)
        settings = process_settings() if settings is None else settings
        if isinstance(tls, str):
            if tls != "env":
                raise ValueError(f"{type(self).__name__} tls={tls!r}: expected 'env', None or a "
                                 f"psjob.cluster.rpc.tls.TlsFiles")
            tls = settings.rpc.tls
        self.tls = tls
        self._settings = settings
        self._metadata = ((AUTH_METADATA_KEY, auth_token),) if auth_token else ()
        self._callables: dict[str, dict] = {}  # endpoint → {method: multi-callable}
        self._channels: dict[str, grpc.Channel] = {}
        self._lock = threading.Lock()
        self._closed = False
        tune_for_large_messages(settings.rpc.malloc_tuning)

    def _methods(self, endpoint: str) -> dict:
        """{method: multi-callable} of `endpoint`, opening its channel on first use."""
        methods = self._callables.get(endpoint)
        if methods is None:
            if self._closed:
                raise RuntimeError(f"{type(self).__name__} is closed")
            with self._lock:
                methods = self._callables.get(endpoint)
                if methods is None:
                    channel = tls_mod.open_channel(endpoint, CHANNEL_OPTIONS, self.tls)
                    self._channels[endpoint] = channel
                    methods = self._callables[endpoint] = method_callables(channel, self.spec)
        return methods

    def _invoke(self, endpoint: str, method: str, request: Any, timeout: float) -> Any:
        """One blocking call; gRPC errors propagate as grpc.RpcError."""
        return self._methods(endpoint)[method](request, timeout=timeout, metadata=self._metadata,
                                               wait_for_ready=True)

    def _call(self, endpoint: str, method: str, request: Any, timeout: float) -> Any:
        """One blocking call, its failure raised as this service's PeerRpcError."""
        try:
            return self._invoke(endpoint, method, request, timeout)
        except grpc.RpcError as exc:
            raise self.error.from_grpc(endpoint, method, exc) from None

    def _serving_state(self, endpoint: str) -> str:
        raise NotImplementedError

    def wait_server_ready(self, endpoints: Iterable[str] | None = None, timeout_s: float | None = None) -> None:
        """Block until every endpoint (default: all of this client's) says SERVING.

        Unreachable servers are asked again every 0.2 s up to `timeout_s` (default
        PSJOB_WAIT_SERVER_TIMEOUT, 300 s), then TimeoutError names the missing ones and
        the last error; UNAUTHENTICATED is final at once — waiting would not fix a
        wrong token."""
        if timeout_s is None:
            timeout_s = self._settings.rpc.wait_server_timeout_s
        pending = list(endpoints or self.endpoints)
        last_error = ""
        t_end = time.monotonic() + timeout_s
        while pending:
            still = []
            for ep in pending:
                try:
                    if self._serving_state(ep) != "SERVING":
                        still.append(ep)
                except grpc.RpcError as exc:
                    if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
                        raise self.error.from_grpc(ep, "Status", exc) from None
                    last_error = f" (last error from {ep}: {exc.code().name}: {exc.details()})"
                    still.append(ep)
            pending = still
            if pending:
                if time.monotonic() > t_end:
                    raise TimeoutError(f"{self.peers} not ready after {timeout_s:.0f}s: "
                                       f"{', '.join(pending)}{last_error}")
                time.sleep(0.2)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            for channel in self._channels.values():
                channel.close()
            self._channels.clear()
            self._callables.clear()


def method_callables(channel: grpc.Channel, spec: ServiceSpec) -> dict:
    """{method: multi-callable} for one channel: frames pass as bytes, messages through
    their classes. Registered methods skip gRPC's per-call method lookup."""
    out = {}
    for method, (request_cls, reply_cls) in spec.methods.items():
        out[method] = channel.unary_unary(
            spec.path(method),
            request_serializer=None if request_cls is None else request_cls.SerializeToString,
            response_deserializer=None if reply_cls is None else reply_cls.FromString,
            _registered_method=True)
    return out
