"""Incremental checkpoints: a base and the deltas written on top of it.

A *base* is a whole checkpoint. A *delta* is a checkpoint directory of the
same layout whose distributed tables hold only the rows changed since its
parent (created, pushed or imported), plus *tombstones*: the ids evicted
since. Its dense variables are whole (they are small next to the tables, and
every link is then a complete resume point for the trainers). Each link's
manifest names its place in the chain:

    "chain": {"id": "<32 hex>", "kind": "base" | "delta", "depth": k,
              "parent": {"id": ..., "path": "step-00000120", "manifest_sha256": ...},   deltas only
              "base":   {"id": ..., "path": "step-00000100"}}                          deltas only

`parent.path` is the parent's directory name beside the delta (the same
root), `manifest_sha256` the sha256 of the parent's `__manifest__.json` file:
a delta applies only to the exact save it was written on. A delta's manifest
is version 2 (format.DELTA_VERSION), so a reader that does not know chains
refuses it instead of loading a partial table as a whole one.

Restoring link L is: the base's rows, then for each delta in order, drop the
rows of its tombstones and of its ids, add its rows (an id evicted and
recreated in one interval is in both). `resolve` walks L's parents to the base
and checks every link (present, the recorded manifest digest and id); a link
that is missing, incomplete or damaged breaks the chain at that point, and
loaders fall back to the newest complete prefix. `compact` folds a chain into
a new base.
"""
from __future__ import annotations

import uuid
from collections.abc import Sequence

import numpy as np

from psjob.foundation.checkpoint import storage
from psjob.foundation.checkpoint.format import (
    DELTA_VERSION,
    CheckpointError,
    CorruptFileError,
    new_manifest,
    read_manifest,
    read_manifest_bytes,
    read_var,
    write_array,
    write_manifest,
)
from psjob.foundation.checkpoint.tables import (
    check_complete,
    is_delta,
    read_rows,
    read_tombstones,
    save_shard,
    table_entry,
)
from psjob.foundation.tables import TableShard, concat_shards, shard_of

CHAIN = "chain"
BASE, DELTA = "base", "delta"
MAX_DEPTH = 100000  # a guard against a cycle of hand-edited manifests


class BrokenChain(CheckpointError):
    """A delta's chain cannot be followed to its base: a link is missing, incomplete,
    replaced or damaged. `link` is the save at fault."""

    def __init__(self, message: str, link: str) -> None:
        super().__init__(message)
        self.link = link


class ChainCorrupt(BrokenChain):
    """A file of a chain's link failed its checksum (loaders mark that link corrupt)."""


def new_link_id() -> str:
    return uuid.uuid4().hex


def link_of(doc: dict | None) -> dict | None:
    """The manifest's chain entry (None: a save written before chains, or outside them)."""
    return (doc or {}).get(CHAIN)


def is_delta_doc(doc: dict | None) -> bool:
    return (link_of(doc) or {}).get("kind") == DELTA


def base_link(link_id: str) -> dict:
    return {"id": link_id, "kind": BASE, "depth": 0}


def delta_link(link_id: str, parent_path: str, parent_doc: dict, parent_sha256: str) -> dict:
    """The chain entry of a delta written on top of the save at `parent_path`."""
    parent = link_of(parent_doc)
    if not parent or not parent.get("id"):
        raise CheckpointError(f"{parent_path} is not part of a chain (no chain id): write a base")
    here = {"id": parent["id"], "path": storage.basename(parent_path)}
    return {"id": link_id, "kind": DELTA, "depth": int(parent.get("depth", 0)) + 1,
            "parent": dict(here, manifest_sha256=parent_sha256),
            "base": parent.get("base") or here}


def manifest_version(link: dict | None) -> dict:
    """Manifest keys a link adds (new_manifest's extras): its chain entry, and version 2 for a delta."""
    if not link:
        return {}
    extra: dict = {CHAIN: link}
    if link.get("kind") == DELTA:
        extra["version"] = DELTA_VERSION
    return extra


def _link(doc: dict) -> dict:
    link = link_of(doc)
    if link is None:
        raise BrokenChain(f"a delta's manifest has no {CHAIN!r} entry", "")
    return link


def parent_path(path: str, doc: dict) -> str:
    return storage.join(storage.parent(path), _link(doc)["parent"]["path"])


def check_parent(path: str, doc: dict) -> tuple[str, dict]:
    """(parent path, parent manifest) of delta `path`, checked against what the delta recorded.
    Raises BrokenChain naming the problem."""
    want = _link(doc)["parent"]
    ppath = parent_path(path, doc)
    try:
        got = read_manifest_bytes(ppath, required=False)
    except CheckpointError as exc:
        raise BrokenChain(f"{path} is a delta on {ppath}, whose manifest is unreadable: {exc}", ppath) from exc
    if got is None:
        raise BrokenChain(f"{path} is a delta on {ppath} (chain id {want.get('id')}), which is missing or "
                          "incomplete (no manifest): its parent is gone", ppath)
    pdoc, digest = got
    plink = link_of(pdoc) or {}
    if plink.get("id") != want.get("id") or digest != want.get("manifest_sha256"):
        raise BrokenChain(f"{path} is a delta on {ppath} (chain id {want.get('id')}, manifest sha256 "
                          f"{str(want.get('manifest_sha256'))[:16]}…), which now holds chain id {plink.get('id')}, "
                          f"manifest sha256 {digest[:16]}…: the parent was replaced", ppath)
    return ppath, pdoc


def resolve(path: str, doc: dict | None = None) -> list[tuple[str, dict]]:
    """[(path, manifest)] from the base to `path` (a base alone: one element). Every parent is
    checked (present, id and manifest digest); file sizes and checksums are the caller's
    (store.inspect_dir, the reads)."""
    first = doc if doc is not None else read_manifest(path)
    if first is None:
        raise CheckpointError(f"{path} has no manifest: not a checkpoint")
    links: list[tuple[str, dict]] = [(path, first)]
    seen = {(link_of(first) or {}).get("id")}
    while is_delta_doc(links[-1][1]):
        ppath, pdoc = check_parent(*links[-1])
        pid = (link_of(pdoc) or {}).get("id")
        if pid in seen or len(links) > MAX_DEPTH:
            raise BrokenChain(f"{path}: its chain loops at {ppath}", ppath)
        seen.add(pid)
        links.append((ppath, pdoc))
    return links[::-1]


# -- rows of a chain ---------------------------------------------------------------------------

def _common(shards: list[TableShard]) -> list[TableShard]:
    """The shards with only the state and meta columns all of them have (a chain whose optimizer
    changed midway restores those rows without state: they start with fresh state)."""
    state = set.intersection(*(set(s.state) for s in shards))
    meta = set.intersection(*(set(s.meta) for s in shards))
    return [s if set(s.state) == state and set(s.meta) == meta else
            TableShard(ids=s.ids, values=s.values, state={k: s.state[k] for k in state},
                       meta={k: s.meta[k] for k in meta}) for s in shards]


def _union(parts: Sequence[TableShard | None]) -> TableShard | None:
    shards = [s for s in parts if s is not None]
    if not shards:
        return None
    return shards[0] if len(shards) == 1 else concat_shards(_common(shards))


def apply_delta(rows: TableShard | None, tombstones: np.ndarray, changed: TableShard | None) -> TableShard | None:
    """`rows` after a delta: its tombstones' and changed ids' rows dropped, the changed rows added."""
    if rows is None:
        return changed
    gone = tombstones if changed is None else np.concatenate([tombstones, changed.ids])
    kept = rows.take(~np.isin(rows.ids, gone)) if gone.size else rows
    return _union([kept, changed])


def read_chain_rows(links: list[tuple[str, dict]], table: str, index: int, num_shards: int,
                    optimizer: str | None = None) -> list[TableShard]:
    """The rows of `table` pserver `index` of `num_shards` holds after the chain `links` (resolve's
    list), as read_rows gives them for one save. Every file read is checksum-verified; a
    CorruptFileError is re-raised as BrokenChain naming the link that holds the bad file."""
    rows: TableShard | None = None
    for path, doc in links:
        tdoc = doc.get("tables", {}).get(table)
        try:
            if tdoc is None:
                continue
            if not is_delta(tdoc):
                rows = _union(read_rows(path, table, tdoc, index, num_shards, optimizer))
                continue
            check_complete(table, tdoc, allow_delta=True)
            same = int(tdoc["num_shards"]) == num_shards
            parts = [read_tombstones(path, table, s) for s in tdoc["shards"] if not same or int(s["index"]) == index]
            tombs = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            tombs = tombs[shard_of(tombs, num_shards) == index]
            changed = _union(read_rows(path, table, tdoc, index, num_shards, optimizer, allow_delta=True))
            rows = apply_delta(rows, tombs, changed)
        except CorruptFileError as exc:
            raise ChainCorrupt(str(exc), path) from exc
    return [] if rows is None else [rows]


# -- compact ----------------------------------------------------------------------------------

def compact(path: str, out: str, num_shards: int | None = None) -> dict:
    """Fold the chain ending at `path` into a new base at `out` (a new directory or prefix), its
    tables split for `num_shards` pservers (default: as many as the newest link has); the
    manifest written (last). Every file read is checksum-verified; nothing at `out` is a
    checkpoint unless the whole base was written."""
    if storage.for_path(out).exists(storage.join(out, "__manifest__.json")):
        raise CheckpointError(f"compact output {out!r} already holds a checkpoint; give a new directory")
    links = resolve(path)
    newest_path, doc = links[-1]
    storage.for_path(out).makedirs(out)
    vars_: dict = {}
    npz: dict = {}
    for name, entry in sorted(doc["vars"].items()):
        arr = read_var(newest_path, name, entry, npz)
        new = write_array(storage.join(out, name), arr)
        new["file"] = name
        if entry.get("lod"):
            new["lod"] = entry["lod"]
        vars_[name] = new
    tables = {}
    for table, tdoc in sorted(doc.get("tables", {}).items()):
        n = int(num_shards or tdoc["num_shards"])
        rules = {s.get("optimizer") for s in tdoc["shards"]}
        rule = rules.pop() if len(rules) == 1 else None
        shards = []
        for index in range(n):
            found = read_chain_rows(links, table, index, n, rule)
            rows = found[0] if found else _empty_like(links, table)
            shards.append(save_shard(out, table, rows, index, n, optimizer=rule or ""))
        tables[table] = table_entry(tdoc["height"], tdoc["width"], tdoc["dtype"], shards)
    keep = {k: doc[k] for k in ("step", "kind", "position", "trainers", "job") if doc.get(k) is not None}
    base_id = new_link_id()
    manifest = new_manifest(vars_, tables=tables or None, **keep, **manifest_version(base_link(base_id)),
                            compacted_from={"path": newest_path, "id": (link_of(doc) or {}).get("id"),
                                            "links": len(links)})
    write_manifest(out, manifest)
    return manifest


def _empty_like(links: list[tuple[str, dict]], table: str) -> TableShard:
    for _path, doc in links:
        tdoc = doc.get("tables", {}).get(table)
        if tdoc is not None:
            return TableShard(ids=np.zeros(0, np.int64), values=np.zeros((0, int(tdoc["width"])), np.float32))
    raise CheckpointError(f"no link of the chain holds table {table!r}")
