"""`paddle.distributed.fleet` (Paddle 2.x) for parameter-server training, over psjob.fleet.

    import psjob.distributed.fleet as fleet
    fleet.init()                                  # PaddleCloudRoleMaker from the environment
    strategy = fleet.DistributedStrategy()        # a_sync=True by default, as in Paddle 2.x
    opt = fleet.distributed_optimizer(opt, strategy)
    opt.minimize(loss)                            # rewrites the default main program in place
    if fleet.is_server():
        fleet.init_server(); fleet.run_server()
    else:
        exe.run(paddle.static.default_startup_program())
        fleet.init_worker()
        exe.train_from_dataset(paddle.static.default_main_program(), dataset)
        fleet.stop_worker()

It is the same Fleet singleton as `psjob.fleet` (one job per process). The
difference from the Fluid-style order is that Paddle 2.x scripts run the
startup program before `init_worker()`: after minimize() a worker's RPC
service connects on first use (the startup program's parameter fetches), and
init_worker() then finds it connected.
"""
from __future__ import annotations

from ...fleet import fleet as _fleet
from ...fleet import FleetError  # noqa: F401
from ...ps import client_service as _client_service
from . import base  # noqa: F401
from .base.role_maker import PaddleCloudRoleMaker, Role, UserDefinedRoleMaker  # noqa: F401
from .data_generator import MultiSlotDataGenerator, MultiSlotStringDataGenerator  # noqa: F401
from .strategy import DistributedStrategy
from .util import UtilBase

fleet = _fleet
util = UtilBase(_fleet)
_init_strategy = None


def init(role_maker=None, is_collective=False, strategy=None, log_level="INFO"):
    global _init_strategy
    _fleet.init(role_maker, is_collective=is_collective)
    _init_strategy = strategy


class _WorkerConnection:
    """The RPC service every Executor of a worker uses; it connects the fleet's worker
    (init_worker) the first time a program needs the pservers."""

    def __getattr__(self, name):
        if _fleet.rpc_service is None:
            init_worker()
        return getattr(_fleet.rpc_service, name)


class _DistributedOptimizer:
    def __init__(self, inner):
        self._inner = inner

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        result = self._inner.minimize(loss, startup_program=startup_program, parameter_list=parameter_list,
                                      no_grad_set=no_grad_set)
        if _fleet.is_worker() and not _fleet.is_collective:
            _client_service.install(_WorkerConnection())
        return result

    def __getattr__(self, name):
        return getattr(self._inner, name)


def distributed_optimizer(optimizer, strategy=None):
    """strategy: this call's, else fleet.init's, else DistributedStrategy() (async, Paddle's default)."""
    strategy = strategy if strategy is not None else _init_strategy
    return _DistributedOptimizer(_fleet.distributed_optimizer(
        optimizer, strategy if strategy is not None else DistributedStrategy()))


def init_worker(scopes=None):
    """Connect this worker to the pservers (a no-op when its startup program already did)."""
    if _fleet.rpc_service is None:
        _fleet.init_worker(scopes)


def stop_worker():
    _fleet.stop_worker()


def init_server(dirname=None, var_names=None, **kwargs):
    if var_names is not None:
        raise FleetError("init_server(var_names=...) loads a subset of a save; psjob loads the whole "
                         "save (init_server(dirname))")
    _fleet.init_server(dirname)


def run_server():
    _fleet.run_server()


def barrier_worker():
    """Wait for every worker (they meet on pserver 0). psjob first sends this worker's queued
    updates and, past the barrier, refreshes its copy of the parameters: after barrier_worker()
    every worker's program reads what all workers trained (in Paddle that depends on the
    communicator's timing). In geo mode the flush sends the current partial interval."""
    service = _fleet.rpc_service
    if service is not None and hasattr(service, "flush"):
        service.flush()
    util.barrier("worker")
    if service is not None:
        if hasattr(service, "refresh"):
            service.refresh()
        _refetch_parameters()


def _refetch_parameters():
    """Run the parameter fetches of the trainer's startup program again (its recv ops and the
    concat of sliced parameters; geo's has none: its refresh wrote the scope)."""
    from ...fluid.core import global_scope
    from ...fluid.executor import Executor
    fetches = _fleet.startup_program.clone()
    block = fetches.global_block()
    block.ops = [op for op in block.ops if op.type in ("recv", "concat")]
    fetches._bump()
    if block.ops:
        Executor().run(fetches, scope=global_scope())


def save_persistables(executor, dirname, main_program=None, mode=0):
    return _fleet.save_persistables(executor, dirname, main_program)


def save_inference_model(executor, dirname, feeded_var_names, target_vars, main_program=None,
                         export_for_deployment=True, mode=0):
    return _fleet.save_inference_model(executor, dirname, feeded_var_names, target_vars, main_program,
                                       export_for_deployment)


is_server = _fleet.is_server
is_worker = _fleet.is_worker
is_first_worker = _fleet.is_first_worker
worker_index = _fleet.worker_index
worker_num = _fleet.worker_num
server_num = _fleet.server_num
server_index = _fleet.server_index
server_endpoints = _fleet.server_endpoints
worker_endpoints = _fleet.worker_endpoints
