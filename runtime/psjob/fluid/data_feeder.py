"""DataFeeder: turns a mini-batch of Python samples into the feed dict.

A sample is a tuple with one entry per feed variable. Dense entries are
stacked into [batch, *shape]; entries of sequence variables (lod_level 1)
are lists of ids of any length, concatenated into one [total, 1] array with
LoD offsets [0, len0, len0+len1, ...].
"""
from __future__ import annotations

import numpy as np

from psjob.fluid.core import CPUPlace, LoDTensor
from psjob.fluid.framework import Variable, default_main_program


class DataFeederError(ValueError):
    pass


class DataFeeder:
    def __init__(self, feed_list, place=None, program=None):
        program = program or default_main_program()
        self.place = place or CPUPlace()
        self.feed_vars: list[Variable] = []
        for v in feed_list:
            if isinstance(v, str):
                v = program.global_block().var(v)
            if not isinstance(v, Variable):
                raise TypeError(f"DataFeeder feed_list items must be Variables or names, got {v!r}")
            self.feed_vars.append(v)
        self.feed_names = [v.name for v in self.feed_vars]

    def feed(self, iterable) -> dict:
        columns = [[] for _ in self.feed_vars]
        for i, sample in enumerate(iterable):
            if len(sample) != len(self.feed_vars):
                raise DataFeederError(f"sample {i} has {len(sample)} fields, expected {len(self.feed_vars)} "
                                      f"({', '.join(self.feed_names)})")
            for col, value in zip(columns, sample):
                col.append(value)
        if not columns or not columns[0]:
            raise DataFeederError("DataFeeder.feed got an empty batch")
        return {v.name: self._convert(v, col) for v, col in zip(self.feed_vars, columns)}

    def _convert(self, var: Variable, col: list):
        dtype = np.dtype(var.dtype)
        if var.lod_level == 0:
            try:
                arr = np.asarray(col, dtype=dtype)
            except (TypeError, ValueError) as exc:
                raise DataFeederError(f"feed {var.name!r}: cannot convert samples to {dtype.name}: {exc}") from exc
            tail = [d for d in var.shape[1:]]
            if tail and all(d >= 0 for d in tail):
                if arr.size != len(col) * int(np.prod(tail)):
                    raise DataFeederError(f"feed {var.name!r}: each sample must have {int(np.prod(tail))} "
                                          f"values (shape {tail}), got {len(col)} samples as an array of shape "
                                          f"{list(arr.shape)}")
                arr = arr.reshape([len(col)] + tail)
            return arr
        seqs = [np.asarray(s, dtype=dtype).reshape(-1) for s in col]
        offsets = [0]
        for s in seqs:
            offsets.append(offsets[-1] + len(s))
        flat = np.concatenate(seqs).reshape(-1, 1) if seqs else np.zeros((0, 1), dtype)
        t = LoDTensor()
        t.set(flat, self.place)
        t.set_lod([offsets])
        return t
