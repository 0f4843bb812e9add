"""The `read` op: a non-iterable py_reader's / DataLoader's batches enter the program.

Fluid's non-iterable readers (`fluid.layers.create_py_reader_by_data` + `read_file`,
`fluid.io.PyReader(iterable=False)`, `fluid.io.DataLoader.from_generator(iterable=False)`)
fill a bounded queue from a Python thread; the program's `read` op takes the next batch
from it each `exe.run`, and raises `fluid.core.EOFException` once the thread has pushed
its last batch and the queue is drained (Fluid's read_op "There is no next data").

The queue is not a variable: Paddle keeps it in the global scope under a name; psjob
keeps it in this module's registry under a name unique in the process, which the op
carries as its `queue_name` attribute (so clones of the program read the same queue).
"""
from __future__ import annotations

import collections
import itertools
import threading
import weakref

from psjob.fluid.base import GraphError
from psjob.fluid.core import EOFException
from psjob.fluid.ops.registry import register_op

# queue name -> BlockingQueue; the reader object that made the queue keeps it alive.
_QUEUES: weakref.WeakValueDictionary[str, BlockingQueue] = weakref.WeakValueDictionary()
_ids = itertools.count()


class ReaderError(RuntimeError):
    """The reader's data source raised, or it was read before start()."""


class BlockingQueue:
    """Batches from one producer thread to the program's `read` op, at most `capacity` waiting.

    States: idle (made, or reset) → started (producer running) → closed (producer
    done: the consumer drains what is left, then sees EOF) or killed (the producer
    raised: the consumer gets its error). `reset` drops what is left and goes back
    to idle; a producer blocked in `push` then returns False and stops."""

    def __init__(self, name: str, capacity: int):
        self.name, self.capacity = name, int(capacity)
        self._items: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._state = "idle"
        self._error: BaseException | None = None
        self._generation = 0  # bumped by reset, so a stale producer's pushes are refused

    @property
    def state(self) -> str:
        return self._state

    def size(self) -> int:
        """Batches waiting now (Fluid's LoDTensorBlockingQueue.size(), which examples print
        as `data_loader.queue.size()` to show whether the reader keeps up)."""
        with self._cond:
            return len(self._items)

    def open(self) -> int:
        """Enter `started`; returns the generation the producer must push under."""
        with self._cond:
            if self._state != "idle":
                raise ReaderError(f"reader {self.name!r} is {self._state}: call reset() after the "
                                  "EOFException (or before starting again), then start()")
            self._state = "started"
            return self._generation

    def push(self, batch, generation: int) -> bool:
        """Wait for room, then queue `batch`; False when the queue was reset meanwhile."""
        with self._cond:
            while (self._generation == generation and self._state == "started"
                   and len(self._items) >= self.capacity):
                self._cond.wait()
            if self._generation != generation or self._state != "started":
                return False
            self._items.append(batch)
            self._cond.notify_all()
            return True

    def close(self, generation: int) -> None:
        """The producer pushed its last batch."""
        with self._cond:
            if self._generation == generation and self._state == "started":
                self._state = "closed"
                self._cond.notify_all()

    def kill(self, error: BaseException, generation: int) -> None:
        """The producer raised `error`: the next read raises it."""
        with self._cond:
            if self._generation == generation and self._state == "started":
                self._state, self._error = "killed", error
                self._cond.notify_all()

    def pop(self):
        """The next batch; raises EOFException when closed and drained."""
        with self._cond:
            while not self._items and self._state == "started":
                self._cond.wait()
            if self._items:
                batch = self._items.popleft()
                self._cond.notify_all()
                return batch
            if self._state == "killed":
                raise ReaderError(f"the data source of reader {self.name!r} raised "
                                  f"{type(self._error).__name__}: {self._error}") from self._error
            if self._state == "idle":
                # Paddle blocks here for ever; nothing would ever arrive.
                raise ReaderError(f"reader {self.name!r} was read before start(): call "
                                  "reader.start() before each pass (and reset() after its EOFException)")
            raise EOFException(f"reader {self.name!r} has no next batch (the pass is over: "
                               "call reset(), then start() for the next one)")

    def reset(self) -> None:
        """Drop queued batches and return to idle; a producer blocked in push gives up."""
        with self._cond:
            self._items.clear()
            self._state, self._error = "idle", None
            self._generation += 1
            self._cond.notify_all()


def new_queue(prefix: str, capacity: int) -> BlockingQueue:
    """A registered queue named `prefix` plus a process-unique suffix."""
    if int(capacity) < 1:
        raise ValueError(f"capacity must be a positive number of batches, got {capacity!r}")
    queue = BlockingQueue(f"{prefix}_{next(_ids)}", capacity)
    _QUEUES[queue.name] = queue
    return queue


# No shape inference: the outputs are declared with the feed variables' shapes when built.
@register_op("read")
def read(ctx):
    """Out[i] ← slot i of the next batch, checked and stored as a feed of Out[i] is."""
    name = ctx.attr("queue_name")
    queue = _QUEUES.get(name)
    if queue is None:
        raise GraphError(f"the reader behind queue {name!r} no longer exists in this process "
                         "(keep the py_reader / DataLoader object while its program runs)")
    batch = queue.pop()
    outs = ctx.outs["Out"]
    if len(batch) != len(outs):
        raise ReaderError(f"reader {name!r}: a batch has {len(batch)} slots but the program reads "
                          f"{len(outs)} ({', '.join(outs)})")
    # The executor's feed path checks dtype, rank, fixed dimensions and LoD offsets,
    # as Paddle's need_check_feed does for data variables.
    ctx.executor._feed(ctx.op.block, dict(zip(outs, batch)), ctx.scope)
