"""How stale an async gradient is when a pserver applies it (psjob_trainer_staleness_steps).

Staleness of one pushed gradient block: the number of updates *from other
pushes* that this pserver applied to the same parameter since the pushing
trainer last pulled it. 0 means no other trainer touched the parameter in
between. A trainer's own earlier pushes do not count: its Communicator may
send several merged gradients between two pulls, and those are its own
progress, not interference the metric is meant to show.

Bookkeeping is two counters per parameter ("key"): `applied[key]`, updates
applied so far, and `seen[(trainer, key)]`, the value of `applied[key]` when
that trainer last read the key (a GetVariables of the parameter, a Prefetch
of a table), advanced by one for each of the trainer's own updates. On an
update the staleness is `applied - seen`; a trainer that never read the key
counts from 0 (every update since the pserver started).

Keys are parameter names: gradient names map to the parameter their
optimize block updates (`param_of_grad`); geo deltas and pulls already name
the parameter; a prefetch names its table. Thread-safe (one small lock: the
async pserver updates different blocks in parallel).
"""
from __future__ import annotations

import threading


def param_of_grad(program, grad_name: str, block_idx: int) -> str:
    """The parameter the optimize block `block_idx` updates with `grad_name`.

    The op that reads the gradient (its `Grad` slot) names the parameter in
    `Param` (dense optimizers) or `W` (sparse_table_push); with clipping or
    regularization the optimizer reads a derived gradient, so any op with a
    `Param` slot is the fallback. Unknown layouts key by the gradient name
    (staleness then counts from the pserver's start: never too small)."""
    ops = program.block(block_idx).ops
    for op in ops:
        if grad_name in (op.inputs.get("Grad") or ()):
            target = (op.inputs.get("Param") or op.inputs.get("W") or [None])[0]
            if target:
                return target
    for op in ops:
        target = (op.inputs.get("Param") or [None])[0]
        if target:
            return target
    return grad_name


class StalenessTracker:
    """Per-parameter update counters and per-trainer read marks (see the module doc)."""

    def __init__(self, grad_to_key: dict[str, str] | None = None):
        self._key = dict(grad_to_key or {})
        self._applied: dict[str, int] = {}
        self._seen: dict[tuple[int, str], int] = {}
        self._lock = threading.Lock()

    def key(self, name: str) -> str:
        return self._key.get(name, name)

    def on_read(self, trainer_id: int, names) -> None:
        """Trainer `trainer_id` read `names` (parameters or a table): it has seen every update so far."""
        t = int(trainer_id)
        with self._lock:
            for name in names:
                key = self.key(name)
                self._seen[(t, key)] = self._applied.get(key, 0)

    def on_update(self, trainer_id: int, name: str) -> int:
        """Trainer `trainer_id`'s gradient (or delta) `name` is being applied → its staleness."""
        t, key = int(trainer_id), self.key(name)
        with self._lock:
            applied = self._applied.get(key, 0)
            seen = self._seen.get((t, key), 0)
            self._applied[key] = applied + 1
            self._seen[(t, key)] = seen + 1  # its own update does not make it staler
            return max(applied - seen, 0)

    def applied(self, name: str) -> int:
        with self._lock:
            return self._applied.get(self.key(name), 0)
