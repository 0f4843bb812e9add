"""`paddle.io` in static mode: Dataset, IterableDataset, DataLoader (and DataLoader.from_generator).

    loader = paddle.io.DataLoader(dataset, feed_list=[x, y], batch_size=32, shuffle=True,
                                  return_list=False)
    for feed in loader():                 # or: for feed in loader
        exe.run(main, feed=feed, fetch_list=[loss])

With return_list=True (Paddle 2.x's default, static mode too) a batch is the list of arrays
in feed_list order, or in the samples' field order without a feed_list (PaddleRec's
static_trainer zips them with its input names); with return_list=False it is what
`exe.run(feed=...)` takes: a one-element list holding {variable name: array}, as Paddle
yields for one place (Executor.run accepts it). `DataLoader.from_generator` is Fluid's,
whose return_list defaults to False. Samples are tuples with one field per feed
variable; the default collate stacks each field and casts it to the variable's
dtype and shape ([batch] + shape[1:]).

In dynamic mode (Paddle's default: no `paddle.enable_static()` call) a DataLoader without a
feed_list yields, as Paddle's does, a list of tensors per batch: here EagerTensors, numpy
arrays that also answer `.numpy()` (what Paddle's inference scripts read them with, e.g.
PaddleRec's tools/paddle_infer.py). With a feed_list, or after enable_static, batches are as
above: Fluid 1.x programs never call enable_static and keep their arrays.

Behaves differently: num_workers > 0 loads in this process (psjob has no
worker subprocesses; the parse is vectorised where it matters: the CTR
readers, the datasets); places only CPU/one device.
"""
from __future__ import annotations

import itertools
import logging
import math
import numbers

import numpy as np

from psjob.device import in_dynamic_mode
from psjob.fluid.reader import GeneratorLoader as FluidGeneratorLoader
from psjob.foundation.settings import process_settings

log = logging.getLogger("psjob.io")


class Dataset:
    """Map-style: __getitem__(i) → one sample (a tuple of fields), __len__."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")


class IterableDataset(Dataset):
    """Stream-style: __iter__ yields samples."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __getitem__(self, index):
        raise TypeError("an IterableDataset is read by iterating it, not by index")

    def __len__(self):
        raise TypeError("an IterableDataset has no length")


class TensorDataset(Dataset):
    """Samples are the rows of equally long arrays."""

    def __init__(self, tensors):
        self.tensors = [np.asarray(t) for t in tensors]
        if len({len(t) for t in self.tensors}) > 1:
            raise ValueError(f"TensorDataset arrays differ in length: {[len(t) for t in self.tensors]}")

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class EagerTensor(np.ndarray):
    """A batch field in dynamic mode: a numpy array with Paddle's eager Tensor's `.numpy()`."""

    def numpy(self):
        """A plain numpy copy, as Paddle's Tensor.numpy() returns."""
        return np.array(self.view(np.ndarray))


def eager_tensor(array) -> EagerTensor:
    return np.asarray(array).view(EagerTensor)


def default_collate_fn(samples):
    """Samples (tuples of fields) → one stacked array per field."""
    first = samples[0]
    if not isinstance(first, (tuple, list)):
        return [np.stack([np.asarray(s) for s in samples])]
    return [np.stack([np.asarray(s[i]) for s in samples]) for i in range(len(first))]


def _batches_of(samples, batch_size, drop_last):
    it = iter(samples)
    while True:
        batch = list(itertools.islice(it, batch_size))
        if not batch or (drop_last and len(batch) < batch_size):
            return
        yield batch


class _Feeder:
    """Arrays in feed_list order → what Executor.run takes."""

    def __init__(self, feed_list, return_list):
        self.vars = list(feed_list or [])
        self.return_list = return_list
        if not self.vars and not return_list:
            raise ValueError("a static-mode DataLoader needs feed_list=[variables] (or return_list=True)")

    def __call__(self, arrays):
        if not self.vars:
            return list(arrays)
        if len(arrays) != len(self.vars):
            raise ValueError(f"a batch has {len(arrays)} fields but feed_list names {len(self.vars)} "
                             f"variables ({', '.join(v.name for v in self.vars)})")
        out = [self._fit(var, np.asarray(a)) for var, a in zip(self.vars, arrays)]
        if self.return_list:
            return out
        return [{var.name: a for var, a in zip(self.vars, out)}]

    @staticmethod
    def _fit(var, array):
        array = array.astype(np.dtype(var.dtype), copy=False)
        tail = [int(d) for d in (var.shape or [])[1:]]
        if tail and all(d >= 0 for d in tail) and array.size == len(array) * int(np.prod(tail)):
            array = array.reshape([len(array)] + tail)
        return array


class DataLoader:
    def __init__(self, dataset, feed_list=None, places=None, return_list=True, batch_sampler=None,
                 batch_size=1, shuffle=False, drop_last=False, collate_fn=None, num_workers=0,
                 use_buffer_reader=True, use_shared_memory=True, timeout=0, worker_init_fn=None, **kwargs):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be a paddle.io.Dataset or IterableDataset, got {type(dataset).__name__}")
        if batch_size is not None and int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if isinstance(dataset, IterableDataset) and (shuffle or batch_sampler is not None):
            raise ValueError("an IterableDataset cannot be shuffled or sampled: it is read in its own order")
        if num_workers:
            log.info("DataLoader(num_workers=%d) loads in this process: psjob has no loader subprocesses",
                     num_workers)
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, shuffle, drop_last
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn or default_collate_fn
        # Paddle's dygraph DataLoader ignores return_list (always a list of tensors).
        self._eager = in_dynamic_mode() and not feed_list
        self._feed = _Feeder(feed_list, return_list or self._eager)

    def _sample_batches(self):
        if isinstance(self.dataset, IterableDataset):
            yield from _batches_of(iter(self.dataset), self.batch_size, self.drop_last)
            return
        if self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield [self.dataset[i] for i in indices]
            return
        order = np.random.permutation(len(self.dataset)) if self.shuffle else range(len(self.dataset))
        for indices in _batches_of(order, self.batch_size, self.drop_last):
            yield [self.dataset[int(i)] for i in indices]

    def __iter__(self):
        for samples in self._sample_batches():
            batch = self._feed(self.collate_fn(samples))
            # a custom collate_fn's other values (dicts, strings) are left as it made them
            yield [eager_tensor(a) if isinstance(a, np.ndarray) else a for a in batch] if self._eager else batch

    def __call__(self):
        return iter(self)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            raise TypeError("a DataLoader over an IterableDataset has no length")
        n = len(self.batch_sampler) if self.batch_sampler is not None else len(self.dataset)
        if self.batch_sampler is not None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    @staticmethod
    def from_generator(feed_list=None, capacity=None, use_double_buffer=True, iterable=True,
                       return_list=False, use_multiprocess=False, drop_last=True):
        if not iterable:
            # start()/reset() with a read op in the program, EOFException at the end: Fluid's loader.
            return FluidGeneratorLoader(feed_list, capacity, use_double_buffer, False, return_list, drop_last)
        return GeneratorLoader(feed_list, return_list, drop_last)


class GeneratorLoader:
    """DataLoader.from_generator's loader: set one of the three generators, then iterate."""

    def __init__(self, feed_list, return_list, drop_last):
        self._feed = _Feeder(feed_list, return_list)
        self._drop_last = drop_last
        self._batches = None

    def set_sample_generator(self, reader, batch_size, drop_last=True, places=None):
        """reader() yields samples (tuples of fields); they are grouped into batches."""
        def batches():
            for samples in _batches_of(reader(), int(batch_size), drop_last):
                yield default_collate_fn(samples)
        self._batches = batches
        return self

    def set_sample_list_generator(self, reader, places=None):
        """reader() yields lists of samples (paddle.batch's output)."""
        self._batches = lambda: (default_collate_fn(samples) for samples in reader())
        return self

    def set_batch_generator(self, reader, places=None):
        """reader() yields batches: tuples of arrays, one per feed variable."""
        self._batches = lambda: (list(b) for b in reader())
        return self

    def __iter__(self):
        if self._batches is None:
            raise ValueError("set a generator first (set_sample_generator, set_sample_list_generator or "
                             "set_batch_generator)")
        for arrays in self._batches():
            yield self._feed(arrays)

    def __call__(self):
        return iter(self)


class BatchSampler:
    """Index batches over a dataset (or a sampler), optionally shuffled."""

    def __init__(self, dataset=None, sampler=None, shuffle=False, batch_size=1, drop_last=False):
        if (dataset is None) == (sampler is None):
            raise ValueError("BatchSampler takes a dataset or a sampler")
        self.indices = sampler if sampler is not None else range(len(dataset))
        self.shuffle, self.batch_size, self.drop_last = shuffle, int(batch_size), drop_last

    def __iter__(self):
        order = list(self.indices)
        if self.shuffle:
            order = [order[i] for i in np.random.permutation(len(order))]
        yield from _batches_of(order, self.batch_size, self.drop_last)

    def __len__(self):
        n = len(self.indices)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedBatchSampler(BatchSampler):
    """Paddle's DistributedBatchSampler: this trainer's share of the index batches.

    The indices are padded (repeating from the start) to a multiple of num_replicas, shuffled
    with seed `epoch` when shuffle=True (set_epoch; it advances by one per pass), then dealt in
    batch-size blocks round-robin to the replicas, the tail split evenly — the same split as
    Paddle's, so every trainer gets num_samples = ceil(len / num_replicas) indices.
    num_replicas and rank default to PADDLE_TRAINERS_NUM and PADDLE_TRAINER_ID (Paddle's
    ParallelEnv), 1 and 0 when unset."""

    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=False, drop_last=False):
        for name, value, minimum in (("batch_size", batch_size, 1), ("num_replicas", num_replicas, 1),
                                     ("rank", rank, 0)):
            if value is not None and (not isinstance(value, numbers.Integral) or isinstance(value, bool)
                                      or value < minimum):
                raise ValueError(f"DistributedBatchSampler: {name} must be an int >= {minimum}, got {value!r}")
        if not isinstance(shuffle, bool) or not isinstance(drop_last, bool):
            raise TypeError("DistributedBatchSampler: shuffle and drop_last must be bools")
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, int(batch_size), shuffle, drop_last
        if num_replicas is None or rank is None:  # Paddle's ParallelEnv: the launcher's settings
            process = process_settings().process
            num_replicas = process.trainers_num or 1 if num_replicas is None else num_replicas
            rank = process.trainer_id if rank is None else rank
        self.nranks, self.local_rank = int(num_replicas), int(rank)
        if self.local_rank >= self.nranks:
            raise ValueError(f"DistributedBatchSampler: rank {self.local_rank} >= num_replicas {self.nranks}")
        self.epoch = 0
        self.num_samples = int(math.ceil(len(dataset) / self.nranks))
        self.total_size = self.num_samples * self.nranks

    def _local_indices(self):
        indices = list(range(len(self.dataset)))
        padding = self.total_size - len(indices)
        indices += (indices * math.ceil(padding / max(len(indices), 1)))[:padding]
        if self.shuffle:
            np.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1
        if self.nranks == 1:
            return indices
        block = self.batch_size * self.nranks
        tail = self.total_size % block
        mine = []
        for i in range(self.local_rank * self.batch_size, len(indices) - tail, block):
            mine.extend(indices[i:i + self.batch_size])
        last = tail // self.nranks
        mine.extend(indices[len(indices) - tail:][self.local_rank * last:(self.local_rank + 1) * last])
        return mine

    def __iter__(self):
        yield from _batches_of(self._local_indices(), self.batch_size, self.drop_last)

    def __len__(self):
        return (self.num_samples + (0 if self.drop_last else self.batch_size - 1)) // self.batch_size

    def set_epoch(self, epoch):
        """The shuffle seed of the next pass (the same on every trainer, so their shares are disjoint)."""
        self.epoch = int(epoch)
