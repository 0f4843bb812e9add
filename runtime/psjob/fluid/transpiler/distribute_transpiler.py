"""DistributeTranspiler: one single-machine program in, trainer and pserver programs out.

Lifecycle (every process of a job does this itself, with its own trainer_id
or endpoint, and gets the same plan):

1. `transpile(trainer_id, program, pservers, trainers, sync_mode, startup)`
   checks its arguments, snapshots the original programs, reads the
   optimize pass, computes the placement plan (plan.py), rewrites the
   trainer program and its startup program in place (trainer_pass.py) and
   attaches the distributed-variable overview (`_parameters_on_pservers`).
2. `get_trainer_program()` removes the optimizer and LR ops (and fakes the
   distributed table's initializer) and returns the program.
3. `get_pserver_program(ep)` / `get_startup_program(ep, prog)` /
   `get_pserver_programs(ep)` build one pserver's programs from the snapshot
   and the plan (pserver_pass.py, startup_pass.py).

Programs are plain data: serialize them (transpiler.serialization) and a
process needs nothing else — no process recomputes the plan at run time.
"""
from __future__ import annotations

import logging
import math
import re

from psjob.fluid.framework import GraphError, Program, default_main_program, default_startup_program
from psjob.fluid.ops.optimizer_ops import kernel_hyperparameters, state_specs
from psjob.fluid.transpiler.collective import add_gen_nccl_id
from psjob.fluid.transpiler.config import NCCL2_MODE, DistributeTranspilerConfig, TranspilerConfigError
from psjob.fluid.transpiler.details import parse_endpoints
from psjob.fluid.transpiler.optimize_pass import CORE_SLOTS, read_optimize_pass
from psjob.fluid.transpiler.overview import build_overview, find_distributed_lookup_tables, mark_distributed
from psjob.fluid.transpiler.plan import JobShape, TablePlan, TranspilePlan, build_plan
from psjob.fluid.transpiler.pserver_pass import build_pserver_program
from psjob.fluid.transpiler.startup_pass import build_pserver_startup
from psjob.fluid.transpiler.trainer_pass import (
    TRAINER_KEEPS_ROWS,
    check_rewritable,
    finalize_trainer_program,
    find_table_lookups,
    rewrite_trainer_program,
    rewrite_trainer_startup,
)
from psjob.foundation import hooks
from psjob.foundation.roles import Mode
from psjob.foundation.tables import OPTIMIZERS as TABLE_RULES
from psjob.foundation.tables import OptimizerConfig as TableOptimizerConfig
from psjob.foundation.tables.accessor import AccessorConfigError, resolve_accessor

log = logging.getLogger("psjob.transpiler")


class DistributeTranspiler:
    """Converts a Fluid program to parameter-server data-parallel programs.

        t = fluid.DistributeTranspiler()
        t.transpile(trainer_id, pservers="10.0.0.1:6174,10.0.0.2:6174", trainers=4)
        if role == "PSERVER":
            main, startup = t.get_pserver_programs(current_endpoint)
        else:
            main = t.get_trainer_program()
    """

    def __init__(self, config: DistributeTranspilerConfig | None = None):
        if config is not None and not isinstance(config, DistributeTranspilerConfig):
            raise TypeError(f"config must be a DistributeTranspilerConfig, got {type(config).__name__}")
        self.config = config if config is not None else DistributeTranspilerConfig()
        self.config.validate()
        if self.config.print_log:
            log.setLevel(logging.INFO)
        self._plan: TranspilePlan | None = None
        self._trainer_finalized = False

    # -- 1. transpile --------------------------------------------------------------------
    def transpile(self, trainer_id, program=None, pservers="", trainers=1, sync_mode=True,
                  startup_program=None, current_endpoint=""):
        self.config.validate()
        program = program if program is not None else default_main_program()
        startup_program = startup_program if startup_program is not None else default_startup_program()
        if not isinstance(program, Program) or not isinstance(startup_program, Program):
            raise TypeError("program and startup_program must be fluid Programs")
        if self.config.mode == NCCL2_MODE:
            return self._transpile_nccl2(trainer_id, program, trainers, startup_program, current_endpoint)
        if getattr(program, "_is_distributed", False):
            raise GraphError("this program was already transpiled; transpile a fresh copy "
                             "(program.clone() before transpiling keeps the original)")
        endpoints = parse_endpoints(pservers)
        trainer_num = _check_trainers(trainers)
        if isinstance(trainer_id, bool) or not isinstance(trainer_id, int) or not 0 <= trainer_id < trainer_num:
            raise ValueError(f"trainer_id must be an int in [0, {trainer_num}) for {trainer_num} "
                             f"trainer(s), got {trainer_id!r}")
        sync = self.config.effective_sync_mode(sync_mode)
        if self.config.enable_dc_asgd and sync:
            raise TranspilerConfigError("enable_dc_asgd needs async training: pass sync_mode=False")

        self.origin_program, self.startup_program = program, startup_program
        # The pservers' programs are built from these untouched copies; the
        # originals become the trainer's programs.
        self._origin = program.clone()
        self._origin_startup = startup_program.clone()
        opt = read_optimize_pass(self._origin)
        tables = [_table_plan(self._origin, self._origin_startup, opt, name, self.config.table_optimizer)
                  for name in find_distributed_lookup_tables(self._origin)]
        _attach_accessors(tables, self.config.sparse_table_accessors, self._origin_startup)
        plan = build_plan(self._origin, opt, JobShape(tuple(endpoints), trainer_num, trainer_id, sync),
                          self.config, tables)
        sparse = [pp.param for pp in plan.params.values() if pp.sparse_grad] + [t.name for t in tables]
        if self.config.enable_dc_asgd and sparse:
            raise TranspilerConfigError(f"enable_dc_asgd supports dense gradients only; sparse: {sparse}")
        check_rewritable(program, startup_program, plan)
        self._live_opt = read_optimize_pass(program)
        rewrite_trainer_program(program, plan)
        rewrite_trainer_startup(startup_program, program, plan)
        self._overview = build_overview(plan, self._origin)
        mark_distributed(program, plan, self._overview, current_endpoint, trainer_id == 0)
        self._plan = plan
        self._trainer_finalized = False
        # Fluid 1.x's names for its single distributed table (the first, where psjob has several).
        self.table_name = tables[0].name if tables else None
        self.has_distributed_lookup_table = self.table_name is not None
        self.trainer_id, self.trainer_num, self.sync_mode = trainer_id, trainer_num, sync
        self.pserver_endpoints = endpoints
        self.vars_overview = self._overview
        log.info("transpiled for trainer %d of %d, %s mode, pservers %s", trainer_id, trainer_num,
                 Mode.SYNC if sync else Mode.ASYNC, endpoints)

    def _transpile_nccl2(self, trainer_id, program, trainers, startup_program, current_endpoint):
        """NCCL2 mode, as Paddle's: the main program is left as it is (ParallelExecutor with
        num_trainers all-reduces its gradients); the startup program forms the trainers' ring."""
        endpoints = parse_endpoints(trainers) if isinstance(trainers, (str, list, tuple)) and trainers else []
        if not endpoints:
            raise ValueError("nccl2 mode: trainers must list every trainer's endpoint, "
                             f"\"ip1:port,ip2:port\", got {trainers!r}")
        if isinstance(trainer_id, bool) or not isinstance(trainer_id, int) or not 0 <= trainer_id < len(endpoints):
            raise ValueError(f"trainer_id must be an int in [0, {len(endpoints)}) for the trainers "
                             f"{endpoints}, got {trainer_id!r}")
        if current_endpoint and current_endpoint != endpoints[trainer_id]:
            raise ValueError(f"current_endpoint {current_endpoint!r} is not trainer {trainer_id}'s "
                             f"endpoint in trainers ({endpoints[trainer_id]!r})")
        add_gen_nccl_id(startup_program, trainer_id, endpoints, current_endpoint)
        program._trainers_endpoints = list(endpoints)
        self.origin_program, self.startup_program = program, startup_program
        self.trainer_id, self.trainer_num, self.sync_mode = trainer_id, len(endpoints), True
        log.info("nccl2 mode: trainer %d of ring %s", trainer_id, endpoints)

    @property
    def untouched_program(self) -> Program:
        """A copy of the program as it was before transpile() rewrote it (the pservers'
        programs are built from it; Fleet prunes it for save_inference_model)."""
        self.plan  # noqa: B018 - raises before transpile
        return self._origin

    @property
    def plan(self) -> TranspilePlan:
        if self._plan is None:
            raise RuntimeError("call DistributeTranspiler.transpile() first")
        return self._plan

    # -- 2. trainer ----------------------------------------------------------------------
    def get_trainer_program(self, wait_port=True) -> Program:
        plan = self.plan
        if not self._trainer_finalized:
            finalize_trainer_program(self.origin_program, self.startup_program, plan,
                                     self._live_opt.opt_ops, self._live_opt.lr_ops)
            self._trainer_finalized = True
        if wait_port and self.config.wait_port:
            # Fluid's wait_port: the runtime waits (psjob.foundation.hooks); the planner opens no sockets.
            hooks.lookup(hooks.WAIT_SERVER_READY)(plan.endpoints)
        return self.origin_program

    def get_trainer_startup_program(self) -> Program:
        self.plan  # noqa: B018 - raises before transpile
        return self.startup_program

    # -- 3. pservers ---------------------------------------------------------------------
    def _check_endpoint(self, endpoint: str) -> None:
        if endpoint not in self.plan.endpoints:
            raise ValueError(f"endpoint {endpoint!r} is not one of the pservers passed to transpile: "
                             f"{', '.join(self.plan.endpoints)}")

    def get_pserver_program(self, endpoint: str) -> Program:
        self._check_endpoint(endpoint)
        prog = build_pserver_program(self.plan, endpoint, self._origin)
        mark_distributed(prog, self.plan, self._overview, endpoint, False)
        return prog

    def get_startup_program(self, endpoint: str, pserver_program: Program | None = None,
                            startup_program: Program | None = None) -> Program:
        self._check_endpoint(endpoint)
        if pserver_program is None:
            pserver_program = self.get_pserver_program(endpoint)
        startup = build_pserver_startup(self.plan, endpoint, pserver_program, self._origin_startup)
        # Fluid's incremental training loads a save with load_persistables(exe, path,
        # pserver_startup): the startup program must know its endpoint and the overview too.
        mark_distributed(startup, self.plan, self._overview, endpoint, False)
        return startup

    def get_pserver_programs(self, endpoint: str) -> tuple[Program, Program]:
        main = self.get_pserver_program(endpoint)
        return main, self.get_startup_program(endpoint, main)


def delete_ops(block, ops) -> None:
    """Remove each of `ops` from `block` (Fluid 1.x's `distribute_transpiler.delete_ops`, which
    programs and Paddle's tests import). An op that is not in the block is reported and skipped,
    as Fluid does."""
    for op in ops:
        for index, candidate in enumerate(block.ops):
            if candidate is op:
                block._remove_op(index)
                break
        else:
            log.warning("delete_ops: %s is not an op of block %d", getattr(op, "type", op), block.idx)


def _check_trainers(trainers) -> int:
    if isinstance(trainers, str):
        if "," in trainers or ":" in trainers:
            raise ValueError("trainers is a list of endpoints (the nccl2 form); the pserver mode "
                             "takes the number of trainers")
        if not trainers.strip().isdigit():
            raise ValueError(f"trainers must be a positive number of trainers, got {trainers!r}")
        trainers = int(trainers)
    if isinstance(trainers, bool) or not isinstance(trainers, int) or trainers < 1:
        raise ValueError(f"trainers must be a positive number of trainers, got {trainers!r}")
    return trainers


def _table_plan(program: Program, startup: Program, opt, name: str, table_optimizer: str) -> TablePlan:
    block = program.global_block()
    grad = dict(opt.params_grads).get(name)
    if grad is None or name not in opt.optimizer_of:
        raise GraphError(f"the distributed table {name!r} has no optimizer op: it must be trainable")
    var = block.var(name)
    if len(var.shape) != 2:
        raise GraphError(f"the distributed table {name!r} must be 2-D [ids, dim], got {list(var.shape)}")
    paddings = {int(op.attr("padding_idx", -1) if op.attr("padding_idx") is not None else -1)
                for op in find_table_lookups(block, name)}
    if len(paddings) > 1:
        raise GraphError(f"lookups of the distributed table {name!r} disagree on padding_idx: {sorted(paddings)}")
    opt_op = opt.optimizer_of[name]
    state = tuple(n for slot, names in opt_op.inputs.items() if slot not in CORE_SLOTS for n in names)
    keeps = {bool(op.attr(TRAINER_KEEPS_ROWS, False)) for op in find_table_lookups(block, name)}
    return TablePlan(name, grad, int(var.shape[0]), int(var.shape[1]), var.dtype, paddings.pop(),
                     opt_op.type, opt_op.input("LearningRate")[0],
                     _table_optimizer_config(name, opt_op, startup, table_optimizer), state,
                     trainer_keeps_rows=keeps == {True})


def _attach_accessors(tables: list, accessors: dict, startup: Program) -> None:
    """Resolve each sparse_table_configs entry for its table (Paddle's defaults, the dims
    checked against the embedding). An entry naming no distributed table of the program
    changes nothing, as in Paddle, and says so."""
    by_name = {t.name: t for t in tables}
    for name in sorted(set(accessors) - set(by_name)):
        log.warning("sparse_table_configs[%r]: the program has no parameter-server table of that name "
                    "(tables: %s); the entry changes nothing", name, sorted(by_name) or "none")
    if not accessors:
        return
    inits = {op.output_arg_names[0]: op for op in startup.global_block().ops if len(op.output_arg_names) == 1}
    constants = {n: float(op.attr("value")) for n, op in inits.items() if op.type == "fill_constant"}
    base_rates = sorted(n for n in constants if re.fullmatch(r"learning_rate_\d+", n))
    for name, parsed in accessors.items():
        table = by_name.get(name)
        if table is None:
            continue
        init, lr = inits.get(name), constants.get(table.lr_var)
        if lr is None and base_rates:
            # A per-parameter learning rate (ParamAttr(learning_rate=...): a scale of the
            # optimizer's rate) or a schedule: Paddle's the_one_ps gives the rules the optimizer's
            # base rate, the startup value of learning_rate_<program>, and warns; so does psjob.
            lr = constants[base_rates[0]]
            log.warning("sparse_table_configs[%r]: the table's learning rate %r is not a constant (a "
                        "per-parameter rate or a schedule); its SGD rules take the optimizer's base rate, "
                        "%s = %g, as Paddle's parameter servers do", name, table.lr_var, base_rates[0], lr)
        try:
            table.accessor = resolve_accessor(name, parsed, table.width, initial_range=_initial_range(init),
                                              learning_rate=lr).to_json()
        except AccessorConfigError as exc:
            raise TranspilerConfigError(str(exc)) from None


def _initial_range(op) -> float:
    """What Paddle's the_one_ps takes for a rule's default initial_range: the last attribute of
    the embedding's initializer (uniform: max, gaussian: std, constant: value)."""
    if op is None:
        return 1e-4
    key = {"uniform_random": "max", "gaussian_random": "std", "truncated_gaussian_random": "std",
           "fill_constant": "value"}.get(op.type)
    return abs(float(op.attr(key))) if key is not None and op.attr(key) is not None else 1e-4


def _table_optimizer_config(name: str, opt_op, startup: Program, table_optimizer: str) -> dict:
    """The pservers' per-row rule for the table: the program's table op (the optimizer's rule;
    see psjob.fluid.optimizer) unless the config asks for plain sgd. Refuses what a SparseTable
    cannot reproduce, so that pservers and a single machine never silently disagree."""
    if table_optimizer == "sgd" or opt_op.type == "sgd":
        return {"name": "sgd", "hyper": {}}
    rule = opt_op.type
    if rule not in TABLE_RULES:
        raise TranspilerConfigError(
            f"the distributed table {name!r} is optimized by {rule!r}, which a pserver's sparse table "
            f"cannot run per row (it supports {', '.join(TABLE_RULES)}); set "
            "DistributeTranspilerConfig.table_optimizer = 'sgd' to update it with plain sgd")
    hyper = kernel_hyperparameters(rule, opt_op.attrs)
    try:
        cfg = TableOptimizerConfig(rule, hyper=hyper)
    except ValueError as exc:
        raise TranspilerConfigError(f"the distributed table {name!r}: {exc}") from None
    # The table starts every row's state at the kernels' fills; a program that starts them
    # elsewhere (Adagrad's initial_accumulator_value) would train differently on the pservers.
    inits = {op.output_arg_names[0]: op for op in startup.global_block().ops
             if op.type == "fill_constant" and len(op.output_arg_names) == 1}
    for slot, spec in state_specs(rule).items():
        fill = float(hyper[spec.fill] if isinstance(spec.fill, str) else spec.fill)
        for acc in opt_op.input(slot) or ():
            init = inits.get(acc)
            if init is not None and not math.isclose(float(init.attr("value", 0.0)), fill, rel_tol=1e-6):
                raise TranspilerConfigError(
                    f"the distributed table {name!r}: its {rule} state {acc!r} starts at "
                    f"{init.attr('value')}, but a pserver's sparse table starts every row's "
                    f"{spec.name} at {fill} (Adagrad's initial_accumulator_value must be 0 for a "
                    "distributed table)")
    return {"name": cfg.name, "hyper": dict(cfg.hyper)}
