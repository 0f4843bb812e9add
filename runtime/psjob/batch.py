"""`paddle.batch`: group a sample reader's items into lists of `batch_size`.

A reader is a zero-argument callable that returns a fresh iterator each call
(one call per epoch). `batch` wraps one into a batch reader that yields lists;
the last, shorter list is kept unless `drop_last` is set.
"""
from __future__ import annotations

import operator
import sys
import types

from psjob.reader.decorator import _require_reader


def batch(reader, batch_size, drop_last=False):
    """Return a reader yielding lists of `batch_size` consecutive items of `reader()`."""
    _require_reader(reader, "batch")
    try:
        size = operator.index(batch_size)
    except TypeError:
        raise TypeError(f"batch_size must be an integer, got {batch_size!r}") from None
    if size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")

    def batch_reader():
        buf = []
        for item in reader():
            buf.append(item)
            if len(buf) == size:
                yield buf
                buf = []
        if buf and not drop_last:
            yield buf

    return batch_reader


class _CallableModule(types.ModuleType):
    """`psjob.batch` is both this module and, lazily, the function in it.

    Importing the submodule (`import psjob.batch`, `from psjob.batch import
    batch`) makes Python bind the *module* as the package attribute, shadowing
    the lazy function; a script doing `paddle.batch(reader, 8)` afterwards
    would call a module. Making the module callable keeps that working.
    """

    def __call__(self, reader, batch_size, drop_last=False):
        return batch(reader, batch_size, drop_last)


sys.modules[__name__].__class__ = _CallableModule
