"""psjob.fleet: Fleet-style parameter-server training (`from psjob import fleet`).

The module is the Fleet singleton, as `paddle.fluid.incubate.fleet...fleet` is:
`fleet.init(role)`, `fleet.distributed_optimizer(...)`, `fleet.main_program`, ...
"""
from psjob.cluster.trainer.checkpointer import CheckpointConfig, Checkpointer
from psjob.fleet.fleet import DistributedOptimizer, Fleet, FleetError
from psjob.fleet.role_maker import PaddleCloudRoleMaker, Role, RoleMakerError, UserDefinedRoleMaker
from psjob.fleet.strategy import DistributedStrategy, ResolvedStrategy
from psjob.fluid.transpiler import DistributeTranspilerConfig

fleet = Fleet()

init = fleet.init
is_server = fleet.is_server
is_worker = fleet.is_worker
is_first_worker = fleet.is_first_worker
worker_index = fleet.worker_index
worker_num = fleet.worker_num
server_num = fleet.server_num
server_index = fleet.server_index
server_endpoints = fleet.server_endpoints
distributed_optimizer = fleet.distributed_optimizer
init_server = fleet.init_server
run_server = fleet.run_server
init_worker = fleet.init_worker
stop_worker = fleet.stop_worker
save_persistables = fleet.save_persistables
save_inference_model = fleet.save_inference_model


def __getattr__(name):
    # Programs exist only after minimize(); read them from the singleton each time.
    if name in ("main_program", "startup_program", "mode"):
        return getattr(fleet, name)
    raise AttributeError(f"module 'psjob.fleet' has no attribute {name!r}")
