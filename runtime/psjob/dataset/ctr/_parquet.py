"""Parquet input for the CTR readers (through pyarrow).

A ColumnMap names the label column, the 13 dense columns and the 26
categorical ones; the default is the Criteo naming (label, I1..I13, C1..C26).
Each row group becomes Columns with vectorised Arrow → numpy conversions:

- dense: any numeric column; null → 0 (as an empty Criteo integer).
- categorical: an integer column is used as the ids; a string column holds
  Criteo hex values, hashed per slot like format "criteo" (null or "" → the
  slot's missing id).
- label: 0 or 1.

Rows that break a rule (label null or not 0/1, a null integer id, a string
that is not hex) follow the readers' policy: skipped and counted, or raised
as DataError naming the file, the row (1-based, as "line") and the problem.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from psjob.dataset.ctr import _formats
from psjob.dataset.ctr._errors import BadLine, DataError, Problem, ReaderStats, check_on_error
from psjob.dataset.ctr._layout import NUM_DENSE, NUM_SLOTS, hash_ids
from psjob.dataset.ctr._parse import Columns
from psjob.dataset.sources import open_binary


@dataclasses.dataclass(frozen=True)
class ColumnMap:
    label: str = "label"
    dense: tuple = tuple(f"I{i}" for i in range(1, NUM_DENSE + 1))
    sparse: tuple = tuple(f"C{i}" for i in range(1, NUM_SLOTS + 1))

    def __post_init__(self):
        object.__setattr__(self, "dense", tuple(self.dense))
        object.__setattr__(self, "sparse", tuple(self.sparse))
        if len(self.dense) != NUM_DENSE or len(self.sparse) != NUM_SLOTS:
            raise ValueError(f"a ColumnMap names {NUM_DENSE} dense and {NUM_SLOTS} sparse columns, "
                             f"got {len(self.dense)} and {len(self.sparse)}")

    @property
    def names(self):
        return [self.label, *self.dense, *self.sparse]


def columns(paths, mapping, on_error, stats):
    """Check the options now; return the lazy iterator of Columns."""
    mapping = mapping if isinstance(mapping, ColumnMap) else ColumnMap(**(mapping or {}))
    check_on_error(on_error)
    import pyarrow.parquet as pq  # imported at the first Parquet read, not with psjob
    stats = stats if stats is not None else ReaderStats()
    return _iterate(pq, paths, mapping, on_error, stats)


def _iterate(pq, paths, mapping, on_error, stats):
    for path in paths:
        with open_binary(path) as f:
            parquet = pq.ParquetFile(f)
            missing = [n for n in mapping.names if n not in parquet.schema_arrow.names]
            if missing:
                raise ValueError(f"{path}: no column(s) {missing} (columns: {parquet.schema_arrow.names}); "
                                 "pass columns=ColumnMap(label=..., dense=[...], sparse=[...])")
            first_row = 1
            for group in range(parquet.num_row_groups):
                table = parquet.read_row_group(group, columns=mapping.names)
                cols = _convert(table, mapping, path, first_row, on_error, stats)
                first_row += table.num_rows
                stats.examples += len(cols)
                yield cols


def _convert(table, mapping, path, first_row, on_error, stats):
    import pyarrow as pa
    n = table.num_rows
    stats.lines += n
    bad = {}  # row → (problem, detail); the first problem of a row wins

    def flag(mask, problem, detail):
        for row in np.flatnonzero(mask):
            bad.setdefault(int(row), (problem, detail))

    label_col = table.column(mapping.label)
    label = np.nan_to_num(label_col.to_numpy(zero_copy_only=False).astype(np.float64), nan=-1.0)
    flag((label != 0) & (label != 1), Problem.BAD_LABEL, f"column {mapping.label!r} is not 0 or 1")
    dense = np.zeros((n, NUM_DENSE), dtype=np.float32)
    for j, name in enumerate(mapping.dense):
        col = table.column(name)
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise ValueError(f"{path}: dense column {name!r} is {col.type}, not numeric")
        with np.errstate(over="ignore"):  # a float64 beyond float32's range becomes inf: flagged below
            dense[:, j] = col.fill_null(0).to_numpy(zero_copy_only=False)
    flag(~np.isfinite(dense).all(axis=1), Problem.NON_FINITE,
         "a dense column is nan or inf, or beyond float32's range")
    ids = np.zeros((n, NUM_SLOTS), dtype=np.int64)
    for s, name in enumerate(mapping.sparse):
        col = table.column(name)
        if pa.types.is_integer(col.type):
            flag(col.is_null().to_numpy(zero_copy_only=False), Problem.EMPTY_SLOT, f"column {name!r} is null")
            ids[:, s] = col.fill_null(0).to_numpy(zero_copy_only=False)
        elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            values, not_hex = _formats.hex_values(col)  # null or "" → the slot's missing id
            flag(not_hex, Problem.NON_NUMERIC, f"column {name!r} is not hexadecimal of at most "
                                               f"{_formats.MAX_HEX_DIGITS} digits")
            ids[:, s] = hash_ids(s, values)
        else:
            raise ValueError(f"{path}: sparse column {name!r} is {col.type}, not integer or string")
    keep = np.ones(n, dtype=bool)
    for row, (problem, detail) in sorted(bad.items()):
        record = BadLine(path, first_row + row, problem, detail)
        if on_error == "raise":
            raise DataError(record)
        stats.record(record)
        keep[row] = False
    lod = np.arange(int(keep.sum()) + 1, dtype=np.int64)
    return Columns(dense[keep], label[keep].astype(np.int64),
                   tuple(np.ascontiguousarray(ids[keep, s]) for s in range(NUM_SLOTS)),
                   tuple(lod for _ in range(NUM_SLOTS)))

