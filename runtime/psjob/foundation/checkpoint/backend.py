"""The interface of a checkpoint store (storage.py picks one for a path; s3.py and
storage.LocalStorage implement it), and the error a store that cannot be used raises."""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

S3_SCHEME = "s3://"
# A binary file object: open(path, "rb"), io.BytesIO or one of s3.py's streams (io.RawIOBase);
# callers use read, readinto, write and tell, which each of them has.
BinaryFile = Any


class StorageError(OSError):
    """A checkpoint store cannot be used: bad URI, no credentials, no bucket, unreachable."""


class Storage:
    """The operations checkpoints need. Paths are full paths or URIs (storage.join)."""

    local = True  # a local filesystem (fsync and rename), not a remote object store

    def open_write(self, path: str) -> AbstractContextManager[BinaryFile]:
        """Context manager: a binary file (write, tell) whose content appears at `path` on exit."""
        raise NotImplementedError

    def open_read(self, path: str) -> BinaryFile:
        """A binary file (read, readinto) of `path`; FileNotFoundError if it is not there."""
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def is_dir(self, path: str) -> bool:
        """A directory here: something is stored under `path/`."""
        raise NotImplementedError

    def sizes(self, dirpath: str) -> dict[str, int]:
        """Every file under `dirpath`, recursively: {relative path with '/': size in bytes}."""
        raise NotImplementedError

    def list_dirs(self, dirpath: str) -> list[str]:
        """Names of the directories directly under `dirpath` (none if it does not exist)."""
        raise NotImplementedError

    def remove(self, path: str) -> None:
        """Remove one file; a missing one is fine."""
        raise NotImplementedError

    def remove_tree(self, dirpath: str, first: str) -> None:
        """Remove a saved directory, its file `first` (the manifest) before the rest in effect:
        a removal cut short never leaves a complete-looking half."""
        raise NotImplementedError

    def makedirs(self, dirpath: str) -> None:
        """Make sure files can be written under `dirpath` (a no-op for object stores)."""

    def sync_dir(self, dirpath: str) -> None:
        """Make the renames inside `dirpath` durable (a no-op for object stores)."""

    def open_seekable(self, path: str) -> BinaryFile:
        """A seekable binary file (np.load of an .npz needs one)."""
        return self.open_read(path)

    # -- conveniences on top -------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        with self.open_read(path) as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        with self.open_write(path) as f:
            f.write(data)
