"""`fleet.util`: Paddle 2.x's UtilBase — file sharding and small collectives among workers.

Paddle runs the collectives over gloo; psjob trainers have no channel to one
another (only to the pservers), so with more than one worker `all_reduce`,
`all_gather` and `barrier` raise an error naming the alternative. With one
worker they are exact (the identity), so single-process runs of a fleet
script work unchanged.
"""
from __future__ import annotations

import numpy as np

MODES = ("sum", "min", "max")


class CollectiveUnavailable(NotImplementedError):
    pass


class UtilBase:
    def __init__(self, fleet_):
        self._fleet = fleet_

    def _single_worker(self, call: str, comm_world: str) -> None:
        if comm_world not in ("worker", "server", "all"):
            raise ValueError(f"comm_world must be 'worker', 'server' or 'all', got {comm_world!r}")
        if self._fleet.worker_num() > 1 or comm_world != "worker":
            raise CollectiveUnavailable(
                f"fleet.util.{call}(comm_world={comm_world!r}) across {self._fleet.worker_num()} workers: psjob "
                "trainers talk only to the pservers (Paddle uses gloo here). Compute global metrics with "
                "the fluid.metrics/AUC state the pservers aggregate, or reduce each trainer's printed "
                "metrics afterwards (psjob launch's summary does)")

    def all_reduce(self, input, mode="sum", comm_world="worker"):
        if mode not in MODES:
            raise ValueError(f"all_reduce mode must be one of {MODES}, got {mode!r}")
        self._single_worker("all_reduce", comm_world)
        return np.array(input, copy=True)

    def all_gather(self, input, comm_world="worker"):
        self._single_worker("all_gather", comm_world)
        return [input]

    def barrier(self, comm_world="worker"):
        self._single_worker("barrier", comm_world)

    def get_file_shard(self, files):
        """This worker's share of `files`, split as Paddle splits them: contiguous blocks,
        the first len(files) % worker_num workers one file more."""
        if not isinstance(files, list):
            raise TypeError(f"files must be a list, got {type(files).__name__}")
        trainers, me = self._fleet.worker_num(), self._fleet.worker_index()
        base, extra = divmod(len(files), trainers)
        begin = me * base + min(me, extra)
        return files[begin:begin + base + (1 if me < extra else 0)]

    def print_on_rank(self, message, rank_id):
        if self._fleet.worker_index() == rank_id:
            print(message, flush=True)
