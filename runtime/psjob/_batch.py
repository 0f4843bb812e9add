"""`paddle.batch`: group a sample reader's items into lists of `batch_size`.

The module is private (`psjob._batch`) and the function is exposed as
`psjob.batch`: a public submodule of the same name would be bound over the
function by any `import psjob.batch`.

A reader is a zero-argument callable that returns a fresh iterator each call
(one call per epoch). `batch` wraps one into a batch reader that yields lists;
the last, shorter list is kept unless `drop_last` is set.
"""
from __future__ import annotations

import operator

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
