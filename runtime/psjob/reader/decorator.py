"""Reader decorators with Paddle's semantics (`paddle.reader.*`).

Each decorator returns a new reader; calling that reader starts one pass.
The thread-backed ones (`buffered`, `xmap_readers`) differ from Paddle's in two
ways that only matter when something goes wrong: an exception raised by the
wrapped reader or mapper is re-raised in the consumer (Paddle's worker thread
dies and the consumer waits forever), and a consumer that stops early (break,
firstn) releases the worker threads instead of leaving them blocked on a full
queue.
"""
from __future__ import annotations

import itertools
import operator
import queue
import random
import threading

__all__ = [
    "ComposeNotAligned", "buffered", "cache", "chain", "compose", "firstn",
    "map_readers", "shuffle", "xmap_readers",
]


class ComposeNotAligned(ValueError):
    """compose(check_alignment=True) found readers of different lengths."""


def _require_reader(reader, who):
    # The commonest mistake is passing `reader()` (a generator, good for one
    # epoch only) instead of the reader function itself.
    if not callable(reader):
        raise TypeError(
            f"{who}() expects a reader: a zero-argument callable returning an "
            f"iterator, got {type(reader).__name__}; pass the function, not its result")


def _positive_int(value, name):
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return number


def shuffle(reader, buf_size, seed=None):
    """Shuffle within consecutive windows of `buf_size` items.

    Items are collected until the buffer holds `buf_size`, shuffled, emitted,
    and the buffer restarts; the multiset of items is unchanged. With `seed`
    (a psjob extension) the order is reproducible across runs; each call of
    the returned reader continues the same random stream, so epochs differ.
    Without it the global `random` module is used, as in Paddle.
    """
    _require_reader(reader, "shuffle")
    size = _positive_int(buf_size, "buf_size")
    rng = random.Random(seed) if seed is not None else random

    def data_reader():
        buf = []
        for item in reader():
            buf.append(item)
            if len(buf) >= size:
                rng.shuffle(buf)
                yield from buf
                buf = []
        if buf:
            rng.shuffle(buf)
            yield from buf

    return data_reader


def chain(*readers):
    """Items of every reader, one reader after another."""
    for r in readers:
        _require_reader(r, "chain")

    def data_reader():
        return itertools.chain.from_iterable(r() for r in readers)

    return data_reader


_MISSING = object()


def compose(*readers, check_alignment=True):
    """Zip readers; each output is the flattened tuple of their items.

    A reader yielding tuples contributes their elements, others contribute the
    item itself: outputs (1, 2), 3, (4, 5) compose to (1, 2, 3, 4, 5). With
    `check_alignment` a reader ending before the others raises
    ComposeNotAligned; without it the output stops at the shortest reader.
    """
    for r in readers:
        _require_reader(r, "compose")

    def as_tuple(x):
        return x if isinstance(x, tuple) else (x,)

    def data_reader():
        iterators = [r() for r in readers]
        if not check_alignment:
            for outputs in zip(*iterators):
                yield sum(map(as_tuple, outputs), ())
            return
        for outputs in itertools.zip_longest(*iterators, fillvalue=_MISSING):
            if any(o is _MISSING for o in outputs):
                raise ComposeNotAligned("outputs of readers are not aligned: "
                                        "one reader ended before the others")
            yield sum(map(as_tuple, outputs), ())

    return data_reader


def map_readers(func, *readers):
    """Yield func(a, b, ...) for items a, b, ... taken together from each reader."""
    for r in readers:
        _require_reader(r, "map_readers")

    def data_reader():
        return map(func, *[r() for r in readers])

    return data_reader


def firstn(reader, n):
    """The first `n` items of the reader (fewer if it ends sooner)."""
    _require_reader(reader, "firstn")
    count = operator.index(n)
    if count < 0:
        raise ValueError(f"n must be >= 0, got {n}")

    def data_reader():
        return itertools.islice(reader(), count)

    return data_reader


def cache(reader):
    """Read everything now, once; the returned reader replays it from memory."""
    _require_reader(reader, "cache")
    all_data = tuple(reader())

    def data_reader():
        return iter(all_data)

    return data_reader


# ---- thread-backed decorators -------------------------------------------------

_ITEM, _END, _ERROR = "item", "end", "error"


def _put(q, entry, stop):
    """Put unless the consumer has gone away; False means stop producing."""
    while not stop.is_set():
        try:
            q.put(entry, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def buffered(reader, size):
    """Read ahead up to `size` items in a background thread."""
    _require_reader(reader, "buffered")
    capacity = _positive_int(size, "size")

    def data_reader():
        q = queue.Queue(maxsize=capacity)
        stop = threading.Event()

        def produce():
            try:
                for item in reader():
                    if not _put(q, (_ITEM, item), stop):
                        return
                _put(q, (_END, None), stop)
            except BaseException as exc:  # re-raised in the consumer
                _put(q, (_ERROR, exc), stop)

        threading.Thread(target=produce, name="psjob-buffered", daemon=True).start()
        try:
            while True:
                kind, value = q.get()
                if kind == _ITEM:
                    yield value
                elif kind == _END:
                    return
                else:
                    raise value
        finally:
            stop.set()

    return data_reader


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """Apply `mapper` to every item with `process_num` threads.

    Output order is the input order when `order` is true, otherwise whatever
    order the threads finish in. `buffer_size` bounds both queues.
    """
    _require_reader(reader, "xmap_readers")
    workers = _positive_int(process_num, "process_num")
    capacity = _positive_int(buffer_size, "buffer_size")

    def data_reader():
        in_q = queue.Queue(maxsize=capacity)
        out_q = queue.Queue(maxsize=capacity)
        stop = threading.Event()

        def feed():
            try:
                for index, item in enumerate(reader()):
                    if not _put(in_q, (_ITEM, (index, item)), stop):
                        return
            except BaseException as exc:
                _put(out_q, (_ERROR, exc), stop)
            for _ in range(workers):
                _put(in_q, (_END, None), stop)

        def work():
            while not stop.is_set():
                try:
                    kind, value = in_q.get(timeout=0.05)
                except queue.Empty:
                    continue
                if kind == _END:
                    _put(out_q, (_END, None), stop)
                    return
                index, item = value
                try:
                    result = mapper(item)
                except BaseException as exc:
                    _put(out_q, (_ERROR, exc), stop)
                    return
                if not _put(out_q, (_ITEM, (index, result)), stop):
                    return

        threads = [threading.Thread(target=feed, name="psjob-xmap-feed", daemon=True)]
        threads += [threading.Thread(target=work, name=f"psjob-xmap-{i}", daemon=True)
                    for i in range(workers)]
        for t in threads:
            t.start()
        try:
            finished = 0
            pending = {}
            next_index = 0
            while finished < workers:
                kind, value = out_q.get()
                if kind == _END:
                    finished += 1
                    continue
                if kind == _ERROR:
                    raise value
                index, result = value
                if not order:
                    yield result
                    continue
                pending[index] = result
                while next_index in pending:
                    yield pending.pop(next_index)
                    next_index += 1
        finally:
            stop.set()

    return data_reader
