"""Who the trainers are: ids, registration, the member set, joins and completions.

A trainer id is 0..Fanin-1. A job of fixed size starts with every id a member; a trainer
that completes leaves the member set, its slots are zeroed (it contributes nothing from
then on), and the pserver is done when the last member has left.

Elastic jobs (listen_and_serv `elastic`): the member set starts empty and trainers join
it (`join`) before their first step and leave it by completing; Fanin is only the
capacity (ids 0..Fanin-1, one gradient slot each). A sync join takes effect at once,
which is a step boundary for the joiner: its first pull sees the current version, so its
first gradient belongs to the round in progress, which now waits for it too. A member
that completes between rounds leaves at that boundary (sync_rounds.py averages each
round over the members it had). Async, half-async and geo members join and leave
immediately.

Pods without a stable index (a Deployment's) `register` for an id; see `register`.
"""
from __future__ import annotations

import logging

from psjob.cluster.pserver.state_core import DONE, SERVING, PserverCore
from psjob.cluster.pserver.sync_rounds import SyncRounds
from psjob.cluster.pserver.trainer_gather import TrainerGather

log = logging.getLogger("psjob.pserver")


class Membership:
    def __init__(self, core: PserverCore, members: set[int], rounds: SyncRounds, gathers: TrainerGather):
        """`members`: the live member set, shared with `rounds` (and `gathers` is told of changes)."""
        self.core, self.active, self.rounds, self.gathers = core, members, rounds, gathers
        self.completed: list[int] = []
        self._registered: dict[str, int] = {}
        self._last_seen: dict[int, float] = {}  # trainer id → clock time of its last request

    def check(self, trainer_id: int) -> int:
        """A request's trainer id, checked and noted as seen now."""
        core = self.core
        t = int(trainer_id)
        if not 0 <= t < core.fanin:
            capacity = " (the job's trainer capacity, PSJOB_MAX_TRAINERS)" if core.elastic else ""
            raise ValueError(f"pserver {core.endpoint}: trainer id {t} is out of range [0, {core.fanin})"
                             f"{capacity}")
        if core.state != SERVING and core.state != DONE:
            raise RuntimeError(f"pserver {core.endpoint} is {core.state}, not serving yet")
        self._last_seen[t] = core._clock()
        return t

    def complete(self, t: int) -> int:
        """Trainer t is done (held: the core's condition); → the members left."""
        core = self.core
        if t in self.active:
            self.active.discard(t)
            self.completed.append(t)
            self.gathers.leave(t)
            if core.elastic:
                self._log("left", t)
            core.zero_slots_of(t)
            if not self.active:
                core.state = DONE
            elif core.sync_mode:
                self.rounds.maybe_apply()
            core._cond.notify_all()
        return len(self.active)

    def join(self, t: int) -> tuple[int, list[int]]:
        """Trainer t joins the member set (elastic jobs; a no-op for a member; held: the
        core's condition) → (version, members). A trainer that completed earlier may join
        again (an index scaled away and back). Refused once every member has left."""
        core = self.core
        if core.state == DONE:
            raise RuntimeError(f"pserver {core.endpoint}: every trainer has left and the pserver "
                               f"is stopping; trainer {t} cannot join")
        if core.elastic and t not in self.active:
            if t in self.completed:
                self.completed.remove(t)
            self.active.add(t)
            self.rounds.rejoin(t)
            core.zero_slots_of(t)
            core._cond.notify_all()
            self._log("joined", t)
        if core.elastic:
            self.gathers.join(t)  # a new process: its collectives count from 0 again
        return core.version, sorted(self.active)

    def _log(self, what: str, t: int) -> None:
        # Parsed by tests/component/test_elastic_trainers.py: every round's member count.
        log.info("pserver %s: trainer %d %s at version %d; members %s", self.core.endpoint, t, what,
                 self.core.version, sorted(self.active))
        self.rounds.members_changed()

    def register(self, worker_name: str) -> tuple[int, int]:
        """A trainer id for a pod without a stable index (held: the core's condition).

        The same name always gets the same id. A new name gets the lowest id
        that nobody holds — neither registered nor seen in a request, so that
        after this pserver restarts the running trainers keep theirs. When
        every id is held, the new pod replaced a dead one: it takes the id of
        the unfinished trainer silent longest, once silent for
        `reclaim_after_s`; before that the registration is refused (the pod
        fails and is restarted, and asks again).
        """
        core = self.core
        if worker_name in self._registered:
            return self._registered[worker_name], core.fanin
        held = set(self._registered.values()) | set(self._last_seen)
        free = [t for t in range(core.fanin) if t not in held]
        now = core._clock()
        if free:
            tid = free[0]
        else:
            reclaim_after_s = core.options.reclaim_after_s
            silent = sorted((self._last_seen.get(t, 0.0), t) for t in self.active
                            if now - self._last_seen.get(t, 0.0) >= reclaim_after_s)
            if not silent:
                raise ValueError(
                    f"pserver {core.endpoint}: all {core.fanin} trainer ids are held by "
                    f"trainers that are running or completed; {worker_name!r} can take the id "
                    f"of a trainer silent for {reclaim_after_s:.0f}s")
            tid = silent[0][1]
            for name in [n for n, t in self._registered.items() if t == tid]:
                del self._registered[name]
        self._registered[worker_name] = tid
        self._last_seen[tid] = now
        return tid, core.fanin
