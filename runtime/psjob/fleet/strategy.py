"""Distributed strategies: which communication mode a Fleet job trains in.

The rule of seed 000 (`_get_distributed_strategy`), on a DistributedStrategy:

    a_sync=False, k_steps == 0  → sync
    a_sync=True,  k_steps == 0  → async
    a_sync=True,  k_steps  > 0  → geo (exchange parameter deltas every k_steps)
    anything else               → ValueError

A DistributeTranspilerConfig is mapped as Fleet 1.x maps it: sync_mode → sync;
otherwise runtime_split_send_recv selects geo (geo_sgd_mode), half-async
(half_async) or async, and without it half-async. Paddle's config defaults to
sync_mode=True; psjob's leaves it None ("not set"), and under Fleet a config
that sets none of the asynchronous flags (sync_mode, runtime_split_send_recv,
half_async, geo_sgd_mode) trains synchronously, as Paddle's default does.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..fluid.transpiler import DistributeTranspilerConfig

MODES = ("sync", "async", "half_async", "geo")

DEFAULT_A_SYNC_CONFIGS = {
    "k_steps": 0,
    "launch_barrier": True,          # trainers wait until every pserver serves
    "max_merge_var_num": 20,         # communicator: gradients merged into one send
    "send_queue_size": 20,           # communicator: per-variable queue bound
    "predict_pulls": 0.0,            # communicator: async reads extrapolated this many pulls ahead
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
        self._a_sync_configs.update(configs)


@dataclass(frozen=True)
class ResolvedStrategy:
    mode: str
    k_steps: int = 0
    launch_barrier: bool = True
    max_merge_var_num: int = 20
    send_queue_size: int = 20
    heter_worker_device_guard: str = "cpu"
    predict_pulls: float = 0.0

    @property
    def sync_mode(self) -> bool:
        return self.mode == "sync"


def _asks_for_async(config: DistributeTranspilerConfig) -> bool:
    return bool(config.runtime_split_send_recv or config.half_async or config.geo_sgd_mode)


def resolve(strategy) -> ResolvedStrategy:
    """Strategy (None, DistributedStrategy or DistributeTranspilerConfig) → mode and knobs."""
    if strategy is None:
        return ResolvedStrategy("async")
    if isinstance(strategy, DistributedStrategy):
        cfg = strategy.a_sync_configs
        k = cfg["k_steps"]
        if not isinstance(k, int) or k < 0:
            raise ValueError(f"a_sync_configs['k_steps'] must be an integer >= 0, got {k!r}")
        if not strategy.a_sync and k == 0:
            mode = "sync"
        elif strategy.a_sync and k == 0:
            mode = "async"
        elif strategy.a_sync and k > 0:
            mode = "geo"
        else:
            raise ValueError(f"k_steps={k} needs a_sync=True (geo mode); with a_sync=False set k_steps=0 "
                             "for sync training")
        guard = str(cfg["heter_worker_device_guard"]).lower()
        if guard not in ("cpu", "gpu", "xpu"):
            raise ValueError(f"heter_worker_device_guard must be one of cpu, gpu, xpu; got {guard!r}")
        predict = cfg["predict_pulls"]
        if isinstance(predict, bool) or not isinstance(predict, (int, float)) or not 0 <= predict <= 8:
            raise ValueError(f"a_sync_configs['predict_pulls'] must be a number in [0, 8], got {predict!r}")
        return ResolvedStrategy(mode, k, bool(cfg["launch_barrier"]), int(cfg["max_merge_var_num"]),
                                int(cfg["send_queue_size"]), guard, float(predict))
    if isinstance(strategy, DistributeTranspilerConfig):
        if strategy.sync_mode or (strategy.sync_mode is None and not _asks_for_async(strategy)):
            return ResolvedStrategy("sync")
        if strategy.runtime_split_send_recv:
            if strategy.geo_sgd_mode:
                k = int(strategy.geo_sgd_need_push_nums)
                if k < 1:
                    raise ValueError(f"geo_sgd_need_push_nums must be >= 1, got {k}")
                return ResolvedStrategy("geo", k)
            return ResolvedStrategy("half_async" if strategy.half_async else "async")
        return ResolvedStrategy("half_async")
    raise TypeError("strategy must be a DistributedStrategy or a DistributeTranspilerConfig, "
                    f"got {type(strategy).__name__}")
