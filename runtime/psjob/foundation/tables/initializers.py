"""Deterministic initial rows: value (i, c) is a function of (table key, id, column).

Random words come from `hashing.random_words` (32 bits each, two per 64-bit
counter block). Draw k of a row is the ``dim`` words starting at block
``k * 2**30``; ``uniform`` uses draw 0 (24 bits per value, all a float32
keeps); ``normal`` uses draws 0 and 1 for Box-Muller (only the cosine half
is kept, so columns stay independent); ``truncated_normal`` redraws the
entries beyond 2 std with draws (2r, 2r+1) in round r = 1, 2, ... (each round
redraws ~4.6% of what is left; after 24 rounds an entry still out of range,
probability ~1e-32, would be clipped). The outcome depends only on (key, id,
column) and never on the other ids created alongside. The uniform rows are made
in C where psjob's kernels are built (`psjob.foundation.kernels.native`), bitwise
the same, straight into the caller's array (a table's value column).
"""
from __future__ import annotations

import numpy as np

from psjob.foundation.kernels import native
from psjob.foundation.tables import hashing
from psjob.foundation.tables.config import InitializerConfig

_DRAW_BLOCKS = 1 << 30
_TRUNCATE_AT = 2.0
_MAX_ROUNDS = 24


def _words(key: int, ids: np.ndarray, dim: int, draw: int) -> np.ndarray:
    return hashing.random_words(key, ids, dim, first_block=draw * _DRAW_BLOCKS)


def _normal(key: int, ids: np.ndarray, dim: int, draw: int) -> np.ndarray:
    # Words + 1/2 scaled by 2^-32 lie strictly inside (0, 1): the log is finite.
    u1 = (_words(key, ids, dim, draw) + 0.5) * 2.0 ** -32
    u2 = _words(key, ids, dim, draw + 1) * 2.0 ** -32
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def initial_rows(config: InitializerConfig, key: int, ids: np.ndarray, dim: int,
                 out: np.ndarray | None = None) -> np.ndarray:
    """float32 ``[len(ids), dim]`` initial values for ``ids``: written into ``out`` (a float32
    array of that shape) when given, which is returned, else a new array."""
    n = ids.shape[0]
    if out is not None and (out.shape != (n, dim) or out.dtype != np.float32):
        raise ValueError(f"out must be float32 {(n, dim)}, got {out.dtype} {out.shape}")
    if config.kind == "constant":
        if out is None:
            return np.full((n, dim), config.value, np.float32)
        out[...] = config.value
        return out
    if config.kind == "uniform":
        if native.enabled and dim > 0 and 0 <= key < 1 << 64 and (out is None or native.fits(out)):
            target = np.empty((n, dim), np.float32) if out is None else out
            native.uniform_rows(key, np.ascontiguousarray(ids, np.int64), dim, config.high - config.low,
                                config.low, target)
            return target
        u = (_words(key, ids, dim, 0) >> np.uint32(8)).astype(np.float32)
        u *= np.float32(2.0 ** -24)                     # [0, 1) exactly in float32
        u *= np.float32(config.high - config.low)
        u += np.float32(config.low)
        return _into(out, u)
    z = _normal(key, ids, dim, 0)
    if config.kind == "truncated_normal":
        for round_ in range(1, _MAX_ROUNDS + 1):
            bad_rows, bad_cols = np.nonzero(np.abs(z) > _TRUNCATE_AT)
            if bad_rows.size == 0:
                break
            redraw = _normal(key, ids[bad_rows], dim, 2 * round_)
            z[bad_rows, bad_cols] = redraw[np.arange(bad_rows.size), bad_cols]
        np.clip(z, -_TRUNCATE_AT, _TRUNCATE_AT, out=z)
    return _into(out, (config.mean + config.std * z).astype(np.float32))


def _into(out: np.ndarray | None, values: np.ndarray) -> np.ndarray:
    if out is None:
        return values
    out[...] = values
    return out
