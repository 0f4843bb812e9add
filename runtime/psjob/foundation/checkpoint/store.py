"""A checkpoint root: numbered checkpoints, which of them are good, retention.

A root is a local directory or an `s3://BUCKET/PREFIX` URI (storage.py); both
hold the same layout:

    <root>/step-00000120/__manifest__.json    a checkpoint (complete: it has a manifest)
    <root>/step-00000130/                     being written, or abandoned: no manifest
    <root>/positions/trainer-<i>.json         each trainer's latest data position

Status of a checkpoint directory:

    ok          a valid manifest, and every file it lists exists with its
                recorded size (one directory listing, no reading)
    incomplete  no manifest (a save in progress, or one that crashed)
    damaged     a manifest, but a file is missing or has the wrong size, or a
                loader found a checksum mismatch and marked it (__corrupt__.txt)
    invalid     the manifest cannot be read or is not psjob's format

A delta (chain.py) is ok only if its parent is ok and is the very save it was
written on (chain id and manifest sha256), all the way to its base; otherwise
it is damaged, with the broken link named, and loaders fall back to the newest
link whose whole chain is good.

`candidates(root)` lists the ok ones newest first; loaders walk that list and
fall back to the next when reading a file reveals a checksum mismatch. Before
they take one, pservers and trainers read every dense file of it (`read_dense`),
so they agree on which checkpoint is good whatever file is damaged (`verify`
reads and hashes everything, tables included, for `psjob checkpoint verify`).

Retention keeps the `keep` newest ok checkpoints (and every link their chains
need, however old) and removes older ones, and
removes incomplete or damaged directories older than the newest ok one. It
never removes the newest ok checkpoint, whatever `keep` says, and never
touches anything newer than it (that may be a save in progress). A removed
checkpoint loses its manifest first (storage.Storage.remove_tree), so a
removal cut short never leaves something that looks complete.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from psjob.foundation.checkpoint import chain as chains
from psjob.foundation.checkpoint import storage
from psjob.foundation.checkpoint.backend import Storage
from psjob.foundation.checkpoint.format import (
    CORRUPT_MARKER,
    MANIFEST,
    CheckpointError,
    CorruptFileError,
    manifest_files,
    quick_check,
    read_array,
    read_manifest,
    read_var,
)

STEP_RE = re.compile(r"^step-(\d+)$")
OK, INCOMPLETE, DAMAGED, INVALID = "ok", "incomplete", "damaged", "invalid"


def step_dirname(step: int) -> str:
    return f"step-{int(step):08d}"


@dataclass(frozen=True)
class CheckpointInfo:
    path: str
    step: int
    status: str
    reason: str = ""
    manifest: dict | None = None
    links: tuple = ()  # an ok checkpoint's chain: the paths from its base to itself

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def kind(self) -> str:
        """"base" or "delta" (a save written before chains is a base)."""
        return chains.DELTA if chains.is_delta_doc(self.manifest) else chains.BASE


def inspect_dir(path: str, step: int | None = None, _seen: dict | None = None) -> CheckpointInfo:
    """Status of one saved directory (sizes only: one listing, no reading); a delta's parents
    are inspected too (`_seen`: {path: CheckpointInfo} already inspected)."""
    seen = {} if _seen is None else _seen
    if path in seen:
        return seen[path]
    info = _inspect_one(path, step)
    if info.ok and chains.is_delta_doc(info.manifest):
        info = _inspect_chain(info, seen)
    elif info.ok:
        info = CheckpointInfo(info.path, info.step, info.status, info.reason, info.manifest, (info.path,))
    seen[path] = info
    return info


def _inspect_chain(info: CheckpointInfo, seen: dict) -> CheckpointInfo:
    try:
        ppath, _pdoc = chains.check_parent(info.path, cast(dict, info.manifest))  # a delta's: read
    except chains.BrokenChain as exc:
        return CheckpointInfo(info.path, info.step, DAMAGED, str(exc), info.manifest)
    if len(seen) > chains.MAX_DEPTH:
        return CheckpointInfo(info.path, info.step, DAMAGED, "its chain is too long (a loop?)", info.manifest)
    seen.setdefault(info.path, CheckpointInfo(info.path, info.step, DAMAGED, "its chain loops", info.manifest))
    parent = inspect_dir(ppath, _seen=seen)
    if not parent.ok:
        return CheckpointInfo(info.path, info.step, DAMAGED,
                              f"its parent {ppath} is {parent.status}: {parent.reason}", info.manifest)
    return CheckpointInfo(info.path, info.step, OK, "", info.manifest, parent.links + (info.path,))


def _inspect_one(path: str, step: int | None) -> CheckpointInfo:
    if step is None:
        m = STEP_RE.match(storage.basename(path))
        step = int(m.group(1)) if m else -1
    store = storage.for_path(path)
    sizes = store.sizes(path)
    if MANIFEST not in sizes:
        return CheckpointInfo(path, step, INCOMPLETE, f"no {MANIFEST}")
    try:
        doc = read_manifest(path)
    except CheckpointError as exc:
        return CheckpointInfo(path, step, INVALID, str(exc))
    if doc.get("step") is not None:
        step = int(doc["step"])
    if CORRUPT_MARKER in sizes:
        try:
            why = store.read_bytes(storage.join(path, CORRUPT_MARKER)).decode(errors="replace")
        except FileNotFoundError:
            why = ""
        return CheckpointInfo(path, step, DAMAGED, f"marked corrupt: {why.strip()[:300]}", doc)
    for rel, _what, entry in manifest_files(doc):
        problem = quick_check(storage.join(path, rel), entry, sizes.get(rel))
        if problem:
            return CheckpointInfo(path, step, DAMAGED, problem, doc)
    return CheckpointInfo(path, step, OK, "", doc)


def scan(root: str, store: Storage | None = None) -> list[CheckpointInfo]:
    """Every step-N directory under root, oldest first. `store`: root's, when the caller
    resolved it already (storage.for_path(root))."""
    found: list[CheckpointInfo] = []
    seen: dict[str, CheckpointInfo] = {}
    store = storage.for_path(root) if store is None else store
    for name in sorted(store.list_dirs(root)):  # oldest first: parents before deltas
        m = STEP_RE.match(name)
        if m:
            found.append(inspect_dir(storage.join(root, name), int(m.group(1)), seen))
    return sorted(found, key=lambda c: (c.step, c.path))


def committed(root: str, store: Storage | None = None) -> list[CheckpointInfo]:
    """Checkpoints with a manifest (good or not), newest first; a save directory is its own list.
    `store`: root's, when the caller resolved it already."""
    if has_manifest(root):
        return [inspect_dir(root)]
    return [c for c in reversed(scan(root, store)) if c.status != INCOMPLETE]


def candidates(root: str) -> list[CheckpointInfo]:
    """Loadable checkpoints (status ok), newest first."""
    return [c for c in committed(root) if c.ok]


POSITIONS = "positions"  # trainers' position hints (fleet.checkpointer), under the checkpoint root


def position_path(root: str, trainer: int) -> str:
    """Where trainer `trainer` records its latest data position (async modes, every step)."""
    return storage.join(root, POSITIONS, f"trainer-{trainer}.json")


def newest_good(root: str) -> CheckpointInfo | None:
    found = candidates(root)
    return found[0] if found else None


def has_manifest(path: str) -> bool:
    """`path` is one save (not a root of checkpoints)."""
    manifest = storage.join(path, MANIFEST)
    return storage.for_path(manifest).exists(manifest)


def mark_corrupt(path: str, reason: str) -> None:
    """Record that a checkpoint failed its checksums (readers skip it from now on)."""
    marker = storage.join(path, CORRUPT_MARKER)
    try:
        storage.for_path(marker).write_bytes(marker, (reason + "\n").encode())
    except OSError:
        pass  # a read-only volume or bucket: every reader detects the corruption itself


def is_checkpoint_root(path: str) -> bool:
    return not has_manifest(path) and any(STEP_RE.match(n) for n in storage.for_path(path).list_dirs(path))


def read_dense(path: str, doc: dict, keep: Collection[str] = ()) -> dict[str, np.ndarray]:
    """Read every dense variable of the save in `path` (manifest `doc`) and check its sha256
    — the parameters and optimizer state, and what only the trainers hold (metric states) —
    one at a time; return the arrays named in `keep`. Raises CheckpointError (a
    CorruptFileError naming the file) at the first bad one.

    Pservers and trainers call it when they choose a checkpoint to restore, so they skip the
    same damaged ones: a pserver reads only the files of the variables it holds, a trainer
    only its own, and without it a checkpoint good for the pservers but corrupt in a
    trainer-side file would be restored by the pservers and fail every trainer's resume."""
    kept: dict[str, np.ndarray] = {}
    npz_cache: dict[str, Any] = {}
    for name, entry in sorted(doc.get("vars", {}).items()):
        arr = read_var(path, name, entry, npz_cache)
        if name in keep:
            kept[name] = arr
    return kept


def verify(path: str) -> list[str]:
    """Read every file of one saved directory and check its checksum; the problems found."""
    return [str(exc) for exc in _problems(path)]


def check_whole(path: str) -> None:
    """Raise the first problem of a checkpoint, reading every file of it and of every link of
    its chain — every pserver's shards, not only the caller's. Pservers that restore from the
    same root then judge the same files and so choose the same checkpoint: one that finds only
    its own shard intact must not load a checkpoint another pserver will reject. A file that
    fails its checksum raises CorruptFileError (chains.ChainCorrupt naming the link when it
    lies in an earlier link); anything else, e.g. an unreachable store, CheckpointError."""
    doc = read_manifest(path)
    links = chains.resolve(path, doc) if chains.is_delta_doc(doc) else [(path, doc)]
    for link, _ in links:
        for exc in _problems(link):
            if link != path and isinstance(exc, CorruptFileError):
                raise chains.ChainCorrupt(f"{link}: {exc}", link) from exc
            raise exc


def _problems(path: str) -> Iterator[CheckpointError]:
    try:
        doc = read_manifest(path)
    except CheckpointError as exc:
        yield exc
        return
    if chains.is_delta_doc(doc):
        try:
            chains.resolve(path, doc)
        except CheckpointError as exc:
            yield exc
    npz_cache: dict = {}
    for name, entry in sorted(doc["vars"].items()):
        try:
            read_var(path, name, entry, npz_cache)
        except CheckpointError as exc:
            yield exc
    for table, tdoc in sorted(doc.get("tables", {}).items()):
        for shard in tdoc.get("shards", []):
            for part, entry in sorted(shard.get("files", {}).items()):
                try:
                    read_array(storage.join(path, entry["file"]), entry, f"{table} shard {shard.get('index')} {part}")
                except CheckpointError as exc:
                    yield exc
    for table, tdoc in doc.get("tables", {}).items():
        want = set(range(int(tdoc.get("num_shards", 0))))
        have = {int(s["index"]) for s in tdoc.get("shards", [])}
        if want != have:
            yield CheckpointError(f"table {table!r}: shards {sorted(have)} of {tdoc.get('num_shards')}")


def apply_retention(root: str, keep: int, store: Storage | None = None) -> list[str]:
    """Remove old checkpoints beyond the `keep` newest good ones; the removed paths.
    `store`: root's, when the caller resolved it already."""
    keep = max(1, int(keep))
    store = storage.for_path(root) if store is None else store
    found = scan(root, store)
    good = [c for c in found if c.ok]
    if not good:
        return []
    newest = good[-1]
    needed = {link for c in good[-keep:] for link in c.links}  # a kept delta keeps its chain
    doomed = [c for c in good[:-keep] if c.path not in needed]
    doomed += [c for c in found if not c.ok and c.step < newest.step and c.path not in needed]
    removed = []
    for c in doomed:
        if c.path == newest.path:
            continue
        try:
            store.remove_tree(c.path, first=MANIFEST)
            removed.append(c.path)
        except OSError:
            continue
    return removed
