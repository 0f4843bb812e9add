"""Where data files come from: local paths, and URIs of the checkpoints' object store.

Every reader opens its files through `open_binary(path)` and expands
directories through `list_parts(path)`. A local path is a file; a URI
(`s3://bucket/key`) is served by the store the checkpoints use
(psjob.foundation.checkpoint.storage, configured by the standard AWS_* variables),
reached through the hook the package root registers (psjob.foundation.hooks.DATA_STORAGE):
psjob.dataset sits below the checkpoint layer and never imports it.
A scheme the store cannot serve is refused with an error naming it.
"""
from __future__ import annotations

import os
import posixpath
import re

from psjob.foundation import hooks

_URI = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def is_uri(path) -> bool:
    return bool(_URI.match(os.fspath(path)))


def _storage(uri: str):
    return hooks.lookup(hooks.DATA_STORAGE)(uri)


def open_binary(path):
    """A readable, seekable binary file; FileNotFoundError when there is none at `path`."""
    path = os.fspath(path)
    if is_uri(path):
        return _storage(path).open_seekable(path)
    return open(path, "rb")


def list_parts(path, prefix: str = "part-") -> list | None:
    """The `prefix`* files directly in the directory `path`, sorted; None when `path` is no
    directory (a local directory, or a URI with objects below it)."""
    path = os.fspath(path)
    if is_uri(path):
        storage = _storage(path)
        if not storage.is_dir(path):
            return None
        base = path.rstrip("/")
        return [posixpath.join(base, rel) for rel in sorted(storage.sizes(base))
                if "/" not in rel and rel.startswith(prefix)]
    if not os.path.isdir(path):
        return None
    return [os.path.join(path, name) for name in sorted(os.listdir(path)) if name.startswith(prefix)]


def exists(path) -> bool:
    path = os.fspath(path)
    return _storage(path).exists(path) if is_uri(path) else os.path.isfile(path)


def list_dirs(path) -> list:
    """Names of the directories directly in `path` (an s3:// prefix's common prefixes); []
    when there is none."""
    path = os.fspath(path)
    if is_uri(path):
        return list(_storage(path).list_dirs(path.rstrip("/")))
    try:
        return [n for n in os.listdir(path) if os.path.isdir(os.path.join(path, n))]
    except OSError:
        return []


def list_files(path) -> list:
    """Names of the files directly in the directory `path`, sorted."""
    path = os.fspath(path)
    if is_uri(path):
        return sorted(rel for rel in _storage(path).sizes(path.rstrip("/")) if "/" not in rel)
    return sorted(n for n in os.listdir(path) if os.path.isfile(os.path.join(path, n)))
