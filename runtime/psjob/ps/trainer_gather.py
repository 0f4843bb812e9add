"""Small collectives among trainers, held by pserver 0: `fleet.util` all_reduce/all_gather/barrier.

Trainers have no channel to one another (Paddle runs these over gloo), so pserver 0
meets them: every trainer contributes one small array under a key (a name and the
caller's round number for that name); when all `trainers` have, each gets every
contribution back in trainer order, and reduces it itself (the same reduction on
the same arrays in the same order: every trainer gets identical bits).

A key is forgotten once every trainer has collected it, so a retried contribution
(same trainer, same key, before the others collected) is answered from the same
set rather than counted twice; a contribution that arrives after its key was
forgotten starts a new set, which is why callers number their rounds.
"""
from __future__ import annotations

import threading

import numpy as np


class TrainerGather:
    def __init__(self, trainers: int, timeout_s: float):
        self.trainers, self.timeout_s = int(trainers), float(timeout_s)
        self._cond = threading.Condition()
        self._sets: dict[tuple, dict] = {}       # key → {trainer: array}
        self._collected: dict[tuple, set] = {}   # key → trainers that got the result

    def gather(self, trainer_id: int, name: str, round_: int, value: np.ndarray) -> list:
        if not 0 <= trainer_id < self.trainers:
            raise ValueError(f"gather {name!r}: trainer id {trainer_id} outside 0..{self.trainers - 1}")
        key = (str(name), int(round_))
        with self._cond:
            got = self._sets.setdefault(key, {})
            if trainer_id in got and (got[trainer_id].dtype != value.dtype or got[trainer_id].shape != value.shape):
                raise ValueError(f"gather {name!r} round {round_}: trainer {trainer_id} contributed twice "
                                 "with different arrays")
            got[trainer_id] = value
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: len(self._sets.get(key, got)) == self.trainers,
                                       timeout=self.timeout_s):
                missing = sorted(set(range(self.trainers)) - set(got))
                raise TimeoutError(f"gather {name!r} round {round_}: trainers {missing} did not contribute "
                                   f"within {self.timeout_s:.0f}s")
            values = [got[t] for t in range(self.trainers)]
            done = self._collected.setdefault(key, set())
            done.add(trainer_id)
            if len(done) == self.trainers:
                del self._sets[key], self._collected[key]
            return values
