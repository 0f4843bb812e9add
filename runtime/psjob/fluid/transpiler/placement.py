"""Feature id → pserver placement of a distributed lookup table (one replaceable seam).

The seed places id `i` on pserver `i % N` and stores it there at local row
`i // N`. Everything that maps ids to shards or rows — the trainer's
`split_ids`, the pserver's `lookup_sparse_table`, the gradient rows'
localisation, the pserver startup's shard selection and the table save —
calls the functions here and nothing else, so a different placement (the
hash-sharded, unbounded tables of psjob.tables) replaces this module only.

Ids are host-side int64 arrays (numpy); kernels move them to/from the device.
"""
from __future__ import annotations

import numpy as np


def _check_ids(ids) -> np.ndarray:
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size and int(ids.min()) < 0:
        bad = int(ids[ids < 0][0])
        raise ValueError(f"feature id {bad} is negative: table ids must be >= 0")
    return ids


def shard_of(ids, num_shards: int) -> np.ndarray:
    """The pserver index (0..num_shards-1) holding each id."""
    return _check_ids(ids) % int(num_shards)


def local_rows(ids, shard_index: int, num_shards: int) -> np.ndarray:
    """Row of each id inside its shard; raises if an id belongs to another shard."""
    ids = _check_ids(ids)
    if ids.size:
        wrong = ids % num_shards != shard_index
        if wrong.any():
            raise ValueError(f"feature id {int(ids[wrong][0])} belongs to shard "
                             f"{int(ids[wrong][0] % num_shards)}, not shard {shard_index} of {num_shards}")
    return ids // int(num_shards)


def shard_ids(height: int, shard_index: int, num_shards: int) -> np.ndarray:
    """The ids (< height) a shard holds, in local-row order."""
    return np.arange(shard_index, int(height), int(num_shards), dtype=np.int64)


def shard_height(height: int, shard_index: int, num_shards: int) -> int:
    """Rows a shard holds for a table of `height` ids."""
    return len(range(shard_index, int(height), int(num_shards)))


def ids_of_local_rows(num_rows: int, shard_index: int, num_shards: int) -> np.ndarray:
    """The global id stored at each local row 0..num_rows-1 of a shard."""
    return np.arange(int(num_rows), dtype=np.int64) * int(num_shards) + int(shard_index)
