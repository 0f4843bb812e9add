"""A checkpoint's tables in an open format (Parquet), and back: `psjob export`, `psjob checkpoint import`.

A checkpoint keeps each distributed table as numpy files per pserver shard
(tables.py); serving systems and data tools want the rows in a format any of
them reads. `export_checkpoint` writes a directory (docs/user/checkpoints.md,
"Exported tables (Parquet)", is the contract):

    <out>/manifest.json                       written last: format, version, source, tables, dense
    <out>/tables/<table>/part-<k>.parquet     the rows saved by pserver k, ascending id
    <out>/dense/<var>.npy                     every dense variable of the checkpoint, by name

Parquet columns: ``id`` int64, ``embedding`` fixed_size_list<float32>[dim],
the per-row metadata the table tracks (``last_seen``: the step of the row's
last push; ``show``/``click`` for score-evicted tables) and, with
``with_optimizer_state``, the optimizer's per-row accumulators as
``opt_<name>`` (adagrad ``opt_moment``, adam ``opt_moment1``, ...). A column
whose rows are vectors is a fixed_size_list, a scalar per row a plain column.

Every file of the checkpoint is read with its sha256 checked before anything
appears at <out> (the export reads each file once and that read is the
verification, as `psjob checkpoint verify` does it); the export is built in a
temporary sibling directory and renamed into place, so <out> holds a whole
export or nothing.

A delta checkpoint (chain.py) exports as a delta: each table's files hold the
rows changed since its parent, and `tombstones-<k>.parquet` (one `id` column)
the ids evicted since; the manifest marks the table `"delta": true` and its
source names the parent. A consumer applies it to what it holds: delete the
tombstones' ids, then upsert the rows.

`import_export` turns such a directory back into a checkpoint for any number
of pservers, placing rows with `psjob.foundation.tables.shard_of` as a restore does;
rows exported without optimizer state are saved values-only, so a restore
gives them the state a new row starts with.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from psjob.foundation.checkpoint import chain as chains
from psjob.foundation.checkpoint import storage
from psjob.foundation.checkpoint.format import (
    CheckpointError,
    array_sha256,
    new_manifest,
    read_var,
    write_array,
    write_manifest,
)
from psjob.foundation.checkpoint.store import has_manifest, inspect_dir, newest_good, step_dirname
from psjob.foundation.checkpoint.tables import (
    _read_shard,
    check_complete,
    is_delta,
    read_tombstones,
    save_shard,
    table_entry,
)
from psjob.foundation.tables import TableShard, concat_shards, shard_of

EXPORT_FORMAT = "psjob.foundation.tables.parquet"
EXPORT_VERSION = 1
EXPORT_MANIFEST = "manifest.json"
# DuckDB's own row-group size is 122,880 rows and it parallelises by row group; at 128Ki rows a
# group of a dim-8..128 table carries 4..64 MiB of embeddings: large enough for scans to run at
# disk speed, small enough that a point lookup (id statistics prune the rest) reads one group.
DEFAULT_ROW_GROUP_ROWS = 128 * 1024
OPT_PREFIX = "opt_"
_SAFE = re.compile(r"[^A-Za-z0-9._@-]")


def _safe_name(name: str) -> str:
    """A file name for a variable or table name (names are Paddle var names: mostly safe already)."""
    safe = _SAFE.sub("_", name)
    return safe if safe not in ("", ".", "..") else f"_{safe}"


# -- the source checkpoint ------------------------------------------------------------------

def resolve(path: str, step: int | None = None) -> tuple[str, dict]:
    """(save directory, manifest) of `path`: a save itself, a root's step `step`, or a root's newest
    good checkpoint. Raises CheckpointError when that checkpoint is not complete and intact (sizes)."""
    if step is not None:
        path = storage.join(path, step_dirname(step))
    elif not has_manifest(path):
        best = newest_good(path)
        if best is None:
            raise CheckpointError(f"no complete checkpoint under {path!r}")
        path = best.path
    info = inspect_dir(path)
    if not info.ok:
        raise CheckpointError(f"checkpoint {path!r} is {info.status}: {info.reason}; refusing to export it")
    return path, cast(dict, info.manifest)  # an ok checkpoint's manifest was read


# -- arrow columns ----------------------------------------------------------------------------

def _arrow_column(arr: np.ndarray) -> pa.Array:
    arr = np.ascontiguousarray(arr)
    if arr.ndim == 1:
        return pa.array(arr)
    width = int(np.prod(arr.shape[1:]))
    return pa.FixedSizeListArray.from_arrays(pa.array(arr.reshape(-1)), width)


def _columns(rows: TableShard, with_state: bool) -> list[tuple[dict, np.ndarray]]:
    """(manifest entry, array) of each exported column, in column order."""
    out: list[tuple[dict[str, Any], np.ndarray]] = [
        ({"name": "id", "role": "id"}, rows.ids), ({"name": "embedding", "role": "embedding"}, rows.values)]
    out += [({"name": name, "role": "meta", "source": f"meta.{name}"}, arr) for name, arr in sorted(rows.meta.items())]
    if with_state:
        out += [({"name": OPT_PREFIX + name, "role": "optimizer_state", "source": f"state.{name}"}, arr)
                for name, arr in sorted(rows.state.items())]
    for spec, arr in out:
        spec.update(dtype=arr.dtype.name, shape=[int(d) for d in arr.shape[1:]])
    return out


def _file_digest(path: str) -> tuple[int, str]:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return os.path.getsize(path), h.hexdigest()


# -- export -------------------------------------------------------------------------------------

def _table_optimizer(name: str, tdoc: dict) -> str | None:
    rules = {s.get("optimizer") for s in tdoc["shards"]}
    if len(rules) != 1:
        raise CheckpointError(f"table {name!r}: shards were saved under different optimizers {sorted(map(str, rules))}")
    return rules.pop()


def _export_tombstones(src: str, name: str, tdoc: dict, out: str, rel_dir: str) -> dict:
    """A delta table's tombstones, one `id` file per saved shard."""
    files, total = [], 0
    for shard in sorted(tdoc["shards"], key=lambda s: int(s["index"])):
        ids = np.sort(read_tombstones(src, name, shard))  # sha256-checked
        rel = f"{rel_dir}/tombstones-{int(shard['index']):05d}.parquet"
        path = os.path.join(out, rel)
        pq.write_table(pa.table({"id": pa.array(ids)}, metadata={"psjob.table": name, "psjob.tombstones": "1"}),
                       path, compression="zstd", use_dictionary=False, write_statistics=["id"])
        size, digest = _file_digest(path)
        files.append({"path": rel, "rows": int(ids.size), "bytes": size, "sha256": digest})
        total += int(ids.size)
    return {"rows": total, "files": files, "columns": [{"name": "id", "role": "id", "dtype": "int64", "shape": []}]}


def _export_table(src: str, name: str, tdoc: dict, out: str, with_state: bool, row_group_rows: int) -> dict:
    check_complete(name, tdoc, allow_delta=True)
    optimizer = _table_optimizer(name, tdoc)
    rel_dir = f"tables/{_safe_name(name)}"
    os.makedirs(os.path.join(out, rel_dir))
    files, columns, total = [], None, 0
    for shard in sorted(tdoc["shards"], key=lambda s: int(s["index"])):
        rows = _read_shard(src, name, shard)  # every part, sha256-checked (the verification)
        cols = _columns(rows, with_state and optimizer is not None)
        specs = [spec for spec, _ in cols]
        if columns is None:
            columns = specs
        elif specs != columns:
            raise CheckpointError(f"table {name!r}: shard {shard['index']} has columns {specs}, "
                                  f"shard 0 has {columns}")
        table = pa.table({spec["name"]: _arrow_column(arr) for spec, arr in cols},
                         metadata={"psjob.table": name, "psjob.export.format": EXPORT_FORMAT})
        rel = f"{rel_dir}/part-{int(shard['index']):05d}.parquet"
        path = os.path.join(out, rel)
        # No dictionaries (ids are distinct, floats rarely repeat); id statistics let readers
        # skip the row groups a lookup's ids cannot be in (each file is sorted by id).
        pq.write_table(table, path, row_group_size=row_group_rows, compression="zstd", use_dictionary=False,
                       write_statistics=["id"])
        size, digest = _file_digest(path)
        files.append({"path": rel, "rows": len(rows), "bytes": size, "sha256": digest})
        total += len(rows)
    doc = {"files": files, "rows": total, "dim": int(tdoc["width"]), "height": int(tdoc["height"]),
           "dtype": tdoc["dtype"], "optimizer": optimizer, "optimizer_state": bool(with_state and optimizer),
           "source_shards": int(tdoc["num_shards"]), "row_group_rows": row_group_rows, "columns": columns}
    if is_delta(tdoc):
        doc["delta"] = True
        doc["tombstones"] = _export_tombstones(src, name, tdoc, out, rel_dir)
    return doc


def _export_dense(src: str, doc: dict, out: str) -> dict:
    os.makedirs(os.path.join(out, "dense"))
    dense: dict[str, dict] = {}
    cache: dict[str, Any] = {}
    used: set[str] = set()
    for name, entry in sorted(doc["vars"].items()):
        arr = read_var(src, name, entry, cache)  # sha256-checked
        base = _safe_name(name)
        rel = f"dense/{base}.npy"
        n = 1
        while rel.lower() in used:  # two names that sanitize alike (or differ only in case)
            rel, n = f"dense/{base}.{n}.npy", n + 1
        used.add(rel.lower())
        np.save(os.path.join(out, rel), np.ascontiguousarray(arr), allow_pickle=False)
        dense[name] = {"file": rel, "shape": [int(d) for d in arr.shape], "dtype": arr.dtype.name,
                       "sha256": array_sha256(arr)}
        if entry.get("lod"):
            dense[name]["lod"] = entry["lod"]
    return dense


def _fsync_tree(root: str) -> None:
    for d, _subdirs, files in os.walk(root):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                os.fsync(fh.fileno())
        storage.LOCAL.sync_dir(d)


def _check_out(out: str, what: str) -> None:
    if os.path.isdir(out) and not os.listdir(out):
        return
    if os.path.lexists(out):
        raise CheckpointError(f"{what} {out!r} already exists; give a new directory (nothing is overwritten)")


def export_checkpoint(src: str, out: str, *, with_optimizer_state: bool = False,
                      row_group_rows: int = DEFAULT_ROW_GROUP_ROWS, step: int | None = None) -> dict:
    """Export checkpoint `src` (a save, or a root: its newest good checkpoint or `step`) to the
    local directory `out` as Parquet tables + .npy dense variables; returns the manifest."""
    if storage.is_uri(out):
        raise CheckpointError(f"export output {out!r}: write to a local directory (copy it to object "
                              "storage afterwards); the source may be s3://")
    if not isinstance(row_group_rows, int) or row_group_rows < 1:
        raise CheckpointError(f"row_group_rows must be a positive int, got {row_group_rows!r}")
    _check_out(out, "export output")
    path, doc = resolve(src, step)
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(out))}.tmp-", dir=parent)
    try:
        tables = {name: _export_table(path, name, tdoc, tmp, with_optimizer_state, row_group_rows)
                  for name, tdoc in sorted(doc.get("tables", {}).items())}
        manifest = {"format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                    "source": {k: doc.get(k) for k in ("step", "kind", "time", "position", "trainers", "chain")
                               if doc.get(k) is not None} | {"checkpoint": path},
                    "tables": tables, "dense": _export_dense(path, doc, tmp)}
        with open(os.path.join(tmp, EXPORT_MANIFEST), "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
        _fsync_tree(tmp)
        if os.path.isdir(out):
            os.rmdir(out)  # an empty directory the caller made: replaced by the export
        os.rename(tmp, out)
        storage.LOCAL.sync_dir(parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


# -- import -------------------------------------------------------------------------------------

def read_export_manifest(dirname: str) -> dict:
    path = os.path.join(dirname, EXPORT_MANIFEST)
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise CheckpointError(f"{dirname!r} has no {EXPORT_MANIFEST}: not a complete psjob export") from None
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: unreadable manifest: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise CheckpointError(f"{path}: format {doc.get('format') if isinstance(doc, dict) else None!r} "
                              f"is not {EXPORT_FORMAT!r}")
    if doc.get("version") != EXPORT_VERSION:
        raise CheckpointError(f"{path}: version {doc.get('version')!r}; this psjob reads version {EXPORT_VERSION}")
    if not isinstance(doc.get("tables"), dict) or not isinstance(doc.get("dense"), dict):
        raise CheckpointError(f"{path}: malformed manifest (tables/dense must be objects)")
    return doc


def _check_file(dirname: str, entry: dict) -> str:
    path = os.path.join(dirname, entry["path"])
    if not os.path.isfile(path):
        raise CheckpointError(f"{path}: missing (the manifest lists it)")
    size, digest = _file_digest(path)
    if size != entry["bytes"] or digest != entry["sha256"]:
        raise CheckpointError(f"{path}: {size} bytes, sha256 {digest[:16]}…; the manifest says "
                              f"{entry['bytes']} bytes, {entry['sha256'][:16]}… (file corrupt or replaced)")
    return path


def _numpy(column: pa.ChunkedArray, spec: dict, where: str) -> np.ndarray:
    if column.null_count:
        raise CheckpointError(f"{where}: column {spec['name']!r} has {column.null_count} null(s)")
    arr = column.combine_chunks()
    if spec["shape"]:
        arr = arr.flatten()
    out = arr.to_numpy(zero_copy_only=False)
    if out.dtype.name != spec["dtype"]:
        raise CheckpointError(f"{where}: column {spec['name']!r} is {out.dtype.name}, the manifest says {spec['dtype']}")
    return out.reshape((len(column), *spec["shape"]))


def _rows_of(table: pa.Table, columns: list, where: str) -> TableShard:
    arrays = {}
    for spec in columns:
        if spec["name"] not in table.column_names:
            raise CheckpointError(f"{where}: no column {spec['name']!r}")
        arrays[spec["name"]] = _numpy(table.column(spec["name"]), spec, where)
    groups: dict[str, dict[str, np.ndarray]] = {"state": {}, "meta": {}}
    for spec in columns:
        group, _, name = spec.get("source", "").partition(".")
        if group in groups:
            groups[group][name] = arrays[spec["name"]]
    return TableShard(ids=arrays["id"], values=arrays["embedding"], **groups)


def _empty_rows(columns: list) -> TableShard:
    arrays = {s["name"]: np.zeros((0, *s["shape"]), dtype=s["dtype"]) for s in columns}
    table = pa.table({name: _arrow_column(arr) for name, arr in arrays.items()})
    return _rows_of(table, columns, "empty")


def _import_table(src: str, out: str, name: str, tdoc: dict, num_shards: int) -> dict:
    columns = tdoc["columns"]
    if [c["name"] for c in columns[:2]] != ["id", "embedding"] or columns[0]["dtype"] != "int64":
        raise CheckpointError(f"table {name!r}: the first columns must be id (int64) and embedding")
    paths = [_check_file(src, f) for f in tdoc["files"]]
    files = [pq.ParquetFile(p) for p in paths]
    shards, seen = [], 0
    for index in range(num_shards):
        pieces = []
        for path, pf in zip(paths, files):
            for group in range(pf.num_row_groups):
                where = f"{path} row group {group}"
                rows = _rows_of(pf.read_row_group(group, columns=[c["name"] for c in columns]), columns, where)
                mine = shard_of(rows.ids, num_shards) == index
                if mine.any():
                    pieces.append(rows.take(mine))
        try:
            rows = concat_shards(pieces) if pieces else _empty_rows(columns)
        except ValueError as exc:
            raise CheckpointError(f"table {name!r}: {exc}") from exc
        seen += len(rows)
        optimizer = tdoc.get("optimizer") if tdoc.get("optimizer_state") else ""
        shards.append(save_shard(out, name, rows, index, num_shards, optimizer=optimizer or ""))
    if seen != tdoc["rows"]:
        raise CheckpointError(f"table {name!r}: read {seen} rows, the manifest says {tdoc['rows']}")
    return table_entry(tdoc.get("height", seen), tdoc["dim"], tdoc.get("dtype", "float32"), shards)


def _import_dense(src: str, out: str, dense: dict) -> dict:
    vars_ = {}
    for name, e in sorted(dense.items()):
        path = os.path.join(src, e["file"])
        try:
            arr = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{path}: cannot read dense variable {name!r}: {exc}") from exc
        if list(arr.shape) != list(e["shape"]) or arr.dtype.name != e["dtype"] or array_sha256(arr) != e["sha256"]:
            raise CheckpointError(f"{path}: {arr.dtype.name}{list(arr.shape)} does not match the manifest's "
                                  f"{e['dtype']}{e['shape']} and sha256 for {name!r} (file corrupt or replaced)")
        entry = write_array(storage.join(out, name), arr)
        entry["file"] = name
        if e.get("lod"):
            entry["lod"] = e["lod"]
        vars_[name] = entry
    return vars_


def import_export(src: str, out: str, num_shards: int | None = None) -> dict:
    """Write the export at `src` as a psjob checkpoint (a save directory) at `out`, its tables split
    for `num_shards` pservers (default: as many as the exported checkpoint had); its manifest."""
    man = read_export_manifest(src)
    if chains.is_delta_doc(man.get("source")) or any(t.get("delta") for t in man["tables"].values()):
        raise CheckpointError(f"{src!r} is the export of a delta (only the rows changed since its parent, and "
                              "tombstones): import a whole export (export a base, or `psjob checkpoint compact` "
                              "the chain first)")
    if num_shards is not None and (not isinstance(num_shards, int) or num_shards < 1):
        raise CheckpointError(f"the number of pservers must be a positive int, got {num_shards!r}")
    local = not storage.is_uri(out)
    if local:
        _check_out(out, "import output")
        parent = os.path.dirname(os.path.abspath(out))
        os.makedirs(parent, exist_ok=True)
        target = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(out))}.tmp-", dir=parent)
    else:
        if storage.for_path(out).is_dir(out):
            raise CheckpointError(f"import output {out!r} already holds objects; give a new prefix")
        target = out
    try:
        tables = {name: _import_table(src, target, name, tdoc, num_shards or int(tdoc["source_shards"]))
                  for name, tdoc in sorted(man["tables"].items())}
        source = man.get("source", {})
        doc = new_manifest(_import_dense(src, target, man["dense"]), tables=tables or None,
                           step=source.get("step"), kind=source.get("kind") or "checkpoint",
                           position=source.get("position"), trainers=source.get("trainers"),
                           imported={"format": man["format"], "version": man["version"]})
        write_manifest(target, doc)  # last: the directory is a checkpoint from here on
        if local:
            if os.path.isdir(out):
                os.rmdir(out)
            os.rename(target, out)
            storage.LOCAL.sync_dir(parent)
    except BaseException:
        if local:
            shutil.rmtree(target, ignore_errors=True)
        raise
    return doc
