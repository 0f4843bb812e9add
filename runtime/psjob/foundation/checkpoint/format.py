"""The format of saves and checkpoints: array files and the manifest.

A saved directory holds one file per array and `__manifest__.json`, which
lists every array with its shape, dtype, size and sha256 (docs/user/checkpoints.md
has the full layout). This module is the only code that lays out those
bytes (storage.py moves them); it depends on numpy and the standard library
only, so the framework's `fluid.io` and the distributed checkpoint code share it.

The bytes live in a `storage.Storage`: a local directory or an S3 bucket
(`s3://BUCKET/PREFIX`); a "directory" here is a path or URI. Crash safety
rests on two rules, kept by both stores:

1. every file appears whole or not at all (locally: a temporary name,
   fsync, rename; on S3: an object appears when its upload completes), so a
   reader sees the old file or the new one, never a torn one;
2. the manifest is written last, the same way, and the directory is fsync'ed
   after it: a directory without a valid manifest is not a save.

Array files are numpy's `.npy` format (read back with allow_pickle=False).
The recorded sha256 is that of the array's C-order bytes (not of the file),
so it names the data whatever the header looks like. Writing and reading
stream 16 MiB chunks and hash each chunk on a helper thread while the next
one is written or read; hashlib and file I/O release the GIL, so a save
costs about max(disk, sha256) rather than their sum (bench/checkpoint.py).
"""
from __future__ import annotations

import hashlib
import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from psjob.foundation.checkpoint import paddle_wire, storage
from psjob.foundation.checkpoint.backend import BinaryFile

MANIFEST = "__manifest__.json"
# Written next to the manifest by a loader that found a corrupt file: every later
# reader (a restarting pserver, a resuming trainer, `psjob checkpoint list`) skips
# the checkpoint too, so processes agree on which one they resume from.
CORRUPT_MARKER = "__corrupt__.txt"
FORMAT = "psjob.vars"
# Version 1 is the single-machine format of the first psjob release. The keys
# added since (time, step, kind, tables, position, trainers, job, file_bytes)
# are optional: older readers ignore them, newer readers tolerate their absence.
VERSION = 1
# Version 2 marks a delta (incremental) checkpoint (chain.py): its tables hold only the rows
# changed since its parent, so a reader that does not know chains must refuse it rather than
# load it as a whole model. Bases stay version 1.
DELTA_VERSION = 2
VERSIONS = (VERSION, DELTA_VERSION)
# A manifest entry's "format" for a variable written in Paddle's tensor format (paddle_wire)
# instead of .npy/.npz: an inference model saved for Paddle Inference to read as well.
PADDLE_TENSORS = "paddle"
CHUNK_BYTES = 16 << 20


class CheckpointError(ValueError):
    """A saved directory or file is missing, corrupt, or does not fit the program."""


class CorruptFileError(CheckpointError):
    """A file listed by a manifest is missing, truncated, or fails its checksum."""


# -- hashing --------------------------------------------------------------------------

def array_sha256(arr: np.ndarray) -> str:
    # numpy's stubs give ndarray the buffer protocol (__buffer__) only for Python 3.12 on.
    return hashlib.sha256(memoryview(np.ascontiguousarray(arr)).cast("B")).hexdigest()  # type: ignore[arg-type]


class _HashPipe:
    """sha256 of a byte stream, computed on a helper thread (chunks are not copied:
    the caller keeps each chunk's buffer alive and unchanged until `hexdigest`)."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._q: queue.Queue = queue.Queue(maxsize=4)
        self._error: BaseException | None = None
        self._t = threading.Thread(target=self._run, name="psjob-sha256", daemon=True)
        self._t.start()

    def _run(self) -> None:
        while True:
            chunk = self._q.get()
            if chunk is None:
                return
            try:
                self._h.update(chunk)
            except BaseException as exc:  # surfaced by hexdigest
                self._error = exc

    def feed(self, chunk: memoryview) -> None:
        self._q.put(chunk)

    def hexdigest(self) -> str:
        self._q.put(None)
        self._t.join()
        if self._error is not None:
            raise self._error
        return self._h.hexdigest()


def _chunks(buf: memoryview) -> Iterator[memoryview]:
    for start in range(0, len(buf), CHUNK_BYTES):
        yield buf[start:start + CHUNK_BYTES]


# -- atomic files -----------------------------------------------------------------------

def atomic_write(path: str, write: Callable[[BinaryFile], None]) -> None:
    """Call write(file) on a file whose content appears at `path` whole, or not at all."""
    with storage.for_path(path).open_write(path) as f:
        write(f)


# -- arrays -----------------------------------------------------------------------------

def write_array(path: str, arr: npt.ArrayLike) -> dict:
    """Write one array as .npy (atomically); returns its manifest entry minus "file"."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype.hasobject:
        raise CheckpointError(f"{path}: cannot save an object array")
    digest = {}

    def write(f: BinaryFile) -> None:
        np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(arr))
        pipe = _HashPipe()
        try:
            for chunk in _chunks(memoryview(arr.reshape(-1)).cast("B")):  # type: ignore[arg-type]
                pipe.feed(chunk)
                f.write(chunk)
        finally:
            digest["sha256"] = pipe.hexdigest()
        digest["file_bytes"] = f.tell()

    atomic_write(path, write)
    return {"shape": [int(d) for d in arr.shape], "dtype": arr.dtype.name, "bytes": int(arr.nbytes),
            "sha256": digest["sha256"], "file_bytes": int(digest["file_bytes"])}


def _open_npy(path: str, f: BinaryFile) -> tuple[tuple[int, ...], bool, np.dtype]:
    try:
        major, _minor = np.lib.format.read_magic(f)
        if major == 1:
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    except (ValueError, EOFError, OSError) as exc:
        raise CorruptFileError(f"{path}: not a readable .npy file ({exc})") from exc
    if dtype.hasobject:
        raise CheckpointError(f"{path}: holds Python objects; refusing to load it")
    return tuple(shape), bool(fortran), dtype


def read_array(path: str, entry: dict, what: str = "") -> np.ndarray:
    """Read an array file and check it against its manifest entry (shape, dtype, sha256).

    Raises CheckpointError naming the file when it is missing, truncated or corrupt."""
    what = what or storage.basename(path)
    try:
        f = storage.for_path(path).open_read(path)
    except storage.StorageError:
        raise  # the store itself is unusable (credentials, bucket): not this file's fault
    except OSError as exc:
        raise CorruptFileError(f"{path}: cannot open {what!r}: {exc.strerror or exc}") from exc
    with f:
        shape, fortran, dtype = _open_npy(path, f)
        if list(shape) != list(entry["shape"]) or dtype.name != entry["dtype"]:
            raise CorruptFileError(f"{path}: holds {dtype.name}{list(shape)}, the manifest says "
                                  f"{entry['dtype']}{list(entry['shape'])} for {what!r}")
        out = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
        buf = memoryview(out.reshape(-1, order="A")).cast("B")  # type: ignore[arg-type]  # (array_sha256)
        pipe = _HashPipe()
        got = 0
        try:
            for chunk in _chunks(buf):
                n = f.readinto(chunk)
                got += n or 0
                if n != len(chunk):
                    break
                pipe.feed(chunk)
        finally:
            digest = pipe.hexdigest()
        if got != out.nbytes:
            raise CorruptFileError(f"{path}: truncated: {got} of {out.nbytes} data bytes of {what!r}")
        if f.read(1):
            raise CorruptFileError(f"{path}: trailing bytes after the data of {what!r}")
    if digest != entry["sha256"]:
        raise CorruptFileError(f"{path}: checksum mismatch for {what!r} (file corrupt): sha256 "
                              f"{digest[:16]}…, the manifest says {entry['sha256'][:16]}…")
    return out


def read_var(dirname: str, name: str, entry: dict, npz_cache: dict | None = None) -> np.ndarray:
    """A variable of a manifest: its own .npy file, or its member of a combined .npz
    (`save_vars(filename=...)`), or one in Paddle's tensor format (an entry with "format":
    "paddle": its own file, or the "index"-th tensor of a combined file); checksum-verified
    every way."""
    path = storage.join(dirname, entry["file"])
    if entry.get("format") == PADDLE_TENSORS:
        return _read_paddle_var(path, name, entry, npz_cache if npz_cache is not None else {})
    if entry["file"] == name:
        return read_array(path, entry, name)
    cache = npz_cache if npz_cache is not None else {}
    try:
        if path not in cache:
            cache[path] = np.load(storage.for_path(path).open_seekable(path), allow_pickle=False)
        arr = cache[path][name]
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise CorruptFileError(f"cannot read {name!r} from {path}: {exc}") from exc
    if array_sha256(arr) != entry["sha256"]:
        raise CorruptFileError(f"{path}: checksum mismatch for {name!r} (file corrupt or truncated)")
    return arr


def _read_paddle_var(path: str, name: str, entry: dict, cache: dict) -> np.ndarray:
    try:
        if path not in cache:
            with storage.for_path(path).open_read(path) as f:
                cache[path] = paddle_wire.tensors_from_bytes(f.read(), path)
        tensors = cache[path]
        index = int(entry.get("index", 0))
        if index >= len(tensors):
            raise CorruptFileError(f"{path}: holds {len(tensors)} tensors, the manifest puts {name!r} at {index}")
        arr = tensors[index]
    except paddle_wire.PaddleFormatError as exc:
        raise CorruptFileError(f"{path}: {name!r}: {exc}") from exc
    except OSError as exc:
        raise CorruptFileError(f"cannot read {name!r} from {path}: {exc}") from exc
    if list(arr.shape) != list(entry["shape"]) or arr.dtype.name != entry["dtype"]:
        raise CorruptFileError(f"{path}: holds {arr.dtype.name}{list(arr.shape)}, the manifest says "
                               f"{entry['dtype']}{list(entry['shape'])} for {name!r}")
    if array_sha256(arr) != entry["sha256"]:
        raise CorruptFileError(f"{path}: checksum mismatch for {name!r} (file corrupt or replaced)")
    return arr


def quick_check(path: str, entry: dict, size: int | None) -> str | None:
    """Cheap test (its size only: a stat, or a listing) that a file can hold its entry; a reason
    string if not. `size` is None for a missing file."""
    if size is None:
        return f"{path}: missing"
    want = entry.get("file_bytes")
    if want is not None and size != want:
        return f"{path}: {size} bytes, the manifest says {want} (truncated or replaced)"
    if want is None and size < entry.get("bytes", 0):
        return f"{path}: {size} bytes, shorter than its {entry['bytes']} data bytes (truncated)"
    return None


# -- manifests --------------------------------------------------------------------------

def new_manifest(vars_: dict | None = None, **extra: Any) -> dict:
    doc = {"format": FORMAT, "version": VERSION, "time": time.time(), "vars": dict(vars_ or {})}
    doc.update({k: v for k, v in extra.items() if v is not None})
    return doc


@overload
def read_manifest(dirname: str, required: Literal[True] = ...) -> dict: ...
@overload
def read_manifest(dirname: str, required: bool) -> dict | None: ...


def read_manifest(dirname: str, required: bool = True) -> dict | None:
    got = read_manifest_bytes(dirname, required)
    return None if got is None else got[0]


def manifest_sha256(dirname: str) -> str:
    """sha256 of a save's manifest file: what a delta records to name its parent exactly."""
    return read_manifest_bytes(dirname)[1]


@overload
def read_manifest_bytes(dirname: str, required: Literal[True] = ...) -> tuple[dict, str]: ...
@overload
def read_manifest_bytes(dirname: str, required: bool) -> tuple[dict, str] | None: ...


def read_manifest_bytes(dirname: str, required: bool = True) -> tuple[dict, str] | None:
    """(manifest, sha256 of its file's bytes), or None for a directory without one (when not
    `required`)."""
    path = storage.join(dirname, MANIFEST)
    try:
        raw = storage.for_path(path).read_bytes(path)
        doc = json.loads(raw)
    except FileNotFoundError:
        if required:
            raise CheckpointError(f"{dirname!r} has no {MANIFEST}: not a complete psjob save "
                                  "(an interrupted save, or the wrong directory)") from None
        return None
    except storage.StorageError:
        raise
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: unreadable manifest: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") not in VERSIONS:
        got = (doc.get("format"), doc.get("version")) if isinstance(doc, dict) else (None, None)
        raise CheckpointError(f"{path}: format {got[0]!r} version {got[1]!r} is not {FORMAT!r} version "
                              f"{' or '.join(map(str, VERSIONS))}")
    if not isinstance(doc.get("vars"), dict) or not isinstance(doc.get("tables", {}), dict):
        raise CheckpointError(f"{path}: malformed manifest (vars/tables must be objects)")
    if doc.get("chain") is not None and not isinstance(doc["chain"], dict):
        raise CheckpointError(f"{path}: malformed manifest (chain must be an object)")
    return doc, hashlib.sha256(raw).hexdigest()


def write_manifest(dirname: str, doc: dict) -> None:
    """Commit a save: the manifest goes in last, atomically, then the directory is synced."""
    data = json.dumps(doc, indent=1, sort_keys=True).encode()
    store = storage.for_path(dirname)
    store.write_bytes(storage.join(dirname, MANIFEST), data)
    store.sync_dir(dirname)


def invalidate(dirname: str) -> None:
    """Remove a directory's manifest before rewriting its files (it is no save until recommitted)."""
    store = storage.for_path(dirname)
    store.remove(storage.join(dirname, MANIFEST))
    store.sync_dir(dirname)


def manifest_files(doc: dict) -> list[tuple[str, str, dict]]:
    """(relative file, what, entry) for every array a manifest lists (vars, then table shards)."""
    out = []
    for name, entry in sorted(doc.get("vars", {}).items()):
        out.append((entry["file"], name, entry))
    for table, tdoc in sorted(doc.get("tables", {}).items()):
        for shard in tdoc.get("shards", []):
            for part, entry in sorted(shard.get("files", {}).items()):
                out.append((entry["file"], f"{table} shard {shard.get('index')} {part}", entry))
    return out
