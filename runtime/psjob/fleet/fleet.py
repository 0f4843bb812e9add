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

A trainer reports what it trains (fleet/monitor.py): from init_worker to
stop_worker every run of `fleet.main_program` counts toward its metrics
(/metrics on PSJOB_METRICS_PORT) and its progress lines, which `psjob
launch` and `psjob run` show.

Modes (psjob.fleet.strategy): sync and async/half-async run the transpiled
trainer program (async through the Communicator); geo runs the original
program with local optimizers plus a `geo_sgd_step` op, exchanging deltas
through the GeoCommunicator.

A distributed lookup table is updated with the optimizer's own rule per row by
default; a strategy (DistributedStrategy or DistributeTranspilerConfig) with
`table_optimizer = "sgd"` restores Fluid 1.x's plain sgd for it (the program
and the pservers both; docs/transpiler.md).

One RPC service per process: init_worker creates it and installs it as the
process default (psjob.ps.client_service), so every Executor the script
creates talks through it.
"""
from __future__ import annotations

from ..fluid import framework
from ..fluid.executor import Executor
from ..fluid.framework import Program
from ..fluid.optimizer import Optimizer, check_table_optimizer
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
        self._heter = None  # fleet/heter.py HeterRuntime in a heter job
        self._table_optimizer: str | None = None  # strategy.table_optimizer, when it sets one
        self._loss_name: str | None = None  # minimize(loss): the monitor reports it
        self._monitor = None  # fleet/monitor.py TrainerMonitor between init_worker and stop_worker

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
        # As in Fleet 2.0, heter trainers take the server path (init_server/run_server).
        return self._rm().is_server() or self._rm().is_heter_worker()

    def is_heter_worker(self):
        return self._rm().is_heter_worker()

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
        """The trainers' endpoints (PADDLE_TRAINER_ENDPOINTS, or a user-defined role's
        worker_endpoints); a comma-separated string with to_string=True, as Paddle's."""
        endpoints = self._rm().get_trainer_endpoints()
        return ",".join(endpoints) if to_string else endpoints

    @property
    def mode(self) -> str:
        return self._strategy.mode if self._strategy else ""

    # -- building -----------------------------------------------------------------------
    def distributed_optimizer(self, optimizer, strategy=None):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("optimizer must be a psjob.fluid.optimizer.Optimizer")
        self._rm()
        self._strategy = strategies.resolve(strategy)
        # None: the optimizer's own table_optimizer setting (default "same") decides.
        self._table_optimizer = getattr(strategy, "table_optimizer", None)
        if self._table_optimizer is not None:
            check_table_optimizer(self._table_optimizer, "strategy.table_optimizer")
        return DistributedOptimizer(self, optimizer, self._strategy)

    def _transpile(self, loss, startup_program):
        rm = self._rm()
        main = loss.block.program
        self._loss_name = loss.name
        startup = startup_program or framework.default_startup_program()
        from .heter import HeterRuntime
        self._heter = HeterRuntime.for_job(rm, self._strategy, main)
        if rm.is_heter_worker():
            self._heter.keep_programs(main, startup)  # sections are split per trainer in init_server
            return
        if self._strategy.mode == "geo":
            # The trainers run the single-machine programs (with their optimizers) themselves,
            # so those stay the default programs a Paddle 2.x script runs; the transpiler plans
            # the pservers from copies.
            self._origin_main, self._origin_startup = main, startup
            main, startup = main.clone(), startup.clone()
        config = DistributeTranspilerConfig()
        config.wait_port = False  # init_worker waits, bounded, when launch_barrier is set
        if self._table_optimizer is not None:
            config.table_optimizer = self._table_optimizer
        # An elastic job is transpiled for its capacity; the pservers learn the members at run time.
        config.elastic = bool(rm.worker_capacity())
        t = DistributeTranspiler(config)
        t.transpile(trainer_id=rm.worker_index(), program=main, pservers=",".join(rm.get_pserver_endpoints()),
                    trainers=rm.worker_capacity() or rm.worker_num(), sync_mode=self._strategy.sync_mode, startup_program=startup)
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
            if self._heter is not None:
                self._heter.split_trainer(t, self.main_program, self.startup_program)

    # -- servers ------------------------------------------------------------------------
    def init_server(self, model_dir=None, executor=None, **kwargs):
        """Run this pserver's startup program; with model_dir, load its slices of a saved model.

        model_dir is a whole-model save (trainer 0's save_persistables: dense variables
        whole, the distributed table by feature id — from any number of pservers) or a
        checkpoint root, whose newest good checkpoint is loaded (an older one when the
        newest is corrupt). A bad save raises and corrupts nothing. `executor` (psjob's
        own) runs the pserver's programs, here and in run_server; an Executor() on the
        CPU by default."""
        if executor is not None:
            self._executor = executor
        if not self.is_server():
            raise FleetError("init_server() is for pservers (fleet.is_server())")
        if self.is_heter_worker():
            if self._heter is None:
                raise FleetError("call distributed_optimizer(...).minimize(loss) before init_server()")
            return self._heter.init_server()
        if self._pserver_program is None:
            raise FleetError("call distributed_optimizer(...).minimize(loss) before init_server()")
        self._executor = self._executor or Executor()
        self._executor.run(self._pserver_startup)
        if model_dir:
            import os
            from ..checkpoint import store
            from ..checkpoint.format import CheckpointError
            from ..ps import checkpoint_restore
            if not os.path.isdir(model_dir):
                raise ValueError(f"There is no directory named '{model_dir}'")
            if store.is_checkpoint_root(model_dir):
                if checkpoint_restore.restore_newest(self._executor, model_dir, self._pserver_program) is None:
                    raise CheckpointError(f"{model_dir!r} holds no complete checkpoint")
            else:
                checkpoint_restore.load_pserver_slices(self._executor, model_dir, self._pserver_program,
                                                       self._transpiler.vars_overview, self._rm().current_endpoint())

    def run_server(self):
        if self._heter is not None and self.is_heter_worker():
            return self._heter.run_server()
        if self._executor is None:
            raise FleetError("call init_server() before run_server()")
        from ..ps.pserver import role_service
        # The pserver serves with this role's settings (its RoleEnv's), not a second read.
        self._executor.services.setdefault("pserver", role_service(self._rm().settings()))
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
        token = token_from_env(rm.settings())
        client = PSClient(rm.get_pserver_endpoints(), rm.worker_index(), auth_token=token)
        if self._strategy.launch_barrier or rm.worker_capacity():
            client.wait_server_ready()
        if rm.worker_capacity():
            # Before the startup program pulls the parameters: see psjob.ps.pserver_state.
            client.join()
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
        if self._heter is not None:
            self._heter.init_worker(token)
        self._start_monitor(service, client)

    def _start_monitor(self, service, client):
        from . import telemetry
        from .monitor import TrainerMonitor
        if self._monitor is not None:
            self._monitor.close(finished=False)
            self._monitor = None
        if telemetry.current() is not None:
            return  # the process observes its own loop (the built-in job): one telemetry per process
        rm = self._rm()
        self._monitor = TrainerMonitor(self.main_program, rm.worker_index(), self._loss_name,
                                       service=service, client=client, environ=rm.settings())

    @property
    def rpc_service(self):
        """The trainer's RPC service between init_worker and stop_worker (a Communicator in
        the asynchronous modes, else the client), or None."""
        return self._service

    @property
    def rpc_client(self):
        """The trainer's gRPC client between init_worker and stop_worker, or None."""
        return self._client if self._service is not None else None

    def worker_members(self) -> list[int]:
        """The trainers taking part now: in an elastic job pserver 0's member set (it changes
        as trainers join and leave), otherwise 0 .. worker_num()-1."""
        rm = self._rm()
        if not rm.worker_capacity():
            return list(range(rm.worker_num()))
        if self.rpc_client is None:
            raise FleetError("worker_members() of an elastic job needs init_worker() first")
        return list(self.rpc_client.status(rm.get_pserver_endpoints()[0]).members)

    def stop_worker(self):
        from ..ps import client_service
        if self._service is None:
            raise FleetError("stop_worker() without init_worker()")
        completed = False
        try:
            try:
                if self._heter is not None:
                    self._heter.stop_worker()  # first: the heter trainer flushes this trainer's pushes
            finally:
                self._service.complete()
            completed = True
        finally:
            client_service.install(None)
            self._client.close()
            self._service = None
            if self._monitor is not None:
                # The final progress line only for a trainer whose pushes all landed.
                monitor, self._monitor = self._monitor, None
                monitor.close(finished=completed)

    # -- saving (seed 000's save_persistables / save_inference_model) ----------------------
    @staticmethod
    def _check_save_args(api, executor, main_program):
        from ..fluid.executor import CompiledProgram, ParallelExecutor
        if isinstance(executor, ParallelExecutor):
            raise TypeError(f"in fleet.{api}() function, executor must be as Executor type, "
                            "ParallelExecutor is not allowed")
        if not isinstance(executor, Executor):
            raise TypeError(f"in fleet.{api}() function, executor must be as Executor type")
        if isinstance(main_program, CompiledProgram):
            raise TypeError(f"in fleet.{api}() function, main_program must be as Program type, "
                            "CompiledProgram is not allowed")
        if main_program is not None and not isinstance(main_program, Program):
            raise TypeError(f"in fleet.{api}() function, main_program must be a Program, got "
                            f"{type(main_program).__name__}")

    def _checkpoint_target(self, program=None):
        """(program, DistInfo) a save reads: the transpiled trainer program, or in geo mode the
        local program, whose parameters (not optimizer state) live on the pservers."""
        from .checkpoint_save import DistInfo
        from ..fluid.transpiler.vars_distributed import VarsDistributed
        rm = self._rm()
        if not rm.is_worker():
            raise FleetError("saving is for trainers (fleet.is_worker()); trainer 0 saves the whole model")
        if self._transpiler is None:
            raise FleetError("call distributed_optimizer(...).minimize(loss) before saving")
        program = program if program is not None else self.main_program
        overview = self._transpiler.vars_overview
        if self.mode == "geo":  # trainers run the optimizers; pservers hold parameters only
            overview = VarsDistributed([dv for dv in overview.distributed_vars if dv.vtype == "Param"])
        table = self._transpiler.plan.table
        dist = DistInfo(overview, tuple(rm.get_pserver_endpoints()), table.name if table else None,
                        rm.worker_index(), rm.worker_index() == 0)
        return program, dist

    def save_persistables(self, executor, dirname, main_program=None, **kwargs):
        """Save every persistable of the job into dirname (call it on trainer 0).

        Trainer 0 pulls the pservers' parameter and optimizer slices and writes them
        whole, the pservers write their distributed-table shards keyed by feature id,
        and the manifest goes in last; other trainers save only what they hold."""
        from . import checkpoint_save as distributed
        from ..fluid import io
        self._check_save_args("save_persistables", executor, main_program)
        program, dist = self._checkpoint_target(main_program)
        if not dist.is_chief:
            remote = distributed.remote_groups(program, dist)
            io.save_vars(executor, dirname, program, vars=distributed.local_vars(program, dist, remote))
            return None
        return distributed.save(executor, dirname, program, dist,
                                distributed.SaveRequest(mode=self.mode, kind="persistables"))

    def save_inference_model(self, executor, dirname, feeded_var_names, target_vars, main_program=None,
                             export_for_deployment=True):
        """A pruned `__model__` for inference plus its parameters (from the pservers).

        Without main_program the original, untranspiled program is pruned (lookups of the
        distributed table stay local lookups, so load_inference_model(_distributed) serves
        it in one process, the table assembled from its shards)."""
        from ..fluid import io
        self._check_save_args("save_inference_model", executor, main_program)
        if main_program is not None:
            return io.save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program,
                                           export_for_deployment=export_for_deployment)
        program, dist = self._checkpoint_target(self._transpiler._origin)
        if not dist.is_chief:
            raise FleetError("save_inference_model writes the whole model: call it on trainer 0")
        inference = program.clone()
        inference._is_distributed, inference._is_chief = True, True
        inference._endpoints, inference._ps_endpoint = list(dist.endpoints), ""
        inference._distributed_lookup_table = dist.table
        inference._parameters_on_pservers = dist.overview
        return io.save_inference_model(dirname, feeded_var_names, target_vars, executor, inference,
                                       export_for_deployment=export_for_deployment)


class DistributedOptimizer:
    def __init__(self, fleet_: Fleet, optimizer: Optimizer, strategy):
        self._fleet, self._optimizer, self._strategy = fleet_, optimizer, strategy

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        choice = self._fleet._table_optimizer
        saved = self._optimizer.table_optimizer
        if choice is not None:  # the program's table op follows the strategy too
            self._optimizer.table_optimizer = choice
        try:
            # Positional: Fluid names the third argument parameter_list, Paddle 2.x parameters.
            result = self._optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        finally:
            self._optimizer.table_optimizer = saved
        self._fleet._transpile(loss, startup_program)
        return result

    def __getattr__(self, name):
        return getattr(self._optimizer, name)
