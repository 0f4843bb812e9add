"""The names of psjob.distributed.fleet (Paddle 2.x's `paddle.distributed.fleet`), loaded on
first use: psjob/distributed/fleet/__init__.py keeps the data generators only and makes the
package lazy (psjob.foundation.lazy); the first read of any other name imports this module
and the package takes its public names. See the package's docstring for the API.
"""
from __future__ import annotations

import copy
import logging
import os
import warnings

import numpy as np

from psjob.cluster import checkpoint_protocol as protocol
from psjob.cluster.trainer import client_service as _client_service
from psjob.distributed.fleet import base
from psjob.distributed.fleet.base.role_maker import PaddleCloudRoleMaker, Role, UserDefinedRoleMaker
from psjob.distributed.fleet.data_generator import MultiSlotDataGenerator, MultiSlotStringDataGenerator
from psjob.distributed.fleet.strategy import AUTO_GEO_K_STEPS, DistributedStrategy
from psjob.distributed.fleet.util import UtilBase
from psjob.fleet import FleetError
from psjob.fleet import fleet as _fleet
from psjob.fleet import saving as _saving
from psjob.fluid.core import settle_deferred
from psjob.foundation.roles import Mode

fleet = _fleet
log = logging.getLogger("psjob.distributed")
util = UtilBase(_fleet)
_init_strategy = None


def init(role_maker=None, is_collective=False, strategy=None, log_level="INFO"):
    global _init_strategy
    if role_maker is None and not is_collective:
        role_maker = PaddleCloudRoleMaker()  # Paddle 2.x's: a process no launcher started runs alone
    _fleet.init(role_maker, is_collective=is_collective)
    _init_strategy = strategy


class _WorkerConnection:
    """The RPC service every Executor of a worker uses; it connects the fleet's worker
    (init_worker) the first time a program needs the pservers."""

    def __getattr__(self, name):
        if _fleet.rpc_service is None:
            init_worker()
        return getattr(_fleet.rpc_service, name)


# The trainer and device worker Paddle's parameter-server program builders name per mode
# (paddle/distributed/ps/utils/ps_program_builder.py): async trains with DistMultiTrainer and
# DownpourLite, sync, geo and collective (no pserver) with MultiTrainer and Hogwild.
_TRAINER_BY_MODE = {Mode.ASYNC: ("DistMultiTrainer", "DownpourLite"),
                    Mode.HALF_ASYNC: ("DistMultiTrainer", "DownpourLite"),
                    Mode.SYNC: ("MultiTrainer", "Hogwild"), Mode.GEO: ("MultiTrainer", "Hogwild"),
                    Mode.COLLECTIVE: ("MultiTrainer", "Hogwild")}


def _set_fleet_opt(program, strategy) -> None:
    """Fill `program._fleet_opt` as Paddle's minimize does: the trainer and device worker
    of the mode (kept when already set), mpi_rank/mpi_size, then the strategy's
    trainer_desc_configs (a value overrides when it is non-empty or the key is new).
    train_from_dataset reads `stat_var_names` from it (fluid/dataset_trainer.py)."""
    opt_info = program._fleet_opt if program._fleet_opt is not None else {}
    mode = _fleet.mode
    if mode is None:
        raise RuntimeError("the fleet has no strategy yet: call distributed_optimizer(...).minimize(loss) first")
    trainer, device_worker = _TRAINER_BY_MODE[mode]
    opt_info["trainer"] = opt_info.get("trainer", trainer)
    opt_info["device_worker"] = opt_info.get("device_worker", device_worker)
    opt_info["mpi_size"] = _fleet.worker_num()
    opt_info["mpi_rank"] = _fleet.worker_index()
    for key, value in getattr(strategy, "trainer_desc_configs", {}).items():
        if value or key not in opt_info:
            opt_info[key] = value
    program._fleet_opt = opt_info


def _one_loss(losses: list, startup_programs: object, collective: bool) -> tuple:
    """minimize([loss], [startup]): Paddle's parameter-server fleet takes a list of losses (one
    program each; their startup programs a list too, which may be left out for one loss) and
    refuses one elsewhere. psjob builds one program per process: a list of one loss is that
    loss; several are refused."""
    if collective:
        raise ValueError("loss can be list only in PS mode")
    if isinstance(startup_programs, (list, tuple)):
        if len(startup_programs) != len(losses):
            raise ValueError(f"{len(losses)} losses need as many startup programs, got {len(startup_programs)}")
        startup_programs = startup_programs[0] if startup_programs else None
    elif startup_programs is not None or len(losses) != 1:
        raise ValueError("startup_program can't be None when loss is list." if startup_programs is None
                         else "startup_program must be a list, one per loss, when loss is a list")
    if len(losses) != 1:
        raise FleetError(f"minimize got {len(losses)} losses: psjob's parameter-server fleet builds one program "
                         "per process (Paddle's several programs in one job are not supported); minimize one loss")
    return losses[0], startup_programs


# The strategy the last minimize trained with (Paddle's fleet context "valid_strategy"):
# the user's, with what strict auto chose.
_valid_strategy = None


def _final_strategy():
    """Paddle's fleet._final_strategy(): the strategy minimize trained with; {} before one."""
    if _valid_strategy is None:
        print("WARNING: You may need to call minimize function before this function is called")
        return {}
    return _valid_strategy


def _can_apply_geo(optimizer, program) -> bool:
    """Paddle 3.0.0's ParameterServerOptimizer._can_apply_geo: an SGD optimizer, and a program
    whose estimated memory fits in this machine's free memory: its dense persistable variables
    five times over, plus every other dense variable its ops write (a -1 dimension counted as a
    batch of 1024)."""
    from psjob.fluid.framework import VarType
    from psjob.optimizer import SGD

    if not isinstance(optimizer, SGD):
        return False
    block = program.global_block()

    def size(var, batch: int) -> int:
        count, negative = 1, 0
        for d in var.shape:
            if d < 0:
                negative += 1
                if negative > 1:
                    raise ValueError(f"Var {var.name} has more than one negative dim.")
            count *= abs(int(d)) * (batch if d < 0 else 1)
        return count * np.dtype(str(var.dtype)).itemsize

    seen = {"@EMPTY@"}
    use = 0
    for name, var in block.vars.items():
        if var.persistable and var.type == VarType.LOD_TENSOR:
            use += size(var, 1)
            seen.add(name)
    use *= 5
    for op in block.ops:
        for name in op.output_arg_names:
            if name in seen:
                continue
            seen.add(name)
            var = block.vars[name]
            if var.type == VarType.LOD_TENSOR:
                use += size(var, 1024)
    return use < _free_memory()


def _free_memory() -> int:
    """MemFree of /proc/meminfo, in bytes (what Paddle's geo estimate compares with)."""
    with open("/proc/meminfo", "rb") as f:
        for line in f:
            fields = line.split()
            if fields and fields[0] == b"MemFree:":
                return int(fields[1]) * 1024
    raise ValueError("/proc/meminfo has no MemFree line")


def _apply_strict_auto(strategy, optimizer, program):
    """A copy of `strategy` with what Paddle 3.0.0's strict auto makes of it in a
    parameter-server job (ParameterServerOptimizer._enable_strategy): a_sync on, and k_steps
    800 (geo) when _can_apply_geo, else 0 (async). Paddle's other meta optimizers it turns on
    cannot apply in a parameter-server job, so Paddle turns them off again."""
    valid = copy.deepcopy(strategy)
    valid.a_sync = True  # Paddle sets it with its setter: strict auto ends here, for later strategies too
    valid.a_sync_configs = {"k_steps": AUTO_GEO_K_STEPS if _can_apply_geo(optimizer, program) else 0}
    return valid


class _DistributedOptimizer:
    def __init__(self, inner, strategy):
        self._inner, self._strategy = inner, strategy

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        global _valid_strategy
        if isinstance(loss, list):
            loss, startup_program = _one_loss(loss, startup_program, _fleet.is_collective)
        valid = self._strategy
        if not _fleet.is_collective and isinstance(valid, DistributedStrategy) and valid._is_strict_auto():
            valid = _apply_strict_auto(valid, self._inner._optimizer, loss.block.program)
            self._inner = _fleet.distributed_optimizer(self._inner._optimizer, valid)
        result = self._inner.minimize(loss, startup_program=startup_program, parameter_list=parameter_list,
                                      no_grad_set=no_grad_set)
        _valid_strategy = copy.deepcopy(valid)
        _set_fleet_opt(loss.block.program, self._strategy)
        if _fleet.is_worker() and not _fleet.is_collective:
            _client_service.install(_WorkerConnection())
        return result

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _LocalOptimizer:
    """distributed_optimizer's answer in a non-distributed run (fleet.init() in a process no
    launcher started): as in Paddle, minimize adds the optimizer's own update ops to the
    program, which then trains in this process alone; the strategy's parameter-server
    settings have nothing to act on."""

    def __init__(self, inner, strategy):
        self._inner, self._strategy = inner, strategy

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        if isinstance(loss, list):
            _one_loss(loss, startup_program, True)
        # Positional: paddle.optimizer's name the parameters `parameters`, Fluid's `parameter_list`.
        return self._inner.minimize(loss, startup_program, parameter_list, no_grad_set)

    def __getattr__(self, name):
        return getattr(self._inner, name)


class _OptimizerBeforeInit:
    """distributed_optimizer's answer before fleet.init(): Paddle's keeps the optimizer and the
    strategy and returns, and minimize needs the fleet's role; so does this one, which resolves
    into the fleet's optimizer at minimize, once fleet.init() has run, and otherwise names the
    missing call (Paddle 3.0.0 fails there on the role maker being None)."""

    def __init__(self, inner, strategy):
        self._inner, self._strategy = inner, strategy

    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        if not _fleet.initialized:
            raise FleetError("fleet.distributed_optimizer(...).minimize(loss): call fleet.init() (or "
                             "fleet.init(role_maker)) first; the fleet needs this process's role to build "
                             "the job")
        return distributed_optimizer(self._inner, self._strategy).minimize(
            loss, startup_program, parameter_list, no_grad_set)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def distributed_optimizer(optimizer, strategy=None):
    """strategy: this call's, else fleet.init's, else DistributedStrategy() (async, Paddle's default).
    Before fleet.init() it only keeps them, as Paddle's does (_OptimizerBeforeInit)."""
    if not _fleet.initialized:
        return _OptimizerBeforeInit(optimizer, strategy)
    strategy = strategy if strategy is not None else _init_strategy
    strategy = strategy if strategy is not None else DistributedStrategy()
    if getattr(_fleet._role_maker, "_non_distributed", False):
        return _LocalOptimizer(optimizer, strategy)
    return _DistributedOptimizer(_fleet.distributed_optimizer(optimizer, strategy), strategy)


def _non_distributed() -> bool:
    return bool(getattr(_fleet._role_maker, "_non_distributed", False))


def _no_op_without_a_job(api):
    """Paddle 2.x's rule for a non-distributed fleet (fleet.init() in a process no launcher
    started, which trains alone): the job's calls (init_worker, init_server, run_server,
    stop_worker, the saves and loads, shrink, ...) log that they do nothing there and return
    None, as Paddle 3.0.0's `is_non_distributed_check` does (paddle/distributed/fleet/fleet.py),
    so a fleet script also runs as a plain local one. Note that the saves save nothing then, as
    in Paddle: a non-distributed run saves with paddle.static.save / save_inference_model."""
    def wrap(func):
        def call(*args, **kwargs):
            if _non_distributed():
                log.warning("%s() function doesn't work when use non_distributed fleet: no launcher started "
                            "this process, so it has no parameter servers and fleet.%s() does nothing "
                            "(as in Paddle); start it with `psjob launch --server_num N --worker_num M`",
                            api, api)
                return None
            return func(*args, **kwargs)
        call.__name__, call.__qualname__, call.__doc__ = func.__name__, func.__qualname__, func.__doc__
        call.__wrapped__ = func  # type: ignore[attr-defined]
        return call
    return wrap


@_no_op_without_a_job("init_worker")
def init_worker(scopes=None):
    """Connect this worker to the pservers (a no-op when its startup program already did)."""
    if _fleet.rpc_service is None:
        _fleet.init_worker(scopes)


@_no_op_without_a_job("stop_worker")
def stop_worker():
    _fleet.stop_worker()


@_no_op_without_a_job("init_server")
def init_server(dirname=None, var_names=None, **kwargs):
    if var_names is not None:
        raise FleetError("init_server(var_names=...) loads a subset of a save; psjob loads the whole "
                         "save (init_server(dirname))")
    _fleet.init_server(dirname)


@_no_op_without_a_job("run_server")
def run_server():
    _fleet.run_server()


def barrier_worker():
    """Wait for every worker (they meet on pserver 0). psjob first sends this worker's queued
    updates and, past the barrier, refreshes its copy of the parameters: after barrier_worker()
    every worker's program reads what all workers trained (in Paddle that depends on the
    communicator's timing). In geo mode the flush sends the current partial interval."""
    settle_deferred()  # the last run's sends go before the barrier (psjob.fluid.executor)
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
    from psjob.fluid.core import global_scope
    from psjob.fluid.executor import Executor
    fetches = _fleet.startup_program.clone()
    block = fetches.global_block()
    block.ops = [op for op in block.ops if op.type in ("recv", "concat")]
    fetches._bump()
    if block.ops:
        Executor().run(fetches, scope=global_scope())
    _refetch_table_rows(global_scope())


# Ids per prefetch when a trainer pulls its copy of a table's rows again (below the
# pservers' per-request cap, psjob.cluster.rpc.server.MAX_PREFETCH_IDS).
REFETCH_CHUNK = 65536


def _refetch_table_rows(scope):
    """A trainer that keeps a table's rows (Fleet 2.x sparse embeddings, psjob.fleet.sparse_tables)
    pulls every row it holds again, so a program reading the parameter (one cloned before
    minimize) sees what all workers trained."""
    import numpy as np

    from psjob.fluid.transpiler.trainer_pass import prefetched_rows_name
    from psjob.foundation.tables import shard_of
    t = _fleet.transpiler
    service = _fleet.rpc_service
    if t is None or service is None:
        return
    endpoints = t.plan.endpoints
    for table in t.plan.tables:
        if not table.trainer_keeps_rows:
            continue
        written, values = scope.vars.get(prefetched_rows_name(table.name)), scope.vars.get(table.name)
        if written is None or values is None:
            continue
        ids = np.flatnonzero(written).astype(np.int64)
        shards = shard_of(ids, len(endpoints))
        for k, ep in enumerate(endpoints):
            mine = ids[shards == k]
            for start in range(0, mine.size, REFETCH_CHUNK):
                chunk = mine[start:start + REFETCH_CHUNK]
                values[chunk] = service.prefetch(ep, table.name, chunk).wait()


@_no_op_without_a_job("shrink")
def shrink(threshold=None):
    """Paddle's fleet.shrink(): every worker calls it at a pass or day boundary, and the first
    drops the sparse rows its tables' accessors judge stale by their show/click statistics.
    In psjob the tables trained by Paddle's accessor (sparse_table_configs) do so: the first
    worker asks every pserver to shrink them (foundation/tables/accessor.py), then the workers
    meet again; tables without an accessor keep every row. Returns None.

    A `threshold` is Paddle's CommonSparseTable's: Paddle 3.0.0's MemorySparseTable ignores it,
    with a warning, and shrinks as its accessor says; so does psjob."""
    if _fleet.is_collective:
        return None
    if not _fleet.is_worker():
        raise FleetError("fleet.shrink() is for workers (fleet.is_worker()); every worker calls it")
    if threshold is not None:
        warnings.warn("The param threshold is not used in MemorySparseTable, if you need to shrink, please set "
                      "the config of accessor", stacklevel=3)
    if _fleet.rpc_service is None:
        # fleet.init_worker() never ran: no pserver to ask, none to meet on. Paddle's barrier
        # there (gloo not started) warns and passes, and its first worker shrinks the program's
        # sparse tables through a client that reaches no server (Paddle's test_dist_fleet_ps3
        # calls fleet.shrink(10) after minimize alone, and passes).
        log.warning("fleet.shrink() before fleet.init_worker(): this worker reaches no pserver, so nothing "
                    "is shrunk")
        return None

    def shrink_tables():
        if _fleet.rpc_service is not None:
            removed = _fleet.rpc_service.checkpoint_notify("", 0, protocol.SHRINK)
            log.info("fleet.shrink: %s", {ep: protocol.decode_reply(ep, files).get("removed")
                                          for ep, files in removed.items()})

    _collective_save("shrink", "", shrink_tables, verb="shrink")  # a failure raises on every worker
    return None


@_no_op_without_a_job("load_model")
def load_model(path, mode=0):
    """Paddle's fleet.load_model(path, mode=0): every worker calls it (after init_worker, before
    training: an online job resuming from its last saved pass) and the pservers load their part
    of the whole-model save in `path` (fleet.save_persistables's) in place, as init_server(path)
    does at start. Each worker first sends its queued updates, worker 0 has the pservers load,
    and every worker then reads the loaded parameters (and table rows it keeps). A bad save
    raises on every worker and changes no pserver. Mode 0 only (Paddle's whole-model load)."""
    _load_into_pservers("load_model", path, mode)


@_no_op_without_a_job("load_one_table")
def load_one_table(table_id, path, mode=0):
    """Paddle's fleet.load_one_table(table_id, path, mode=0): as load_model, for the rows of one
    sparse table alone (its id: its place among the program's distributed tables, 0 first);
    every other parameter keeps its value."""
    _load_into_pservers("load_one_table", path, mode, table=_sparse_table_name("load_one_table", table_id))


@_no_op_without_a_job("load_inference_model")
def load_inference_model(path, mode):
    """Paddle's fleet.load_inference_model(path, mode): every worker calls it, and the pservers
    load the parameters and the sparse tables' rows of the inference model fleet.save_inference_model
    wrote in `path` (Paddle's parameter-server runtime loads its dense parameters and every
    sparse table the same way), in place, as load_model does; optimizer accumulators keep their
    values, as in Paddle. Every worker then reads the loaded parameters, so what it runs next
    (infer_from_dataset) scores with the saved model. Mode 0 only: the whole save, which is
    what save_inference_model writes."""
    _load_into_pservers("load_inference_model", path, mode, params="1")


@_no_op_without_a_job("save_one_table")
def save_one_table(table_id, path, mode=0):
    """Paddle's fleet.save_one_table(table_id, path, mode=0), collective: psjob writes the
    whole-model save (save_persistables's: the table's shards and the manifest that makes them
    loadable, the dense parameters beside them), from which load_one_table(table_id, path) takes
    the table. Mode 0 only (the whole table)."""
    _sparse_table_name("save_one_table", table_id)
    if mode != 0:
        raise ValueError(f"fleet.save_one_table({table_id}, {path!r}, mode={mode}): psjob saves mode 0, the "
                         "whole table")
    from psjob.fluid.executor import Executor
    return _collective_save("save_one_table", path, lambda: _fleet.save_persistables(Executor(), path))


def _sparse_table_name(api, table_id):
    """The distributed table of id `table_id`: ids number the program's distributed tables in
    order from 0, as Paddle's parameter server numbers its sparse tables first."""
    plan = _fleet.transpiler.plan if _fleet.transpiler is not None else None
    names = [t.name for t in plan.tables] if plan is not None else []
    if isinstance(table_id, bool) or not isinstance(table_id, int) or not 0 <= table_id < len(names):
        raise ValueError(f"fleet.{api}: table_id {table_id!r} names no sparse table: the job's sparse tables are "
                         + (", ".join(f"{i} ({n})" for i, n in enumerate(names)) or "none")
                         + "; dense parameters are saved and loaded with save_persistables / load_model")
    return names[table_id]


def _load_into_pservers(api, path, mode, **params):
    if isinstance(mode, bool) or mode != 0:
        saver = "save_inference_model" if api == "load_inference_model" else "save_persistables"
        raise ValueError(f"fleet.{api}({path!r}, mode={mode!r}): psjob loads mode 0, the whole save "
                         f"fleet.{saver} writes (the other modes are Paddle's sparse-table modes, "
                         "such as a delta's rows, which psjob's saves do not write)")
    if _fleet.is_collective:
        raise FleetError(f"fleet.{api}() loads a save into the pservers; a collective job has none "
                         "(load with paddle.static.load)")
    settle_deferred()  # the last run's sends (psjob.fluid.executor) go before the load too
    service = _fleet.rpc_service
    if service is not None and hasattr(service, "flush"):
        service.flush()  # nothing this worker queued lands on the loaded values

    def load():
        if not os.path.isdir(path):
            raise ValueError(f"There is no directory named {path!r}")
        return service.checkpoint_notify(path, 0, protocol.tag(protocol.LOAD, **params))

    _collective_save(api, path, load, verb="load")
    if service is not None:
        if hasattr(service, "refresh"):
            service.refresh()
        _refetch_parameters()


def _collective_save(api, dirname, write, verb="write"):
    """Paddle 2.x's saves are collective (the_one_ps: barrier, the first worker writes,
    barrier): every worker calls them, all wait for one another, worker 0 writes the whole
    model, and every worker returns once it is written. The second meeting carries worker
    0's outcome, so a failed write raises on every worker, not only on the one that wrote.
    The workers meet on pserver 0, as fleet.util's collectives do (fleet/util.py). In a
    collective job (no pserver) every trainer holds the whole model and the save is a plain
    one on the trainer that calls it, as Paddle's collective runtime saves."""
    settle_deferred()  # the last run's backward and sends (psjob.fluid.executor)
    if _fleet.is_collective:
        return write()
    if not _fleet.is_worker():
        raise FleetError(f"fleet.{api}() is for workers (fleet.is_worker()); every worker calls it")
    util.barrier()
    result, failure = None, b""
    if _fleet.worker_index() == 0:
        try:
            result = write()
        except Exception as exc:  # reported to every worker below, then re-raised here
            failure, error = f"{type(exc).__name__}: {exc}".encode(), exc
    outcomes = util.all_gather(np.frombuffer(failure, dtype=np.uint8))
    message = bytes(np.asarray(outcomes[0], dtype=np.uint8)).decode(errors="replace")
    if message:
        problem = FleetError(f"fleet.{api}({dirname!r}): worker 0's {verb} failed: {message}")
        if failure:
            raise problem from error
        raise problem
    return result


@_no_op_without_a_job("save_persistables")
def save_persistables(executor, dirname, main_program=None, mode=0):
    """Every worker calls it; worker 0 writes every persistable of the job into dirname (the
    pservers' parameter and optimizer slices whole, the distributed table by feature id:
    psjob.fleet.save_persistables), and each returns once the save is complete."""
    _saving.check_save_args("save_persistables", executor, main_program)
    return _collective_save("save_persistables", dirname,
                            lambda: _fleet.save_persistables(executor, dirname, main_program))


@_no_op_without_a_job("save_inference_model")
def save_inference_model(executor, dirname, feeded_var_names, target_vars, main_program=None,
                         export_for_deployment=True, mode=0):
    """Every worker calls it; worker 0 writes the pruned inference program and its parameters
    from the pservers (psjob.fleet.save_inference_model), and each returns once it is written."""
    _saving.check_save_args("save_inference_model", executor, main_program)
    return _collective_save("save_inference_model", dirname, lambda: _fleet.save_inference_model(
        executor, dirname, feeded_var_names, target_vars, main_program, export_for_deployment))



def _not_in_psjob(api, what):
    """A Paddle Fleet call for a feature psjob's parameter servers do not have: a no-op in a
    non-distributed run (as Paddle's), an error naming what is missing in a job."""
    @_no_op_without_a_job(api)
    def refuse(*args, **kwargs):
        raise FleetError(f"fleet.{api}(): {what}")
    refuse.__name__ = refuse.__qualname__ = api
    return refuse


save_dense_params = _not_in_psjob(
    "save_dense_params", "psjob saves the dense parameters with the whole model: call "
    "fleet.save_persistables(exe, dirname) (load it with fleet.load_model or init_server(dirname))")
save_cache_model = _not_in_psjob(
    "save_cache_model", "psjob's sparse tables have no cache tier (Paddle's PSLib/GPU-PS cache); save the "
    "whole model with fleet.save_persistables")
save_cache_table = _not_in_psjob(
    "save_cache_table", "psjob's sparse tables have no cache tier (Paddle's PSLib/GPU-PS cache); save a "
    "table with fleet.save_one_table")
print_table_stat = _not_in_psjob(
    "print_table_stat", "psjob's pservers keep no per-pass table statistics to print")
set_date = _not_in_psjob(
    "set_date", "psjob's sparse tables keep no date (Paddle's day-based decay of PSLib/GPU-PS tables)")

is_server = _fleet.is_server
is_worker = _fleet.is_worker
is_first_worker = _fleet.is_first_worker
worker_index = _fleet.worker_index
worker_num = _fleet.worker_num
server_num = _fleet.server_num
server_index = _fleet.server_index
server_endpoints = _fleet.server_endpoints
worker_endpoints = _fleet.worker_endpoints
