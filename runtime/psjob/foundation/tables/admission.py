"""Admission: which ids that are not in a table get a row when looked up.

Two tests, both per id and both deterministic across pservers:

* probability — ``uniform(key, id) < p``: a fixed, seeded sample of the id
  space is admissible, the rest never is (feature sampling);
* count — the id was looked up while absent at least ``min_count`` times. The
  counts live in a count-min sketch (``depth`` rows of ``width`` uint32
  counters, each row indexed by its own hash of the id), so memory stays
  bounded however many ids are pending. A sketch over-counts on collisions,
  so an id may be admitted early, never late. When an id is admitted its
  counters are zeroed, so that if it is later evicted and returns it has to
  earn admission again (this can also lower the count of an id sharing a
  counter: an approximation in the same spirit as the sketch itself).

The sketch is not checkpointed: pending counts are transient.
"""
from __future__ import annotations

from typing import cast

import numpy as np

from psjob.foundation.tables import hashing
from psjob.foundation.tables.config import AdmissionConfig


class Admission:
    def __init__(self, config: AdmissionConfig, key: int) -> None:
        self._config = config
        self._prob_key = hashing.derive_key(key, "admission-probability")
        self._row_keys = [hashing.derive_key(key, f"admission-sketch-{d}") for d in range(config.sketch_depth)]
        self._sketch = (np.zeros((config.sketch_depth, config.sketch_width), np.uint32)
                        if config.counts else None)

    @property
    def nbytes(self) -> int:
        return 0 if self._sketch is None else self._sketch.nbytes

    def admit(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Bool mask over unique absent ``ids`` seen ``counts`` times in this batch.

        Counts the sightings of admissible ids as a side effect.
        """
        ok = np.ones(ids.size, bool)
        if self._config.probability < 1.0:
            ok = hashing.uniform(self._prob_key, ids, np.zeros(1, np.uint64))[:, 0] < self._config.probability
        if self._sketch is None or not ok.any():
            return ok
        candidates = np.flatnonzero(ok)
        cells = self._cells(ids[candidates])
        estimate = None
        for d, cell in enumerate(cells):
            row = self._sketch[d]
            # Unique ids, but two of them may share a cell: add.at sums both.
            np.add.at(row, cell, counts[candidates].astype(np.uint32))
            seen = row[cell]
            estimate = seen if estimate is None else np.minimum(estimate, seen)
        admitted = cast(np.ndarray, estimate) >= self._config.min_count  # cells has a row per depth
        for d, cell in enumerate(cells):
            self._sketch[d][cell[admitted]] = 0
        ok[candidates[~admitted]] = False
        return ok

    def _cells(self, ids: np.ndarray) -> list[np.ndarray]:
        width = np.uint64(self._config.sketch_width)
        cells = []
        for key in self._row_keys:
            x = hashing.as_u64(ids)
            x ^= np.uint64(key)
            hashing.mix64(x)
            x %= width
            cells.append(x.astype(np.int64))
        return cells
