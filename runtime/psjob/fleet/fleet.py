"""The Fleet API for parameter-server training (seed 000's ParameterServerRuntime).

    fleet.init(role_maker)
    optimizer = fleet.distributed_optimizer(fluid.optimizer.Adam(1e-3), strategy)
    optimizer.minimize(loss)            # builds, then transpiles by the strategy's mode
    if fleet.is_server():
        fleet.init_server(model_dir)    # pserver startup (+ load a saved model)
        fleet.run_server()              # serves until every trainer completes
    else:
        fleet.init_worker()             # connects, waits for the pservers
        exe.run(fleet.startup_program)
        ... exe.run(fleet.main_program, feed=...)
        fleet.stop_worker()             # flushes, tells the pservers it completed

Modes (psjob.fleet.strategy): sync and async/half-async run the transpiled
trainer program (async through the Communicator); geo runs the original
program with local optimizers plus a `geo_sgd_step` op, exchanging deltas
through the GeoCommunicator.

One RPC service per process: init_worker creates it and installs it as the
process default (psjob.ps.client_service), so every Executor the script
creates talks through it.
"""
from __future__ import annotations

from ..fluid import framework
from ..fluid.executor import Executor
from ..fluid.framework import Program
from ..fluid.optimizer import Optimizer
from ..fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from . import strategy as strategies
from .role_maker import PaddleCloudRoleMaker, RoleMakerBase


class FleetError(RuntimeError):
    pass


class Fleet:
    def __init__(self):
        self._role_maker: RoleMakerBase | None = None
        self._strategy: strategies.ResolvedStrategy | None = None
        self._transpiler: DistributeTranspiler | None = None
        self._origin_main: Program | None = None
        self._origin_startup: Program | None = None
        self.main_program: Program | None = None
        self.startup_program: Program | None = None
        self._pserver_program = None
        self._pserver_startup = None
        self._service = None
        self._executor: Executor | None = None

    # -- roles --------------------------------------------------------------------------
    def init(self, role_maker=None, is_collective=False):
        if is_collective:
            raise FleetError("collective training is not supported by psjob; use the parameter-server mode")
        self._role_maker = role_maker or PaddleCloudRoleMaker()
        if not isinstance(self._role_maker, RoleMakerBase):
            raise TypeError(f"role_maker must be a psjob role maker, got {type(role_maker).__name__}")
        self._role_maker.generate_role()

    def _rm(self) -> RoleMakerBase:
        if self._role_maker is None:
            raise FleetError("call fleet.init(role_maker) first")
        return self._role_maker

    def is_server(self):
        return self._rm().is_server()

    def is_worker(self):
        return self._rm().is_worker()

    def is_first_worker(self):
        return self._rm().is_first_worker()

    def worker_index(self):
        return self._rm().worker_index()

    def worker_num(self):
        return self._rm().worker_num()

    def server_num(self):
        return self._rm().server_num()

    def server_index(self):
        return self._rm().server_index()

    def server_endpoints(self, to_string=False):
        eps = self._rm().get_pserver_endpoints()
        return ",".join(eps) if to_string else eps

    def worker_endpoints(self, to_string=False):
        return "" if to_string else []

    @property
    def mode(self) -> str:
        return self._strategy.mode if self._strategy else ""

    # -- building -----------------------------------------------------------------------
    def distributed_optimizer(self, optimizer, strategy=None):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("optimizer must be a psjob.fluid.optimizer.Optimizer")
        self._rm()
        self._strategy = strategies.resolve(strategy)
        return DistributedOptimizer(self, optimizer, self._strategy)

    def _transpile(self, loss, startup_program):
        rm = self._rm()
        main = loss.block.program
        startup = startup_program or framework.default_startup_program()
        if self._strategy.mode == "geo":
            # Keep the single-machine program (with its optimizers) for the trainers.
            self._origin_main, self._origin_startup = main.clone(), startup.clone()
        config = DistributeTranspilerConfig()
        config.wait_port = False  # init_worker waits, bounded, when launch_barrier is set
        t = DistributeTranspiler(config)
        t.transpile(trainer_id=rm.worker_index(), program=main, pservers=",".join(rm.get_pserver_endpoints()),
                    trainers=rm.worker_num(), sync_mode=self._strategy.sync_mode, startup_program=startup)
        self._transpiler = t
        if rm.is_server():
            ep = rm.current_endpoint()
            self._pserver_program, self._pserver_startup = t.get_pserver_programs(ep)
            self.main_program, self.startup_program = self._pserver_program, self._pserver_startup
        elif self._strategy.mode == "geo":
            if main._distributed_lookup_table:
                raise FleetError("geo mode trains local copies of every parameter: a distributed lookup "
                                 "table (embedding is_distributed=True) needs the async mode")
            self.main_program, self.startup_program = self._origin_main, self._origin_startup
            self.main_program.global_block().append_op(type="geo_sgd_step",
                                                       attrs={"op_role": int(framework.OpRole.RPC)})
        else:
            self.main_program = t.get_trainer_program(wait_port=False)
            self.startup_program = t.get_trainer_startup_program()

    # -- servers ------------------------------------------------------------------------
    def init_server(self, model_dir=None, **kwargs):
        if not self.is_server():
            raise FleetError("init_server() is for pservers (fleet.is_server())")
        if self._pserver_program is None:
            raise FleetError("call distributed_optimizer(...).minimize(loss) before init_server()")
        self._executor = self._executor or Executor()
        self._executor.run(self._pserver_startup)
        if model_dir:
            from ..checkpoint.pserver_load import load_pserver_slices
            load_pserver_slices(self._executor, model_dir, self._pserver_program,
                                self._transpiler.vars_overview, self._rm().current_endpoint())

    def run_server(self):
        if self._executor is None:
            raise FleetError("call init_server() before run_server()")
        self._executor.run(self._pserver_program)

    # -- workers ------------------------------------------------------------------------
    def init_worker(self, scope=None):
        from ..fluid.core import global_scope
        from ..ps import client_service
        from ..ps.communicator import Communicator, CommunicatorConfig
        from ..ps.geo import GeoCommunicator
        from ..rpc.client import PSClient
        from ..ps.auth import token_from_env
        rm = self._rm()
        if not rm.is_worker():
            raise FleetError("init_worker() is for trainers (fleet.is_worker())")
        if self.main_program is None:
            raise FleetError("call distributed_optimizer(...).minimize(loss) before init_worker()")
        client = PSClient(rm.get_pserver_endpoints(), rm.worker_index(), auth_token=token_from_env())
        if self._strategy.launch_barrier:
            client.wait_server_ready()
        mode = self._strategy.mode
        if mode in ("async", "half_async"):
            service = Communicator(client, CommunicatorConfig(
                mode=mode, max_merge_var_num=self._strategy.max_merge_var_num,
                send_queue_size=self._strategy.send_queue_size))
        elif mode == "geo":
            params = [p.name for p in self._origin_main.all_parameters() if p.trainable]
            service = GeoCommunicator(client, scope or global_scope(), self._transpiler.vars_overview, params,
                                       rm.worker_num(), self._strategy.k_steps)
        else:
            service = client
        self._service = service
        self._client = client
        client_service.install(service)

    def stop_worker(self):
        from ..ps import client_service
        if self._service is None:
            raise FleetError("stop_worker() without init_worker()")
        try:
            self._service.complete()
        finally:
            client_service.install(None)
            self._client.close()
            self._service = None


class DistributedOptimizer:
    def __init__(self, fleet_: Fleet, optimizer: Optimizer, strategy):
        self._fleet, self._optimizer, self._strategy = fleet_, optimizer, strategy

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        result = self._optimizer.minimize(loss, startup_program=startup_program,
                                          parameter_list=parameter_list, no_grad_set=no_grad_set)
        self._fleet._transpile(loss, startup_program)
        return result

    def __getattr__(self, name):
        return getattr(self._optimizer, name)
