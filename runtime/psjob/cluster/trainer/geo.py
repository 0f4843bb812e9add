"""Geo-SGD: trainers optimize locally and exchange parameter deltas every k steps.

Each trainer runs the full single-machine program (forward, backward and its
own optimizer ops) on a local copy of every parameter. Every `k_steps` steps
(`geo_step()`, called by the `geo_sgd_step` op the Fleet appends to the
program) it sends, for each parameter block the pservers hold,

    delta = (local - snapshot) / trainers

(`is_delta`: the pserver adds it in place), then pulls the blocks back — now
holding every trainer's deltas — into its local parameters and snapshot.
Only rows that changed travel for 2-D parameters (a sparse embedding touched
by a few ids sends a SelectedRows of those rows). No trainer waits for
another: a slow trainer's deltas simply arrive later.

The placement (which slice of which parameter lives on which pserver, at what
element offset) is the transpiler's `VarsDistributed` overview.

Each delta push's staleness (updates from other trainers' deltas a block took
since this trainer last pulled it: what its local training did not see) goes
to `on_staleness`, a callable(int) the trainer's telemetry sets.
"""
from __future__ import annotations

import numpy as np

from psjob.cluster.protocol import PSClient
from psjob.fluid.core import SelectedRows
from psjob.fluid.ops.dist_ops import record_staleness


class GeoCommunicator:
    def __init__(self, client: PSClient, scope, overview, param_names, trainers: int, k_steps: int):
        if k_steps < 1:
            raise ValueError(f"geo mode needs k_steps >= 1, got {k_steps}")
        self.client = client
        self.trainer_id = client.trainer_id
        self.scope = scope
        self.trainers = max(1, int(trainers))
        self.k_steps = int(k_steps)
        self.steps = 0
        self.syncs = 0
        # origin name -> [(endpoint, slice name, first row, rows)]
        self.pieces: dict[str, list] = {}
        for name in param_names:
            pieces = []
            for dv in overview.get_distributed_vars_by_origin(name):
                if dv.vtype != "Param":
                    continue
                row_elems = int(np.prod(dv.origin.shape[1:])) if len(dv.origin.shape) > 1 else 1
                pieces.append((dv.endpoint, dv.slice.name, dv.offset // row_elems, int(dv.slice.shape[0])))
            if pieces:
                self.pieces[name] = sorted(pieces, key=lambda p: p[2])
        self.snapshot: dict[str, np.ndarray] = {}
        self.on_staleness = None  # callable(int), see the module doc

    def _pull_into_scope(self):
        by_ep: dict[str, list] = {}
        for pieces in self.pieces.values():
            for ep, slice_name, _, _ in pieces:
                by_ep.setdefault(ep, []).append(slice_name)
        handles = {ep: self.client.pull(ep, names) for ep, names in by_ep.items()}
        got = {}
        for h in handles.values():
            got.update(h.wait())
        for name, pieces in self.pieces.items():
            local = self.scope.vars.get(name)
            full = np.concatenate([np.asarray(got[s]).reshape((-1,) + tuple(got[s].shape[1:]))
                                   for _, s, _, _ in pieces], axis=0)
            if local is None:
                self.scope.vars[name] = full.copy()
            else:
                local[...] = full.reshape(local.shape)
            self.snapshot[name] = np.array(self.scope.vars[name], copy=True)

    def geo_step(self):
        if not self.snapshot:
            # First step: adopt the pservers' values (trainers may have been
            # initialized with other seeds); this step's local update is dropped.
            self._pull_into_scope()
            return
        self.steps += 1
        if self.steps % self.k_steps == 0:
            self.sync()

    def sync(self):
        by_ep: dict[str, dict] = {}
        scale = np.float32(1.0 / self.trainers)
        for name, pieces in self.pieces.items():
            local = self.scope.vars[name]
            delta = (local - self.snapshot[name]) * scale
            for ep, slice_name, row0, rows in pieces:
                part = delta[row0:row0 + rows] if delta.ndim else delta
                if part.ndim == 2 and part.shape[0] > 1024:
                    changed = np.flatnonzero(np.any(part != 0, axis=1))
                    if changed.size == 0:
                        continue
                    value = SelectedRows(changed.astype(np.int64), part[changed], part.shape[0])
                else:
                    value = part.reshape(self._slice_shape(local, rows))
                by_ep.setdefault(ep, {})[slice_name] = value
        handles = [self.client.push(ep, values, is_delta=True) for ep, values in by_ep.items()]
        for h in handles:
            record_staleness(self.on_staleness, h.wait())
        self._pull_into_scope()
        self.syncs += 1

    @staticmethod
    def _slice_shape(local, rows):
        return (rows,) + tuple(local.shape[1:]) if local.ndim else local.shape

    # -- the rest of the client verbs ---------------------------------------------------
    def flush(self):
        """Send what the current partial interval learned (stop, fleet.barrier_worker)."""
        if self.snapshot and self.steps % self.k_steps:
            self.sync()

    def refresh(self):
        """Adopt the pservers' current values (fleet.barrier_worker, once all workers flushed)."""
        if self.snapshot:
            self._pull_into_scope()

    def complete(self, endpoints=None):
        self.flush()
        self.client.complete(endpoints)

    def __getattr__(self, name):
        return getattr(self.client, name)
