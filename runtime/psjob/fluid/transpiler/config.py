"""DistributeTranspilerConfig: the knobs of the pserver transpile, checked up front.

Fluid scripts create the config, set attributes one by one and hand it to
`DistributeTranspiler(config)`; the transpiler calls `validate()` then and
again at `transpile()` (attributes may change in between), so a bad value is
reported before any program is touched.

Besides the transpile knobs the config carries the runtime flags Fleet's
strategies set (`sync_mode`, `runtime_split_send_recv`, `half_async`,
`geo_sgd_mode`, `geo_sgd_need_push_nums`). The transpiler reads only what
decides program structure — whether the programs are synchronous — and
leaves the rest to the communicator that runs the programs.
"""
from __future__ import annotations

import logging

from psjob.fluid.optimizer import check_table_optimizer
from psjob.fluid.transpiler.ps_dispatcher import PSDispatcher, RoundRobin

log = logging.getLogger("psjob.transpiler")

# The seed asserts this minimum: smaller blocks waste the pserver's per-request
# overhead (Fluid's DistributeTranspilerConfig note: bandwidth is used well above ~2 MB per request).
MIN_BLOCK_SIZE = 8192
PSERVER_MODE = "pserver"
NCCL2_MODE = "nccl2"  # collective: trainers all-reduce their gradients (docs/user/collective.md)


class TranspilerConfigError(ValueError):
    """A DistributeTranspilerConfig attribute has a value the transpiler cannot use."""


class DistributeTranspilerConfig:
    """Attributes (Fluid's names and defaults):

    slice_var_up (bool): split large variables into blocks spread over the
        pservers (default True); False keeps each variable whole on one pserver.
    split_method (PSDispatcher subclass): how blocks are placed on pservers,
        RoundRobin (default) or HashName.
    min_block_size (int): the smallest block, in elements (at least 8192).
    enable_dc_asgd (bool): delay-compensated async SGD (async mode only).
    mode (str): "pserver" (the default) or "nccl2": collective training, where transpile()
        only adds the ring's rendezvous (gen_nccl_id) to the startup program and
        ParallelExecutor(num_trainers=N) all-reduces the gradients (docs/user/collective.md).
    print_log (bool): log the transpile steps at INFO.
    wait_port (bool): get_trainer_program waits for the pservers' ports.
    sync_mode (bool|None): None follows transpile(sync_mode=...); False forces async.
    runtime_split_send_recv, half_async, geo_sgd_mode, geo_sgd_need_push_nums:
        communicator flags; half_async and geo_sgd_mode imply async programs.
    table_optimizer (str): how the pservers update the distributed lookup
        table: "same" (default) — the rule and hyperparameters of the program's
        table op (the optimizer's own, per row); "sgd" — plain sgd with the
        program's learning rate, as Fluid 1.x did.
    elastic (bool): the trainer set changes at run time (psjob's elastic jobs,
        docs/user/local-runs.md "Elastic trainers"): `trainers` is then the job's
        trainer capacity — sync pservers keep a gradient slot per possible
        trainer — and the pservers learn the members as trainers join and leave.
    """

    def __init__(self):
        self.slice_var_up = True
        self.split_method = None
        self.min_block_size = MIN_BLOCK_SIZE
        self.enable_dc_asgd = False
        self.mode = PSERVER_MODE
        self.print_log = False
        self.wait_port = True
        self.sync_mode = None
        self.runtime_split_send_recv = False
        self.half_async = False
        self.geo_sgd_mode = False
        self.geo_sgd_need_push_nums = 100
        self.table_optimizer = "same"
        self.elastic = False
        # psjob's: {table name: parsed sparse_table_configs entry} (Paddle 2.x's
        # DistributedStrategy.sparse_table_configs, foundation/tables/accessor.py); a table
        # named here is trained by Paddle's accessor and SGD rules on the pservers.
        self.sparse_table_accessors = {}

    def validate(self) -> None:
        """Fill defaults and raise TranspilerConfigError naming the first bad attribute."""
        if self.mode not in (PSERVER_MODE, NCCL2_MODE):
            raise TranspilerConfigError(
                f"DistributeTranspilerConfig.mode={self.mode!r} is not supported: use "
                f"{PSERVER_MODE!r} (the default, parameter servers) or {NCCL2_MODE!r} (collective)")
        if self.split_method is None:
            self.split_method = RoundRobin
        if not (isinstance(self.split_method, type) and issubclass(self.split_method, PSDispatcher)):
            raise TranspilerConfigError(
                f"split_method must be a PSDispatcher class (RoundRobin or HashName), "
                f"got {self.split_method!r}")
        if isinstance(self.min_block_size, bool) or not isinstance(self.min_block_size, int):
            raise TranspilerConfigError(f"min_block_size must be an int, got {self.min_block_size!r}")
        if self.min_block_size < MIN_BLOCK_SIZE:
            raise TranspilerConfigError(
                f"min_block_size={self.min_block_size} is below the minimum of {MIN_BLOCK_SIZE} "
                "elements per block")
        if self.sync_mode not in (None, True, False):
            raise TranspilerConfigError(f"sync_mode must be True, False or None, got {self.sync_mode!r}")
        if isinstance(self.geo_sgd_need_push_nums, bool) or not isinstance(self.geo_sgd_need_push_nums, int) \
                or self.geo_sgd_need_push_nums < 1:
            raise TranspilerConfigError(
                f"geo_sgd_need_push_nums must be a positive int, got {self.geo_sgd_need_push_nums!r}")
        try:
            check_table_optimizer(self.table_optimizer, "DistributeTranspilerConfig.table_optimizer")
        except ValueError as exc:
            raise TranspilerConfigError(str(exc)) from None

    def effective_sync_mode(self, requested: bool) -> bool:
        """Whether the transpiled programs are synchronous (barriers, per-trainer grads)."""
        if self.sync_mode is False or self.half_async or self.geo_sgd_mode:
            return False
        return bool(requested)

    def as_dict(self) -> dict:
        """The config as plain data (recorded on the programs for the runtime)."""
        return {
            "slice_var_up": bool(self.slice_var_up),
            "split_method": self.split_method.__name__ if self.split_method else None,
            "min_block_size": int(self.min_block_size),
            "enable_dc_asgd": bool(self.enable_dc_asgd),
            "mode": self.mode,
            "sync_mode": self.sync_mode,
            "runtime_split_send_recv": bool(self.runtime_split_send_recv),
            "half_async": bool(self.half_async),
            "geo_sgd_mode": bool(self.geo_sgd_mode),
            "geo_sgd_need_push_nums": int(self.geo_sgd_need_push_nums),
            "table_optimizer": self.table_optimizer,
            "sparse_table_accessors": sorted(self.sparse_table_accessors),
        }
