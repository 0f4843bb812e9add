"""Distributed lookup tables on disk: rows keyed by feature id, re-shardable.

A pserver hosts its share of a distributed table as a `psjob.foundation.tables.SparseTable`
and saves it from `SparseTable.export()` — every row keyed by id, ascending —
as one array file per part:

    <dir>/__tables__/<table>.shard-<k>-of-<N>.ids              int64 [n]
    <dir>/__tables__/<table>.shard-<k>-of-<N>.values           float32 [n, dim]
    <dir>/__tables__/<table>.shard-<k>-of-<N>.state.<name>     per-row optimizer state
    <dir>/__tables__/<table>.shard-<k>-of-<N>.meta.<name>      per-row metadata (last_seen, ...)

(state names are the kernels' accumulator names, e.g. ``moment`` for adagrad,
``moment1``/``moment2``/``beta1_pow_acc``/``beta2_pow_acc`` for adam; sgd has
none). `save_shard` returns the manifest entry of the shard (files with
shape, dtype, size, sha256). Nothing in the files refers to rows or to N, so
a table written by N pservers loads into M: pserver j of M reads every saved
shard (or only shard j when M == N, the common restart case), keeps the ids
with ``psjob.foundation.tables.shard_of(ids, M) == j`` — the placement every table op
uses — and writes them with `SparseTable.import_rows`.

A dense table saved whole (single-machine `save_persistables` of a program
with an ordinary embedding) loads as ids 0..H-1 (`dense_rows`).

Manifest entry of a table (under "tables"):

    {"height": H, "width": W, "dtype": "float32", "num_shards": N,
     "shards": [{"index": k, "rows": r, "optimizer": "sgd",
                 "files": {"ids": {...}, "values": {...}, "state.<name>": {...}, ...}}, ...]}

A delta (incremental) checkpoint (chain.py) writes the same parts for the
rows changed since its parent, plus the ids evicted since:

    <dir>/__tables__/<table>.shard-<k>-of-<N>.tombstones       int64 [t]

and marks the table entry ``"delta": true`` and each shard ``"tombstones": t``.
Such a table is only meaningful on top of its chain: `check_complete` (and so
every whole-table reader here) refuses it unless told otherwise.

``height`` is the table's declared height (only single-machine loads of a
table with dense ids use it); ``optimizer`` is absent in checkpoints written
before tables carried optimizer state (they load as values only).
"""
from __future__ import annotations

import hashlib

import numpy as np

from psjob.foundation.checkpoint import storage
from psjob.foundation.checkpoint.format import CheckpointError, read_array, write_array
from psjob.foundation.tables import SparseTable, TableShard, shard_of

TABLE_DIR = "__tables__"
TOMBSTONES = "tombstones"  # a delta shard's part: ids evicted since the parent


def shard_prefix(table: str, index: int, num_shards: int) -> str:
    return f"{TABLE_DIR}/{table}.shard-{index}-of-{num_shards}"


def save_shard(dirname: str, table: str, shard: TableShard, index: int, num_shards: int,
               optimizer: str = "", tombstones: np.ndarray | None = None) -> dict:
    """Write shard `index` of `num_shards` (a table's export, keyed by id); its manifest entry.
    With `tombstones` (int64 ids evicted since the parent) it is a delta's shard."""
    if not isinstance(shard, TableShard):
        raise CheckpointError(f"table {table!r}: save_shard needs a TableShard (SparseTable.export()), "
                              f"got {type(shard).__name__}")
    prefix = shard_prefix(table, index, num_shards)
    storage.for_path(dirname).makedirs(storage.join(dirname, TABLE_DIR))
    parts = [("ids", shard.ids), ("values", shard.values)]
    parts += [(f"state.{name}", arr) for name, arr in sorted(shard.state.items())]
    parts += [(f"meta.{name}", arr) for name, arr in sorted(shard.meta.items())]
    if tombstones is not None:
        parts.append((TOMBSTONES, np.asarray(tombstones, dtype=np.int64).reshape(-1)))
    files = {}
    for part, arr in parts:
        rel = f"{prefix}.{part}"
        entry = write_array(storage.join(dirname, rel), arr)
        entry["file"] = rel
        files[part] = entry
    doc = {"index": int(index), "rows": len(shard), "files": files}
    if tombstones is not None:
        doc["tombstones"] = int(np.asarray(tombstones).size)
    if optimizer:
        doc["optimizer"] = optimizer
    return doc


def table_entry(height: int, width: int, dtype: str, shards: list, delta: bool = False) -> dict:
    num = {s["index"] for s in shards}
    doc = {"height": int(height), "width": int(width), "dtype": str(dtype),
           "num_shards": len(num), "shards": sorted(shards, key=lambda s: s["index"])}
    if delta:
        doc["delta"] = True
    return doc


def is_delta(doc: dict) -> bool:
    return bool(doc.get("delta"))


def check_complete(table: str, doc: dict, allow_delta: bool = False) -> None:
    if is_delta(doc) and not allow_delta:
        raise CheckpointError(f"table {table!r} is a delta (only the rows changed since its parent checkpoint): "
                              "restore it through its chain, or make it whole with `psjob checkpoint compact`")
    want = set(range(int(doc.get("num_shards", 0))))
    have = {int(s["index"]) for s in doc.get("shards", [])}
    if not want or want != have:
        raise CheckpointError(f"table {table!r}: the checkpoint holds shards {sorted(have)} of "
                              f"{doc.get('num_shards')}; some pserver did not save its shard")


def _read_part(dirname: str, table: str, files: dict, part: str) -> np.ndarray:
    return read_array(storage.join(dirname, files[part]["file"]), files[part], f"{table} {part}")


def _read_shard(dirname: str, table: str, shard: dict, with_state: bool = True,
                with_meta: bool = True) -> TableShard:
    files = shard["files"]
    ids, values = _read_part(dirname, table, files, "ids"), _read_part(dirname, table, files, "values")
    if ids.ndim != 1 or values.ndim != 2 or ids.shape[0] != values.shape[0]:
        raise CheckpointError(f"table {table!r} shard {shard['index']}: {ids.shape[0]} ids for "
                              f"{values.shape[0]} rows")
    groups: dict[str, dict[str, np.ndarray]] = {"state": {}, "meta": {}}
    wanted = {group for group, want in (("state", with_state), ("meta", with_meta)) if want}
    for part in files:
        group, _, name = part.partition(".")
        if group in wanted and name:
            groups[group][name] = _read_part(dirname, table, files, part)
    try:
        return TableShard(ids=ids.astype(np.int64, copy=False), values=values, **groups)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"table {table!r} shard {shard['index']}: {exc}") from exc


def read_tombstones(dirname: str, table: str, shard: dict) -> np.ndarray:
    """A delta shard's tombstones (int64 ids evicted since the parent), checksum-verified."""
    files = shard["files"]
    if TOMBSTONES not in files:
        return np.zeros(0, np.int64)
    ids = _read_part(dirname, table, files, TOMBSTONES)
    if ids.ndim != 1:
        raise CheckpointError(f"table {table!r} shard {shard['index']}: tombstones must be 1-D ids")
    return ids.astype(np.int64, copy=False)


def read_rows(dirname: str, table: str, doc: dict, index: int, num_shards: int,
              optimizer: str | None = None, allow_delta: bool = False) -> list[TableShard]:
    """The saved rows pserver `index` of `num_shards` owns (by `shard_of`), one TableShard per
    saved shard that holds any. Every file read is checksum-verified.

    `optimizer` (the live table's rule): a shard saved under another rule is read without
    its state — state columns can share names across rules (adagrad's and decayed_adagrad's
    `moment`) while meaning different things — so its rows start with fresh state."""
    check_complete(table, doc, allow_delta)
    out = []
    same_layout = int(doc["num_shards"]) == num_shards
    for shard in doc["shards"]:
        if same_layout and int(shard["index"]) != index:
            continue  # the same placement: only our own shard holds our ids
        saved_rule = shard.get("optimizer")
        rows = _read_shard(dirname, table, shard,
                           with_state=not (optimizer and saved_rule and saved_rule != optimizer))
        mine = shard_of(rows.ids, num_shards) == index
        if bool(mine.all()):
            out.append(rows)
        elif mine.any():
            out.append(rows.take(mine))
    return out


def dense_rows(values: np.ndarray, index: int, num_shards: int) -> TableShard:
    """A dense [H, W] table (single-machine save) as ids 0..H-1; the ones this pserver owns."""
    values = np.asarray(values)
    if values.ndim != 2:
        raise CheckpointError(f"a dense table must be 2-D [ids, width], got {list(values.shape)}")
    ids = np.arange(values.shape[0], dtype=np.int64)
    mine = shard_of(ids, num_shards) == index
    return TableShard(ids=ids[mine], values=values[mine])


def _with_fresh_state(table: SparseTable, rows: TableShard) -> TableShard:
    """`rows` with the optimizer state a new row of `table` starts with (drawn by a scratch table
    of the same config, so the live table's counters are untouched)."""
    rows = rows.take(np.argsort(rows.ids, kind="stable"))
    scratch = SparseTable(table.config)
    scratch.lookup(rows.ids)
    fresh = scratch.export()
    if not np.array_equal(fresh.ids, rows.ids):
        raise CheckpointError(f"table {table.config.name!r}: cannot give fresh optimizer state to "
                              "saved rows the table's admission policy refuses")
    return TableShard(ids=rows.ids, values=rows.values.astype(np.float32, copy=False), state=fresh.state,
                      meta=rows.meta)


def import_into(table: SparseTable, name: str, shards: list[TableShard]) -> int:
    """Write checkpoint rows into a live table (ids the checkpoint lacks keep their rows); rows
    saved without this table's optimizer state (values only: a dense save, or a save under
    another optimizer) start with fresh state. Everything is checked before the table is
    touched. Returns the rows imported."""
    want = set(SparseTable(table.config).export().state)
    prepared = []
    for rows in shards:
        if rows.dim != table.dim:
            raise CheckpointError(f"table {name!r}: the checkpoint's rows are {rows.dim} wide, this "
                                  f"pserver's table is {table.dim}")
        if set(rows.state) != want:
            rows = _with_fresh_state(table, TableShard(ids=rows.ids, values=rows.values, meta=rows.meta))
        prepared.append(rows)
    for rows in prepared:
        table.import_rows(rows)
    return sum(len(r) for r in prepared)


def assemble_state(dirname: str, table: str, doc: dict, state: str, optimizer: str,
                   fresh: np.ndarray) -> np.ndarray | None:
    """One optimizer-state column of the whole table, dense: what a single-process program
    trained by `optimizer` holds in that accumulator. `fresh` (the accumulator as the startup
    program made it, [height, ...]) supplies the rows the table never held. None when some
    shard was saved by another rule or without that state (an sgd table), or its per-row
    state has another width than `fresh`."""
    check_complete(table, doc)
    out = np.array(fresh, copy=True)
    height = out.shape[0]
    for shard in doc["shards"]:
        if shard.get("optimizer") != optimizer or f"state.{state}" not in shard["files"]:
            return None
        rows = _read_shard(dirname, table, shard, with_meta=False)
        values = rows.state[state]
        if values.shape[1:] != out.shape[1:]:
            return None
        ids = rows.ids
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= height):
            raise CheckpointError(f"table {table!r}: ids in [{int(ids.min())}, {int(ids.max())}] do not fit "
                                  f"{height} dense rows (a table keyed by hashed ids has no dense form)")
        out[ids] = values
    return out


def assemble(dirname: str, table: str, doc: dict, height: int | None = None) -> np.ndarray:
    """The whole table as one dense [height, width] array (single-machine loads, inspection).

    Only a table whose ids are 0..height-1 fits; hash ids raise CheckpointError."""
    check_complete(table, doc)
    height = int(doc["height"] if height is None else height)
    out = np.zeros((height, int(doc["width"])), dtype=doc["dtype"])
    for shard in doc["shards"]:
        rows = _read_shard(dirname, table, shard, with_state=False, with_meta=False)
        ids = rows.ids
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= height):
            raise CheckpointError(f"table {table!r}: ids in [{int(ids.min())}, {int(ids.max())}] do not fit "
                                  f"{height} dense rows (a table keyed by hashed ids has no dense form)")
        out[ids] = rows.values
    return out


def rows_digest(rows: TableShard) -> str:
    """sha256 (16 hex digits) of a set of rows — ids ascending and their values: what a pserver
    logs after a restore, so a resize can be checked row for row against the checkpoint."""
    order = np.argsort(rows.ids, kind="stable")
    h = hashlib.sha256(rows.ids[order].astype("<i8").tobytes())
    h.update(np.ascontiguousarray(rows.values[order], dtype="<f4").tobytes())
    return h.hexdigest()[:16]
