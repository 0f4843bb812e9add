"""`paddle.batch`: group a sample reader's items into lists of `batch_size`.

A reader is a zero-argument callable that returns a fresh iterator each call
(one call per epoch). `batch` wraps one into a batch reader that yields lists;
the last, shorter list is kept unless `drop_last` is set.
"""
from __future__ import annotations

import operator


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


def _require_reader(reader, who):
    # The commonest mistake is passing `reader()` (a generator, good for one
    # epoch only) instead of the reader function itself.
    if not callable(reader):
        raise TypeError(
            f"{who}() expects a reader: a zero-argument callable returning an "
            f"iterator, got {type(reader).__name__}; pass the function, not its result")
