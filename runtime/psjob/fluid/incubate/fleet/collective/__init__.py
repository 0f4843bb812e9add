"""`paddle.fluid.incubate.fleet.collective`: Fluid 1.x's collective Fleet (docs/user/collective.md).

    from paddle.fluid.incubate.fleet.collective import fleet, DistributedStrategy
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    fleet.distributed_optimizer(opt, strategy=DistributedStrategy()).minimize(loss)
    exe.run(fluid.default_startup_program())
    exe.run(fleet.main_program, feed=..., fetch_list=[loss])

As Paddle 1.8's CollectiveOptimizer does in its "nccl2" mode, minimize() transpiles
with the NCCL2 DistributeTranspiler (the ring's rendezvous in the startup program) and
`fleet.main_program` is the program compiled with_data_parallel for the trainers
(every gradient all-reduced after backward); `fleet._origin_program` is the plain one.
"""
from __future__ import annotations

from psjob.fleet.role_maker import PaddleCloudRoleMaker, RoleMakerBase
from psjob.fluid.compiler import BuildStrategy
from psjob.fluid.executor import CompiledProgram
from psjob.fluid.framework import default_startup_program
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from psjob.foundation.role_env import CollectiveEnv

__all__ = ["fleet", "DistributedStrategy", "CollectiveOptimizer"]


class DistributedStrategy(BuildStrategy):
    """Fluid 1.x's collective strategy: a BuildStrategy with the collective fields (which tune
    nothing on psjob's CPU ring, except that mode must be "nccl2")."""

    def __init__(self):
        super().__init__()
        self.use_local_sgd = False
        self.use_dist_fc = False
        self.mode = "nccl2"
        self.collective_mode = None
        self.nccl_comm_num = 1
        self.forward_recompute = False
        self.recompute_checkpoints = []
        self.exec_strategy = None


class CollectiveFleet:
    def __init__(self):
        self._env: CollectiveEnv | None = None
        self.main_program = None
        self.startup_program = None
        self._origin_program = None

    def init(self, role_maker=None):
        if role_maker is None:
            role_maker = PaddleCloudRoleMaker(is_collective=True)
        if not isinstance(role_maker, RoleMakerBase) or role_maker.collective is None:
            raise ValueError("the collective fleet needs a collective role maker: "
                             "PaddleCloudRoleMaker(is_collective=True)")
        self._env = role_maker.collective

    def _e(self) -> CollectiveEnv:
        if self._env is None:
            raise RuntimeError("call fleet.init(role_maker) first")
        return self._env

    def is_worker(self):
        return True

    def is_server(self):
        return False

    def is_first_worker(self):
        return self._e().rank == 0

    def worker_index(self):
        return self._e().rank

    def worker_num(self):
        return self._e().world_size

    def worker_endpoints(self, to_string=False):
        eps = list(self._e().endpoints)
        return ",".join(eps) if to_string else eps

    def distributed_optimizer(self, optimizer, strategy=None):
        strategy = strategy if strategy is not None else DistributedStrategy()
        if getattr(strategy, "mode", "nccl2") != "nccl2":
            raise ValueError(f"DistributedStrategy.mode={strategy.mode!r}: psjob's collective fleet runs "
                             "the 'nccl2' mode only")
        return CollectiveOptimizer(self, optimizer, strategy)


class CollectiveOptimizer:
    def __init__(self, fleet_: CollectiveFleet, optimizer, strategy):
        self._fleet, self._optimizer, self._strategy = fleet_, optimizer, strategy

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        env = self._fleet._e()
        startup = startup_program or default_startup_program()
        result = self._optimizer.minimize(loss, startup, parameter_list, no_grad_set)
        main = loss.block.program
        self._fleet._origin_program = main.clone()
        if env.world_size > 1:
            config = DistributeTranspilerConfig()
            config.mode = "nccl2"
            DistributeTranspiler(config).transpile(env.rank, program=main, startup_program=startup,
                                                   trainers=",".join(env.endpoints),
                                                   current_endpoint=env.current_endpoint)
        self._strategy.num_trainers, self._strategy.trainer_id = env.world_size, env.rank
        self._fleet.main_program = CompiledProgram(main, self._strategy).with_data_parallel(
            loss_name=loss.name, build_strategy=self._strategy)
        self._fleet.startup_program = startup
        return result

    def __getattr__(self, name):
        return getattr(self._optimizer, name)


fleet = CollectiveFleet()
