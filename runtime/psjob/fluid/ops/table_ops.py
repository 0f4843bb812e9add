"""Ops over the pserver's hash-keyed sparse tables (psjob.foundation.tables.SparseTable).

A distributed lookup table lives on each pserver as a `SparseTable` object in
the scope (not an array): rows keyed by any int64 feature id, created on
first use by a deterministic per-id initializer, with per-row optimizer
state. The pserver startup program creates it (`create_sparse_table`), the
prefetch block reads it (`lookup_sparse_table` accepts a table as W), and
the table optimize block updates it (`sparse_table_push`). These kernels are
host-side: table rows live in host memory and travel over the network.
"""
from __future__ import annotations

import json

import numpy as np

from psjob.fluid.core import SelectedRows, to_numpy
from psjob.fluid.ops.registry import register_op
from psjob.foundation.tables import InitializerConfig, OptimizerConfig, SparseTable, TableConfig
from psjob.foundation.tables.accessor import AccessorConfig


def _json_attr(attrs, name):
    value = attrs.get(name)
    if value is None:
        return {}
    return json.loads(value) if isinstance(value, str) else dict(value)


def table_config_from_attrs(attrs) -> TableConfig:
    """The TableConfig an op's attributes describe (JSON-able parts only).

    Every pserver's startup program carries the same attributes, hence the
    same config: an id's initial row is the same wherever it lives."""
    if not attrs.get("table_name") or attrs.get("dim") is None:
        raise ValueError(f"create_sparse_table needs attrs table_name and dim, got {sorted(attrs)}")
    opt = _json_attr(attrs, "optimizer")
    accessor = _json_attr(attrs, "accessor") if attrs.get("accessor") else None
    return TableConfig(accessor=AccessorConfig(**accessor) if accessor else None,
                       name=attrs["table_name"], dim=int(attrs["dim"]), seed=int(attrs.get("seed", 0) or 0),
                       initializer=InitializerConfig(**_json_attr(attrs, "initializer")),
                       optimizer=OptimizerConfig(name=opt.get("name", "sgd"), lr=float(opt.get("lr", 0.01)),
                                                 hyper=opt.get("hyper", {})))


@register_op("scale_rows_by_batch")
def scale_rows_by_batch(ctx):
    """A trainer's SelectedRows table gradient times the batch size (the first dimension of
    Ids), as Paddle's trainers push a sparse gradient to an accessor table
    (FleetWrapper's push scales it by the batch size; foundation/tables/accessor.py)."""
    grad = ctx.input("X")
    if not isinstance(grad, SelectedRows):
        raise TypeError(f"scale_rows_by_batch: X must be SelectedRows, got {type(grad).__name__}")
    batch = int(np.shape(to_numpy(ctx.input("Ids")))[0])
    ctx.set_output("Out", SelectedRows(grad.rows, to_numpy(grad.values) * np.float32(batch), grad.height))


@register_op("create_sparse_table")
def create_sparse_table(ctx):
    """Pserver startup: an empty table for this shard (rows appear on first use)."""
    ctx.set_output("Out", SparseTable(table_config_from_attrs(ctx.attrs)))


@register_op("sparse_table_push")
def sparse_table_push(ctx):
    """Apply a SelectedRows gradient keyed by feature id, with the current learning rate."""
    table = ctx.input("W")
    if not isinstance(table, SparseTable):
        raise TypeError(f"sparse_table_push: {ctx.ins['W'][0]!r} holds {type(table).__name__}, not a SparseTable")
    grad = ctx.input("Grad")
    if not isinstance(grad, SelectedRows):
        raise TypeError(f"sparse_table_push: the gradient must be SelectedRows, got {type(grad).__name__}")
    if len(grad.rows) == 0:
        return
    lr = float(to_numpy(ctx.input("LearningRate")).reshape(-1)[0]) if ctx.has_input("LearningRate") else None
    table.push(np.asarray(to_numpy(grad.rows), dtype=np.int64), to_numpy(grad.values), lr=lr)
    table.end_step()
