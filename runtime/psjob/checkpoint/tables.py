"""Distributed lookup tables on disk: rows keyed by feature id, re-shardable.

A pserver saves the shard of a distributed table it holds as two arrays —
the global feature `ids` (int64) and their `values` — under

    <dir>/__tables__/<table>.shard-<k>-of-<N>.ids
    <dir>/__tables__/<table>.shard-<k>-of-<N>.values

and returns the manifest entry of the shard (files with shape, dtype, size,
sha256). Nothing in the files refers to local rows or to N, so a table
written by N pservers loads into M: pserver j of M reads every saved shard
(or only shard j when M == N, the common restart case), keeps the ids the
placement assigns to it and writes them at their local rows. Which id lives
where is asked of `psjob.fluid.transpiler.placement` only, the placement
seam every other table op uses.

Manifest entry of a table (under "tables"):

    {"height": H, "width": W, "dtype": "float32", "num_shards": N,
     "shards": [{"index": k, "rows": r, "files": {"ids": {...}, "values": {...}}}, ...]}
"""
from __future__ import annotations

import os

import numpy as np

from ..fluid.transpiler import placement
from .format import CheckpointError, read_array, write_array

TABLE_DIR = "__tables__"


def shard_prefix(table: str, index: int, num_shards: int) -> str:
    return os.path.join(TABLE_DIR, f"{table}.shard-{index}-of-{num_shards}")


def save_shard(dirname: str, table: str, values, index: int, num_shards: int) -> dict:
    """Write shard `index` of `num_shards` (local rows in placement order); its manifest entry."""
    values = np.asarray(values)
    if values.ndim != 2:
        raise CheckpointError(f"table {table!r}: a shard must be 2-D [rows, width], got {list(values.shape)}")
    ids = placement.ids_of_local_rows(values.shape[0], index, num_shards)
    prefix = shard_prefix(table, index, num_shards)
    os.makedirs(os.path.join(dirname, TABLE_DIR), exist_ok=True)
    files = {}
    for part, arr in (("ids", ids), ("values", values)):
        rel = f"{prefix}.{part}"
        entry = write_array(os.path.join(dirname, rel), arr)
        entry["file"] = rel
        files[part] = entry
    return {"index": int(index), "rows": int(values.shape[0]), "files": files}


def table_entry(height: int, width: int, dtype: str, shards: list) -> dict:
    num = {s["index"] for s in shards}
    return {"height": int(height), "width": int(width), "dtype": str(dtype),
            "num_shards": len(num), "shards": sorted(shards, key=lambda s: s["index"])}


def check_complete(table: str, doc: dict) -> None:
    want = set(range(int(doc.get("num_shards", 0))))
    have = {int(s["index"]) for s in doc.get("shards", [])}
    if not want or want != have:
        raise CheckpointError(f"table {table!r}: the checkpoint holds shards {sorted(have)} of "
                              f"{doc.get('num_shards')}; some pserver did not save its shard")


def _read_shard(dirname: str, table: str, shard: dict):
    files = shard["files"]
    ids = read_array(os.path.join(dirname, files["ids"]["file"]), files["ids"], f"{table} ids")
    values = read_array(os.path.join(dirname, files["values"]["file"]), files["values"], f"{table} values")
    if ids.ndim != 1 or values.ndim != 2 or ids.shape[0] != values.shape[0]:
        raise CheckpointError(f"table {table!r} shard {shard['index']}: {ids.shape[0]} ids for "
                              f"{values.shape[0]} rows")
    return ids, values


def load_shard(dirname: str, table: str, doc: dict, current, index: int, num_shards: int) -> np.ndarray:
    """This pserver's rows (`index` of `num_shards`), starting from `current` (its startup
    values: ids the checkpoint lacks keep them). Every file read is checksum-verified."""
    check_complete(table, doc)
    current = np.asarray(current)
    if current.ndim != 2 or current.shape[1] != int(doc["width"]):
        raise CheckpointError(f"table {table!r}: the checkpoint's rows are {doc['width']} wide, this "
                              f"pserver's shard is {list(current.shape)}")
    out = None
    same_layout = int(doc["num_shards"]) == num_shards
    for shard in doc["shards"]:
        if same_layout and int(shard["index"]) != index:
            continue  # the same placement: only our own shard holds our ids
        ids, values = _read_shard(dirname, table, shard)
        mine = placement.shard_of(ids, num_shards) == index
        every = bool(mine.all())
        if not every and not mine.any():
            continue
        rows = placement.local_rows(ids if every else ids[mine], index, num_shards)
        if rows.size and int(rows.max()) >= current.shape[0]:
            bad = int((ids if every else ids[mine])[rows >= current.shape[0]][0])
            raise CheckpointError(f"table {table!r}: id {bad} lies beyond this pserver's {current.shape[0]} rows "
                                  "(the program declares a smaller table than the checkpoint)")
        if (out is None and every and rows.size == current.shape[0] and values.dtype == current.dtype
                and bool((rows == np.arange(rows.size)).all())):
            out = values  # the saved shard is exactly this pserver's rows, in order: adopt it
            continue
        if out is None:
            out = np.array(current, copy=True)
        out[rows] = (values if every else values[mine]).astype(out.dtype, copy=False)
    return np.array(current, copy=True) if out is None else out


def assemble(dirname: str, table: str, doc: dict, height: int | None = None) -> np.ndarray:
    """The whole table as one dense [height, width] array (single-machine loads, inspection)."""
    check_complete(table, doc)
    height = int(doc["height"] if height is None else height)
    out = np.zeros((height, int(doc["width"])), dtype=doc["dtype"])
    for shard in doc["shards"]:
        ids, values = _read_shard(dirname, table, shard)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= height):
            raise CheckpointError(f"table {table!r}: ids up to {int(ids.max())} do not fit {height} rows")
        out[ids] = values
    return out
