"""`fleet.util`: Paddle 2.x's UtilBase — file sharding and small collectives among workers.

Paddle runs the collectives over gloo; psjob trainers have no channel to one
another, so they meet on pserver 0 (psjob/cluster/pserver/trainer_gather.py): each worker
sends its small array, gets every worker's back in worker order, and reduces
them itself — every worker gets the same bits. They are for metrics (a few
numbers), between init_worker() and stop_worker(), called by every worker in
the same order, as Paddle requires. With one worker they are exact without
any pserver (the identity), so single-process runs of a fleet script work
unchanged. comm_world "server"/"all" (collectives including the pservers) are
refused: psjob's pservers take no part in them. In a collective job
(fleet.init(is_collective=True)) they run over the trainers' ring instead
(docs/user/collective.md): values travel as float64, exact for integers below 2**53.
"""
from __future__ import annotations

import numpy as np

from psjob.cluster.collective.service import ring as collective_ring
from psjob.fluid.core import settle_deferred

MODES = ("sum", "min", "max")
_REDUCE = {"sum": np.sum, "min": np.min, "max": np.max}


class CollectiveUnavailable(NotImplementedError):
    pass


_MAX_DIMS = 8


def _ring_gather(value: np.ndarray, rank: int, world: int) -> list:
    """Every trainer's `value` in rank order, over the collective ring: each trainer fills its
    row of a zero [world, ...] array and the all-reduce (a sum) puts every row everywhere."""
    if value.ndim > _MAX_DIMS or value.dtype.kind not in "biuf":
        raise ValueError(f"fleet.util collectives over the ring take numeric arrays of at most "
                         f"{_MAX_DIMS} dimensions, got {value.dtype} shaped {list(value.shape)}")
    ring = collective_ring()
    meta = np.zeros((world, _MAX_DIMS + 1))
    meta[rank, 0] = value.ndim
    meta[rank, 1:1 + value.ndim] = value.shape
    meta = ring.allreduce(meta).astype(np.int64)
    shapes = [tuple(row[1:1 + row[0]]) for row in meta]
    width = max(int(np.prod(shape)) for shape in shapes)
    data = np.zeros((world, width))
    data[rank, :value.size] = value.reshape(-1)
    data = ring.allreduce(data)
    return [data[r, :int(np.prod(shape))].reshape(shape).astype(value.dtype) for r, shape in enumerate(shapes)]


class UtilBase:
    def __init__(self, fleet_):
        self._fleet = fleet_
        self._calls = 0  # collectives so far: the round that pairs this worker's call with the others'

    def _gather(self, call: str, value, comm_world: str) -> list:
        settle_deferred()  # a meeting point: this worker's last run finishes first (psjob.fluid.executor)
        if comm_world not in ("worker", "server", "all"):
            raise ValueError(f"comm_world must be 'worker', 'server' or 'all', got {comm_world!r}")
        if comm_world != "worker":
            raise CollectiveUnavailable(
                f"fleet.util.{call}(comm_world={comm_world!r}): psjob's pservers take no part in collectives "
                "(Paddle runs them over gloo); use comm_world='worker'")
        value = np.array(value, copy=True)
        if self._fleet.worker_num() == 1:
            return [value]
        if getattr(self._fleet, "is_collective", False):
            return _ring_gather(value, self._fleet.worker_index(), self._fleet.worker_num())
        client = self._fleet.rpc_client
        if client is None:
            raise CollectiveUnavailable(
                f"fleet.util.{call} across {self._fleet.worker_num()} workers meets them on pserver 0: "
                "call it between fleet.init_worker() and fleet.stop_worker()")
        round_ = self._calls
        self._calls += 1
        return client.gather(f"fleet.util.{call}", round_, value)

    def all_reduce(self, input, mode="sum", comm_world="worker"):
        """The element-wise sum/min/max of every worker's `input` (same shape on all)."""
        if mode not in MODES:
            raise ValueError(f"all_reduce mode must be one of {MODES}, got {mode!r}")
        values = self._gather("all_reduce", input, comm_world)
        shapes = {v.shape for v in values}
        if len(shapes) != 1:
            raise ValueError(f"fleet.util.all_reduce: the workers' inputs differ in shape: "
                             f"{[list(v.shape) for v in values]}")
        return _REDUCE[mode](np.stack(values), axis=0)

    def all_gather(self, input, comm_world="worker"):
        """Every worker's `input`, in worker order (scalars come back as Python numbers)."""
        values = self._gather("all_gather", input, comm_world)
        return [v.item() if v.ndim == 0 and np.ndim(input) == 0 else v for v in values]

    def barrier(self, comm_world="worker"):
        """Return once every worker has called barrier."""
        self._gather("barrier", np.zeros(0, dtype=np.int8), comm_world)

    def get_file_shard(self, files):
        """This worker's share of `files`, split as Paddle splits them: contiguous blocks,
        the first len(files) % workers workers one file more.

        The workers are the trainers taking part now (fleet.worker_members()): in an elastic
        job the live members at this call, ranked by trainer id, not the job's capacity (which
        worker_num() reports there); a shard is then valid until the members change."""
        if not isinstance(files, list):
            raise TypeError(f"files must be a list, got {type(files).__name__}")
        members, index = sorted(self._fleet.worker_members()), self._fleet.worker_index()
        if index not in members:
            raise ValueError(f"fleet.util.get_file_shard: trainer {index} is not among the job's live "
                             f"trainers {members} (it has left the job)")
        trainers, me = len(members), members.index(index)
        base, extra = divmod(len(files), trainers)
        begin = me * base + min(me, extra)
        return files[begin:begin + base + (1 if me < extra else 0)]

    def print_on_rank(self, message, rank_id):
        if self._fleet.worker_index() == rank_id:
            print(message, flush=True)
