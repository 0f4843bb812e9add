"""The Fleet API for parameter-server training (Paddle 2.x Fleet's ParameterServerRuntime).

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

A trainer reports what it trains (cluster/trainer/monitor.py): from init_worker to
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
and the pservers both; docs/dev/transpiler.md).

One RPC service per process: init_worker creates it and installs it as the
process default (psjob.cluster.trainer.client_service), so every Executor the script
creates talks through it.

Fleet is a facade over the role maker and these pieces: building
(fleet/build.py), the pserver's start (fleet/server.py), the trainer's
connection (fleet/worker.py) and saving (fleet/saving.py).
"""
from __future__ import annotations

import logging

from psjob.fleet import saving
from psjob.fleet import strategy as strategies
from psjob.fleet.build import BuiltJob, build_job
from psjob.fleet.errors import FleetError
from psjob.fleet.role_maker import PaddleCloudRoleMaker, RoleMakerBase
from psjob.fleet.server import init_pserver, run_pserver
from psjob.fleet.sparse_tables import RemoteTableView, promote_sparse_embedding
from psjob.fleet.worker import WorkerConnection
from psjob.fluid import io as fluid_io
from psjob.fluid.core import settle_deferred
from psjob.fluid.executor import Executor
from psjob.fluid.framework import default_startup_program
from psjob.fluid.optimizer import Optimizer, check_table_optimizer
from psjob.fluid.transpiler.collective import add_gen_nccl_id, insert_grad_allreduce
from psjob.foundation import hooks
from psjob.foundation.role_env import CollectiveEnv
from psjob.foundation.roles import Mode
from psjob.foundation.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["DistributedOptimizer", "Fleet", "FleetError"]


class Fleet:
    def __init__(self):
        self._role_maker: RoleMakerBase | None = None
        self._strategy: strategies.ResolvedStrategy | None = None
        self._table_optimizer: str | None = None  # strategy.table_optimizer, when it sets one
        self._sparse_tables = False                # sparse embeddings become pserver tables (2.x)
        self._job: BuiltJob | None = None          # after minimize()
        self._executor: Executor | None = None     # a pserver's, from init_server
        self._worker: WorkerConnection | None = None  # between init_worker and stop_worker
        self._collective: CollectiveEnv | None = None  # fleet.init(is_collective=True)
        self._collective_programs = None               # (main, startup) after a collective minimize()

    # -- roles --------------------------------------------------------------------------
    def init(self, role_maker=None, is_collective=False):
        if is_collective:
            # Collective (NCCL2-mode) training: every process is a trainer of the ring that
            # PADDLE_TRAINER_ENDPOINTS names (docs/user/collective.md).
            self._collective = getattr(role_maker, "collective", None) or CollectiveEnv.from_environ(
                role_maker.settings().environ if isinstance(role_maker, RoleMakerBase) else None)
            self._role_maker = None
            return
        self._collective = getattr(role_maker, "collective", None)
        if self._collective is not None:  # a role maker made with is_collective=True
            self._role_maker = None
            return
        self._role_maker = role_maker or PaddleCloudRoleMaker()
        if not isinstance(self._role_maker, RoleMakerBase):
            raise TypeError(f"role_maker must be a psjob role maker, got {type(role_maker).__name__}")
        self._role_maker.generate_role()

    @property
    def initialized(self) -> bool:
        """Whether init() ran (this process's role is known)."""
        return self._role_maker is not None or self._collective is not None

    @property
    def is_collective(self) -> bool:
        return self._collective is not None

    def _rm(self) -> RoleMakerBase:
        if self._role_maker is None:
            raise FleetError("call fleet.init(role_maker) first")
        return self._role_maker

    def role_settings(self) -> Settings:
        """This process's settings, its role's (RoleMakerBase.settings)."""
        return self._rm().settings()

    def is_server(self):
        if self._collective is not None:
            return False
        # As in Fleet 2.0, heter trainers take the server path (init_server/run_server).
        return self._rm().is_server() or self._rm().is_heter_worker()

    def is_heter_worker(self):
        return self._rm().is_heter_worker()

    def is_worker(self):
        if self._collective is not None:
            return True
        return self._rm().is_worker()

    def is_first_worker(self):
        if self._collective is not None:
            return self._collective.rank == 0
        return self._rm().is_first_worker()

    def worker_index(self):
        if self._collective is not None:
            return self._collective.rank
        return self._rm().worker_index()

    def worker_num(self):
        if self._collective is not None:
            return self._collective.world_size
        return self._rm().worker_num()

    def server_num(self):
        if self._collective is not None:
            return 0
        return self._rm().server_num()

    def split_files(self, files):
        """This trainer's share of `files` (Fluid 1.x's fleet.split_files): contiguous blocks by
        worker_index, the first len(files) % worker_num trainers one file more."""
        if not isinstance(files, list):
            raise TypeError(f"split_files takes a list of files, got {type(files).__name__}")
        trainers, me = self.worker_num(), self.worker_index()
        base, extra = divmod(len(files), trainers)
        begin = me * base + min(me, extra)
        return files[begin:begin + base + (1 if me < extra else 0)]

    def server_index(self):
        return self._rm().server_index()

    def server_endpoints(self, to_string=False):
        eps = self._rm().get_pserver_endpoints()
        return ",".join(eps) if to_string else eps

    def worker_endpoints(self, to_string=False):
        """The trainers' endpoints (PADDLE_TRAINER_ENDPOINTS, or a user-defined role's
        worker_endpoints); a comma-separated string with to_string=True, as Paddle's."""
        endpoints = (list(self._collective.endpoints) if self._collective is not None
                     else self._rm().get_trainer_endpoints())
        return ",".join(endpoints) if to_string else endpoints

    @property
    def mode(self) -> Mode | None:
        """The training mode; None before distributed_optimizer (a parameter-server job's
        mode is its strategy's)."""
        if self._collective is not None:
            return Mode.COLLECTIVE
        return self._strategy.mode if self._strategy else None

    @property
    def main_program(self):
        if self._collective is not None:
            return self._collective_programs[0] if self._collective_programs else None
        return self._job.main if self._job is not None else None

    @property
    def startup_program(self):
        if self._collective is not None:
            return self._collective_programs[1] if self._collective_programs else None
        return self._job.startup if self._job is not None else None

    @property
    def transpiler(self):
        """The job's DistributeTranspiler after minimize() (its plan names the distributed
        table and the pservers), else None."""
        return self._job.transpiler if self._job is not None else None

    # -- building -----------------------------------------------------------------------
    def distributed_optimizer(self, optimizer, strategy=None):
        if not isinstance(optimizer, Optimizer):
            raise TypeError("optimizer must be a psjob.fluid.optimizer.Optimizer")
        if self._collective is not None:
            return CollectiveOptimizer(self, optimizer)
        self._rm()
        self._strategy = strategies.resolve(strategy)
        self._sparse_tables = self._strategy.sparse_tables
        # None: the optimizer's own table_optimizer setting (default "same") decides.
        self._table_optimizer = self._strategy.table_optimizer
        if self._table_optimizer is not None:
            check_table_optimizer(self._table_optimizer, "strategy.table_optimizer")
        return DistributedOptimizer(self, optimizer, self._table_optimizer)

    def _build(self, loss, startup_program):
        self._job = build_job(self._rm(), self._strategy, self._table_optimizer, loss, startup_program)

    def _built(self, before: str) -> BuiltJob:
        if self._job is None:
            raise FleetError(f"call distributed_optimizer(...).minimize(loss) before {before}")
        return self._job

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
        job = self._built("init_server()")
        if self.is_heter_worker():
            return job.heter.init_server()
        self._executor = self._executor or Executor()
        init_pserver(self._rm(), job, self._executor, model_dir)

    def run_server(self):
        if self._job is not None and self._job.heter is not None and self.is_heter_worker():
            return self._job.heter.run_server()
        if self._executor is None or self._job is None or self._job.pserver_main is None:
            raise FleetError("call init_server() before run_server()")
        run_pserver(self._rm(), self._job, self._executor)

    # -- workers ------------------------------------------------------------------------
    def init_worker(self, scope=None):
        if self._collective is not None:
            return  # a collective trainer meets the others in its ring, formed by the startup program
        rm = self._rm()
        if not rm.is_worker():
            raise FleetError("init_worker() is for trainers (fleet.is_worker())")
        job = self._built("init_worker()")
        if self._worker is not None:
            self._worker.abandon()
        self._worker = WorkerConnection.open(rm, job, scope)
        plan = job.transpiler.plan if job.transpiler is not None else None
        if plan is not None and any(t.trainer_keeps_rows for t in plan.tables):
            hooks.register(hooks.REMOTE_TABLE_VIEW, RemoteTableView(plan))

    @property
    def rpc_service(self):
        """The trainer's RPC service between init_worker and stop_worker (a Communicator in
        the asynchronous modes, else the client), or None."""
        return self._worker.service if self._worker is not None else None

    @property
    def rpc_client(self):
        """The trainer's gRPC client between init_worker and stop_worker, or None."""
        return self._worker.client if self._worker is not None else None

    @property
    def _runtime_handle(self):
        """Paddle 2.x/3.x's `fleet.fleet._runtime_handle` (its parameter-server runtime,
        TheOnePSRuntime), which scripts reach for `_runtime_handle._worker.client_flush()`:
        send what the communicator still holds. psjob has only that call (_PSWorkerHandle)."""
        return _RuntimeHandle(self)

    def worker_members(self) -> list[int]:
        """The trainers taking part now: in an elastic job pserver 0's member set (it changes
        as trainers join and leave), otherwise 0 .. worker_num()-1."""
        rm = self._rm()
        if not rm.worker_capacity():
            return list(range(rm.worker_num()))
        if self._worker is None:
            raise FleetError("worker_members() of an elastic job needs init_worker() first")
        return self._worker.members(rm.get_pserver_endpoints()[0])

    def stop_worker(self):
        if self._collective is not None:
            return
        if self._worker is None:
            raise FleetError("stop_worker() without init_worker()")
        settle_deferred()  # the last run's backward and sends (psjob.fluid.executor)
        worker, self._worker = self._worker, None
        hooks.unregister(hooks.REMOTE_TABLE_VIEW)
        worker.close()

    # -- saving -------------------------------------------------------------------------
    def checkpoint_target(self, program=None):
        """(program, DistInfo) a trainer's save reads (psjob.fleet.saving.checkpoint_target)."""
        return saving.checkpoint_target(self._rm(), self._job, program)

    def save_persistables(self, executor, dirname, main_program=None, **kwargs):
        """Save every persistable of the job into dirname (call it on trainer 0).

        Trainer 0 pulls the pservers' parameter and optimizer slices and writes them
        whole, the pservers write their distributed-table shards keyed by feature id,
        and the manifest goes in last; other trainers save only what they hold."""
        saving.check_save_args("save_persistables", executor, main_program)
        if self._collective is not None:  # every trainer holds the whole model
            return fluid_io.save_persistables(executor, dirname, main_program or self.main_program)
        return saving.save_persistables(self._rm(), self._job, executor, dirname, main_program)

    def save_inference_model(self, executor, dirname, feeded_var_names, target_vars, main_program=None,
                             export_for_deployment=True):
        """A pruned `__model__` for inference plus its parameters (from the pservers).

        Without main_program the original, untranspiled program is pruned (lookups of the
        distributed table stay local lookups, so load_inference_model(_distributed) serves
        it in one process, the table assembled from its shards)."""
        saving.check_save_args("save_inference_model", executor, main_program)
        if self._collective is not None:
            return fluid_io.save_inference_model(dirname, feeded_var_names, target_vars, executor,
                                                 main_program or self.main_program,
                                                 export_for_deployment=export_for_deployment)
        return saving.save_inference_model(self._rm(), self._job, executor, dirname, feeded_var_names,
                                           target_vars, main_program, export_for_deployment)


class _PSWorkerHandle:
    """`_runtime_handle._worker` (Paddle's DistFleetWrapper): client_flush() only."""

    def __init__(self, fleet_: Fleet):
        self._fleet = fleet_

    def client_flush(self):
        """Send every update this trainer's communicator still queues (a no-op in sync mode,
        where each step sends before it ends, and before init_worker)."""
        settle_deferred()
        service = self._fleet.rpc_service
        if service is not None and hasattr(service, "flush"):
            service.flush()

    def __getattr__(self, name):
        # Paddle's wrapper also pulls and pushes tables and stops the pservers; psjob's
        # programs pull and push by themselves and its launcher ends the pservers.
        raise AttributeError(f"fleet.fleet._runtime_handle._worker.{name}: psjob has only client_flush() "
                         f"here (its programs pull and push parameters themselves, and `psjob launch` "
                         f"or the operator stops the pservers when the trainers end)")


class _RuntimeHandle:
    """`fleet.fleet._runtime_handle`: its `_worker` (Paddle's the_one_ps.TheOnePSRuntime)."""

    def __init__(self, fleet_: Fleet):
        self._worker = _PSWorkerHandle(fleet_)

    def __getattr__(self, name):
        raise AttributeError(f"fleet.fleet._runtime_handle.{name}: psjob stands in for Paddle's "
                         f"parameter-server runtime only with _worker.client_flush()")


class CollectiveOptimizer:
    """Fleet's collective optimizer: minimize() appends the optimize pass, then all-reduces
    every gradient among the trainers (c_allreduce_sum after backward, the mean over trainers)
    and puts the ring's rendezvous in the startup program, as Paddle's collective
    transpiler does; the program then runs with a plain Executor."""

    def __init__(self, fleet_: Fleet, optimizer: Optimizer):
        self._fleet, self._env, self._optimizer = fleet_, fleet_._collective, optimizer

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        result = self._optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        main, startup = loss.block.program, startup_program or default_startup_program()
        if self._env.world_size > 1:
            insert_grad_allreduce(main, self._env.world_size)
            add_gen_nccl_id(startup, self._env.rank, self._env.endpoints, self._env.current_endpoint)
        self._fleet._collective_programs = (main, startup)
        return result

    def __getattr__(self, name):
        return getattr(self._optimizer, name)


class DistributedOptimizer:
    def __init__(self, fleet_: Fleet, optimizer: Optimizer, table_optimizer: str | None):
        self._fleet, self._optimizer, self._table_optimizer = fleet_, optimizer, table_optimizer

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        if self._built_for(loss):
            # Paddle 3.0.0 takes a second minimize of the program its fleet already rewrote: it
            # appends a second backward pass, whose gradients its parameter-server passes do not
            # send, and returns no optimizer op. psjob keeps the job it built, which trains the same.
            log.warning("minimize(%s): this program was already built for the fleet by an earlier minimize of "
                        "the same loss; psjob keeps that job", loss.name)
            if self._fleet._job.pserver_main is not None:
                return [], []  # Paddle's pserver program has no backward pass to repeat
            block = loss.block
            pairs = [(p, block.var(p.name + "@GRAD")) for p in block.all_parameters()
                     if p.trainable and block.has_var(p.name + "@GRAD")]
            return [], pairs
        if self._fleet._sparse_tables:
            promote_sparse_embedding(loss.block.program, self._fleet._strategy.mode)
        saved = self._optimizer.table_optimizer
        if self._table_optimizer is not None:  # the program's table op follows the strategy too
            self._optimizer.table_optimizer = self._table_optimizer
        try:
            # Positional: Fluid names the third argument parameter_list, Paddle 2.x parameters.
            result = self._optimizer.minimize(loss, startup_program, parameter_list, no_grad_set)
        finally:
            self._optimizer.table_optimizer = saved
        self._fleet._build(loss, startup_program)
        return result

    def _built_for(self, loss) -> bool:
        """Whether the fleet's job was built by a minimize of this very loss, in the mode the
        fleet's strategy now asks for."""
        job, strategy = self._fleet._job, self._fleet._strategy
        if job is None or strategy is None or job.loss_name != loss.name or job.strategy.mode is not strategy.mode:
            return False
        program = loss.block.program
        return program is job.geo_program or (job.transpiler is not None and job.transpiler.origin_program is program)

    def __getattr__(self, name):
        return getattr(self._optimizer, name)
