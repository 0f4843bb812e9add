"""Small collectives among trainers, held by pserver 0: `fleet.util` all_reduce/all_gather/barrier.

Trainers have no channel to one another (Paddle runs these over gloo), so pserver 0
meets them: every trainer contributes one small array under a key (a name and the
caller's round number for that name); when every expected trainer has, each gets
every contribution back in trainer order, and reduces it itself (the same reduction
on the same arrays in the same order: every trainer gets identical bits).

Who is expected: the live member set, not the job's capacity. A set expects the
trainers that were members when it opened (its first contribution); a member that
leaves (`leave`: it completed, or was scaled away) is no longer waited for. In a job
of fixed size every trainer is a member from the start and until it completes.

Rounds: every trainer numbers its collectives from 0 (all of them in one sequence,
as Paddle requires every trainer to call them in the same order), so a trainer that
joins a running elastic job (`join`) starts at 0 while the members are at k. Its
first collective is placed into the oldest open set that expects it — it was a
member when that set opened — or else into the next set to open; the difference is
kept as its offset for the rest of its life, so its later calls pair with the
members'. A collective that opened before a trainer joined completes without it.

Trainers that call different collectives in one round (one called a barrier where another
called all_gather: a script whose calls differ by trainer) would wait on each other for
ever; both sets fail at once instead, naming the two calls. (Paddle's gloo matches calls
by order alone and mixes them up silently.)

A key is forgotten once every contributor still a member has collected it, so a
retried contribution (same trainer, same key, before the others collected) is
answered from the same set rather than counted twice; a contribution that arrives
after its key was forgotten starts a new set, which is why callers number their
rounds.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np


@dataclass
class _Set:
    expected: set            # members when it opened, less those that left since
    got: dict = field(default_factory=dict)   # trainer → array
    collected: set = field(default_factory=set)
    clash: str = ""          # set when another collective took this round on some trainer

    def complete(self) -> bool:
        return self.expected <= self.got.keys()


class TrainerGather:
    def __init__(self, trainers: int, timeout_s: float, members=None):
        """`trainers`: the capacity (ids 0..trainers-1); `members`: the live member set
        (default: every trainer, a job of fixed size)."""
        self.trainers, self.timeout_s = int(trainers), float(timeout_s)
        self._members = set(range(self.trainers)) if members is None else set(members)
        self._cond = threading.Condition()
        self._sets: dict[tuple, _Set] = {}   # (name, round) → its set
        self._offsets: dict[int, int] = {}   # trainer → its round numbers' offset (joiners)
        self._placing: set = set()           # joined, first collective not yet placed
        self._newest = -1                    # the highest round a set was opened for
        self._closed = False                 # close(): nothing waits any more

    def join(self, trainer_id: int) -> None:
        """A trainer process joined (a new one: its rounds start again from 0)."""
        with self._cond:
            self._members.add(trainer_id)
            self._placing.add(trainer_id)
            self._offsets.pop(trainer_id, None)

    def leave(self, trainer_id: int) -> None:
        """A member completed or was scaled away: no collective waits for it any more."""
        with self._cond:
            self._members.discard(trainer_id)
            self._placing.discard(trainer_id)
            self._offsets.pop(trainer_id, None)
            for key, s in list(self._sets.items()):
                if trainer_id not in s.got:
                    s.expected.discard(trainer_id)
                self._forget_if_done(key, s)
            self._cond.notify_all()

    def close(self) -> None:
        """The pserver is stopping: collectives waiting for trainers fail at once."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _round(self, trainer_id: int, local: int) -> int:
        if trainer_id in self._placing:
            waiting = [r for (_, r), s in self._sets.items()
                       if trainer_id in s.expected and trainer_id not in s.got]
            placed = min(waiting) if waiting else self._newest + 1
            self._offsets[trainer_id] = placed - local
            self._placing.discard(trainer_id)
        return local + self._offsets.get(trainer_id, 0)

    def _forget_if_done(self, key: tuple, s: _Set) -> None:
        if s.complete() and all(t in s.collected or t not in self._members for t in s.got):
            del self._sets[key]

    def _check_clash(self, key: tuple, s: _Set) -> None:
        """Fail this set and any other open set of the same round under another name."""
        for (name, round_), other in self._sets.items():
            if round_ == key[1] and name != key[0] and not other.complete():
                s.clash = other.clash = (
                    f"collective #{round_}: trainer(s) {sorted(other.got)} called {name!r} where trainer(s) "
                    f"{sorted(s.got)} called {key[0]!r}; every trainer must call fleet.util's collectives, "
                    "barrier_worker and the collective saves in the same order")

    def gather(self, trainer_id: int, name: str, round_: int, value: np.ndarray) -> list:
        if not 0 <= trainer_id < self.trainers:
            raise ValueError(f"gather {name!r}: trainer id {trainer_id} outside 0..{self.trainers - 1}")
        with self._cond:
            key = (str(name), self._round(trainer_id, int(round_)))
            s = self._sets.get(key)
            if s is None:
                s = self._sets[key] = _Set(expected=self._members | {trainer_id})
                self._newest = max(self._newest, key[1])
            if trainer_id in s.got and (s.got[trainer_id].dtype != value.dtype
                                        or s.got[trainer_id].shape != value.shape):
                raise ValueError(f"gather {name!r} round {round_}: trainer {trainer_id} contributed twice "
                                 "with different arrays")
            s.got[trainer_id] = value
            self._check_clash(key, s)
            self._cond.notify_all()
            if not self._cond.wait_for(lambda: self._closed or s.complete() or s.clash, timeout=self.timeout_s):
                missing = sorted(s.expected - s.got.keys())
                raise TimeoutError(f"gather {name!r} round {round_}: trainers {missing} did not contribute "
                                   f"within {self.timeout_s:.0f}s")
            if s.clash:
                raise ValueError(s.clash)
            if not s.complete():
                raise ConnectionAbortedError(f"gather {name!r} round {round_}: the pserver is stopping")
            values = [s.got[t] for t in sorted(s.got)]
            s.collected.add(trainer_id)
            if self._sets.get(key) is s:
                self._forget_if_done(key, s)
            return values
