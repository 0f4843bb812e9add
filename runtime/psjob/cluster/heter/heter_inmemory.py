"""An in-process heter trainer: real heter programs and HeterState, no sockets.

`InMemoryHeterClient` is what a CPU trainer's `send_and_recv` kernel calls
(`executor.services["heter"]`); it calls the `HeterState` of the addressed
heter trainer directly, copying values both ways as the wire would. With
`inmemory.InMemoryCluster` for the pservers, a whole heterogeneous job runs
in one process — the tests compare it with the plain transpiled job.
"""
from __future__ import annotations

import numpy as np

from psjob.cluster.heter.heter_state import HeterState
from psjob.fluid.core import SelectedRows, to_numpy
from psjob.fluid.transpiler.heter_split import heter_endpoint_for


def _wire_copy(value):
    if isinstance(value, SelectedRows):
        return SelectedRows(to_numpy(value.rows).copy(), to_numpy(value.values).copy(), value.height)
    return np.array(to_numpy(value), copy=True)


class InMemoryHeterClient:
    def __init__(self, states: dict, trainer_id: int):
        self.states: dict[str, HeterState] = dict(states)
        self.trainer_id = int(trainer_id)

    def run_stage(self, endpoint, trainer_id, stage, signature, values, lods=None) -> dict:
        lods = lods or {}
        payload = {n: ((_wire_copy(v), [list(np.asarray(lv)) for lv in lods[n]]) if n in lods else _wire_copy(v))
                   for n, v in values.items()}
        got = self._state(endpoint).on_run_stage(trainer_id, stage, signature, payload)
        return {n: (_wire_copy(v), [np.asarray(lv).copy() for lv in lod] if lod else None)
                for n, (v, lod) in got.items()}

    def complete(self, endpoints=None) -> None:
        for ep in endpoints or [heter_endpoint_for(self.trainer_id, list(self.states))]:
            self._state(ep).on_complete(self.trainer_id)

    def _state(self, endpoint) -> HeterState:
        try:
            return self.states[endpoint]
        except KeyError:
            raise KeyError(f"no heter trainer at {endpoint!r} (have {', '.join(self.states)})") from None
