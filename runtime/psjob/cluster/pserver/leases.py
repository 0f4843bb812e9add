"""Checkpoint freezes: a lease during which no update changes the pserver's state.

Trainer 0's checkpoint (psjob.cluster.pserver.checkpoint_service) freezes every pserver
at one cut, saves, and thaws. A freeze is a lease on the core's clock: updates wait
while it lies ahead, and it runs out by itself if trainer 0 dies mid-save, so a lost
trainer never stops the job. Reads go on while frozen. A freeze is named (one save's
id): a renewal or thaw of a freeze that was replaced or has run out changes nothing.

Every method is called holding the core's condition (PserverState takes it).
"""
from __future__ import annotations

from psjob.cluster.pserver.state_core import PserverCore, PserverStopping


class FreezeLease:
    def __init__(self, core: PserverCore):
        self.core = core
        self._frozen_until = 0.0  # clock seconds; updates wait while it lies ahead
        self._freeze_id: str | None = None  # the freeze held (one save), or None
        self.updates_held = 0  # pushes waiting out a freeze now (notified under the lock)

    def hold(self, freeze_id: str, lease_s: float) -> None:
        """Freeze for `lease_s` seconds from now, replacing any older freeze."""
        self._frozen_until = self.core._clock() + lease_s
        self._freeze_id = freeze_id

    def renew(self, freeze_id: str, lease_s: float) -> bool:
        """Extend freeze `freeze_id` by `lease_s` from now; False when it is no longer held
        (it expired, was thawed or replaced) and nothing changed."""
        now = self.core._clock()
        held = self._freeze_id == freeze_id and self._frozen_until > now
        if held:
            self._frozen_until = now + lease_s
        return held

    def thaw(self, freeze_id: str | None = None) -> tuple[bool, bool]:
        """Release freeze `freeze_id`, or whatever is held when it is None (a restarted
        trainer 0). (expired, released): `expired` when the freeze named was no longer
        held (or, id-less, a lease had run out); `released` when an id-less thaw ended a
        live freeze."""
        now = self.core._clock()
        if freeze_id is None:
            released = self._frozen_until > now
            expired = 0 < self._frozen_until <= now
            self._frozen_until, self._freeze_id = 0.0, None
        elif self._freeze_id == freeze_id:
            released, expired = False, not self._frozen_until > now
            self._frozen_until, self._freeze_id = 0.0, None
        else:
            released, expired = False, True  # released by someone else, or replaced: leave it be
        self.core._cond.notify_all()
        return expired, released

    @property
    def frozen(self) -> bool:
        """A freeze is held and its lease has not run out."""
        return self._frozen_until > self.core._clock()

    def wait_while_frozen(self) -> None:
        # The freeze expires by itself (its lease), and a stopping pserver (close()) fails
        # the update at once: waiting out the lease would hold the request's thread, and so
        # the process's exit, for up to the whole lease.
        core = self.core
        held = False
        try:
            while True:
                left = self._frozen_until - core._clock()
                if left <= 0:
                    return
                if core._closed:
                    raise PserverStopping(f"pserver {core.endpoint} is stopping: an update held by a "
                                          f"checkpoint freeze will not be applied")
                if not held:
                    held = True
                    self.updates_held += 1
                    core._cond.notify_all()
                core._cond.wait(left)
        finally:
            if held:
                self.updates_held -= 1
