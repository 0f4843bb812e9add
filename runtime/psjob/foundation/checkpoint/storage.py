"""Where checkpoint bytes live: a local directory or an S3-compatible bucket.

Every checkpoint path is a string: a local path (`/var/lib/psjob/checkpoints`,
`ckpt/step-00000120`) or a URI `s3://BUCKET/PREFIX/...`. `for_path(path)`
returns the `Storage` that serves it; `format`, `tables` and `store` do all
their I/O through it, so the layout and the guarantees are the same on both:

* `open_write(path)` makes the new content appear at `path` whole or not at
  all: a local file is written under a temporary name, fsync'ed and renamed;
  an object is uploaded (multipart for large ones) and appears only when the
  upload completes — an S3 PUT or CompleteMultipartUpload is atomic. On an
  error nothing is left at `path`.
* the manifest is written last, so a directory or prefix without one is no
  checkpoint (an interrupted save, on either store);
* `remove_tree` never leaves a half-removed checkpoint that looks complete:
  locally it renames the directory to `.deleting-*` first, on S3 it deletes the
  manifest before the other objects.

Both need nothing but the standard library: `s3://` is served by psjob's own
small client (s3.py, s3client.py). The interface is in backend.py.

Transport and configuration failures (no credentials, no such bucket, an
unreachable endpoint) raise `StorageError`, an OSError, so the callers that
already treat a full disk as "this checkpoint failed, go on" treat them the
same way; a missing file raises FileNotFoundError as a local open does.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from psjob.foundation.checkpoint.backend import S3_SCHEME, BinaryFile, Storage, StorageError


def is_uri(path: str) -> bool:
    return "://" in str(path)


def join(base: str, *parts: str) -> str:
    """`base/part/...` for local paths and URIs alike (URIs always use `/`)."""
    if is_uri(base):
        return posixpath.join(base.rstrip("/"), *parts)
    return os.path.join(base, *parts)


def parent(path: str) -> str:
    """The directory (or prefix) that holds `path`."""
    if is_uri(path):
        return posixpath.dirname(str(path).rstrip("/"))
    return os.path.dirname(str(path).rstrip(os.sep)) or "."


def basename(path: str) -> str:
    return posixpath.basename(str(path).rstrip("/")) if is_uri(path) else os.path.basename(os.path.normpath(path))


def for_path(path: str) -> Storage:
    """The storage that holds `path` (raises StorageError for a URI it cannot serve)."""
    path = os.fspath(path)
    if path.startswith(S3_SCHEME):
        from psjob.foundation.checkpoint import (
            s3,  # here, not at import: its HTTP client costs every process ~50 ms to load
        )
        return s3.storage()
    if is_uri(path):
        scheme = path.split("://", 1)[0]
        raise StorageError(f"checkpoint store {path!r}: unsupported scheme {scheme!r}; use a local "
                           "directory or s3://BUCKET/PREFIX")
    return LOCAL


class LocalStorage(Storage):
    """A directory on a local or mounted filesystem (a PVC, `psjob run`'s workdir)."""

    @contextmanager
    def open_write(self, path: str) -> Iterator[BinaryFile]:
        d = os.path.dirname(path) or "."
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
        try:
            with os.fdopen(fd, "wb") as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def open_read(self, path: str) -> BinaryFile:
        return open(path, "rb")

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def sizes(self, dirpath: str) -> dict[str, int]:
        out = {}
        for d, _subdirs, files in os.walk(dirpath):
            for name in files:
                full = os.path.join(d, name)
                try:
                    out[os.path.relpath(full, dirpath).replace(os.sep, "/")] = os.stat(full).st_size
                except OSError:
                    continue  # removed meanwhile (retention, a temporary file renamed)
        return out

    def list_dirs(self, dirpath: str) -> list[str]:
        if not os.path.isdir(dirpath):
            return []
        return [n for n in os.listdir(dirpath) if os.path.isdir(os.path.join(dirpath, n))]

    def remove(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def remove_tree(self, dirpath: str, first: str) -> None:
        # Rename first so a half-removed directory never looks like a checkpoint.
        trash = os.path.join(os.path.dirname(os.path.normpath(dirpath)),
                             f".deleting-{os.path.basename(os.path.normpath(dirpath))}")
        os.replace(dirpath, trash)
        shutil.rmtree(trash, ignore_errors=True)

    def makedirs(self, dirpath: str) -> None:
        os.makedirs(dirpath, exist_ok=True)

    def sync_dir(self, dirpath: str) -> None:
        try:
            fd = os.open(dirpath or ".", os.O_RDONLY)
        except OSError:
            return  # directories cannot be opened here
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


LOCAL = LocalStorage()
