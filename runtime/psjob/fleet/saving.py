"""Fleet's saves (Fleet ParameterServerRuntime's save_persistables / save_inference_model) of a built job.

Trainer 0 writes the whole model: it pulls the pservers' parameter and
optimizer slices and writes them whole, the pservers write their
distributed-table shards keyed by feature id, and the manifest goes in last
(cluster/trainer/checkpoint_save.py); other trainers save only what they hold (an
inference model's program file, then those variables)."""
from __future__ import annotations

from psjob.cluster.trainer import checkpoint_save
from psjob.fleet.build import BuiltJob
from psjob.fleet.errors import FleetError
from psjob.fleet.role_maker import RoleMakerBase
from psjob.fluid import io
from psjob.fluid.core import settle_deferred
from psjob.fluid.executor import CompiledProgram, Executor, ParallelExecutor
from psjob.fluid.framework import Program
from psjob.fluid.transpiler.vars_distributed import VarsDistributed
from psjob.foundation.roles import Mode


def check_save_args(api, executor, main_program) -> None:
    settle_deferred()  # a save reads the scope op-by-op execution leaves (psjob.fluid.executor)
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


def checkpoint_target(rm: RoleMakerBase, job: BuiltJob | None, program=None):
    """(program, DistInfo) a save reads: the transpiled trainer program, or in geo mode the
    local program, whose parameters (not optimizer state) live on the pservers."""
    if not rm.is_worker():
        raise FleetError("saving is for trainers (fleet.is_worker()); trainer 0 saves the whole model")
    if job is None or job.transpiler is None:
        raise FleetError("call distributed_optimizer(...).minimize(loss) before saving")
    program = program if program is not None else job.main
    overview = job.transpiler.vars_overview
    if job.strategy.mode is Mode.GEO:  # trainers run the optimizers; pservers hold parameters only
        overview = VarsDistributed([dv for dv in overview.distributed_vars if dv.vtype == "Param"])
    tables = tuple(t.name for t in job.transpiler.plan.tables)
    dist = checkpoint_save.DistInfo(overview, tuple(rm.get_pserver_endpoints()), tables,
                                    rm.worker_index(), rm.worker_index() == 0, settings=rm.settings())
    return program, dist


def save_persistables(rm: RoleMakerBase, job: BuiltJob | None, executor, dirname, main_program=None):
    """After check_save_args("save_persistables", ...)."""
    program, dist = checkpoint_target(rm, job, main_program)
    if not dist.is_chief:
        remote = checkpoint_save.remote_groups(program, dist)
        io.save_vars(executor, dirname, program, vars=checkpoint_save.local_vars(program, dist, remote),
                     paddle_tensors=False)
        return None
    return checkpoint_save.save(executor, dirname, program, dist,
                                checkpoint_save.SaveRequest(mode=job.strategy.mode, kind="persistables"))


def save_inference_model(rm: RoleMakerBase, job: BuiltJob | None, executor, dirname, feeded_var_names,
                         target_vars, main_program=None, export_for_deployment=True):
    """After check_save_args("save_inference_model", ...)."""
    if main_program is not None:
        return io.save_inference_model(dirname, feeded_var_names, target_vars, executor, main_program,
                                       export_for_deployment=export_for_deployment)
    untouched = job.transpiler.untouched_program if job is not None and job.transpiler is not None else None
    program, dist = checkpoint_target(rm, job, untouched)
    if not dist.is_chief:
        # Fluid 1.x's transpiler fleet on trainers but 0: the model file (program only), then
        # just the persistables the trainer holds; the pservers' parameters are trainer 0's to pull.
        io.save_inference_model(dirname, feeded_var_names, target_vars, executor, program,
                                export_for_deployment=export_for_deployment, program_only=True)
        targets = target_vars if isinstance(target_vars, (list, tuple)) else [target_vars]
        pruned = program.clone(for_test=True)._prune(targets)
        remote = checkpoint_save.remote_groups(pruned, dist)
        io.save_vars(executor, dirname, pruned, vars=checkpoint_save.local_vars(pruned, dist, remote),
                     paddle_tensors=False)
        return [t.name for t in targets]
    inference = program.clone()
    inference._is_distributed, inference._is_chief = True, True
    inference._endpoints, inference._ps_endpoint = list(dist.endpoints), ""
    inference._distributed_lookup_tables = list(dist.tables)
    inference._parameters_on_pservers = dist.overview
    return io.save_inference_model(dirname, feeded_var_names, target_vars, executor, inference,
                                   export_for_deployment=export_for_deployment)
