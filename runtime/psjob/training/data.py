"""Each trainer's share of the training data, as CtrBatch objects.

Shares are disjoint and together cover the data set once per epoch:

- synthetic: the job trains on examples [0, N) of the deterministic stream of
  psjob.dataset.ctr (seed `--seed`); trainer t of T takes the contiguous range
  [t*N//T, (t+1)*N//T), generated in memory chunk by chunk (never all at once).
- a directory of part-* files: with at least as many files as trainers,
  trainer t reads files t, t+T, t+2T, ...; with fewer files every trainer
  reads them all and keeps batches t, t+T, ... (slower, still disjoint).

A share is a `Share` object; iterating it is one epoch. An epoch of files that
yields no example at all (empty files, every line malformed) raises UsageError
naming the files: a job that trained on nothing fails instead of succeeding.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from psjob.dataset import ctr
from psjob.training.options import SYNTHETIC, TrainOptions, UsageError


@dataclass(frozen=True)
class Share:
    """What one trainer reads per epoch."""
    trainer: int
    trainers: int
    id_mode: str
    batch: int
    seed: int = 0
    start: int = 0          # synthetic: first example of the share
    count: int = 0          # synthetic: examples in the share
    files: tuple = ()       # file data: the files this trainer reads
    stride: int = 1         # file data: keep every stride-th batch ...
    offset: int = 0         # ... starting with this one

    @property
    def synthetic(self) -> bool:
        return not self.files

    def describe(self) -> str:
        if self.synthetic:
            return (f"synthetic examples [{self.start}, {self.start + self.count}) "
                    f"(seed {self.seed}, {self.id_mode} ids)")
        extra = f", batches {self.offset}::{self.stride}" if self.stride > 1 else ""
        return f"{len(self.files)} file(s) ({self.id_mode} ids{extra})"

    def __iter__(self):
        if self.synthetic:
            return _synthetic_batches(self)
        return _file_batches(self)


def share_for(opts: TrainOptions, trainer: int, trainers: int) -> Share:
    if opts.data == SYNTHETIC:
        start = trainer * opts.examples // trainers
        stop = (trainer + 1) * opts.examples // trainers
        return Share(trainer, trainers, opts.id_mode or "dense", opts.batch, seed=opts.seed,
                     start=start, count=stop - start)
    try:
        files = ctr.list_files(opts.data)
    except FileNotFoundError as exc:
        raise UsageError(f"--data {opts.data!r}: {exc} (or use --data synthetic)") from None
    id_mode = _id_mode(opts)
    if len(files) >= trainers:
        return Share(trainer, trainers, id_mode, opts.batch, files=tuple(files[trainer::trainers]))
    return Share(trainer, trainers, id_mode, opts.batch, files=tuple(files), stride=trainers,
                 offset=trainer)


def _id_mode(opts: TrainOptions) -> str:
    """The data set's id mode (meta.json) unless --id_mode says otherwise; they must agree."""
    meta_path = os.path.join(opts.data, "meta.json") if os.path.isdir(opts.data) else ""
    recorded = ""
    if meta_path and os.path.isfile(meta_path):
        with open(meta_path) as f:
            recorded = json.load(f).get("id_mode", "")
    if opts.id_mode and recorded and opts.id_mode != recorded:
        raise UsageError(f"--id_mode {opts.id_mode} but {meta_path} says the data has "
                         f"{recorded} ids: drop --id_mode or use --id_mode {recorded}")
    return opts.id_mode or recorded or "dense"


def steps_per_epoch(share: Share) -> int | None:
    """Steps in one epoch when known in advance (synthetic data), else None."""
    if share.synthetic:
        return -(-share.count // share.batch)
    return None


SYNTHETIC_WINDOW = 32_768  # examples generated at a time: bounded memory, few numpy calls


def _synthetic_batches(share: Share):
    pending = None
    pos, end = share.start, share.start + share.count
    while pos < end:
        take = min(SYNTHETIC_WINDOW, end - pos)
        part = ctr.sample(share.seed, take, start=pos)
        pos += take
        run = part if pending is None else ctr.Examples.concat([pending, part])
        full = len(run) // share.batch * share.batch
        for lo in range(0, full, share.batch):
            yield to_batch(run.tail(lo).head(share.batch), share.id_mode)
        pending = run.tail(full) if full < len(run) else None
    if pending is not None and len(pending):
        yield to_batch(pending, share.id_mode)


def _file_batches(share: Share):
    stats = ctr.ReaderStats()
    for i, batch in enumerate(ctr.batches(list(share.files), share.batch, id_mode=share.id_mode,
                                          stats=stats)):
        if i % share.stride == share.offset:
            yield batch
    if not stats.examples:
        # Empty files, or nothing but malformed lines (skipped): a trainer that trained on
        # nothing must not report success. Exit status 2, like any other bad input.
        raise UsageError(f"no examples were read from {', '.join(share.files)} ({stats.summary()}): "
                         "check --data")


def to_batch(ex, id_mode: str) -> ctr.CtrBatch:
    """In-memory examples → the stacked batch the model is fed (ids as files write them)."""
    ids = tuple(ctr.global_ids(s, ex.ids[s], id_mode) for s in range(ctr.NUM_SLOTS))
    lod = tuple(ex.offsets(s).astype(np.int64) for s in range(ctr.NUM_SLOTS))
    return ctr.CtrBatch(ex.dense.astype(np.float32), ids, lod, ex.label.reshape(-1, 1))
