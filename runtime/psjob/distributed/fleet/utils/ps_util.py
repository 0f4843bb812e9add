"""`paddle.distributed.fleet.utils.ps_util.DistributedInfer`: run an inference program
against a parameter-server job, as Paddle's does.

    dist_infer = DistributedInfer(main_program=test_program, startup_program=test_startup)
    dist_infer.init_distributed_infer_env(exe, loss, role_maker, dirname=saved)  # no-op after training
    with paddle.static.program_guard(dist_infer.get_dist_infer_program()):
        exe.run(paddle.static.default_main_program(), feed=...)

`init_distributed_infer_env` sets up a job when the process has none (Paddle's: fleet.init,
an async strategy with a plain SGD whose updates never run, minimize; a pserver then
loads `dirname` and serves, a worker runs the startup program, connects and loads
the dense variables of `dirname` into its scope). `get_dist_infer_program` is a copy of the
program given at construction in which every lookup of the job's distributed table
(sparse_embedding) prefetches its rows from the pservers; every other variable is read
from the worker's scope (the dense parameters its startup program and communicator
fetch from the pservers).
"""
from __future__ import annotations

from psjob.distributed import fleet as _front
from psjob.distributed.fleet.strategy import DistributedStrategy
from psjob.fluid.framework import default_main_program, default_startup_program
from psjob.fluid.io import load_vars
from psjob.fluid.transpiler.trainer_pass import prefetch_table_lookups
from psjob.foundation.checkpoint.format import read_manifest
from psjob.optimizer import SGD

__all__ = []


class DistributedInfer:
    def __init__(self, main_program=None, startup_program=None):
        self.origin_main_program = (main_program or default_main_program()).clone()
        self.origin_startup_program = startup_program or default_startup_program()
        self.sparse_table_maps = None

    def init_distributed_infer_env(self, exe, loss, role_maker=None, dirname=None):
        """Set up the job (see the module docstring) unless this process already has one
        (it trained: the inference program then reads the trained state)."""
        if _front.fleet.main_program is not None:
            return
        _front.init(role_maker=role_maker)
        strategy = DistributedStrategy()
        strategy.a_sync = True
        optimizer = _front.distributed_optimizer(SGD(), strategy=strategy)
        optimizer.minimize(loss, startup_program=self.origin_startup_program)
        if _front.is_server():
            _front.init_server(dirname=dirname)
            _front.run_server()
        else:
            exe.run(default_startup_program())
            _front.init_worker()
            self._init_dense_params(exe, dirname)

    def _get_sparse_table_map(self) -> dict:
        """{distributed table: table id}, ids in the plan's (first-lookup) order."""
        if self.sparse_table_maps is None:
            plan = self._plan()
            self.sparse_table_maps = {t.name: i for i, t in enumerate(plan.tables)} if plan is not None else {}
        return self.sparse_table_maps

    def _init_dense_params(self, exe=None, dirname=None):
        """Load the saved dense persistables of the program (those `dirname` holds) into the
        worker's scope; the distributed table stays on the pservers, which init_server loaded."""
        if dirname is None or exe is None:
            return
        saved = read_manifest(dirname)["vars"]
        tables = self._get_sparse_table_map()
        wanted = [v for v in self.origin_main_program.list_vars()
                  if v.persistable and v.name not in tables and v.name in saved]
        if wanted:
            load_vars(exe, dirname, main_program=self.origin_main_program, vars=wanted)

    def get_dist_infer_program(self):
        """The program given at construction, its distributed-table lookups prefetching from
        the pservers (requires the job: after minimize, on a worker)."""
        program = self.origin_main_program.clone()
        plan = self._plan()
        if plan is not None:
            prefetch_table_lookups(program.global_block(), plan)
            program._bump()
        return program

    @staticmethod
    def _plan():
        transpiler = _front.fleet.transpiler
        if transpiler is None:
            raise RuntimeError("DistributedInfer needs the fleet job: call init_distributed_infer_env (or "
                               "fleet's distributed_optimizer(...).minimize) first")
        return transpiler.plan
