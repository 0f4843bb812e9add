"""This process's trainer ring: one per process, formed once (the startup program's
`gen_nccl_id`, `paddle.distributed.init_parallel_env`, or the first all-reduce)."""
from __future__ import annotations

import threading

from ..ps.auth import read_token
from ..role_env import CollectiveEnv, process_environment
from .ring import CollectiveError, Ring

ENV_TIMEOUT = "PSJOB_COLLECTIVE_TIMEOUT_S"  # how long a trainer waits on a silent peer
_lock = threading.Lock()
_ring: Ring | None = None


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
        settings = process_environment()
        timeout = float(settings.get(ENV_TIMEOUT, "") or 60.0)
        _ring = Ring(int(rank), endpoints, read_token(env.auth_token_file), timeout_s=timeout).connect()
        return _ring


def reset() -> None:
    """Close and forget this process's ring (tests; a process that trains twice)."""
    global _ring
    with _lock:
        if _ring is not None:
            _ring.close()
        _ring = None
