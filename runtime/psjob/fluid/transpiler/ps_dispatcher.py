"""Which pserver holds which variable block.

A dispatcher turns a list of blocks into a list of endpoints, one per block.
Every process (each trainer, each pserver) runs the transpiler itself, so the
answer must be the same everywhere: RoundRobin depends only on the order of
the blocks, and HashName hashes the block name with CRC-32 — Python's
built-in `hash()` of a str is salted per process and would scatter the same
block to different pservers in different processes.
"""
from __future__ import annotations

import zlib


class PSDispatcher:
    """Base class: holds the endpoint list; `dispatch` maps blocks to endpoints."""

    def __init__(self, pserver_endpoints):
        eps = list(pserver_endpoints)
        if not eps:
            raise ValueError("a PSDispatcher needs at least one pserver endpoint")
        self._eps = eps
        self._step = 0

    @property
    def eps(self) -> list[str]:
        return list(self._eps)

    def reset(self) -> None:
        self._step = 0

    def dispatch(self, varlist) -> list[str]:
        raise NotImplementedError


def _block_name(var) -> str:
    name = getattr(var, "name", var)
    return name() if callable(name) else str(name)


class RoundRobin(PSDispatcher):
    """Blocks go to the endpoints in turn, continuing where the last call stopped."""

    def dispatch(self, varlist) -> list[str]:
        out = []
        for _ in varlist:
            out.append(self._eps[self._step])
            self._step = (self._step + 1) % len(self._eps)
        return out


def stable_hash(name: str) -> int:
    """A process-independent hash of a name (CRC-32 of its UTF-8 bytes)."""
    return zlib.crc32(name.encode("utf-8"))


class HashName(PSDispatcher):
    """A block goes to endpoint stable_hash(block name) % number of endpoints."""

    def dispatch(self, varlist) -> list[str]:
        return [self._eps[stable_hash(_block_name(v)) % len(self._eps)] for v in varlist]
