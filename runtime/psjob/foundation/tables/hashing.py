"""Stable 64-bit hashing of feature ids: shard placement and counter-based RNG.

Everything here is a pure function of its integer inputs (never Python's
salted ``hash``), so every process of a job, in any run, on any number of
pservers, computes the same placement and the same random numbers.

* `mix64` is the splitmix64 finalizer (Steele, Lea & Flood 2014): a bijection
  of 64-bit words with full avalanche.
* `shard_of` places an id on ``mix64(id ^ SHARD_SALT) % num_shards``, reading
  the id's two's-complement bits as unsigned. It is the one function that maps
  keys to pservers (cf. ps-lite's Slicer); swap it here and nowhere else.
* `random_words` is a counter-based generator: block j of (key, id) is
  ``mix64(mix64(id ^ key) + GAMMA * (j + 1))``; its low then high 32 bits are
  words 2j and 2j+1. `uniform` scales the top 53 bits of block j to [0, 1).
  No state, so a row's initial values do not depend on which pserver creates
  it, when, or next to which other ids. Where psjob's C kernels are built
  (`psjob.foundation.kernels.native`) they compute the same words, bitwise.
"""
from __future__ import annotations

import hashlib

import numpy as np
import numpy.typing as npt

from psjob.foundation.kernels import native

GAMMA = 0x9E3779B97F4A7C15          # splitmix64's increment
SHARD_SALT = 0x5053_4A4F_4253_4844  # "PSJOBSHD": placement independent of the index hash
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
_TWO_POW_53 = 2.0 ** -53


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer of a uint64 array, computed in place; returns ``x``."""
    x ^= x >> _S30
    x *= _M1
    x ^= x >> _S27
    x *= _M2
    x ^= x >> _S31
    return x


def as_u64(ids: np.ndarray) -> np.ndarray:
    """A new uint64 array holding the two's-complement bits of int64 ``ids``."""
    return np.array(ids, dtype=np.int64, copy=True).view(np.uint64)


def derive_key(seed: int, label: str) -> int:
    """A 64-bit key from a seed and a label (table name, purpose): stable across runs."""
    digest = hashlib.blake2b(f"{seed}:{label}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def shard_of(ids: npt.ArrayLike, num_shards: int) -> np.ndarray:
    """The pserver index (int64 in [0, num_shards)) of each int64 id."""
    if isinstance(num_shards, bool) or not isinstance(num_shards, (int, np.integer)) or num_shards < 1:
        raise ValueError(f"num_shards must be a positive int, got {num_shards!r}")
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu" or (ids.dtype.kind == "u" and ids.dtype.itemsize == 8):
        raise TypeError(f"ids must be signed integers (int64), got dtype {ids.dtype}")
    x = as_u64(ids)
    x ^= np.uint64(SHARD_SALT)
    mix64(x)
    x %= np.uint64(num_shards)
    return x.astype(np.int64)


def _blocks(key: int, ids: np.ndarray, counters: np.ndarray) -> np.ndarray:
    base = as_u64(ids)
    base ^= np.uint64(key)
    mix64(base)
    steps = (np.asarray(counters, dtype=np.uint64) + np.uint64(1)) * np.uint64(GAMMA)
    x = base[:, None] + steps[None, :]
    return mix64(x)


def random_words(key: int, ids: np.ndarray, count: int, first_block: int = 0) -> np.ndarray:
    """uint32 ``[len(ids), count]``: words ``2 * first_block + c`` of (key, id)."""
    if native.enabled and count > 0 and 0 <= first_block < 1 << 62 and 0 <= key < 1 << 64:
        return native.random_words(key, np.ascontiguousarray(ids, np.int64), count, first_block)
    blocks = _blocks(key, ids, np.arange(first_block, first_block + (count + 1) // 2, dtype=np.uint64))
    words = np.empty((ids.shape[0], 2 * blocks.shape[1]), np.uint32)
    words[:, 0::2] = blocks & np.uint64(0xFFFFFFFF)   # explicit halves: endian-independent
    words[:, 1::2] = blocks >> np.uint64(32)
    return words[:, :count]


def uniform(key: int, ids: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """float64 uniforms in [0, 1) of shape ``[len(ids), len(counters)]``.

    Entry (i, j) depends only on (key, ids[i], counters[j]).
    """
    x = _blocks(key, ids, counters)
    x >>= np.uint64(11)
    out = x.astype(np.float64)
    out *= _TWO_POW_53
    return out
