"""Distributed strategies: which communication mode a Fleet job trains in.

The rule of Paddle's Fleet ParameterServerRuntime (`_get_distributed_strategy`), on a DistributedStrategy:

    a_sync=False, k_steps == 0  → sync
    a_sync=True,  k_steps == 0  → async
    a_sync=True,  k_steps  > 0  → geo (exchange parameter deltas every k_steps)
    anything else               → ValueError

a_sync_configs also sets the async communicator's knobs: max_merge_var_num,
send_queue_size, max_stale_steps and predict_pulls (psjob.cluster.trainer.communicator.CommunicatorConfig),
checked when set. predict_pulls defaults to None: each parameter's async reads are
extrapolated by what its pserver optimizer suits (predict_pulls_by_name); a number set
by the user holds for every parameter.

A DistributeTranspilerConfig is mapped as Fleet 1.x maps it: sync_mode → sync;
otherwise runtime_split_send_recv selects geo (geo_sgd_mode), half-async
(half_async) or async, and without it half-async. Paddle's config defaults to
sync_mode=True; psjob's leaves it None ("not set"), and under Fleet a config
that sets none of the asynchronous flags (sync_mode, runtime_split_send_recv,
half_async, geo_sgd_mode) trains synchronously, as Paddle's default does.

A ResolvedStrategy (a Mode and the knobs) is what the Fleet trains by; a caller that knows
its Mode already (the built-in job: its role's PSJOB_MODE) passes one directly instead of
spelling the mode in Paddle's booleans.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from psjob.cluster.trainer.communicator import CommunicatorConfig
from psjob.fluid.transpiler import DistributeTranspilerConfig
from psjob.foundation.roles import Mode

# The async communicator's knobs default to psjob.cluster.trainer.communicator's measured values, not to the
# numbers Paddle's AsyncConfig proto shows (max_merge_var_num 1, send_queue_size 16): Paddle's
# runtime never reads those two keys (its communicator takes FLAGS_communicator_* or CPU_NUM,
# default 1: no merging, a queue of one); docs/user/paddle2.md says more.
DEFAULT_A_SYNC_CONFIGS = {
    "k_steps": 0,
    "launch_barrier": True,          # trainers wait until every pserver serves
    "max_merge_var_num": CommunicatorConfig.max_merge_var_num,  # gradients merged into one send
    "send_queue_size": CommunicatorConfig.send_queue_size,      # per-variable queue bound
    # psjob's own key: how many steps of a trainer's own gradients its async reads may miss
    # (an int >= 0, or None for no bound but send_queue_size); sync and geo ignore it.
    "max_stale_steps": CommunicatorConfig.max_stale_steps,
    # psjob's own key: async reads extrapolated this many pull intervals ahead (a number in [0, 8]),
    # or None: per parameter, by its optimizer (predict_pulls_by_name).
    "predict_pulls": None,
    "heter_worker_device_guard": "cpu",
}


class DistributedStrategy:
    """Fleet 2.0's strategy object (the parameter-server subset)."""

    def __init__(self):
        self.a_sync = False
        self._a_sync_configs = dict(DEFAULT_A_SYNC_CONFIGS)
        # How the distributed lookup table is updated: None leaves it to the optimizer
        # (its table_optimizer, default "same": its own rule per row); "sgd" is Fluid 1.x's.
        self.table_optimizer: str | None = None

    @property
    def a_sync_configs(self) -> dict:
        return self._a_sync_configs

    @a_sync_configs.setter
    def a_sync_configs(self, configs: dict):
        if not isinstance(configs, dict):
            raise TypeError(f"a_sync_configs must be a dict, got {type(configs).__name__}")
        unknown = set(configs) - set(DEFAULT_A_SYNC_CONFIGS)
        if unknown:
            raise ValueError(f"unknown a_sync_configs key(s) {sorted(unknown)}; "
                             f"known: {sorted(DEFAULT_A_SYNC_CONFIGS)}")
        self._set_a_sync_configs(configs)

    def _set_a_sync_configs(self, configs: dict):
        """Update with `configs` if every value is valid; else raise, changing nothing."""
        _checked({**self._a_sync_configs, **configs})
        self._a_sync_configs.update(configs)


@dataclass(frozen=True)
class ResolvedStrategy:
    mode: Mode
    k_steps: int = 0
    launch_barrier: bool = True
    max_merge_var_num: int = CommunicatorConfig.max_merge_var_num
    send_queue_size: int = CommunicatorConfig.send_queue_size
    heter_worker_device_guard: str = "cpu"
    max_stale_steps: int | None = CommunicatorConfig.max_stale_steps
    predict_pulls: float | None = None  # None: by each parameter's optimizer
    # Fleet 2.x makes sparse embeddings pserver tables (a DistributedStrategy); Fluid 1.x's
    # transpiler config does not.
    sparse_tables: bool = False
    table_optimizer: str | None = None  # None: the optimizer's own table_optimizer decides
    # Paddle 2.x's sparse_table_configs, parsed: ((table name, entry), ...)
    # (psjob.foundation.tables.accessor; the transpiler resolves them per table).
    table_accessors: tuple = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", Mode(self.mode))  # a Mode, or its name
        if not self.mode.uses_pservers:
            raise ValueError(f"a parameter-server strategy's mode is one of sync, async, half_async, geo; "
                             f"got {self.mode.value}")

    @property
    def sync_mode(self) -> bool:
        return self.mode is Mode.SYNC


def _asks_for_async(config: DistributeTranspilerConfig) -> bool:
    return bool(config.runtime_split_send_recv or config.half_async or config.geo_sgd_mode)


def _count(cfg: dict, key: str, least: int) -> int:
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"a_sync_configs[{key!r}] must be an integer >= {least}, got {value!r}")
    return value


def _max_stale_steps(cfg: dict) -> int | None:
    if cfg["max_stale_steps"] is None:
        return None
    try:
        return _count(cfg, "max_stale_steps", 0)
    except ValueError:
        raise ValueError(f"a_sync_configs['max_stale_steps'] must be an integer >= 0 or None (no bound), "
                         f"got {cfg['max_stale_steps']!r}") from None


def _predict_pulls(cfg: dict) -> float | None:
    value = cfg["predict_pulls"]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 8:
        raise ValueError(f"a_sync_configs['predict_pulls'] must be a number in [0, 8] or None (by each "
                         f"parameter's optimizer), got {value!r}")
    return float(value)


# The default extrapolation of async reads, by the optimizer op a pserver runs for the
# parameter. A gradient computed from a read is applied ~2 pull intervals after the read's
# snapshot; where successive updates point the same way (Adam's and momentum's moving
# averages) p + 2 (p - p0) is where the parameter will be. Measured first-epoch AUC of the
# CTR-DNN at 2 pservers + 2 trainers, Adam 1e-3 (docs/dev/architecture.md): median 0.005 below
# the single process with 2, 0.015 without. Plain SGD (and the adaptive rules without
# momentum) apply each gradient as it comes: extrapolating there overshoots (a test's SGD
# 0.3 model diverged at 2), so those parameters are read as pulled.
PREDICT_PULLS_BY_OPTIMIZER = {"adam": 2.0, "adamax": 2.0, "momentum": 2.0, "lars_momentum": 2.0}


def predict_pulls_by_name(setting: float | None, plan) -> float | dict:
    """The communicator's predict_pulls for a job transpiled as `plan` (a TranspilePlan):
    the user's number as it is, else {pulled name (a parameter or its pserver blocks):
    intervals} from each parameter's optimizer op (PREDICT_PULLS_BY_OPTIMIZER, others 0)."""
    if setting is not None:
        return setting
    by_name = {}
    for param, param_plan in plan.params.items():
        op = plan.opt.optimizer_of.get(param)
        alpha = PREDICT_PULLS_BY_OPTIMIZER.get(op.type, 0.0) if op is not None else 0.0
        if alpha:
            by_name.update((b.name, alpha) for b in param_plan.blocks)
    return by_name


def _checked(cfg: dict) -> dict:
    """ResolvedStrategy's fields from a_sync_configs `cfg` (all but mode), or a ValueError
    naming the bad key."""
    k = cfg["k_steps"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"a_sync_configs['k_steps'] must be an integer >= 0, got {k!r}")
    guard = str(cfg["heter_worker_device_guard"]).lower()
    if guard not in ("cpu", "gpu", "xpu"):
        raise ValueError(f"heter_worker_device_guard must be one of cpu, gpu, xpu; got {guard!r}")
    return dict(k_steps=k, launch_barrier=bool(cfg["launch_barrier"]),
                max_merge_var_num=_count(cfg, "max_merge_var_num", 1),
                send_queue_size=_count(cfg, "send_queue_size", 1),
                heter_worker_device_guard=guard, max_stale_steps=_max_stale_steps(cfg),
                predict_pulls=_predict_pulls(cfg))


def resolve(strategy) -> ResolvedStrategy:
    """Strategy (None, DistributedStrategy, DistributeTranspilerConfig, or a Fluid 1.x
    StrategyFactory strategy, read through its program config) → mode and knobs."""
    if isinstance(strategy, ResolvedStrategy):
        return strategy
    resolved = _resolve(strategy)
    # How the distributed table is updated, from any strategy object that says (the Fleet's
    # table_optimizer attribute); None leaves it to the optimizer.
    accessors = getattr(strategy, "sparse_table_accessors", None) or {}
    return dataclasses.replace(resolved, table_optimizer=getattr(strategy, "table_optimizer", None),
                               table_accessors=tuple(sorted(accessors.items())))


def _resolve(strategy) -> ResolvedStrategy:
    if strategy is None:
        return ResolvedStrategy(Mode.ASYNC)
    if hasattr(strategy, "get_program_config"):
        # Fluid 1.x's StrategyFactory strategies (psjob.fluid.incubate...distributed_strategy).
        strategy = strategy.get_program_config()
    if isinstance(strategy, DistributedStrategy):
        knobs = _checked(strategy.a_sync_configs)
        k = knobs["k_steps"]
        if not strategy.a_sync and k == 0:
            mode = Mode.SYNC
        elif strategy.a_sync and k == 0:
            mode = Mode.ASYNC
        elif strategy.a_sync and k > 0:
            mode = Mode.GEO
        else:
            raise ValueError(f"k_steps={k} needs a_sync=True (geo mode); with a_sync=False set k_steps=0 "
                             "for sync training")
        return ResolvedStrategy(mode, **knobs, sparse_tables=True)
    if isinstance(strategy, DistributeTranspilerConfig):
        if strategy.sync_mode or (strategy.sync_mode is None and not _asks_for_async(strategy)):
            return ResolvedStrategy(Mode.SYNC)
        if strategy.runtime_split_send_recv:
            if strategy.geo_sgd_mode:
                k = int(strategy.geo_sgd_need_push_nums)
                if k < 1:
                    raise ValueError(f"geo_sgd_need_push_nums must be >= 1, got {k}")
                return ResolvedStrategy(Mode.GEO, k)
            return ResolvedStrategy(Mode.HALF_ASYNC if strategy.half_async else Mode.ASYNC)
        return ResolvedStrategy(Mode.HALF_ASYNC)
    raise TypeError("strategy must be a DistributedStrategy, a DistributeTranspilerConfig or a ResolvedStrategy, "
                    f"got {type(strategy).__name__}")
