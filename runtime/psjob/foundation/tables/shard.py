"""Checkpoint form of a sparse table: rows keyed by id, independent of placement.

A `TableShard` is what `SparseTable.export` returns and `import_rows` takes:
ids (int64, ascending, unique), their values and every per-row array of the
table (optimizer state and metadata), all plain numpy arrays owned by the
shard. Nothing in it refers to rows, slots or a pserver index, so shards can
be re-split for any number of pservers with `split_shard` (by the same
`shard_of` the pservers use) and combined with `concat_shards`.

Array names: ``state`` uses the kernels' accumulator names (``moment``,
``moment1``, ``beta1_pow_acc``, ...; beta pows are ``[n, 1]``); ``meta``
holds ``last_seen`` (int32 step of the last push or creation) and, for tables
whose eviction uses scores, ``show`` and ``click`` (float32).
"""
from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence

import numpy as np

from psjob.foundation.tables.hashing import shard_of


@dataclasses.dataclass(frozen=True)
class TableShard:
    ids: np.ndarray
    values: np.ndarray
    state: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    meta: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.ids, np.ndarray) or self.ids.dtype != np.int64 or self.ids.ndim != 1:
            raise TypeError(f"shard ids must be a 1-D int64 array, got "
                            f"{getattr(self.ids, 'dtype', type(self.ids))} {getattr(self.ids, 'shape', '')}")
        n = self.ids.shape[0]
        if not isinstance(self.values, np.ndarray) or self.values.ndim != 2 or self.values.shape[0] != n:
            raise ValueError(f"shard values must be a [{n}, dim] array, got shape {getattr(self.values, 'shape', None)}")
        for group in ("state", "meta"):
            for name, array in getattr(self, group).items():
                if not isinstance(array, np.ndarray) or array.shape[:1] != (n,):
                    raise ValueError(f"shard {group}[{name!r}] must have {n} rows, "
                                     f"got shape {getattr(array, 'shape', None)}")
            object.__setattr__(self, group, types.MappingProxyType(dict(getattr(self, group))))

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def dim(self) -> int:
        return int(self.values.shape[1])

    def take(self, index: np.ndarray) -> TableShard:
        """The rows at ``index`` (positions or a bool mask), as a new shard."""
        return TableShard(
            ids=self.ids[index], values=self.values[index],
            state={k: v[index] for k, v in self.state.items()},
            meta={k: v[index] for k, v in self.meta.items()},
        )


def split_shard(shard: TableShard, num_shards: int) -> list[TableShard]:
    """Split by `shard_of`: element i holds the rows pserver i of ``num_shards`` owns."""
    owner = shard_of(shard.ids, num_shards)
    return [shard.take(owner == i) for i in range(num_shards)]


def concat_shards(shards: Sequence[TableShard]) -> TableShard:
    """Union of shards with the same layout, sorted by id; an id in two shards is an error."""
    if not shards:
        raise ValueError("concat_shards needs at least one shard")
    first = shards[0]
    for other in shards[1:]:
        if (other.dim != first.dim or set(other.state) != set(first.state)
                or set(other.meta) != set(first.meta)):
            raise ValueError("cannot concatenate shards of different tables: dim, state or meta differ")
    ids = np.concatenate([s.ids for s in shards])
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    if ids.size > 1 and bool((ids[1:] == ids[:-1]).any()):
        dup = ids[1:][ids[1:] == ids[:-1]][0]
        raise ValueError(f"id {int(dup)} appears in more than one shard")
    return TableShard(
        ids=ids,
        values=np.concatenate([s.values for s in shards])[order],
        state={k: np.concatenate([s.state[k] for s in shards])[order] for k in first.state},
        meta={k: np.concatenate([s.meta[k] for s in shards])[order] for k in first.meta},
    )
