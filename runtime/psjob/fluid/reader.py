"""Fluid 1.x's Python readers: `fluid.io.DataLoader.from_generator`, `fluid.io.PyReader`,
and the py_reader object of `fluid.layers.create_py_reader_by_data` / `py_reader`.

A loader is given a data source, one of three kinds (Paddle's names):

    set_sample_generator(reader, batch_size)   reader() yields samples (one value per variable)
    set_sample_list_generator(reader)          reader() yields lists of samples (paddle.batch)
    set_batch_generator(reader)                reader() yields batches: one array (or
                                               LoDTensor) per variable

(PyReader spells them decorate_sample_generator, decorate_sample_list_generator,
decorate_batch_generator; the py_reader object decorate_paddle_reader and
decorate_tensor_provider.) Samples become batches with a DataFeeder: a variable with
lod_level 1 takes a list of ids per sample, fed with its LoD.

**Iterable** (the default): `for feed in loader(): exe.run(prog, feed=feed)`. Each item
is what Executor.run takes for one place: `[{name: value}]`, or with return_list=True
the list of values in feed_list order.

**Non-iterable** (iterable=False, and every py_reader): the loader puts a `read` op in
the main program that fills the feed variables itself. Each pass:

    loader.start()
    try:
        while True:
            exe.run(prog, fetch_list=[loss])    # no feed
    except fluid.core.EOFException:
        loader.reset()

start() runs the data source in a thread that converts batches and queues up to
`capacity` of them; exe.run takes one per run and raises EOFException once the source
is exhausted and the queue drained (fluid/ops/reader_ops.py). Differences from Paddle:
psjob runs one device per process, so `places` are accepted and ignored and one run
takes one batch; `use_double_buffer` changes nothing (batches are already converted
ahead in the thread); reading before start() raises instead of waiting for ever, and
start() twice without reset() raises.
"""
from __future__ import annotations

import logging
import threading

import numpy as np

from psjob.fluid import unique_name
from psjob.fluid.core import CPUPlace, LoDTensor
from psjob.fluid.data_feeder import DataFeeder
from psjob.fluid.framework import Program, Variable, default_main_program, program_guard
from psjob.fluid.ops.reader_ops import new_queue

log = logging.getLogger("psjob.fluid.reader")

__all__ = ["DataLoader", "PyReader"]


def _check_feed_list(feed_list, who):
    if not feed_list:
        raise ValueError(f"{who}: feed_list must name the variables the batches feed "
                         "(a non-empty list of fluid.data variables)")
    if not isinstance(feed_list, (list, tuple)):
        raise TypeError(f"{who}: feed_list must be a list of Variables, got {type(feed_list).__name__}")
    for v in feed_list:
        if not isinstance(v, Variable):
            raise TypeError(f"{who}: feed_list items must be Variables, got {v!r}")
    return list(feed_list)


def _check_capacity(capacity, who):
    if not capacity:
        raise ValueError(f"{who}: give capacity (how many batches may wait in the queue)")
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
        raise ValueError(f"{who}: capacity must be a positive integer, got {capacity!r}")
    return int(capacity)


def _batched(reader, batch_size, drop_last):
    size = int(batch_size)
    if size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")

    def batches():
        buf = []
        for sample in reader():
            buf.append(sample)
            if len(buf) == size:
                yield buf
                buf = []
        if buf and not drop_last:
            yield buf
    return batches


def _as_slot(value):
    """One variable's value in a batch: a LoDTensor as it is, anything else as an array."""
    if isinstance(value, (LoDTensor, np.ndarray)):
        return value
    arr = np.asarray(value)
    if arr.dtype == object:
        raise TypeError("a batch value is a ragged nested list, not a regular array: give "
                        "variable-length slots lod_level=1 and feed them with set_sample_list_generator "
                        "(or a LoDTensor from fluid.create_lod_tensor)")
    return arr


class _Source:
    """The data source of a loader: a callable returning an iterator of batches, each a
    list with one value per feed variable."""

    def __init__(self, feed_list):
        self.feed_list = feed_list
        self._batches = None

    def sample_generator(self, reader, batch_size, drop_last=True):
        self.sample_list_generator(_batched(reader, batch_size, drop_last))

    def sample_list_generator(self, reader):
        _check_callable(reader)
        feeder = DataFeeder(self.feed_list, CPUPlace())
        names = feeder.feed_names

        def batches():
            for samples in reader():
                fed = feeder.feed(samples)
                yield [fed[n] for n in names]
        self._batches = batches

    def batch_generator(self, reader):
        _check_callable(reader)
        width = len(self.feed_list)

        def batches():
            for batch in reader():
                if isinstance(batch, dict):
                    batch = [batch[v.name] for v in self.feed_list]
                batch = list(batch) if isinstance(batch, (list, tuple)) else [batch]
                if len(batch) != width:
                    raise ValueError(f"a batch has {len(batch)} values but feed_list names {width} "
                                     f"variables ({', '.join(v.name for v in self.feed_list)})")
                yield [_as_slot(b) for b in batch]
        self._batches = batches

    def __call__(self):
        if self._batches is None:
            raise ValueError("set a data source first (set_sample_generator, set_sample_list_generator "
                             "or set_batch_generator; on a py_reader decorate_paddle_reader or "
                             "decorate_tensor_provider)")
        return self._batches()


def _check_callable(reader):
    if not callable(reader):
        raise TypeError(f"the data source must be a reader: a function returning an iterator "
                        f"(a generator function), got {type(reader).__name__}")


class _Feeding:
    """The producer side of a non-iterable reader: start() runs the source in a thread
    that fills the queue; reset() stops it and empties the queue."""

    def __init__(self, source: _Source, prefix: str, capacity: int):
        self.source = source
        self.queue = new_queue(prefix, capacity)
        self._thread: threading.Thread | None = None

    def start(self):
        batches = self.source()          # a missing source is named here, not in the thread
        generation = self.queue.open()

        def produce():
            try:
                for batch in batches:
                    if not self.queue.push(batch, generation):
                        return           # reset() while running: the pass was abandoned
                self.queue.close(generation)
            except BaseException as exc:  # the reading op raises it in the trainer's thread
                log.warning("the data source of reader %s raised %s: %s", self.queue.name,
                            type(exc).__name__, exc)
                self.queue.kill(exc, generation)

        self._thread = threading.Thread(target=produce, name=f"psjob-{self.queue.name}", daemon=True)
        self._thread.start()

    def reset(self):
        self.queue.reset()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()


def _append_read(block, queue, outputs, drop_last=True):
    block.append_op(type="read", inputs={}, outputs={"Out": list(outputs)},
                    attrs={"queue_name": queue.name, "drop_last": bool(drop_last)})


class GeneratorLoader:
    """What DataLoader.from_generator returns (see the module docstring)."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                 return_list=False, drop_last=True):
        who = "DataLoader.from_generator"
        self._feed_list = _check_feed_list(feed_list, who)
        self._capacity = _check_capacity(capacity, who)
        self._iterable = bool(iterable)
        self._return_list = bool(return_list)
        self._drop_last = drop_last
        self._source = _Source(self._feed_list)
        self._feeding = None
        if not self._iterable:
            self._feeding = _Feeding(self._source, "lod_tensor_blocking_queue", self._capacity)
            # The read op fills the feed variables themselves, as Paddle's does: create the
            # loader before the layers that read them.
            _append_read(default_main_program().current_block(), self._feeding.queue, self._feed_list,
                         drop_last)

    @property
    def iterable(self):
        return self._iterable

    @property
    def queue(self):
        return self._feeding.queue if self._feeding is not None else None

    # -- data sources ---------------------------------------------------------------
    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        self._source.sample_generator(reader, batch_size, drop_last)
        return self

    def set_sample_list_generator(self, reader, places=None):
        self._source.sample_list_generator(reader)
        return self

    def set_batch_generator(self, reader, places=None):
        self._source.batch_generator(reader)
        return self

    # -- iterable -------------------------------------------------------------------
    def __call__(self):
        return self

    def __iter__(self):
        if not self._iterable:
            raise TypeError("this DataLoader is not iterable (iterable=False): call start(), run the "
                            "program until fluid.core.EOFException, then reset()")
        for batch in self._source():
            if self._return_list:
                yield batch
            else:
                yield [{v.name: b for v, b in zip(self._feed_list, batch)}]

    # -- non-iterable ---------------------------------------------------------------
    def start(self):
        if self._iterable:
            raise TypeError("start() is for a DataLoader with iterable=False; iterate this one")
        self._feeding.start()

    def reset(self):
        if self._iterable:
            raise TypeError("reset() is for a DataLoader with iterable=False; iterate this one")
        self._feeding.reset()


class DataLoader:
    """`fluid.io.DataLoader`: Fluid 1.x scripts make theirs with `from_generator`."""

    def __init__(self, *args, **kwargs):
        raise TypeError("fluid.io.DataLoader(dataset, ...) over a paddle.io.Dataset is psjob.io.DataLoader "
                        "(paddle.io.DataLoader); fluid.io.DataLoader.from_generator(...) is here")

    @staticmethod
    def from_generator(feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                       return_list=False, use_multiprocess=False, drop_last=True):
        if use_multiprocess:
            log.info("DataLoader.from_generator(use_multiprocess=True) reads in a thread of this "
                     "process: psjob has no loader subprocesses")
        return GeneratorLoader(feed_list, capacity, use_double_buffer, iterable, return_list, drop_last)


class PyReader:
    """`fluid.io.PyReader`: a DataLoader.from_generator with the decorate_* spellings."""

    def __init__(self, feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                 return_list=False):
        self._loader = DataLoader.from_generator(feed_list, capacity, use_double_buffer, iterable,
                                                 return_list)

    queue = property(lambda self: self._loader.queue)
    iterable = property(lambda self: self._loader.iterable)

    def __call__(self):
        return self

    def __iter__(self):
        return iter(self._loader)

    def start(self):
        self._loader.start()

    def reset(self):
        self._loader.reset()

    def decorate_sample_generator(self, sample_generator, batch_size, drop_last=True, places=None):
        self._loader.set_sample_generator(sample_generator, batch_size, drop_last, places)

    def decorate_sample_list_generator(self, reader, places=None):
        self._loader.set_sample_list_generator(reader, places)

    def decorate_batch_generator(self, reader, places=None):
        self._loader.set_batch_generator(reader, places)


class ProgramReader:
    """The py_reader of `fluid.layers.create_py_reader_by_data` / `fluid.layers.py_reader`:
    `fluid.layers.read_file(reader)` appends the op that reads it and returns the
    variables it fills. Paddle's is a READER variable with these methods patched on;
    psjob's is this object (a program holds no reader variable)."""

    def __init__(self, name, feed_list, capacity):
        self.name = name
        self.feed_list = feed_list
        self._source = _Source(feed_list)
        self._feeding = _Feeding(self._source, name, capacity)

    @property
    def queue(self):
        return self._feeding.queue

    def decorate_paddle_reader(self, paddle_reader, places=None):
        self._source.sample_list_generator(paddle_reader)

    decorate_sample_list_generator = decorate_paddle_reader

    def decorate_tensor_provider(self, reader, places=None):
        self._source.batch_generator(reader)

    decorate_batch_generator = decorate_tensor_provider

    def start(self):
        self._feeding.start()

    def reset(self):
        self._feeding.reset()

    def __repr__(self):
        return f"py_reader {self.name} -> ({', '.join(f'{v.name}{list(v.shape)}' for v in self.feed_list)})"


def make_program_reader(capacity, feed_list=None, shapes=None, dtypes=None, lod_levels=None, name=None,
                        who="py_reader") -> ProgramReader:
    """A ProgramReader over `feed_list`, or over variables declared from shapes/dtypes/lod_levels
    (in a program of their own: they only describe the slots)."""
    capacity = _check_capacity(capacity, who)
    if feed_list is not None:
        feed_list = _check_feed_list(feed_list, who)
    else:
        if not shapes or not dtypes or len(shapes) != len(dtypes):
            raise ValueError(f"{who}: give shapes and dtypes, one per slot (got {shapes!r}, {dtypes!r})")
        lod_levels = list(lod_levels) if lod_levels is not None else [0] * len(shapes)
        if len(lod_levels) != len(shapes):
            raise ValueError(f"{who}: lod_levels has {len(lod_levels)} entries for {len(shapes)} slots")
        with program_guard(Program(), Program()):
            block = default_main_program().global_block()
            feed_list = [block.create_var(name=str(i), shape=list(s), dtype=d, lod_level=int(lod), is_data=True)
                         for i, (s, d, lod) in enumerate(zip(shapes, dtypes, lod_levels))]
    return ProgramReader(name or unique_name.generate("py_reader"), feed_list, capacity)


def read_outputs(reader: ProgramReader) -> list[Variable]:
    """Append `reader`'s read op to the current block; the variables it fills, declared like
    the reader's slots (Paddle's read_file)."""
    if not isinstance(reader, ProgramReader):
        raise TypeError(f"read_file needs a py_reader (fluid.layers.create_py_reader_by_data or "
                        f"fluid.layers.py_reader), got {type(reader).__name__}")
    block = default_main_program().current_block()
    stem = unique_name.generate("read_file")
    outs = [block.create_var(name=f"{stem}.tmp_{i}", shape=list(v.shape), dtype=v.dtype,
                             lod_level=v.lod_level, stop_gradient=True)
            for i, v in enumerate(reader.feed_list)]
    _append_read(block, reader.queue, outs)
    return outs
