"""This process's trainer ring: one per process, formed once (the startup program's
`gen_nccl_id`, `paddle.distributed.init_parallel_env`, or the first all-reduce)."""
from __future__ import annotations

import os
import sys
import threading

from psjob.cluster.collective.ring import CollectiveError, PeerLostError, Ring
from psjob.cluster.rpc.auth import read_token
from psjob.cluster.rpc.tls import TlsConfigError
from psjob.foundation import roles
from psjob.foundation.role_env import CollectiveEnv
from psjob.foundation.settings import process_settings

_lock = threading.Lock()
_ring: Ring | None = None
_device = None  # nccl.NcclRing over _ring, made at the first CUDA all-reduce


def environment() -> CollectiveEnv:
    return CollectiveEnv.from_environ()


def ring(rank=None, endpoints=None) -> Ring:
    """The ring of this process, formed (rendezvous with every trainer) on first call.
    `rank`/`endpoints` (a transpiled gen_nccl_id's) must agree with a ring already formed."""
    global _ring
    with _lock:
        if _ring is not None:
            if endpoints is not None and (list(endpoints) != _ring.endpoints or int(rank) != _ring.rank):
                raise CollectiveError(f"this process already joined the ring {_ring.endpoints} as trainer "
                                      f"{_ring.rank}; a program asks for {list(endpoints)} as trainer {rank}")
            return _ring
        env = environment()
        if endpoints is None:
            if not env.endpoints and env.world_size > 1:
                raise CollectiveError("collective training needs PADDLE_TRAINER_ENDPOINTS (every trainer's "
                                      "host:port) for its ring; launch with psjob launch --worker_num N")
            rank, endpoints = env.rank, env.endpoints or ("127.0.0.1:0",)
        # The ring is formed once per process, from its settings as they are now (a
        # collective trainer's entry point is its script: paddle.distributed or a startup op).
        try:
            rpc = process_settings().rpc
        except (TlsConfigError, ValueError) as exc:
            raise CollectiveError(str(exc)) from None
        timeout, tls = rpc.collective_timeout_s, rpc.tls
        _ring = Ring(int(rank), endpoints, read_token(env.auth_token_file), timeout_s=timeout,
                     tls=tls).connect()
        if _ring.size > 1:
            _exit_peer_lost_on_uncaught()
        return _ring


def lost_peer(exc: BaseException | None) -> bool:
    """Whether `exc`, or an exception it was raised from, is a lost ring peer."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, PeerLostError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _exit_peer_lost_on_uncaught() -> None:
    """A training script that dies of a lost ring peer exits roles.PEER_LOST_EXIT (after the
    usual traceback): the launcher and the worker Job restart it to re-form the ring without
    counting it as a failure — the trainer that was lost is the one that failed."""
    previous = sys.excepthook
    if getattr(previous, "_psjob_peer_lost", False):
        return

    def hook(kind, value, tb):
        previous(kind, value, tb)
        if lost_peer(value):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(roles.PEER_LOST_EXIT)

    hook._psjob_peer_lost = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def device_ring():
    """The NCCL communicator of this process's ring for CUDA arrays (cupy.cuda.nccl), its
    unique id sent over the TCP ring; None where NCCL is not available (no cupy, no NCCL, no
    GPU): the caller then all-reduces on the host."""
    global _device
    host = ring()
    with _lock:
        if _device is None:
            from psjob.cluster.collective.nccl import NcclRing, NcclUnavailableError, nccl_module
            try:
                nccl_module()
            except NcclUnavailableError:
                _device = False
            else:
                _device = NcclRing(host)
        return _device or None


def reset() -> None:
    """Close and forget this process's ring (tests; a process that trains twice)."""
    global _ring, _device
    with _lock:
        if _device:
            _device.close()
        if _ring is not None:
            _ring.close()
        _ring = _device = None
