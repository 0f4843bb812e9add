"""Sparse embedding tables keyed by arbitrary int64 feature ids (what a pserver hosts).

Public surface (everything else in this package is an implementation module):

* `TableConfig` (+ `InitializerConfig`, `OptimizerConfig`, `AdmissionConfig`,
  `EvictionConfig`): frozen, validated configuration of one table;
* `SparseTable`: lookup / push / end_step, tick / evict / stats / export,
  import_rows;
* `TableShard`, `split_shard`, `concat_shards`: checkpoint rows keyed by id,
  re-splittable for any number of pservers;
* `shard_of`: the stable id -> pserver placement function.

Layering: tables use `psjob.foundation.kernels.optimizers` for the update math and
numpy; they import nothing from rpc, pserver or the operator. See
docs/dev/tables.md for the design and measured figures.
"""
from psjob.foundation.tables.config import (
    INITIALIZERS,
    OPTIMIZERS,
    AdmissionConfig,
    EvictionConfig,
    InitializerConfig,
    OptimizerConfig,
    TableConfig,
)
from psjob.foundation.tables.hashing import shard_of
from psjob.foundation.tables.shard import TableShard, concat_shards, split_shard
from psjob.foundation.tables.table import SparseTable, TableStats

__all__ = [
    "INITIALIZERS", "OPTIMIZERS", "AdmissionConfig", "EvictionConfig", "InitializerConfig",
    "OptimizerConfig", "TableConfig", "SparseTable", "TableStats", "TableShard",
    "concat_shards", "split_shard", "shard_of",
]
