"""Deterministic initial rows: value (i, c) is a function of (table key, id, column).

Counter layout: column ``c`` of draw ``k`` uses counter ``k * 2**32 + c``;
``uniform`` uses draw 0; ``normal`` uses draws 0 and 1 for a Box-Muller pair
(only the cosine half is kept, so columns stay independent of each other);
``truncated_normal`` redraws the entries beyond 2 std with draws (2r, 2r+1)
in round r = 1, 2, ... (each round redraws ~4.6% of what is left, so after
24 rounds the chance that an entry is still out of range is ~1e-32; such an
entry would be clipped). The outcome depends only on (key, id, column).
"""
from __future__ import annotations

import numpy as np

from psjob.tables import hashing
from psjob.tables.config import InitializerConfig

_DRAW = 1 << 32
_TRUNCATE_AT = 2.0
_MAX_ROUNDS = 24


def _counters(dim: int, draw: int) -> np.ndarray:
    return np.arange(dim, dtype=np.uint64) + np.uint64(draw * _DRAW)


def _normal(key: int, ids: np.ndarray, dim: int, draw: int) -> np.ndarray:
    u1 = hashing.uniform(key, ids, _counters(dim, draw))
    u2 = hashing.uniform(key, ids, _counters(dim, draw + 1))
    # 1 - u1 is in (0, 1], so the log is finite.
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


def initial_rows(config: InitializerConfig, key: int, ids: np.ndarray, dim: int) -> np.ndarray:
    """float32 ``[len(ids), dim]`` initial values for ``ids`` (a new array)."""
    n = ids.shape[0]
    if config.kind == "constant":
        return np.full((n, dim), config.value, np.float32)
    if config.kind == "uniform":
        u = hashing.uniform(key, ids, _counters(dim, 0))
        return (config.low + (config.high - config.low) * u).astype(np.float32)
    z = _normal(key, ids, dim, 0)
    if config.kind == "truncated_normal":
        for round_ in range(1, _MAX_ROUNDS + 1):
            bad_rows, bad_cols = np.nonzero(np.abs(z) > _TRUNCATE_AT)
            if bad_rows.size == 0:
                break
            redraw = _normal(key, ids[bad_rows], dim, 2 * round_)
            z[bad_rows, bad_cols] = redraw[np.arange(bad_rows.size), bad_cols]
        np.clip(z, -_TRUNCATE_AT, _TRUNCATE_AT, out=z)
    return (config.mean + config.std * z).astype(np.float32)
