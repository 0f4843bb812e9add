"""`paddle.distributed` (Paddle 2.x): `fleet`, the datasets, the sparse tables' entry policies,
get_rank/get_world_size, and
init_parallel_env, which forms the collective trainers' ring (docs/user/collective.md).
spawn is refused with an error naming the alternative."""
from __future__ import annotations

from psjob.foundation.settings import process_settings


def get_rank() -> int:
    """This trainer's id: the fleet's role when fleet.init ran, else the environment
    (PADDLE_TRAINER_ID, 0 when unset, as Paddle's ParallelEnv reads it)."""
    from psjob.distributed.fleet import fleet
    if fleet.initialized:
        return fleet.worker_index()
    return process_settings().process.trainer_id


def get_world_size() -> int:
    """The number of trainers (PADDLE_TRAINERS_NUM, or Fluid's PADDLE_TRAINERS; 1 when unset)."""
    from psjob.distributed.fleet import fleet
    if fleet.initialized:
        return fleet.worker_num()
    return process_settings().process.trainers


def _collective(name):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"paddle.distributed.{name}: collective (data-parallel) training is not "
                                  "supported by psjob; train with parameter servers (paddle.distributed.fleet "
                                  "with is_collective=False, under psjob launch --server_num --worker_num)")
    return refuse


def init_parallel_env():
    """Join the collective trainers' ring (PADDLE_TRAINER_ENDPOINTS, PADDLE_TRAINER_ID): returns
    once every trainer has; a single process (no endpoints) has nothing to join."""
    from psjob.cluster.collective.service import environment, ring
    env = environment()
    if env.world_size > 1:
        ring()


spawn = _collective("spawn")


def __getattr__(name):
    # Loaded on first use: `import psjob.distributed` stays cheap.
    if name == "fleet":
        import psjob.distributed.fleet
    elif name in ("EntryAttr", "ProbabilityEntry", "CountFilterEntry", "ShowClickEntry"):
        from psjob.distributed import entry_attr
        return getattr(entry_attr, name)
    elif name == "io":
        import psjob.distributed.io
    elif name in ("InMemoryDataset", "QueueDataset"):
        from psjob.distributed import dataset
        globals().update(InMemoryDataset=dataset.InMemoryDataset, QueueDataset=dataset.QueueDataset)
    else:
        raise AttributeError(f"module 'psjob.distributed' has no attribute {name!r}")
    return globals()[name]
