"""Building a Fleet job: the user's programs transpiled by the strategy's mode for this
process's role (Fleet's distributed_optimizer(...).minimize(loss)).

- pserver: its programs, from the transpiler (`pserver_main`, `pserver_startup`);
- sync / async / half-async trainer: the transpiled trainer programs (a heter job's
  CPU trainer then has its heter section split out, fleet/heter.py);
- geo trainer: the original programs, which keep their optimizers, plus a
  `geo_sgd_step` op; the transpiler plans the pservers from copies;
- heter trainer: copies of the programs only (it transpiles per served trainer in
  init_server).
"""
from __future__ import annotations

from dataclasses import dataclass

from psjob.fleet.errors import FleetError
from psjob.fleet.heter import HeterRuntime
from psjob.fleet.role_maker import RoleMakerBase
from psjob.fleet.strategy import ResolvedStrategy
from psjob.fluid import framework
from psjob.fluid.framework import Program
from psjob.fluid.transpiler import DistributeTranspiler, DistributeTranspilerConfig
from psjob.foundation.roles import Mode


@dataclass
class BuiltJob:
    strategy: ResolvedStrategy
    loss_name: str
    heter: HeterRuntime | None = None
    transpiler: DistributeTranspiler | None = None  # None on a heter trainer
    main: Program | None = None            # what this process runs (trainer or pserver)
    startup: Program | None = None
    pserver_main: Program | None = None
    pserver_startup: Program | None = None
    geo_program: Program | None = None     # geo: the single-machine program the trainer trains


def build_job(rm: RoleMakerBase, strategy: ResolvedStrategy, table_optimizer: str | None, loss,
              startup_program: Program | None) -> BuiltJob:
    main = loss.block.program
    startup = startup_program or framework.default_startup_program()
    job = BuiltJob(strategy, loss.name, heter=HeterRuntime.for_job(rm, strategy, main))
    if rm.is_heter_worker():
        job.heter.keep_programs(main, startup)  # sections are split per trainer in init_server
        return job
    if strategy.mode is Mode.GEO:
        # The trainers run the single-machine programs (with their optimizers) themselves,
        # so those stay the default programs a Paddle 2.x script runs; the transpiler plans
        # the pservers from copies.
        origin_main, origin_startup = main, startup
        main, startup = main.clone(), startup.clone()
    config = DistributeTranspilerConfig()
    config.wait_port = False  # init_worker waits, bounded, when launch_barrier is set
    if table_optimizer is not None:
        config.table_optimizer = table_optimizer
    # An elastic job is transpiled for its capacity; the pservers learn the members at run time.
    config.elastic = bool(rm.worker_capacity())
    config.sparse_table_accessors = dict(strategy.table_accessors)
    t = DistributeTranspiler(config)
    t.transpile(trainer_id=rm.worker_index(), program=main, pservers=",".join(rm.get_pserver_endpoints()),
                trainers=rm.worker_capacity() or rm.worker_num(), sync_mode=strategy.sync_mode,
                startup_program=startup)
    job.transpiler = t
    if rm.is_server():
        job.pserver_main, job.pserver_startup = t.get_pserver_programs(rm.current_endpoint())
        job.main, job.startup = job.pserver_main, job.pserver_startup
    elif strategy.mode is Mode.GEO:
        if main._distributed_lookup_tables:
            raise FleetError("geo mode trains local copies of every parameter: a distributed lookup "
                                  "table (embedding is_distributed=True) needs the async mode")
        job.main, job.startup = origin_main, origin_startup
        job.geo_program = origin_main
        job.main.global_block().append_op(type="geo_sgd_step", attrs={"op_role": int(framework.OpRole.RPC)})
    else:
        job.main = t.get_trainer_program(wait_port=False)
        job.startup = t.get_trainer_startup_program()
        if job.heter is not None:
            job.heter.split_trainer(t, job.main, job.startup)
    return job
